"""The training run of ``scripts/train.py``: standalone or one rank of an msrun job.

Order of work: the scheduler process of an msrun job only serves the cluster (``cluster.serve_as_scheduler``).
Every worker sets up MindSpore (``init_env``: ``init()``, data-parallel mode), then rank 0 alone takes the
checkpoint folder (lock, ``run_settings.json``, resume), and tells the other ranks whether it succeeded and from
which epoch to continue. Every rank trains on its shard; only rank 0 writes checkpoints. At the end the ranks
compare a digest of their weights, so a run whose ranks drifted apart fails instead of saving one rank's model.
"""
import contextlib
import hashlib
import time

from course_lib.i18n import _
from course_lib.run import cluster, settings
from course_lib.run.cli import DataPipelineFailed, TrainingInterrupted, describe_pipeline_error
from course_lib.run.factory import (
    check_classification_config,
    checkpoint_folder,
    create_dataset,
    create_model,
    create_network,
    create_optimizer,
)


# ------------------------------------------------------------------------------------------ checkpoints
def _read_resumable(path):
    from course_lib.paths import relative
    from course_lib.train.checkpoint import load_checkpoint

    params = load_checkpoint(path)
    if "epoch_num" not in params or "global_step" not in params:
        raise RuntimeError(_("{path} has no epoch_num/global_step entries, so it was not written by "
                             "scripts/train.py and cannot be resumed. Fix: use --checkpoint_path to start from its "
                             "weights instead of --resume.").format(path=relative(path)))
    return params


def _apply_state(path, params, net, optimizer, steps_per_epoch: int) -> int:
    import mindspore as ms

    from course_lib.paths import relative
    from course_lib.train.checkpoint import load_checkpoint

    optimizer_state = {name: value for name, value in params.items()
                       if name == "global_step" or name.startswith("moments.")}
    missing = [p.name for p in optimizer.moments if p.name not in optimizer_state]
    if missing:
        raise ValueError(_("{path} lacks optimizer moments for {missing} … . Fix: resume with the same model and "
                           "optimizer settings it was trained with.").format(path=relative(path), missing=missing[:3]))
    epoch, step = int(params["epoch_num"].asnumpy()), int(params["global_step"].asnumpy()[0])
    if step != epoch * steps_per_epoch:
        raise ValueError(_("{path} was saved after {step} optimizer steps in {epoch} epochs, but this run has "
                           "{steps_per_epoch} steps per epoch, so the learning-rate schedule and data order would "
                           "not continue where they stopped. Fix: resume with the same batch_size, steps_per_epoch "
                           "and data as the interrupted run.").format(
                               path=relative(path), step=step, epoch=epoch, steps_per_epoch=steps_per_epoch))
    load_checkpoint(path, net, strict=True)
    # Not ms.load_param_into_net(optimizer, ...): for the optimizer's own references to the weights it
    # finds no exact name and falls back to stripping the "moments." prefix, loading moments INTO weights.
    for param in list(optimizer.moments) + [optimizer.global_step]:
        param.set_data(ms.Tensor(optimizer_state[param.name].asnumpy(), dtype=param.dtype))
    return epoch


def load_resume_state(folder, prefix: str, net, optimizer, steps_per_epoch: int, manager=None):
    """Load the newest readable checkpoint into ``net`` and ``optimizer``; return ``(epoch, path)``.

    A file that fails to read (truncated, CRC mismatch, no CRC record) is reported, renamed ``*.damaged`` and
    skipped, so a damaged checkpoint is never used and the previous good one is. ``(0, None)``: nothing to resume.
    """
    from course_lib.train.checkpoint import CheckpointManager

    manager = manager or CheckpointManager(folder, prefix, resume=True)
    try:
        params, path = manager.resume_from(_read_resumable)
    except RuntimeError as error:
        raise ValueError(str(error)) from None
    if path is None:
        return 0, None
    return _apply_state(path, params, net, optimizer, steps_per_epoch), path


def load_state_from(path, net, optimizer, steps_per_epoch: int) -> int:
    """Load the checkpoint rank 0 resumed from (other ranks: read only, nothing renamed); return its epoch."""
    return _apply_state(path, _read_resumable(path), net, optimizer, steps_per_epoch)


# ------------------------------------------------------------------------------------------ callbacks
def _checkpoint_callback(manager, steps_per_epoch: int, every: int, last_epoch: int):
    from mindspore.train import Callback

    from course_lib.paths import relative

    class EpochCheckpoint(Callback):
        """Atomic ``<prefix>-<epoch>_<steps>.ckpt`` every ``every`` epochs and after the last one (rank 0 only)."""

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            epoch = cb_params.cur_epoch_num
            if epoch % every and epoch != last_epoch:
                return
            path = manager.save(cb_params.train_network, epoch, steps_per_epoch, append_dict={"epoch_num": epoch})
            print(_("saved {path}").format(path=relative(path)), flush=True)

    return EpochCheckpoint()


def _progress_callbacks(cfg, steps_per_epoch: int, position: dict):
    from mindspore.train import Callback

    from course_lib.train.callbacks import loss_value

    class Progress(Callback):
        """One line per epoch (mean loss, steps, seconds); stops at the first non-finite loss, before any
        checkpoint of that epoch is written; remembers the position for an interruption message."""

        def on_train_epoch_begin(self, run_context):
            self.losses, self.start = [], time.perf_counter()

        def on_train_step_end(self, run_context):
            args = run_context.original_args()
            value = loss_value(args.net_outputs)
            step = (args.cur_step_num - 1) % steps_per_epoch + 1
            position.update(epoch=args.cur_epoch_num, step=step)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(_("the loss became {value} at epoch {cur_epoch_num}, step {step} (global step "
                                   "{cur_step_num}): training diverged, so no checkpoint of this epoch is written. "
                                   "Fix: lower --lr (now {lr}) or --loss_scale, then train again.").format(
                                       value=value, cur_epoch_num=args.cur_epoch_num, step=step,
                                       cur_step_num=args.cur_step_num, lr=cfg.lr))
            self.losses.append(value)

        def on_train_epoch_end(self, run_context):
            epoch = run_context.original_args().cur_epoch_num
            mean = sum(self.losses) / len(self.losses)
            print(_("epoch {epoch}/{epochs}: loss {mean:.4f} ({n_losses} steps, {seconds:.1f} s)").format(
                epoch=epoch, epochs=cfg.epochs, mean=mean, n_losses=len(self.losses),
                seconds=time.perf_counter() - self.start), flush=True)

    return [Progress()]


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

    def stop(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ------------------------------------------------------------------------------------------ ranks
def _all_reduce(values):
    """Sum small float vectors over the ranks (AllReduce of the world group; on CPU it can only sum)."""
    import numpy as np
    from mindspore import Tensor, ops

    return ops.AllReduce()(Tensor(np.asarray(values, np.float32))).asnumpy()


def _all_gather(values):
    """Every rank's small float vector, one row per rank (AllGather of the world group)."""
    import numpy as np
    from mindspore import Tensor, ops

    return ops.AllGather()(Tensor(np.asarray([values], np.float32))).asnumpy()


def weights_digest(net) -> str:
    """sha256 over every parameter's name and bytes: equal digests mean bit-identical weights."""
    digest = hashlib.sha256()
    for name, param in sorted(net.parameters_and_names(), key=lambda item: item[0]):
        digest.update(name.encode())
        digest.update(param.asnumpy().tobytes())
    return digest.hexdigest()


def _check_ranks_identical(net, size: int) -> str:
    digest = weights_digest(net)
    parts = [float(int(digest[i:i + 6], 16)) for i in range(0, 24, 6)]  # 24-bit pieces are exact in float32
    rows = _all_gather(parts)
    if not (rows == rows[0]).all():
        raise RuntimeError(_("the {size} ranks ended with different weights (this rank: sha256 {digest}): data "
                             "parallelism requires every rank to apply the same averaged gradients. Fix: the same "
                             "seed and settings on every rank; check the other ranks' logs for errors.").format(
                                 size=size, digest=digest[:16]))
    return digest


# ------------------------------------------------------------------------------------------ the run
def train(cfg, callbacks=(), argv=()):
    """Train as configured; return the final network (None in msrun's scheduler process)."""
    from course_lib.train.checkpoint import CheckpointManager

    check_classification_config(cfg)
    if cluster.role() == "scheduler":
        cluster.serve_as_scheduler()
        return None

    from course_lib.run.env import init_env

    recorded = settings.run_settings(cfg)  # before init_env writes the resolved device back into cfg
    init_env(cfg)
    rank, size = cfg.rank_id, cfg.device_num
    folder = checkpoint_folder(cfg)
    manager = CheckpointManager(folder, cfg.model, keep=cfg.keep_checkpoint_max, resume=cfg.resume,
                                overwrite=cfg.overwrite)
    with contextlib.ExitStack() as stack:
        dataset = create_dataset(cfg, train=True)
        steps_per_epoch = dataset.get_dataset_size()
        net = create_network(cfg)
        optimizer = create_optimizer(cfg, net, steps_per_epoch)
        failure, initial_epoch, path = None, 0, None
        if rank == 0:
            try:
                stack.enter_context(manager)  # lock; refuses a busy folder or another run's checkpoints
                stack.enter_context(cluster.rank_logging(folder, rank, size, argv))
                initial_epoch, path = _prepare_folder(cfg, manager, recorded, net, optimizer, steps_per_epoch)
            except Exception as error:  # noqa: BLE001 - re-raised below, after the other ranks were told
                failure = error
        if size > 1:  # rank 0 tells the others whether it could start, and from which epoch
            status, initial_epoch = (int(v) for v in _all_reduce([failure is not None, initial_epoch]))
            if rank != 0:
                if status:  # nothing written: the folder may belong to another run
                    raise RuntimeError(_("rank 0 could not start the run, so rank {rank} stops too; rank 0's error "
                                         "is in its output (msrun's worker_0.log). Fix that error and start the "
                                         "job again.").format(rank=rank))
                stack.enter_context(cluster.rank_logging(folder, rank, size, argv))
                if initial_epoch:
                    path = manager.path_for(initial_epoch, steps_per_epoch)
                    load_state_from(path, net, optimizer, steps_per_epoch)
        if failure is not None:
            raise failure
        return _fit(cfg, manager, dataset, net, optimizer, steps_per_epoch, initial_epoch, rank, size, callbacks)


def _prepare_folder(cfg, manager, recorded, net, optimizer, steps_per_epoch):
    """Rank 0, folder locked: check or write run_settings.json, resume, load initial weights."""
    from course_lib.paths import relative
    from course_lib.train.checkpoint import load_checkpoint

    folder, prefix = manager.folder, manager.prefix
    changes = []
    if cfg.resume and manager.checkpoints():
        changes = settings.check_resume(folder, recorded, cfg.resume_with_changes)
        for key, old, new in changes:
            print(_("resume with changes: {key} {old!r} -> {new!r}").format(key=key, old=old, new=new), flush=True)
    initial_epoch, path = 0, None
    if cfg.resume:
        initial_epoch, path = load_resume_state(folder, prefix, net, optimizer, steps_per_epoch, manager)
        if path is None:
            print(_("resume: no checkpoint {prefix}-*.ckpt in {folder}; starting from epoch 1").format(
                prefix=prefix, folder=relative(folder)), flush=True)
        else:
            print(_("resume: {path} (epoch {initial_epoch}, optimizer step {step})").format(
                path=relative(path), initial_epoch=initial_epoch, step=int(optimizer.global_step.asnumpy()[0])),
                flush=True)
    if initial_epoch == 0 and cfg.checkpoint_path:  # a fresh start (or nothing to resume): initial weights
        load_checkpoint(cfg.checkpoint_path, net, strict=True)
        print(_("initial weights: {checkpoint_path}").format(checkpoint_path=relative(cfg.checkpoint_path)), flush=True)
    settings.write(folder, recorded, changes)  # after a successful resume: a refused one leaves the record as it was
    return initial_epoch, path


def _fit(cfg, manager, dataset, net, optimizer, steps_per_epoch, initial_epoch, rank, size, callbacks):
    from course_lib.paths import relative

    if initial_epoch >= cfg.epochs:
        print(_("already trained for {initial_epoch} epochs (epochs = {epochs}); nothing to do").format(
            initial_epoch=initial_epoch, epochs=cfg.epochs), flush=True)
        return net
    if initial_epoch == 0 and cfg.checkpoint_path and rank != 0:
        from course_lib.train.checkpoint import load_checkpoint

        load_checkpoint(cfg.checkpoint_path, net, strict=True)
    # Same shuffling as an uninterrupted run: the pipeline skips ahead to the first step of initial_epoch.
    if initial_epoch:
        dataset.set_init_step(initial_epoch * steps_per_epoch)
    print(_("train {model} on {dataset}: {steps_per_epoch} steps/epoch x {epochs} epochs, batch {batch_size}, "
            "image {image_size}, {context_mode} mode").format(
                model=cfg.model, dataset=cfg.dataset, steps_per_epoch=steps_per_epoch, epochs=cfg.epochs,
                batch_size=cfg.batch_size, image_size=cfg.image_size, context_mode=cfg.context_mode), flush=True)
    model = create_model(cfg, net, optimizer)
    position = {"epoch": initial_epoch, "step": 0}
    run_callbacks = _progress_callbacks(cfg, steps_per_epoch, position)
    if rank == 0:
        run_callbacks.append(_checkpoint_callback(manager, steps_per_epoch, cfg.save_checkpoint_epochs, cfg.epochs))
    try:
        with _sigterm_as_interrupt():
            model.train(cfg.epochs, dataset, callbacks=run_callbacks + list(callbacks), dataset_sink_mode=False,
                        initial_epoch=initial_epoch)
    except RuntimeError as error:
        epoch, done = position["epoch"] or initial_epoch + 1, position["step"]  # MindData reads ahead: approximate
        if done >= steps_per_epoch:
            epoch, done = epoch + 1, 0
        described = describe_pipeline_error(
            str(error), _("during epoch {epoch} (after {done} finished steps)").format(epoch=epoch, done=done))
        if described is None:
            raise
        raise DataPipelineFailed(described) from error
    except KeyboardInterrupt:
        last = manager.checkpoints()
        raise TrainingInterrupted(
            _("interrupted at epoch {epoch}, step {step}; last checkpoint: {last}. Resume with: "
              "scripts/train.py ... --checkpoint_dir {folder} --resume").format(
                  epoch=position['epoch'], step=position['step'],
                  last=relative(last[0]) if last else 'none',
                  folder=relative(manager.folder))) from None
    if size > 1:
        digest = _check_ranks_identical(net, size)
        print(_("all {size} ranks end with identical weights (sha256 {digest})").format(
            size=size, digest=digest[:16]), flush=True)
    return net
