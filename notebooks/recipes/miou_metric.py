# SPDX-License-Identifier: Apache-2.0
"""A mean-IoU `Metric` for semantic segmentation, with an ignore label and classes absent from the data.

What: `MIoU(num_classes, ignore_label)` accumulates a confusion matrix with `np.bincount` over all batches
  (never a mean of per-batch IoUs) and returns the mean over the classes that occur in the labels or the
  predictions. Pixels whose label is `ignore_label` are skipped. The script checks it against IoUs computed
  from boolean masks, class by class. `update` refuses predictions whose class axis is not `num_classes` long
  (6-channel logits into a 5-class metric) and labels outside [0, num_classes) other than the ignore label;
  the script checks that both mistakes raise.
When to use it: `Model(..., metrics={"miou": MIoU(...)})` or any evaluation loop for segmentation.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/05_eval_indexes_miou.ipynb
"""
import argparse

import numpy as np
from mindspore import Tensor
from mindspore.train import Metric


class MIoU(Metric):
    def __init__(self, num_classes, ignore_label=255):
        super().__init__()
        self.num_classes, self.ignore_label = num_classes, ignore_label
        self.clear()

    def clear(self):
        self.confusion = np.zeros((self.num_classes, self.num_classes), dtype=np.int64)  # rows: label, cols: pred

    def update(self, *inputs):
        logits, label = inputs[-2], inputs[-1]  # works with eval_indexes=[loss, logits, label] outputs too
        logits = logits.asnumpy() if isinstance(logits, Tensor) else np.asarray(logits)
        label = (label.asnumpy() if isinstance(label, Tensor) else np.asarray(label)).astype(np.int64).ravel()
        if logits.ndim < 2 or logits.shape[1] != self.num_classes:
            raise ValueError(f"predictions must be (N, {self.num_classes}, ...) logits, got shape {logits.shape}. "
                             f"Fix: give the network {self.num_classes} output channels or MIoU(num_classes=...)")
        if logits.shape[0] * int(np.prod(logits.shape[2:])) != label.size:
            raise ValueError(f"predictions {logits.shape} and labels ({label.size} pixels) do not match")
        pred = logits.argmax(axis=1).ravel()  # (N, C, H, W) -> (N*H*W,)
        keep = label != self.ignore_label
        if np.any((label[keep] < 0) | (label[keep] >= self.num_classes)):
            raise ValueError(f"labels must be in [0, {self.num_classes}) or {self.ignore_label}, "
                             f"got {np.unique(label[keep]).tolist()}. Fix: remap the labels or num_classes")
        index = label[keep] * self.num_classes + pred[keep]
        self.confusion += np.bincount(index, minlength=self.num_classes ** 2).reshape(self.num_classes, -1)

    def per_class_iou(self):
        true_pos = np.diag(self.confusion).astype(np.float64)
        union = self.confusion.sum(axis=0) + self.confusion.sum(axis=1) - true_pos
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(union > 0, true_pos / union, np.nan)  # nan: class absent from labels and predictions

    def eval(self):
        iou = self.per_class_iou()
        if np.all(np.isnan(iou)):
            raise RuntimeError("MIoU.eval() called before update() saw any labelled pixel")
        return float(np.nanmean(iou))


def mask_iou(logits_batches, label_batches, num_classes, ignore_label):
    """Independent reference: per class |pred & label| / |pred | label| over all non-ignored pixels."""
    pred = np.concatenate([b.argmax(axis=1).ravel() for b in logits_batches])
    label = np.concatenate([b.ravel() for b in label_batches])
    pred, label = pred[label != ignore_label], label[label != ignore_label]
    ious = []
    for c in range(num_classes):
        union = np.sum((pred == c) | (label == c))
        if union:
            ious.append(np.sum((pred == c) & (label == c)) / union)
    return float(np.mean(ious)), len(ious)


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def error_message(function, *args):
    """The message of the ValueError that function(*args) raises, or None if it raises none."""
    try:
        function(*args)
    except ValueError as error:
        return str(error)
    return None


def main():
    rs = np.random.RandomState(0)
    num_classes, ignore = 5, 255
    logits = [rs.randn(2, num_classes, 6, 7).astype(np.float32) for _ in range(3)]
    labels = [rs.randint(0, 3, (2, 6, 7)) for _ in range(3)]  # classes 3 and 4 never occur in the labels
    for i, label in enumerate(labels):
        label[rs.rand(*label.shape) < 0.2] = ignore  # 20 % of the pixels are "don't care"
        logits[i][:, 4] -= 100.0  # class 4 is never predicted either: it must not count
    metric = MIoU(num_classes, ignore_label=ignore)
    for lg, lb in zip(logits, labels):
        metric.update(Tensor(lg), Tensor(lb.astype(np.int32)))
    expected, counted = mask_iou(logits, labels, num_classes, ignore)
    check(np.isclose(metric.eval(), expected, rtol=1e-12), f"mIoU {metric.eval()} != mask reference {expected}")
    check(counted == 4 and np.isnan(metric.per_class_iou()[4]) and metric.per_class_iou()[3] == 0.0,
          f"absent class 4 must be nan and class 3 (predicted, never labelled) 0: {metric.per_class_iou()}")

    # Predictions at ignored pixels do not change the result.
    metric.clear()
    for lg, lb in zip(logits, labels):
        changed = lg.copy()
        changed[:, 0][lb == ignore] += 50.0
        metric.update(changed, lb)
    check(np.isclose(metric.eval(), expected, rtol=1e-12), "predictions at ignored pixels changed the mIoU")

    # Mistakes that must raise, not give a wrong number: a 6-channel prediction, a label out of range.
    six = np.concatenate([logits[0], logits[0][:, :1]], axis=1)
    message = error_message(MIoU(num_classes, ignore).update, six, labels[0])
    check(message is not None and "predictions must be" in message,
          f"6-channel logits into a 5-class MIoU: expected the class-axis error, got {message!r}")
    bad = labels[0].copy()
    bad[0, 0, 0] = num_classes + 2
    message = error_message(MIoU(num_classes, ignore).update, logits[0], bad)
    check(message is not None and "labels must be in" in message,
          f"label 7 in a 5-class MIoU: expected the label range error, got {message!r}")
    print(f"mIoU {expected:.4f} over {counted} of {num_classes} classes (class 4 absent, ignore label {ignore}) "
          f"matches the mask-based reference")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
