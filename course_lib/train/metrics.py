"""Segmentation metric for ``Model.eval``: mean intersection-over-union (mIoU) from a confusion matrix.

The blog post wraps ``nn.ConfusionMatrix`` and casts with ``np.int`` (removed in NumPy 1.24); this version counts
the confusion matrix itself with one ``np.bincount`` per batch and checks its inputs, following the
mmsegmentation convention: rows = ground-truth label, columns = prediction, pixels labelled ``ignore_label``
are skipped, and a class absent from both labels and predictions has IoU NaN and is left out of the mean.
"""
import numpy as np
from mindspore import Tensor
from mindspore.train import Metric, rearrange_inputs

from course_lib.i18n import _
from course_lib.validation import check_int, wrong_type

__all__ = ["MIoU"]


def _as_numpy(value, name):
    """Tensor / ndarray / list -> ndarray; anything else is a TypeError naming the argument."""
    if isinstance(value, Tensor):
        return value.asnumpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    raise wrong_type(name, value, _("a mindspore.Tensor or numpy.ndarray"),
                     _("pass the batch from the eval network, e.g. MIoU.update(logits, label)"))


def _describe_values(values, limit=5):
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (", …" if len(values) > limit else "")


class MIoU(Metric):
    """Mean IoU over ``num_classes`` classes, accumulated over every ``update(pred, label)`` since ``clear()``.

    ``pred`` is either logits (N, C, H, W) (argmax over C is taken) or a predicted label map (N, H, W);
    ``label`` is an integer label map (N, H, W) with values in [0, num_classes) or ``ignore_label``.
    ``eval()`` returns the mIoU as a float; afterwards ``per_class_iou`` holds the IoU of each class
    (NaN for a class absent from both labels and predictions) and ``confusion_matrix`` the pixel counts.

    Taught in lesson 05 (notebooks/05_eval_indexes_miou.ipynb).
    Copies held equal by tests/test_technique_agreement.py: the lesson's ``SimpleMIoU``, recipes/miou_metric.py.
    """

    def __init__(self, num_classes, ignore_label=255):
        super().__init__()
        num_classes = check_int("num_classes", num_classes, 1,
                                fix=_("pass the number of classes in your labels, e.g. MIoU(4)"))
        if ignore_label is not None:
            ignore_label = check_int("ignore_label", ignore_label,
                                     fix=_("pass the label value that marks unlabelled pixels, e.g. 255, or None"))
        self.num_classes = int(num_classes)
        self.ignore_label = None if ignore_label is None else int(ignore_label)
        self.clear()

    def clear(self):
        """Forget every pixel counted so far (``Model.eval`` calls this before each evaluation)."""
        self._confusion = np.zeros((self.num_classes, self.num_classes), dtype=np.int64)
        self._updates = 0
        self._ignored_pixels = 0

    @property
    def confusion_matrix(self):
        """(C, C) int64 pixel counts: row = ground-truth class, column = predicted class (a copy)."""
        return self._confusion.copy()

    @property
    def per_class_iou(self):
        """IoU of every class, TP / (TP + FP + FN); NaN where a class appears in neither labels nor predictions."""
        self._check_counted("per_class_iou")
        true_positive = np.diag(self._confusion).astype(np.float64)
        union = self._confusion.sum(axis=0) + self._confusion.sum(axis=1) - true_positive
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(union > 0, true_positive / np.maximum(union, 1), np.nan)

    def _check_counted(self, what):
        if self._updates == 0:
            raise RuntimeError(_("MIoU.{what} needs counted pixels, but update() has not been called since the "
                                 "last clear(). Fix: call update(pred, label) for each batch first (Model.eval "
                                 "does this for you).").format(what=what))
        if self._confusion.sum() == 0:
            raise RuntimeError(_("MIoU.{what}: all {ignored_pixels} pixels passed to update() were labelled "
                                 "ignore_label={ignore_label}, so there is nothing to score. Fix: check the labels "
                                 "and the ignore_label you passed to MIoU.").format(
                what=what, ignored_pixels=self._ignored_pixels, ignore_label=self.ignore_label))

    @rearrange_inputs
    def update(self, *inputs):
        """Add one batch: ``update(pred, label)`` with pred logits (N, C, H, W) or a label map (N, H, W)."""
        if len(inputs) != 2:
            raise ValueError(_("MIoU.update needs 2 inputs (pred, label), got {count}. Fix: with Model, return "
                               "(loss, logits, label) from the eval network and pass eval_indexes=[0, 1, 2], or "
                               "call MIoU(...).set_indexes([1, 2]) to pick (logits, label) out of all "
                               "outputs.").format(count=len(inputs)))
        pred = _as_numpy(inputs[0], "pred")
        label = _as_numpy(inputs[1], "label")
        if not np.issubdtype(label.dtype, np.integer):
            raise ValueError(_("MIoU.update: label must hold integer class ids, got dtype {dtype}. Fix: pass "
                               "the label map (N, H, W) as int32, not one-hot or float scores.").format(
                dtype=label.dtype))
        if label.ndim < 3 or label.shape[0] == 0:
            raise ValueError(_("MIoU.update: label must be a batch of label maps (N, H, W) with N >= 1, got shape "
                               "{shape}. Fix: keep the batch axis (e.g. label[None] for one image) and pass "
                               "a non-empty batch.").format(shape=label.shape))
        pred = self._pred_to_label_map(pred, label)

        counted = label != self.ignore_label if self.ignore_label is not None else np.ones(label.shape, bool)
        label_values = label[counted]
        if label_values.size and (label_values.min() < 0 or label_values.max() >= self.num_classes):
            bad = np.unique(label_values[(label_values < 0) | (label_values >= self.num_classes)])
            raise ValueError(_("MIoU.update: label has values outside [0, {num_classes}) that are not "
                               "ignore_label={ignore_label}: {values}. Fix: set num_classes to the "
                               "number of classes in your data, or ignore_label to the value marking unlabelled "
                               "pixels.").format(
                num_classes=self.num_classes, ignore_label=self.ignore_label, values=_describe_values(bad)))
        if pred.size and (pred.min() < 0 or pred.max() >= self.num_classes):
            bad = np.unique(pred[(pred < 0) | (pred >= self.num_classes)])
            raise ValueError(_("MIoU.update: predicted label map has values outside [0, {num_classes}): "
                               "{values}. Fix: predictions must be class ids 0..{last} "
                               "(pass logits (N, C, H, W) to let MIoU take the argmax).").format(
                num_classes=self.num_classes, values=_describe_values(bad), last=self.num_classes - 1))

        index = label_values.astype(np.int64) * self.num_classes + pred[counted].astype(np.int64)
        self._confusion += np.bincount(index, minlength=self.num_classes ** 2).reshape(self.num_classes,
                                                                                       self.num_classes)
        self._ignored_pixels += int(label.size - label_values.size)
        self._updates += 1

    def _pred_to_label_map(self, pred, label):
        """Logits (N, C, ...) -> argmax over C; a label map of the same shape as ``label`` passes through."""
        if pred.shape == label.shape:
            if not np.issubdtype(pred.dtype, np.integer):
                raise ValueError(_("MIoU.update: pred has the label's shape {shape}, so it is read as a "
                                   "predicted label map, but its dtype is {dtype}, not integer. Fix: pass "
                                   "logits (N, C, H, W), or cast the label map with .astype(np.int32).").format(
                    shape=label.shape, dtype=pred.dtype))
            return pred
        logits_shape = label.shape[:1] + (self.num_classes,) + label.shape[1:]
        if pred.shape == logits_shape:
            if not (np.issubdtype(pred.dtype, np.floating) or np.issubdtype(pred.dtype, np.integer)):
                raise ValueError(_("MIoU.update: logits must be numbers, got dtype {dtype}. Fix: pass "
                                   "the network's float output.").format(dtype=pred.dtype))
            if np.issubdtype(pred.dtype, np.floating) and not np.isfinite(pred).all():
                bad = int((~np.isfinite(pred)).sum())
                raise ValueError(_("MIoU.update: logits hold {bad} NaN/inf value(s), so the argmax (the predicted "
                                   "class) is undefined. Fix: the network diverged or overflowed; check the loss "
                                   "and learning rate, or evaluate a finite checkpoint.").format(bad=bad))
            return pred.argmax(axis=1)
        raise ValueError(_("MIoU.update: pred shape {pred_shape} does not match label shape {label_shape}. "
                           "Allowed: logits {logits_shape} (N, C, H, W) with C = num_classes = {num_classes}, or a "
                           "predicted label map {label_shape}. Fix: check num_classes and that pred and label come "
                           "from the same batch.").format(
            pred_shape=pred.shape, label_shape=label.shape, logits_shape=logits_shape,
            num_classes=self.num_classes))

    def eval(self):
        """Return the mean IoU over the classes present in labels or predictions (NaN classes are skipped)."""
        self._check_counted("eval()")
        return float(np.nanmean(self.per_class_iou))
