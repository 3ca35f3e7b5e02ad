"""Callbacks for ``mindspore.train.Model``: a progress bar, a loss/metric recorder, evaluate-while-training.

All three override only the ``on_train_*`` / ``on_eval_*`` hooks: in MindSpore 2.10 a custom callback that
defines the old ``begin``/``epoch_end``/``step_end`` names gets a "may not be supported in later version"
warning from ``Model.train`` and a ``ValueError`` from ``Model.fit`` (``Model._check_methods_for_custom_callbacks``).
They need only MindSpore, numpy, tqdm (pinned in requirements.txt) and ``course_lib.train.checkpoint``
(``EvalCallback``'s atomic save). The recorder is ``LossRecorder``, not ``History``, so that it does not shadow
MindSpore's own ``mindspore.train.History`` callback.
"""
import math
import numbers
import sys
from pathlib import Path

import numpy as np
from mindspore import Tensor
from mindspore.dataset import Dataset
from mindspore.train import Callback, Model
from tqdm import tqdm

from course_lib.i18n import _
from course_lib.train.checkpoint import save_checkpoint
from course_lib.validation import check_bool, check_choice, check_int, check_path, check_str, check_type, wrong_type

__all__ = ["ProgressBar", "LossRecorder", "EvalCallback", "loss_value", "EVAL_MODES"]

#: ``EvalCallback(mode=...)``: keep the checkpoint with the highest ("max", e.g. accuracy) or lowest ("min",
#: e.g. a loss) score.
EVAL_MODES = ("max", "min")


def loss_value(net_outputs) -> float | None:
    """The scalar loss in ``cb_params.net_outputs``: a Tensor, or the first item of a tuple such as
    ``(loss, overflow, scale)`` from ``TrainOneStepWithLossScaleCell``; ``None`` if there is none."""
    if isinstance(net_outputs, (tuple, list)):
        if not net_outputs:
            return None
        net_outputs = net_outputs[0]
    if isinstance(net_outputs, Tensor):
        net_outputs = net_outputs.asnumpy()
    if isinstance(net_outputs, (np.ndarray, numbers.Number)):
        return float(np.mean(net_outputs))
    return None


def _write(line: str, file=None) -> None:
    """Print ``line`` without breaking an open tqdm bar."""
    tqdm.write(line, file=file or sys.stdout)


def _step_in_epoch(cb_params) -> int:
    """1-based step inside the current epoch (``cur_step_num`` counts from the start of the run)."""
    return (cb_params.cur_step_num - 1) % cb_params.batch_num + 1


class ProgressBar(Callback):
    """A text progress bar (tqdm) over the steps of each epoch
    (``per_epoch=True``) or of the whole run, showing the loss.

    Works with ``Model.train``/``Model.fit`` (and shows a bar over the eval steps in ``Model.eval``). Text bars
    (not widgets) so they survive in saved notebooks; written to ``file`` (stdout by default, like print).
    """

    def __init__(self, desc: str | None = None, per_epoch: bool = True, file=None, show_eval: bool = True):
        super().__init__()
        desc = check_str("desc", desc, _("e.g. ProgressBar(desc='LeNet')"), none_ok=True, empty_ok=True)
        per_epoch = check_bool("per_epoch", per_epoch)
        show_eval = check_bool("show_eval", show_eval)
        self.desc = desc
        self.per_epoch = per_epoch
        self.file = file
        self.show_eval = show_eval
        self._bar = None
        self._first_step = 0
        self._first_epoch = None
        self._eval_bar = False

    def _open(self, total: int, desc: str):
        self._close()
        prefix = f"{self.desc} " if self.desc else ""
        self._bar = tqdm(total=total, desc=prefix + desc, file=self.file or sys.stdout, leave=True,
                         dynamic_ncols=False, ncols=100, mininterval=0.5)

    def _close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _advance_to(self, position: int, loss: float | None):
        if self._bar is None:
            return
        if loss is not None:
            self._bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        self._bar.update(max(0, position - self._bar.n))

    def on_train_begin(self, run_context):
        cb_params = run_context.original_args()
        self._first_step = cb_params.cur_step_num
        self._first_epoch = None
        if not self.per_epoch:
            self._open(cb_params.batch_num * cb_params.epoch_num, f"train {cb_params.epoch_num} epochs")

    def on_train_epoch_begin(self, run_context):
        cb_params = run_context.original_args()
        if self._first_epoch is None:  # > 1 when resuming with Model.train(initial_epoch=...)
            self._first_epoch = cb_params.cur_epoch_num
        if self.per_epoch:
            last_epoch = self._first_epoch - 1 + cb_params.epoch_num
            self._open(cb_params.batch_num, f"epoch {cb_params.cur_epoch_num}/{last_epoch}")

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        if self.per_epoch:
            position = _step_in_epoch(cb_params)
        else:
            position = cb_params.cur_step_num - self._first_step
        self._advance_to(position, loss_value(cb_params.net_outputs))

    def on_train_epoch_end(self, run_context):
        if self.per_epoch:
            self._close()

    def on_train_end(self, run_context):
        self._close()

    # Model.eval: a bar over the eval steps. During Model.fit's validation a training bar is still open;
    # then no second bar is drawn.
    def on_eval_begin(self, run_context):
        self._eval_bar = self.show_eval and self._bar is None
        if self._eval_bar:
            self._open(run_context.original_args().batch_num, "eval")

    def on_eval_step_end(self, run_context):
        if self._eval_bar:
            self._advance_to(run_context.original_args().cur_step_num, None)

    def on_eval_end(self, run_context):
        if self._eval_bar:
            self._close()
            self._eval_bar = False

    def __exit__(self, *exc):
        self._close()


class LossRecorder(Callback):
    """Records the loss of every step, the mean loss of every epoch, and named metrics per epoch.

    (Named so as not to shadow ``mindspore.train.History``, which keeps only per-epoch ``net_output`` and metrics.)

    ``step_loss``: list of floats; ``epochs`` / ``epoch_loss``: epoch numbers and mean losses;
    ``metrics``: ``{name: [(epoch, value), ...]}``, filled by ``record`` (``EvalCallback`` calls it) and by
    ``Model.fit``'s validation results. Epoch numbers keep counting across several ``Model.train`` calls.
    ``course_lib.lab.plotting.plot_history`` draws it.
    """

    def __init__(self):
        super().__init__()
        self.reset()

    def reset(self):
        """Forget everything recorded so far."""
        self.step_loss: list[float] = []
        self.epochs: list[int] = []
        self.epoch_loss: list[float] = []
        self.metrics: dict[str, list[tuple[int, float]]] = {}
        self.steps_per_epoch: int | None = None
        self.current_epoch = 0
        self._epoch_offset = 0
        self._epoch_steps: list[float] = []

    def record(self, name: str, value, epoch: int | None = None):
        """Add ``value`` of metric ``name`` for ``epoch`` (default: the epoch being trained)."""
        check_str("metric name", name, _("e.g. 'accuracy'"))
        number = loss_value(value) if isinstance(value, Tensor) else value
        try:
            number = float(number)
        except (TypeError, ValueError):
            raise wrong_type(f"metric {name!r}", value, _("a number"), _("record a float such as 0.98")) from None
        self.metrics.setdefault(name, []).append((self.current_epoch if epoch is None else int(epoch), number))

    def as_dict(self) -> dict:
        """Everything recorded, as plain Python lists (JSON-serialisable)."""
        return {
            "step_loss": list(self.step_loss),
            "epochs": list(self.epochs),
            "epoch_loss": list(self.epoch_loss),
            "metrics": {name: list(points) for name, points in self.metrics.items()},
            "steps_per_epoch": self.steps_per_epoch,
        }

    def on_train_begin(self, run_context):
        self._epoch_offset = None  # decided at the first epoch of this run

    def on_train_epoch_begin(self, run_context):
        cb_params = run_context.original_args()
        if self._epoch_offset is None:
            # A fresh Model.train restarts cur_epoch_num at 1; resuming with initial_epoch continues it.
            last = self.epochs[-1] if self.epochs else 0
            self._epoch_offset = last if cb_params.cur_epoch_num <= last else 0
        self.current_epoch = cb_params.cur_epoch_num + self._epoch_offset
        self.steps_per_epoch = cb_params.batch_num
        self._epoch_steps = []

    def on_train_step_end(self, run_context):
        loss = loss_value(run_context.original_args().net_outputs)
        if loss is not None:
            self.step_loss.append(loss)
            self._epoch_steps.append(loss)

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        self.epochs.append(self.current_epoch)
        self.epoch_loss.append(float(np.mean(self._epoch_steps)) if self._epoch_steps else math.nan)
        # Model.fit(valid_dataset=...) leaves its validation results here for this hook only.
        results = cb_params.get("eval_results") or cb_params.get("metrics") or {}
        for name, value in results.items():
            self.record(name, value)


class EvalCallback(Callback):
    """Evaluate while training: every ``every`` epochs (and after the last one) run ``model.eval``, print and
    record ``metric_name``, and keep the best-scoring network in ``best_ckpt_path`` (written atomically).

    Modern form of the blog post's ``EvaluateCallBack``. Results: ``scores`` ([(epoch, value)]), ``best_score``,
    ``best_epoch``. ``mode="max"`` for accuracy-like metrics, ``"min"`` for losses. ``history``: any object with
    ``record(name, value)``, e.g. a ``LossRecorder``. Needs only MindSpore, numpy, ``course_lib.train.checkpoint``
    and layer 0 (``course_lib.validation``, ``course_lib.i18n``).

    Taught in lesson 03 (notebooks/03_model_train_eval.ipynb).
    Copies held equal by tests/test_technique_agreement.py: the lesson's ``KeepBestCheckpoint``,
    recipes/best_checkpoint_callback.py.
    """

    def __init__(self, model, eval_dataset, metric_name, every=1, best_ckpt_path=None, mode="max",
                 history=None, verbose=True):
        super().__init__()
        check_type("model", model, Model, _("a mindspore.train.Model"),
                   _("model = Model(net, loss_fn, optimizer, metrics={'accuracy'})"))
        check_type("eval_dataset", eval_dataset, Dataset, _("a mindspore.dataset pipeline"),
                   _("e.g. course_lib.data.datasets.create_mnist_dataset(train=False)"))
        every = check_int("every", every, 1, fix=_("every=1 evaluates after every epoch"))
        check_choice("mode", mode, EVAL_MODES, _("'max' for accuracy-like metrics, 'min' for losses"))
        if history is not None and not callable(getattr(history, "record", None)):
            raise wrong_type("history", history, _("an object with a record(name, value) method, or None"),
                             _("e.g. a course_lib.train.callbacks.LossRecorder()"))
        best_ckpt_path = check_path("best_ckpt_path", best_ckpt_path, _("e.g. outputs/best.ckpt"), none_ok=True)
        if best_ckpt_path is not None and best_ckpt_path.suffix != ".ckpt":
            raise ValueError(_("best_ckpt_path must name a .ckpt file, got {name!r}. Fix: e.g. "
                               "outputs/best.ckpt.").format(
                name=best_ckpt_path.name))
        # Model keeps its metrics in a private dict; checking now beats failing after a whole epoch.
        available = sorted(getattr(model, "_metric_fns", None) or {})
        if not available:
            raise ValueError(
                _("model has no metrics, so model.eval cannot score it. Fix: build it with metrics, e.g. "
                  "Model(net, loss_fn, optimizer, metrics={'accuracy'}).")
            )
        check_choice("metric_name", metric_name, available,
                     _("pass one of those names, or add the metric to Model(..., metrics=...)"))
        self.model = model
        self.eval_dataset = eval_dataset
        self.metric_name = metric_name
        self.every = every
        self.best_ckpt_path = None if best_ckpt_path is None else Path(best_ckpt_path)
        self.mode = mode
        self.history = history
        self.verbose = verbose
        self.scores: list[tuple[int, float]] = []
        #: Every metric of each evaluation: [(epoch, {name: value})], e.g. the loss next to the mIoU.
        self.results: list[tuple[int, dict]] = []
        self._last_results: dict | None = None
        self.best_score: float | None = None
        self.best_epoch: int | None = None
        self._epochs_done = 0

    def _is_better(self, score: float) -> bool:
        if self.best_score is None:
            return True
        return score > self.best_score if self.mode == "max" else score < self.best_score

    def evaluate(self) -> float:
        """Run ``model.eval`` on the eval set and return the score of ``metric_name``."""
        results = self.model.eval(self.eval_dataset, dataset_sink_mode=False)
        self._last_results = {name: float(value) for name, value in results.items()}
        if self.metric_name not in results:
            raise ValueError(
                _("model.eval returned {results}, without {metric_name!r}. Fix: pass one of the returned names as "
                  "metric_name.").format(results=sorted(results), metric_name=self.metric_name)
            )
        return float(results[self.metric_name])

    def on_train_begin(self, run_context):
        self._epochs_done = 0

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        self._epochs_done += 1
        epoch = cb_params.cur_epoch_num
        is_last = self._epochs_done >= cb_params.epoch_num
        if epoch % self.every != 0 and not is_last:
            return
        score = self.evaluate()
        if self.history is not None:
            self.history.record(self.metric_name, score)
        self.scores.append((epoch, score))
        self.results.append((epoch, self._last_results or {self.metric_name: score}))
        self._last_results = None
        improved = self._is_better(score)
        if improved:
            self.best_score, self.best_epoch = score, epoch
            if self.best_ckpt_path is not None:
                save_checkpoint(cb_params.network, self.best_ckpt_path,
                                append_dict={"epoch": epoch, self.metric_name: score})
        if self.verbose:
            note = _("new best") if improved else _("best {score:.4f} at epoch {epoch}").format(
                score=self.best_score, epoch=self.best_epoch)
            if improved and self.best_ckpt_path is not None:
                note = _("new best, saved {path}").format(path=self.best_ckpt_path.name)
            _write(_("epoch {epoch}: {metric} = {score:.4f} ({note})").format(
                epoch=epoch, metric=self.metric_name, score=score, note=note))

