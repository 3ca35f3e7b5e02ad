"""A functional training loop (the ``Trainer`` of the migration guide's "Training and Inference Process", r2.3)
in MindSpore 2.10 spelling.

One train step: ``ms.value_and_grad(forward_fn, None, weights, has_aux=True)`` -> unscale the loss and the
gradients (``mindspore.amp.StaticLossScaler``'s arithmetic, with plain ops) -> reduce them across devices
(``nn.DistributedGradReducer`` in data-parallel runs, ``nn.Identity`` otherwise) -> update only if every
gradient is finite (``all_finite``). The finiteness check is on when a loss scale above 1 is used (mixed precision:
an overflowing step is skipped) or when asked for (``overflow_check=True``); without it the step is just
``value_and_grad`` + optimizer, and a non-finite loss stops training with an error instead.
The step runs under ``@ms.jit`` (a compiled graph) or eagerly in PyNative mode (``jit=False``).
``train(epochs)`` adds a text progress bar, a loss history and per-epoch evaluation that keeps ``best.ckpt``.
"""
import math
import sys
import time
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn, ops
from mindspore.amp import all_finite
from mindspore.dataset import Dataset
from mindspore.train import Metric
from tqdm import tqdm

from course_lib.i18n import _
from course_lib.paths import relative
from course_lib.train.callbacks import LossRecorder
from course_lib.train.checkpoint import save_checkpoint
from course_lib.validation import (
    check_bool,
    check_int,
    check_path,
    check_real,
    check_str,
    check_together,
    check_type,
    wrong_type,
)

__all__ = ["Trainer", "get_grad_reducer", "MAX_LOSS_SCALE", "REDUCING_PARALLEL_MODES", "BEST_CHECKPOINT_NAME"]

#: Largest accepted loss scale. Gradients are unscaled by multiplying with ``1 / loss_scale`` in float32;
#: above 2**126 that factor is a subnormal number, which MindSpore's CPU kernels flush to 0 (measured: with
#: 1e38 every unscaled gradient is exactly 0 and ``all_finite`` still says True, so nothing is learnt silently).
MAX_LOSS_SCALE = 2.0 ** 126

#: Parallel modes in which gradients must be all-reduced across devices (the rule ``nn.TrainOneStepCell`` uses).
REDUCING_PARALLEL_MODES = (ms.ParallelMode.DATA_PARALLEL, ms.ParallelMode.HYBRID_PARALLEL)

#: File name of the best checkpoint inside ``checkpoint_dir``.
BEST_CHECKPOINT_NAME = "best.ckpt"


def get_grad_reducer(weights):
    """``nn.Identity()`` on a single device; ``nn.DistributedGradReducer(weights)`` in a data-parallel run.

    (The migration guide returns ``ops.identity``, deprecated since 2.0: it logs a warning on every call in PyNative.)

    The reducer all-reduces (sums, then averages if ``gradients_mean``) each gradient over the devices, so
    every device applies the same update. It needs ``mindspore.communication.init()`` to have run.
    """
    parallel_mode = ms.get_auto_parallel_context("parallel_mode")
    if parallel_mode in REDUCING_PARALLEL_MODES:
        return nn.DistributedGradReducer(weights)
    return nn.Identity()


def _check_loss_scale(loss_scale):
    return check_real("loss_scale", loss_scale, 1.0, MAX_LOSS_SCALE, fix=_(
        "use a power of two such as 1024.0 (1.0 = no scaling). Below 1 the loss would shrink (StaticLossScaler "
        "rejects it); above 2**126, 1/loss_scale is a subnormal float32 that the CPU flushes to 0, zeroing every "
        "gradient"))


def _check_dataset(name, dataset, columns):
    check_type(name, dataset, Dataset, _("a mindspore.dataset pipeline"),
               _("e.g. course_lib.data.datasets.create_mnist_dataset(train=True)"))
    missing = [column for column in columns if column not in dataset.get_col_names()]
    if missing:
        raise ValueError(_("{name} has columns {columns}, without {missing}. Fix: pass "
                           "columns=(input_column, label_column) naming the dataset's columns.").format(
            name=name, columns=dataset.get_col_names(), missing=missing))
    size = dataset.get_dataset_size()
    if size < 1:
        raise ValueError(_("{name} has no batches (get_dataset_size() = {size}). Fix: use a smaller batch_size or "
                           "drop_remainder=False.").format(name=name, size=size))
    return size


class Trainer:
    """Train ``net`` with one or more losses, a loss scale and an overflow guard; evaluate and keep the best.

    ``loss_fn``: one loss ``Cell``/callable ``(logits, labels) -> scalar`` or a list/tuple of them; the
    gradient is taken of their sum, and each part is reported (the migration guide trains with ``loss1 + loss2``).
    With ``jit=True`` every loss must compile: a Cell, or a function defined with ``def`` (``ms.jit`` cannot parse
    a ``lambda`` written inline next to other code, e.g. inside the list).
    ``eval_dataset`` and ``metric`` (a ``mindspore.train.Metric`` such as ``Accuracy()``) go together: after
    every epoch the metric is computed on the eval set, recorded as ``metric_name`` and, if ``checkpoint_dir``
    is given, the best network so far is written to ``checkpoint_dir/best.ckpt`` (atomically; a later epoch
    replaces it only with a strictly higher score).
    ``jit=True`` compiles the train step with ``ms.jit``; ``jit=False`` runs it eagerly (PyNative).
    ``overflow_check``: skip an update whose gradients hold inf/NaN (``mindspore.amp.all_finite``), as
    ``nn.TrainOneStepWithLossScaleCell`` does. ``None`` (default) turns it on exactly when ``loss_scale > 1``.
    It is not free: MindSpore 2.10's CPU ``AllFinite`` reads every gradient on one core (measured in
    benchmarks/: about a fifth of a ResNet-18 step). Without it, a step whose loss is not finite raises
    ``FloatingPointError`` (its update has already been applied), so a diverging run never goes on silently.

    After ``train``: ``history`` (a ``course_lib.train.callbacks.LossRecorder``: ``step_loss``, ``epoch_loss``,
    ``metrics``), ``skipped_steps`` (updates dropped because a gradient was inf/NaN; with ``overflow_check``),
    ``step_seconds`` (wall time of every train step, loss read-back included, data loading excluded; the first
    one includes the ``jit`` compilation), ``epoch_seconds`` (training time per epoch, evaluation excluded),
    ``best_metric``, ``best_epoch``, ``best_checkpoint``.

    Taught in lesson 06 (notebooks/06_functional_training.ipynb).
    Taught in lesson A5 (notebooks/A5_mixed_precision_and_schedules.ipynb).
    Copies held equal by tests/test_technique_agreement.py: lesson 06's ``make_train_step``, lesson A5's
    ``GuideTrainer`` (the migration guide's code), recipes/functional_train_step.py.
    """

    def __init__(self, net, loss_fn, optimizer, train_dataset, *, eval_dataset=None, metric=None,
                 metric_name="accuracy", loss_scale=1.0, jit=True, checkpoint_dir=None, progress=True,
                 columns=("image", "label"), overflow_check=None):
        check_type("net", net, nn.Cell, _("a mindspore.nn.Cell"), _("e.g. course_lib.models.lenet5()"))
        self.loss_fns = self._check_loss_fns(loss_fn)
        check_type("optimizer", optimizer, nn.Optimizer, _("a mindspore.nn.Optimizer"),
                   _("e.g. nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)"))
        net_param_ids = {id(param) for param in net.trainable_params()}
        foreign = [param.name for param in optimizer.parameters if id(param) not in net_param_ids]
        if foreign:
            raise ValueError(_("optimizer updates parameters that are not trainable parameters of net: "
                               "{names}. Fix: build the optimizer from this network, e.g. "
                               "nn.Momentum(net.trainable_params(), ...).").format(names=foreign[:5]))
        if (isinstance(columns, str) or not isinstance(columns, (tuple, list)) or len(columns) != 2
                or not all(isinstance(column, str) for column in columns)):
            raise wrong_type("columns", columns, _("a pair of column names (input, label)"),
                             _("e.g. columns=('image', 'label')"))
        self.columns = tuple(columns)
        self.steps_per_epoch = _check_dataset("train_dataset", train_dataset, self.columns)
        check_together("eval_dataset", eval_dataset, "metric", metric,
                       _("e.g. eval_dataset=create_mnist_dataset(train=False), metric=mindspore.train.Accuracy(), "
                         "to evaluate after every epoch"))
        if eval_dataset is not None:
            _check_dataset("eval_dataset", eval_dataset, self.columns)
            check_type("metric", metric, Metric, _("a mindspore.train.Metric"), _("e.g. mindspore.train.Accuracy()"))
        check_str("metric_name", metric_name, _("e.g. 'accuracy'"))
        checkpoint_dir = check_path("checkpoint_dir", checkpoint_dir, _("e.g. course_lib.paths.lesson_dir('06')"),
                                    none_ok=True)
        jit = check_bool("jit", jit)
        progress = check_bool("progress", progress)
        if overflow_check is not None:
            overflow_check = check_bool("overflow_check", overflow_check)

        self.net = net
        self.optimizer = optimizer
        self.train_dataset = train_dataset
        self.eval_dataset = eval_dataset
        self.metric = metric
        self.metric_name = metric_name
        self.loss_scale = _check_loss_scale(loss_scale)
        # Not mindspore.amp.StaticLossScaler: its scale/unscale call module-level @jit functions with the scale
        # Parameter as an argument, and their compile cache is keyed by id(Parameter). After a Trainer is
        # garbage-collected, a new Trainer's Parameter can get the same id, hit the old compiled graph and
        # unscale the gradients with the *old* trainer's scale (measured: loss scale 2**20 applied, gradients
        # divided by 1). A plain Tensor and ordinary ops have no such cache.
        self.scale_value = ms.Tensor(self.loss_scale, ms.float32)
        self.overflow_check = self.loss_scale > 1.0 if overflow_check is None else overflow_check
        self.jit = jit
        self.progress = progress
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.weights = optimizer.parameters
        # The first output of forward_fn is differentiated; has_aux=True returns the others without gradient.
        self.value_and_grad = ms.value_and_grad(self.forward_fn, None, weights=self.weights, has_aux=True)
        self.grad_reducer = get_grad_reducer(self.weights)
        step = self._checked_step if self.overflow_check else self._unchecked_step
        self._step = ms.jit(step) if jit else step

        self.history = LossRecorder()
        self.skipped_steps = 0
        self.global_step = 0
        self.epochs_done = 0
        self.step_seconds = []
        self.epoch_seconds = []
        self.best_metric = None
        self.best_epoch = None
        self.best_checkpoint = None

    @staticmethod
    def _check_loss_fns(loss_fn):
        loss_fns = tuple(loss_fn) if isinstance(loss_fn, (list, tuple)) else (loss_fn,)
        if not loss_fns:
            raise ValueError(_("loss_fn is an empty list. Fix: pass at least one loss, e.g. nn.CrossEntropyLoss()."))
        for index, fn in enumerate(loss_fns):
            if not callable(fn):
                raise wrong_type(f"loss_fn[{index}]", fn, _("a loss Cell or callable (logits, labels) -> loss"),
                                 _("e.g. nn.CrossEntropyLoss()"))
        return loss_fns

    @property
    def loss_names(self):
        """``("loss",)`` for one loss, ``("loss1", "loss2", ...)`` for several."""
        if len(self.loss_fns) == 1:
            return ("loss",)
        return tuple(f"loss{index + 1}" for index in range(len(self.loss_fns)))

    def forward_fn(self, inputs, labels, scale):
        """Forward pass: ``(total loss * scale, (each loss unscaled))``; the scaled total is differentiated."""
        logits = self.net(inputs)
        losses = tuple(loss_fn(logits, labels) for loss_fn in self.loss_fns)
        total = losses[0]
        for loss in losses[1:]:
            total = total + loss
        return self.scale(total, scale), losses

    @staticmethod
    def scale(value, scale):
        """``value * scale``, multiplied in float32 (a float16 value overflows to inf, as it should)."""
        return (value.astype(ms.float32) * scale).astype(value.dtype)

    @staticmethod
    def unscale(values, scale):
        """Each tensor of the tuple ``values`` times ``1 / scale`` computed in float32, as
        ``StaticLossScaler.unscale`` does (so above ``MAX_LOSS_SCALE`` the factor flushes to 0)."""
        inverse = ops.reciprocal(scale)
        return tuple([value * inverse.astype(value.dtype) for value in values])

    def train_step(self, inputs, labels):
        """One update; returns ``(total loss, losses, finite)``. With ``overflow_check``, ``finite`` is False when
        the update was skipped; without it, ``finite`` says whether the loss is finite (the update was applied)."""
        # The scale is an input of the step, not a constant or Parameter of it: nothing compiled can keep an
        # old value, and graph compilation does not constant-fold an overflowing cast.
        return self._step(inputs, labels, self.scale_value)

    def _loss_and_grads(self, inputs, labels, scale):
        """The unscaled total loss, each loss, and the gradients unscaled and reduced across devices."""
        (loss, losses), grads = self.value_and_grad(inputs, labels, scale)
        if self.loss_scale != 1.0:  # a Python float, fixed when the Trainer was made: no graph control flow
            loss = self.unscale((loss,), scale)[0]
            grads = self.unscale(grads, scale)
        # Reduced before any check: an overflow on any device then reaches every device, and all skip together.
        return loss, losses, self.grad_reducer(grads)

    def _unchecked_step(self, inputs, labels, scale):
        loss, losses, grads = self._loss_and_grads(inputs, labels, scale)
        loss = ops.depend(loss, self.optimizer(grads))
        return loss, losses, ops.isfinite(loss)

    def _checked_step(self, inputs, labels, scale):
        loss, losses, grads = self._loss_and_grads(inputs, labels, scale)
        finite = all_finite(grads)
        if finite:  # a Tensor condition: compiled to graph control flow under ms.jit, a Python bool otherwise
            # as nn.TrainOneStepWithLossScaleCell does: depend ties the update to the returned loss
            loss = ops.depend(loss, self.optimizer(grads))
        return loss, losses, finite

    def evaluate(self):
        """Score the network on ``eval_dataset`` with ``metric``; returns a float (network left in train mode)."""
        if self.eval_dataset is None:
            raise ValueError(_("This Trainer has no eval_dataset/metric. Fix: pass both to Trainer(...)."))
        self.net.set_train(False)
        self.metric.clear()
        image_column, label_column = self.columns
        for batch in self.eval_dataset.create_dict_iterator(num_epochs=1):
            self.metric.update(self.net(batch[image_column]), batch[label_column])
        self.net.set_train(True)
        return float(self.metric.eval())

    def _log(self, text):
        if self.progress:
            tqdm.write(text, file=sys.stdout)

    def _keep_if_best(self, epoch, score):
        if self.best_metric is not None and score <= self.best_metric:
            return _("best {score:.4f} at epoch {epoch}").format(score=self.best_metric, epoch=self.best_epoch)
        self.best_metric, self.best_epoch = score, epoch
        if self.checkpoint_dir is None:
            return _("new best")
        self.best_checkpoint = save_checkpoint(self.net, self.checkpoint_dir / BEST_CHECKPOINT_NAME,
                                               append_dict={"epoch": epoch, self.metric_name: score})
        return _("new best, saved {path}").format(path=relative(self.best_checkpoint))

    def train(self, epochs):
        """Train for ``epochs`` more epochs; evaluate after each one if an eval set was given. Returns ``history``."""
        epochs = check_int("epochs", epochs, 1, fix=_("e.g. trainer.train(3)"))
        image_column, label_column = self.columns
        history = self.history
        history.steps_per_epoch = self.steps_per_epoch
        iterator = self.train_dataset.create_dict_iterator(num_epochs=int(epochs))
        self.net.set_train(True)
        for _epoch in range(int(epochs)):
            epoch = self.epochs_done + 1
            history.current_epoch = epoch
            epoch_losses = []
            part_sums = np.zeros(len(self.loss_fns))
            start = time.perf_counter()
            bar = tqdm(total=self.steps_per_epoch, desc=f"epoch {epoch}", file=sys.stdout, ncols=100,
                       mininterval=0.5, disable=not self.progress)
            for batch in iterator:
                step_start = time.perf_counter()
                loss, losses, finite = self.train_step(batch[image_column], batch[label_column])
                loss_value = float(loss.asnumpy())
                part_sums += [float(part.asnumpy()) for part in losses]
                self.step_seconds.append(time.perf_counter() - step_start)
                epoch_losses.append(loss_value)
                history.step_loss.append(loss_value)
                self.global_step += 1
                if not bool(finite):
                    if not self.overflow_check:
                        raise FloatingPointError(
                            _("step {global_step} (epoch {epoch}): the training loss is {loss_value}, and this "
                              "step's update has been applied, so the weights may now hold inf/NaN. Fix: lower the "
                              "learning rate, check the data for inf/NaN, or pass overflow_check=True to skip "
                              "updates whose gradients are not finite.").format(
                            global_step=self.global_step, epoch=epoch, loss_value=loss_value))
                    self.skipped_steps += 1
                bar.set_postfix(loss=f"{loss_value:.4f}", skipped=self.skipped_steps, refresh=False)
                bar.update(1)
            bar.close()
            self.epoch_seconds.append(time.perf_counter() - start)
            self.epochs_done = epoch
            history.epochs.append(epoch)
            history.epoch_loss.append(float(np.mean(epoch_losses)) if epoch_losses else math.nan)
            summary = _("epoch {epoch}: loss {loss:.4f}").format(epoch=epoch, loss=history.epoch_loss[-1])
            if len(self.loss_fns) > 1:
                for name, part_sum in zip(self.loss_names, part_sums):
                    history.record(name, part_sum / max(len(epoch_losses), 1), epoch)
                    summary += f", {name} {part_sum / max(len(epoch_losses), 1):.4f}"
            if self.eval_dataset is not None:
                score = self.evaluate()
                history.record(self.metric_name, score, epoch)
                summary += f", {self.metric_name} {score:.4f} ({self._keep_if_best(epoch, score)})"
            self._log(summary)
        return history
