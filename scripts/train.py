"""Train an image classifier from a YAML config: seed 003's train.py, thin over course_lib.

    .venv/bin/python scripts/train.py --config my.yaml --epochs 3 --batch_size 16
    .venv/bin/python scripts/train.py --model resnet18 --dataset imagefolder --image_size 64 --epochs 2
    .venv/bin/python scripts/train.py --config my.yaml --resume      # continue after an interruption

Every key of course_lib/configs/default.yaml can be set in the YAML or overridden as ``--key value``.
Recipe (seed 003): Momentum SGD, weight decay on weights only (not BN gamma/beta or biases), optional cosine LR
with linear warmup, label-smoothed cross-entropy. A checkpoint ``<model>-<epoch>_<steps>.ckpt`` holding the
network, the optimizer moments and step counter, and the epoch is written atomically every
``save_checkpoint_epochs`` epochs. ``--resume`` restarts from the newest readable one: weights, moments,
LR schedule position and data order continue exactly where that epoch ended.
"""
import re
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the checkout importable without installing it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import course_lib  # noqa: E402,F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before mindspore is imported)

CLASSIFICATION_DATASETS = ("digits_mnist", "imagefolder")
_CHECKPOINT_NAME = re.compile(r"^(?P<prefix>.+)-(?P<epoch>\d+)_(?P<steps>\d+)\.ckpt$")


# ------------------------------------------------------------------------------------------ building blocks
def check_classification_config(cfg):
    """Reject combinations of dataset/model/image size that cannot train, before any MindSpore work."""
    if cfg.dataset not in CLASSIFICATION_DATASETS:
        raise ValueError(f"dataset must be one of {CLASSIFICATION_DATASETS} for classification, got "
                         f"{cfg.dataset!r}. Fix: --dataset digits_mnist (LeNet-5) or --dataset imagefolder "
                         "(ResNet); the 'shapes' set is for segmentation (lesson 09).")
    if cfg.model.startswith("resnet") and cfg.dataset != "imagefolder":
        raise ValueError(f"model {cfg.model!r} takes RGB images, but dataset {cfg.dataset!r} is grayscale. "
                         "Fix: --dataset imagefolder (embedded digits as RGB PNGs, or your ImageNet root).")
    if cfg.model.startswith("resnet") and cfg.image_size < 32:
        raise ValueError(f"image_size must be >= 32 for {cfg.model} (it downsamples by 32), got "
                         f"{cfg.image_size}. Fix: --image_size 64 for quick runs, 224 for ImageNet.")
    if cfg.model == "lenet5" and cfg.image_size != 32:
        raise ValueError(f"lenet5 needs image_size 32, got {cfg.image_size}. Fix: --image_size 32.")
    if cfg.num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {cfg.num_classes}. Fix: the number of classes in "
                         "your data, e.g. 10 for the digits.")
    if cfg.steps_per_epoch == 0 or cfg.steps_per_epoch < -1:
        raise ValueError(f"steps_per_epoch must be -1 (whole data set) or >= 1, got {cfg.steps_per_epoch}.")
    if cfg.save_checkpoint_epochs < 1:
        raise ValueError(f"save_checkpoint_epochs must be >= 1, got {cfg.save_checkpoint_epochs}.")
    if cfg.keep_checkpoint_max < 1:
        raise ValueError(f"keep_checkpoint_max must be >= 1 (the newest checkpoint is always kept), got "
                         f"{cfg.keep_checkpoint_max}.")


def create_dataset(cfg, train: bool):
    """The configured data set (embedded digits unless ``data_path`` is set), sharded when distributed."""
    from course_lib.data import create_imagefolder_dataset, create_mnist_dataset

    create = create_mnist_dataset if cfg.dataset == "digits_mnist" else create_imagefolder_dataset
    shards = {"num_shards": cfg.device_num, "shard_id": cfg.rank_id} if cfg.device_num > 1 else {}
    dataset = create(path=cfg.data_path, batch_size=cfg.batch_size, train=train, image_size=cfg.image_size,
                     num_parallel_workers=cfg.num_parallel_workers, **shards)
    if train and cfg.steps_per_epoch > 0:
        dataset = dataset.take(cfg.steps_per_epoch)
    return dataset


def create_network(cfg):
    """The model named in the config (``lenet5`` reads 1 channel for the MNIST digits, 3 for RGB folders)."""
    from course_lib import models

    if cfg.model == "lenet5":
        return models.lenet5(cfg.num_classes, in_channels=1 if cfg.dataset == "digits_mnist" else 3)
    return getattr(models, cfg.model)(cfg.num_classes)


def create_loss(cfg):
    """Seed 003's label-smoothed cross-entropy (seed convention: off-value s/(K-1))."""
    from course_lib.losses import CrossEntropySmooth

    return CrossEntropySmooth(sparse=True, reduction="mean", smooth_factor=cfg.label_smooth_factor,
                              num_classes=cfg.num_classes)


def learning_rates(cfg, steps_per_epoch: int):
    """One learning rate per step of the whole run (constant, or warmup + cosine from lr to lr_end)."""
    from course_lib.schedules import cosine_lr

    total_steps = cfg.epochs * steps_per_epoch
    if cfg.lr_schedule == "cosine":
        return cosine_lr(cfg.lr, cfg.lr_end, total_steps, steps_per_epoch, cfg.warmup_epochs)
    return [float(cfg.lr)] * total_steps


def create_optimizer(cfg, net, steps_per_epoch: int):
    """Momentum SGD over seed 003's parameter groups (no weight decay on BN gamma/beta and biases)."""
    from mindspore import nn

    from course_lib.optim import param_groups

    return nn.Momentum(param_groups(net, cfg.weight_decay), learning_rate=learning_rates(cfg, steps_per_epoch),
                       momentum=cfg.momentum, loss_scale=cfg.loss_scale)


def create_loss_scale_manager(cfg):
    """A fixed loss scale (the optimizer divides the gradients by the same factor), or None for 1.0."""
    if cfg.loss_scale == 1.0:
        return None
    if cfg.loss_scale <= 0:
        raise ValueError(f"loss_scale must be > 0, got {cfg.loss_scale}. Fix: 1.0 (float32) or e.g. 1024.0.")
    from mindspore.amp import FixedLossScaleManager

    return FixedLossScaleManager(cfg.loss_scale, drop_overflow_update=False)


def checkpoint_folder(cfg) -> Path:
    from course_lib.paths import OUTPUT_DIR

    return Path(cfg.checkpoint_dir).expanduser() if cfg.checkpoint_dir else OUTPUT_DIR / "checkpoints"


# ------------------------------------------------------------------------------------------ checkpoints
def _checkpoint_files(folder: Path, prefix: str) -> list:
    """Finished checkpoints ``<prefix>-<epoch>_<steps>.ckpt`` in ``folder``, newest epoch first.

    Temporary files of an interrupted save (``.<name>.tmp-xxxx.ckpt``) never match the pattern.
    """
    found = []
    for path in folder.glob(f"{prefix}-*.ckpt") if folder.is_dir() else ():
        match = _CHECKPOINT_NAME.match(path.name)
        if match and match["prefix"] == prefix:
            found.append((int(match["epoch"]), path))
    return [path for _, path in sorted(found, reverse=True)]


def load_resume_state(folder: Path, prefix: str, net, optimizer, steps_per_epoch: int):
    """Load the newest readable checkpoint into ``net`` and ``optimizer``; return ``(epoch, path)``.

    A file that fails to read (truncated, CRC mismatch) is reported and skipped, so a half-written or damaged
    checkpoint is never used. Returns ``(0, None)`` when there is nothing to resume from.
    """
    import mindspore as ms

    from course_lib.checkpoint import load_checkpoint
    from course_lib.paths import relative

    for path in _checkpoint_files(folder, prefix):
        try:
            params = load_checkpoint(path)
        except ValueError as error:
            print(f"skipping {relative(path)}: {str(error).splitlines()[0]}", flush=True)
            continue
        if "epoch_num" not in params or "global_step" not in params:
            raise ValueError(f"{relative(path)} has no epoch_num/global_step entries, so it was not written by "
                             "scripts/train.py and cannot be resumed. Fix: use --checkpoint_path to start from "
                             "its weights instead of --resume.")
        optimizer_state = {name: value for name, value in params.items()
                           if name == "global_step" or name.startswith("moments.")}
        missing = [p.name for p in optimizer.moments if p.name not in optimizer_state]
        if missing:
            raise ValueError(f"{relative(path)} lacks optimizer moments for {missing[:3]} … . Fix: resume with the "
                             "same model and optimizer settings it was trained with.")
        epoch, step = int(params["epoch_num"].asnumpy()), int(params["global_step"].asnumpy()[0])
        if step != epoch * steps_per_epoch:
            raise ValueError(f"{relative(path)} was saved after {step} optimizer steps in {epoch} epochs, but this "
                             f"run has {steps_per_epoch} steps per epoch, so the learning-rate schedule and data "
                             "order would not continue where they stopped. Fix: resume with the same batch_size, "
                             "steps_per_epoch and data as the interrupted run.")
        load_checkpoint(path, net, strict=True)
        # Not ms.load_param_into_net(optimizer, ...): for the optimizer's own references to the weights it
        # finds no exact name and falls back to stripping the "moments." prefix, loading moments INTO weights.
        for param in list(optimizer.moments) + [optimizer.global_step]:
            param.set_data(ms.Tensor(optimizer_state[param.name].asnumpy(), dtype=param.dtype))
        return epoch, path
    return 0, None


def _make_checkpoint_callback(folder: Path, prefix: str, steps_per_epoch: int, every: int, last_epoch: int,
                              keep: int):
    """A callback that saves the whole training network (weights + optimizer state) at the end of epochs."""
    from mindspore.train import Callback

    from course_lib.checkpoint import save_checkpoint
    from course_lib.paths import relative

    class EpochCheckpoint(Callback):
        """Atomic ``<prefix>-<epoch>_<steps>.ckpt`` every ``every`` epochs and after the last one."""

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            epoch = cb_params.cur_epoch_num
            if epoch % every and epoch != last_epoch:
                return
            path = folder / f"{prefix}-{epoch}_{steps_per_epoch}.ckpt"
            save_checkpoint(cb_params.train_network, path, append_dict={"epoch_num": epoch})
            print(f"saved {relative(path)}", flush=True)
            for old in _checkpoint_files(folder, prefix)[keep:]:
                old.unlink()

    return EpochCheckpoint()


def _make_epoch_printer(total_epochs: int):
    from mindspore.train import Callback

    from course_lib.callbacks import loss_value

    class EpochPrinter(Callback):
        """One line per epoch: mean loss, steps, seconds (plain text, so logs and notebooks stay readable)."""

        def on_train_epoch_begin(self, run_context):
            self.losses, self.start = [], time.perf_counter()

        def on_train_step_end(self, run_context):
            self.losses.append(loss_value(run_context.original_args().net_outputs))

        def on_train_epoch_end(self, run_context):
            epoch = run_context.original_args().cur_epoch_num
            mean = sum(self.losses) / len(self.losses)
            print(f"epoch {epoch}/{total_epochs}: loss {mean:.4f} ({len(self.losses)} steps, "
                  f"{time.perf_counter() - self.start:.1f} s)", flush=True)

    return EpochPrinter()


# ------------------------------------------------------------------------------------------ main
def main(argv=None, callbacks=()):
    """Parse the config, train, save checkpoints; return the final network. ``callbacks`` are appended."""
    from course_lib.config import build_arg_parser, load_config

    argv = sys.argv[1:] if argv is None else list(argv)
    if "-h" in argv or "--help" in argv:
        build_arg_parser(__doc__.splitlines()[0]).print_help()
        return None
    cfg = load_config(argv=argv)
    check_classification_config(cfg)

    from mindspore.train import Model

    from course_lib.env import init_env
    from course_lib.paths import relative

    init_env(cfg)
    dataset = create_dataset(cfg, train=True)
    steps_per_epoch = dataset.get_dataset_size()
    net = create_network(cfg)
    optimizer = create_optimizer(cfg, net, steps_per_epoch)
    folder = checkpoint_folder(cfg)
    prefix = cfg.model

    initial_epoch = 0
    if cfg.resume:
        initial_epoch, path = load_resume_state(folder, prefix, net, optimizer, steps_per_epoch)
        if path is None:
            print(f"resume: no checkpoint {prefix}-*.ckpt in {relative(folder)}; starting from epoch 1", flush=True)
        else:
            print(f"resume: {relative(path)} (epoch {initial_epoch}, optimizer step "
                  f"{int(optimizer.global_step.asnumpy()[0])})", flush=True)
    if initial_epoch == 0 and cfg.checkpoint_path:  # a fresh start (or nothing to resume): initial weights
        from course_lib.checkpoint import load_checkpoint

        load_checkpoint(cfg.checkpoint_path, net, strict=True)
        print(f"initial weights: {relative(cfg.checkpoint_path)}", flush=True)
    if initial_epoch >= cfg.epochs:
        print(f"already trained for {initial_epoch} epochs (epochs = {cfg.epochs}); nothing to do", flush=True)
        return net
    # Same shuffling as an uninterrupted run: the pipeline skips ahead to the first step of initial_epoch.
    if initial_epoch:
        dataset.set_init_step(initial_epoch * steps_per_epoch)

    print(f"train {cfg.model} on {cfg.dataset}: {steps_per_epoch} steps/epoch x {cfg.epochs} epochs, "
          f"batch {cfg.batch_size}, image {cfg.image_size}, {cfg.context_mode} mode", flush=True)
    scale_manager = create_loss_scale_manager(cfg)
    amp_kwargs = {"loss_scale_manager": scale_manager} if scale_manager is not None else {}
    model = Model(net, loss_fn=create_loss(cfg), optimizer=optimizer, **amp_kwargs)
    run_callbacks = [_make_epoch_printer(cfg.epochs)]
    if cfg.rank_id == 0:
        run_callbacks.append(_make_checkpoint_callback(folder, prefix, steps_per_epoch, cfg.save_checkpoint_epochs,
                                                       cfg.epochs, cfg.keep_checkpoint_max))
    model.train(cfg.epochs, dataset, callbacks=run_callbacks + list(callbacks), dataset_sink_mode=False,
                initial_epoch=initial_epoch)
    return net


if __name__ == "__main__":
    try:
        main()
    except (ValueError, FileNotFoundError) as error:
        from course_lib.lesson import error_summary

        sys.exit(error_summary(error, max_lines=8))
