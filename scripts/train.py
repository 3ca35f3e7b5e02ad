"""Train an image classifier from a YAML config: the ResNet-50 migration example's train.py, thin over course_lib.

    .venv/bin/python scripts/train.py --config my.yaml --epochs 3 --batch_size 16
    .venv/bin/python scripts/train.py --model resnet18 --dataset imagefolder --image_size 64 --epochs 2
    .venv/bin/python scripts/train.py --config my.yaml --resume      # continue after an interruption

Every key of course_lib/configs/default.yaml can be set in the YAML or overridden as ``--key value``.
Recipe (the ResNet-50 migration example):
Momentum SGD, weight decay on weights only (not BN gamma/beta or biases), optional cosine LR
with linear warmup, label-smoothed cross-entropy. A checkpoint ``<model>-<epoch>_<steps>.ckpt`` holding the
network, the optimizer moments and step counter, and the epoch is written atomically every
``save_checkpoint_epochs`` epochs. ``--resume`` restarts from the newest readable one: weights, moments,
LR schedule position and data order continue exactly where that epoch ended.
"""
import contextlib
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
    if cfg.dataset == "digits_mnist" and cfg.num_classes != 10:
        raise ValueError(f"num_classes is {cfg.num_classes}, but the digits have 10 classes (labels 0-9): labels "
                         f">= num_classes would train silently with a meaningless loss. Fix: --num_classes 10.")
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
                     num_parallel_workers=cfg.num_parallel_workers, num_classes=cfg.num_classes, **shards)
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
    """The ResNet-50 migration example's label-smoothed cross-entropy (seed convention: off-value s/(K-1))."""
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
    """Momentum SGD over the migration example's parameter groups (no weight decay on BN gamma/beta and biases)."""
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


def check_other_output_folders():
    """Every folder besides checkpoint_dir that the run writes into (MindSpore's log, compile cache or graph
    folders when the environment switches them on): created and proven writable before any training starts."""
    from course_lib.paths import check_output_folder, mindspore_output_folders

    for what, folder, fix in mindspore_output_folders():
        check_output_folder(folder, what, fix)


def checkpoint_folder(cfg) -> Path:
    from course_lib.paths import OUTPUT_DIR

    return Path(cfg.checkpoint_dir).expanduser() if cfg.checkpoint_dir else OUTPUT_DIR / "checkpoints"


# ------------------------------------------------------------------------------------------ checkpoints
def _checkpoint_files(folder: Path, prefix: str) -> list:
    """Finished checkpoints ``<prefix>-<epoch>_<steps>.ckpt`` in ``folder``, newest epoch first.

    Temporary files of an interrupted save (``.<name>.tmp-xxxx.ckpt``) never match the pattern.
    """
    from course_lib.checkpoint import CheckpointManager

    return CheckpointManager(folder, prefix).checkpoints()


def load_resume_state(folder: Path, prefix: str, net, optimizer, steps_per_epoch: int, manager=None):
    """Load the newest readable checkpoint into ``net`` and ``optimizer``; return ``(epoch, path)``.

    A file that fails to read (truncated, CRC mismatch, no CRC record) is reported, renamed ``*.damaged`` and
    skipped, so a damaged checkpoint is never used and the previous good one is. ``(0, None)``: nothing to resume.
    """
    import mindspore as ms

    from course_lib.checkpoint import CheckpointManager, load_checkpoint
    from course_lib.paths import relative

    manager = manager or CheckpointManager(folder, prefix, resume=True)

    def read(path):
        params = load_checkpoint(path)
        if "epoch_num" not in params or "global_step" not in params:
            raise RuntimeError(f"{relative(path)} has no epoch_num/global_step entries, so it was not written by "
                               "scripts/train.py and cannot be resumed. Fix: use --checkpoint_path to start from "
                               "its weights instead of --resume.")
        return params

    try:
        params, path = manager.resume_from(read)
    except RuntimeError as error:
        raise ValueError(str(error)) from None
    if path is None:
        return 0, None
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


def _make_checkpoint_callback(manager, steps_per_epoch: int, every: int, last_epoch: int):
    """A callback that saves the whole training network (weights + optimizer state) at the end of epochs."""
    from mindspore.train import Callback

    from course_lib.paths import relative

    class EpochCheckpoint(Callback):
        """Atomic ``<prefix>-<epoch>_<steps>.ckpt`` every ``every`` epochs and after the last one."""

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            epoch = cb_params.cur_epoch_num
            if epoch % every and epoch != last_epoch:
                return
            path = manager.save(cb_params.train_network, epoch, steps_per_epoch, append_dict={"epoch_num": epoch})
            print(f"saved {relative(path)}", flush=True)

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

    import os

    if cfg.device_num > 1 and "MS_WORKER_NUM" not in os.environ:
        raise ValueError(f"device_num is {cfg.device_num}, but this process was not started by msrun. Fix: "
                         f"msrun --worker_num={cfg.device_num} --local_worker_num={cfg.device_num} "
                         "scripts/train.py ... (msrun, not mpirun), or --device_num 1.")
    from course_lib.checkpoint import CheckpointManager

    folder = checkpoint_folder(cfg)
    prefix = cfg.model
    # Every output folder is checked (created, writable) and locked before any training starts.
    manager = CheckpointManager(folder, prefix, keep=cfg.keep_checkpoint_max, resume=cfg.resume,
                                overwrite=cfg.overwrite)
    check_other_output_folders()
    if cfg.device_num > 1 and os.environ.get("RANK_ID", "0") != "0":  # only rank 0 writes checkpoints
        return _train(cfg, manager, callbacks)
    with manager:
        return _train(cfg, manager, callbacks)


class TrainingInterrupted(Exception):
    """Ctrl-C during training: carries where it stopped."""


class DataPipelineFailed(RuntimeError):
    """MindData failed mid-epoch (a file that does not decode, ...): the message names the file and the fix."""


_DATA_FILE = re.compile(r"corresponding data file is: (?P<file>.+?)\.?(?: |$)", re.M)
_MAP_OP = re.compile(r"map operation: \[(?P<op>\w+)\] failed")


def describe_pipeline_error(text: str, where: str = ""):
    """One clear message for a MindData runtime error (which operation, which file, the fix), or None if ``text``
    is not one. ``where`` says when it happened, e.g. "at epoch 1, step 3"."""
    if "Dataset Pipeline Error Message" not in text and "dataset pipeline" not in text.lower():
        return None
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("- Dataset Pipeline Error Message")),
                 None)
    detail = []
    if start is not None:
        for line in lines[start + 1:]:
            if "C++ Call Stack" in line or (detail and line.startswith("----")):
                break
            if line.strip() and not line.startswith("----"):
                detail.append(line.strip().removeprefix("[ERROR]").strip())
    found, op = _DATA_FILE.search(text), _MAP_OP.search(text)
    file = found.group("file") if found else None
    what = f"the data pipeline failed{' ' + where if where else ''}"
    if op:
        what += f" in its {op.group('op')} step"
    if file:
        what += f" on the file {file}"
    message = what + (": " + " ".join(detail)[:400] if detail else ".")
    if file and op and op.group("op") == "Decode":
        fix = f"Fix: {file} is not a readable image: remove or replace it, then run again"
    elif file:
        fix = f"Fix: check {file} (remove or replace it), then run again"
    else:
        fix = "Fix: check the data set files (run with --debug true for MindData's full report), then run again"
    return f"{message}\n{fix} (--resume continues from the last checkpoint)."


def _train(cfg, manager, callbacks):
    from mindspore.train import Callback, Model

    from course_lib.callbacks import loss_value
    from course_lib.env import init_env
    from course_lib.paths import relative

    folder, prefix = manager.folder, manager.prefix
    init_env(cfg)
    dataset = create_dataset(cfg, train=True)
    steps_per_epoch = dataset.get_dataset_size()
    net = create_network(cfg)
    optimizer = create_optimizer(cfg, net, steps_per_epoch)

    initial_epoch = 0
    if cfg.resume:
        initial_epoch, path = load_resume_state(folder, prefix, net, optimizer, steps_per_epoch, manager)
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

    class FiniteLoss(Callback):
        """Stop at the first non-finite loss, before any checkpoint of that epoch is written."""

        def on_train_step_end(self, run_context):
            args = run_context.original_args()
            value = loss_value(args.net_outputs)
            if value != value or value in (float("inf"), float("-inf")):
                step = (args.cur_step_num - 1) % steps_per_epoch + 1
                raise ValueError(f"the loss became {value} at epoch {args.cur_epoch_num}, step {step} (global step "
                                 f"{args.cur_step_num}): training diverged, so no checkpoint of this epoch is "
                                 f"written. Fix: lower --lr (now {cfg.lr}) or --loss_scale, then train again.")

    position = {"epoch": initial_epoch, "step": 0}

    class Where(Callback):
        def on_train_step_end(self, run_context):
            args = run_context.original_args()
            position.update(epoch=args.cur_epoch_num, step=(args.cur_step_num - 1) % steps_per_epoch + 1)

    run_callbacks = [Where(), FiniteLoss(), _make_epoch_printer(cfg.epochs)]
    if cfg.rank_id == 0:
        run_callbacks.append(_make_checkpoint_callback(manager, steps_per_epoch, cfg.save_checkpoint_epochs,
                                                       cfg.epochs))
    try:
        with _sigterm_as_interrupt():
            model.train(cfg.epochs, dataset, callbacks=run_callbacks + list(callbacks), dataset_sink_mode=False,
                        initial_epoch=initial_epoch)
    except RuntimeError as error:
        epoch, done = position["epoch"] or initial_epoch + 1, position["step"]  # MindData reads ahead: approximate
        if done >= steps_per_epoch:
            epoch, done = epoch + 1, 0
        described = describe_pipeline_error(str(error), f"during epoch {epoch} (after {done} finished steps)")
        if described is None:
            raise
        raise DataPipelineFailed(described) from error
    except KeyboardInterrupt:
        last = manager.checkpoints()
        raise TrainingInterrupted(
            f"interrupted at epoch {position['epoch']}, step {position['step']}; last checkpoint: "
            f"{relative(last[0]) if last else 'none'}. Resume with: scripts/train.py ... --checkpoint_dir "
            f"{relative(folder)} --resume") from None
    return net


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C while training. MindSpore 2.10 replaces the SIGINT handler while a compiled graph
    runs (ccsrc/utils/signal_util.cc) with one that sends SIGTERM to its own process, so a Ctrl-C in graph mode
    arrives as SIGTERM and would end the run with no message; a scheduler's SIGTERM gets the same clean stop."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_cli(main_fn, argv=None):
    """Call ``main_fn`` and turn every error into one clear message (``--debug true`` or COURSE_DEBUG=1 shows the
    traceback too). Exit codes: 0 done, 1 an error, 130 interrupted (Ctrl-C)."""
    import os
    import traceback

    argv = sys.argv[1:] if argv is None else list(argv)
    debug = os.environ.get("COURSE_DEBUG") == "1" or any(
        a in ("--debug", "--debug=true", "--debug=True") for a in argv) and "--debug false" not in " ".join(argv)
    try:
        check_other_output_folders()  # before mindspore is imported: its logger creates GLOG_log_dir/rank_0 then
        main_fn(argv)
        return 0
    except TrainingInterrupted as stop:
        print(str(stop), file=sys.stderr, flush=True)
        return 130
    except KeyboardInterrupt:
        print("interrupted before training started; nothing was written.", file=sys.stderr, flush=True)
        return 130
    except Exception as error:  # noqa: BLE001 - the script's boundary: one readable message, never a raw traceback
        if debug:
            traceback.print_exc()
        text = str(error).strip() or type(error).__name__
        described = None if isinstance(error, DataPipelineFailed) else describe_pipeline_error(text)
        if described is not None:
            text = described
        elif isinstance(error, RuntimeError) and not isinstance(error, (NotImplementedError, DataPipelineFailed)):
            lines = [line for line in text.splitlines() if line.strip() and not line.startswith(("-", "["))]
            text = "\n".join(lines[:6])
            if "mpirun" in text or "MS_WORKER_NUM" in text or "communication" in text.lower():
                text += "\nFix: start distributed runs with msrun (not mpirun), e.g. msrun --worker_num=2 " \
                        "--local_worker_num=2 scripts/train.py --device_num 2"
        print(f"error ({type(error).__name__}): {text}", file=sys.stderr, flush=True)
        if not debug:
            print("(run with --debug true, or COURSE_DEBUG=1, for the full traceback)", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(run_cli(main))
