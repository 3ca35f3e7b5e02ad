"""The ``create_*`` factories of the course's training scripts: one config in, one MindSpore object out.

The same factories serve ``scripts/train.py``, ``scripts/eval.py`` and ``scripts/export.py`` (the layout of mindcv
and MindSpore's model zoo). MindSpore is imported inside the functions, so importing this module is cheap.
"""
from pathlib import Path

from course_lib.i18n import _

CLASSIFICATION_DATASETS = ("digits_mnist", "imagefolder")


def check_classification_config(cfg):
    """Reject combinations of dataset/model/image size that cannot train, before any MindSpore work.

    Single keys (ranges, choices, types) are checked by ``course_lib.run.config.load_config``; these are the rules
    that tie two keys together."""
    if cfg.dataset not in CLASSIFICATION_DATASETS:
        raise ValueError(_("dataset must be one of {classification_datasets} for classification, got {dataset!r}. "
                           "Fix: --dataset digits_mnist (LeNet-5) or --dataset imagefolder (ResNet); the 'shapes' "
                           "set is for segmentation (lesson 09).").format(
                               classification_datasets=CLASSIFICATION_DATASETS, dataset=cfg.dataset))
    if cfg.model.startswith("resnet") and cfg.dataset != "imagefolder":
        raise ValueError(_("model {model!r} takes RGB images, but dataset {dataset!r} is grayscale. Fix: --dataset "
                           "imagefolder (embedded digits as RGB PNGs, or your ImageNet root).").format(
                               model=cfg.model, dataset=cfg.dataset))
    from course_lib.models import check_image_size

    check_image_size(cfg.model, cfg.image_size, fix="--image_size ")
    if cfg.dataset == "digits_mnist" and cfg.num_classes != 10:
        raise ValueError(_("num_classes is {num_classes}, but the digits have 10 classes (labels 0-9): labels >= "
                           "num_classes would train silently with a meaningless loss. Fix: --num_classes 10.").format(
                               num_classes=cfg.num_classes))


def checkpoint_folder(cfg) -> Path:
    """The run folder: ``checkpoint_dir``, or ``outputs/checkpoints`` when it is null."""
    from course_lib.paths import OUTPUT_DIR

    return Path(cfg.checkpoint_dir).expanduser() if cfg.checkpoint_dir else OUTPUT_DIR / "checkpoints"


def in_channels(cfg) -> int:
    """1 for the grayscale MNIST digits, 3 for RGB image folders."""
    return 1 if cfg.dataset == "digits_mnist" else 3


def create_dataset(cfg, train: bool):
    """The configured data set (embedded digits unless ``data_path`` is set), sharded by rank when distributed."""
    from course_lib.data.datasets import create_imagefolder_dataset, create_mnist_dataset

    create = create_mnist_dataset if cfg.dataset == "digits_mnist" else create_imagefolder_dataset
    shards = {"num_shards": cfg.device_num, "shard_id": cfg.rank_id} if cfg.device_num > 1 else {}
    dataset = create(path=cfg.data_path, batch_size=cfg.batch_size, train=train, image_size=cfg.image_size,
                     num_parallel_workers=cfg.num_parallel_workers, num_classes=cfg.num_classes, **shards)
    if train and cfg.steps_per_epoch > 0:
        dataset = dataset.take(cfg.steps_per_epoch)
    return dataset


def create_network(cfg):
    """The model named in the config (``lenet5`` reads 1 channel for the MNIST digits, 3 for RGB folders)."""
    from course_lib import models

    if cfg.model == "lenet5":
        return models.lenet5(cfg.num_classes, in_channels=in_channels(cfg))
    return getattr(models, cfg.model)(cfg.num_classes)


def create_loss(cfg):
    """The ResNet-50 migration example's label-smoothed cross-entropy (off-value s/(K-1))."""
    from course_lib.train.losses import CrossEntropySmooth

    return CrossEntropySmooth(sparse=True, reduction="mean", smooth_factor=cfg.label_smooth_factor,
                              num_classes=cfg.num_classes)


def learning_rates(cfg, steps_per_epoch: int) -> list:
    """One learning rate per step of the whole run (constant, or warmup + cosine from lr to lr_end)."""
    from course_lib.train.schedules import cosine_lr

    total_steps = cfg.epochs * steps_per_epoch
    if cfg.lr_schedule == "cosine":
        return cosine_lr(cfg.lr, cfg.lr_end, total_steps, steps_per_epoch, cfg.warmup_epochs)
    return [float(cfg.lr)] * total_steps


def create_optimizer(cfg, net, steps_per_epoch: int):
    """Momentum SGD over the migration example's parameter groups (no weight decay on BN gamma/beta and biases)."""
    from mindspore import nn

    from course_lib.train.optim import param_groups

    return nn.Momentum(param_groups(net, cfg.weight_decay), learning_rate=learning_rates(cfg, steps_per_epoch),
                       momentum=cfg.momentum, loss_scale=cfg.loss_scale)


def create_loss_scale_manager(cfg):
    """A fixed loss scale (the optimizer divides the gradients by the same factor), or None for 1.0."""
    if cfg.loss_scale == 1.0:
        return None
    from mindspore.amp import FixedLossScaleManager

    return FixedLossScaleManager(cfg.loss_scale, drop_overflow_update=False)


def create_model(cfg, net, optimizer=None, metrics=None):
    """``mindspore.train.Model`` over the network, the configured loss and (for training) the optimizer."""
    from mindspore.train import Model

    scale_manager = create_loss_scale_manager(cfg) if optimizer is not None else None
    extra = {"loss_scale_manager": scale_manager} if scale_manager is not None else {}
    return Model(net, loss_fn=create_loss(cfg), optimizer=optimizer, metrics=metrics, **extra)


def example_input(cfg, batch_size: int = 1):
    """A zero batch shaped like one input of the network (for export)."""
    import numpy as np

    return np.zeros((batch_size, in_channels(cfg), cfg.image_size, cfg.image_size), np.float32)


def resolve_checkpoint(cfg) -> Path:
    """``checkpoint_path`` if set, else the newest ``<model>-<epoch>_<steps>.ckpt`` in the checkpoint folder."""
    from course_lib.paths import relative
    from course_lib.train.checkpoint import CheckpointManager

    if cfg.checkpoint_path:
        return Path(cfg.checkpoint_path).expanduser()
    folder = checkpoint_folder(cfg)
    found = CheckpointManager(folder, cfg.model).checkpoints()
    if not found:
        raise FileNotFoundError(_("No checkpoint {model}-*.ckpt in {folder}. Fix: pass --checkpoint_path FILE, or "
                                  "train first with scripts/train.py.").format(
                                      model=cfg.model, folder=relative(folder)))
    return found[0]
