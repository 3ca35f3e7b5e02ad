"""Segmentation metric for ``Model.eval``: mean intersection-over-union (mIoU) from a confusion matrix.

The blog post wraps ``nn.ConfusionMatrix`` and casts with ``np.int`` (removed in NumPy 1.24); this version counts
the confusion matrix itself with one ``np.bincount`` per batch and checks its inputs, following the
mmsegmentation convention: rows = ground-truth label, columns = prediction, pixels labelled ``ignore_label``
are skipped, and a class absent from both labels and predictions has IoU NaN and is left out of the mean.
"""
import numpy as np
from mindspore import Tensor
from mindspore.train import Metric, rearrange_inputs

__all__ = ["MIoU"]


def _as_numpy(value, name):
    """Tensor / ndarray / list -> ndarray; anything else is a TypeError naming the argument."""
    if isinstance(value, Tensor):
        return value.asnumpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    raise TypeError(f"MIoU.update: {name} must be a mindspore.Tensor or numpy.ndarray, got {type(value).__name__}.")


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
        if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 1:
            raise ValueError(f"num_classes must be a positive int, got {num_classes!r}. "
                             "Fix: pass the number of classes in your labels, e.g. MIoU(4).")
        if ignore_label is not None and (isinstance(ignore_label, bool)
                                         or not isinstance(ignore_label, (int, np.integer))):
            raise ValueError(f"ignore_label must be an int or None, got {ignore_label!r}. "
                             "Fix: pass the label value that marks unlabelled pixels, e.g. 255, or None.")
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
            raise RuntimeError(f"MIoU.{what} needs counted pixels, but update() has not been called since the "
                               "last clear(). Fix: call update(pred, label) for each batch first "
                               "(Model.eval does this for you).")
        if self._confusion.sum() == 0:
            raise RuntimeError(f"MIoU.{what}: all {self._ignored_pixels} pixels passed to update() were labelled "
                               f"ignore_label={self.ignore_label}, so there is nothing to score. "
                               "Fix: check the labels and the ignore_label you passed to MIoU.")

    @rearrange_inputs
    def update(self, *inputs):
        """Add one batch: ``update(pred, label)`` with pred logits (N, C, H, W) or a label map (N, H, W)."""
        if len(inputs) != 2:
            raise ValueError(f"MIoU.update needs 2 inputs (pred, label), got {len(inputs)}. Fix: with Model, "
                             "return (loss, logits, label) from the eval network and pass eval_indexes=[0, 1, 2], "
                             "or call MIoU(...).set_indexes([1, 2]) to pick (logits, label) out of all outputs.")
        pred = _as_numpy(inputs[0], "pred")
        label = _as_numpy(inputs[1], "label")
        if not np.issubdtype(label.dtype, np.integer):
            raise ValueError(f"MIoU.update: label must hold integer class ids, got dtype {label.dtype}. "
                             "Fix: pass the label map (N, H, W) as int32, not one-hot or float scores.")
        if label.ndim < 3 or label.shape[0] == 0:
            raise ValueError(f"MIoU.update: label must be a batch of label maps (N, H, W) with N >= 1, got shape "
                             f"{label.shape}. Fix: keep the batch axis (e.g. label[None] for one image) and pass "
                             "a non-empty batch.")
        pred = self._pred_to_label_map(pred, label)

        counted = label != self.ignore_label if self.ignore_label is not None else np.ones(label.shape, bool)
        label_values = label[counted]
        if label_values.size and (label_values.min() < 0 or label_values.max() >= self.num_classes):
            bad = np.unique(label_values[(label_values < 0) | (label_values >= self.num_classes)])
            raise ValueError(f"MIoU.update: label has values outside [0, {self.num_classes}) that are not "
                             f"ignore_label={self.ignore_label}: {_describe_values(bad)}. Fix: set num_classes "
                             "to the number of classes in your data, or ignore_label to the value marking "
                             "unlabelled pixels.")
        if pred.size and (pred.min() < 0 or pred.max() >= self.num_classes):
            bad = np.unique(pred[(pred < 0) | (pred >= self.num_classes)])
            raise ValueError(f"MIoU.update: predicted label map has values outside [0, {self.num_classes}): "
                             f"{_describe_values(bad)}. Fix: predictions must be class ids 0..{self.num_classes - 1}"
                             " (pass logits (N, C, H, W) to let MIoU take the argmax).")

        index = label_values.astype(np.int64) * self.num_classes + pred[counted].astype(np.int64)
        self._confusion += np.bincount(index, minlength=self.num_classes ** 2).reshape(self.num_classes,
                                                                                       self.num_classes)
        self._ignored_pixels += int(label.size - label_values.size)
        self._updates += 1

    def _pred_to_label_map(self, pred, label):
        """Logits (N, C, ...) -> argmax over C; a label map of the same shape as ``label`` passes through."""
        if pred.shape == label.shape:
            if not np.issubdtype(pred.dtype, np.integer):
                raise ValueError(f"MIoU.update: pred has the label's shape {label.shape}, so it is read as a "
                                 f"predicted label map, but its dtype is {pred.dtype}, not integer. Fix: pass "
                                 "logits (N, C, H, W), or cast the label map with .astype(np.int32).")
            return pred
        logits_shape = label.shape[:1] + (self.num_classes,) + label.shape[1:]
        if pred.shape == logits_shape:
            if not (np.issubdtype(pred.dtype, np.floating) or np.issubdtype(pred.dtype, np.integer)):
                raise ValueError(f"MIoU.update: logits must be numbers, got dtype {pred.dtype}.")
            if np.issubdtype(pred.dtype, np.floating) and not np.isfinite(pred).all():
                bad = int((~np.isfinite(pred)).sum())
                raise ValueError(f"MIoU.update: logits hold {bad} NaN/inf value(s), so the argmax (the predicted "
                                 "class) is undefined. Fix: the network diverged or overflowed; check the loss and "
                                 "learning rate, or evaluate a finite checkpoint.")
            return pred.argmax(axis=1)
        raise ValueError(f"MIoU.update: pred shape {pred.shape} does not match label shape {label.shape}. "
                         f"Allowed: logits {logits_shape} (N, C, H, W) with C = num_classes = {self.num_classes}, "
                         f"or a predicted label map {label.shape}. Fix: check num_classes and that pred and label "
                         "come from the same batch.")

    def eval(self):
        """Return the mean IoU over the classes present in labels or predictions (NaN classes are skipped)."""
        self._check_counted("eval()")
        return float(np.nanmean(self.per_class_iou))
