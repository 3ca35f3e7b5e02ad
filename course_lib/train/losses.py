"""Cross-entropy with label smoothing (the ``CrossEntropySmooth`` of the migration guide's ResNet-50 example,
"Network Migration Debugging Example", r1.7) in MindSpore 2.10 spelling.

Label smoothing replaces the one-hot target by ``on_value`` for the true class and ``off_value`` for every
other class. Two conventions are in use, and they differ for the same ``smooth_factor`` ``s`` and ``K`` classes:

* ``convention="seed"`` (the ResNet-50 migration example, MindSpore model zoo): ``on = 1 - s``,
  ``off = s / (K - 1)``. (``"seed"`` is the API value's historical name.)
* ``convention="pytorch"`` (``torch.nn.CrossEntropyLoss(label_smoothing=s)``): the mass ``s`` is spread over
  all ``K`` classes, the true one included: ``on = 1 - s + s / K``, ``off = s / K``.

They give the same targets when ``s_seed = s_pytorch * (K - 1) / K``.

For PyTorch's convention, prefer MindSpore's built-in ``nn.CrossEntropyLoss(label_smoothing=s)``: it uses the same
convention as ``torch.nn.CrossEntropyLoss`` (lesson 07 shows both give the same value). ``convention="pytorch"``
here exists for comparisons with the model-zoo convention.
"""

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

from course_lib.i18n import _
from course_lib.validation import check_bool, check_choice, check_int, check_real

__all__ = ["CrossEntropySmooth", "check_labels", "smoothed_target_values"]

CONVENTIONS = ("seed", "pytorch")
REDUCTIONS = ("mean", "sum", "none")


def smoothed_target_values(smooth_factor: float, num_classes: int, convention: str = "seed") -> tuple:
    """Return ``(on_value, off_value)`` of the smoothed one-hot target for one convention (plain floats)."""
    _check_smoothing_args(smooth_factor, num_classes, convention)
    if convention == "seed":
        return 1.0 - smooth_factor, smooth_factor / (num_classes - 1)
    return 1.0 - smooth_factor + smooth_factor / num_classes, smooth_factor / num_classes


def _check_smoothing_args(smooth_factor, num_classes, convention):
    check_choice("convention", convention, CONVENTIONS,
                 _("use 'seed' for the model zoo's off = s/(K-1), or 'pytorch' to match torch's label_smoothing"))
    check_int("num_classes", num_classes, 2, fix=_("pass the number of classes the network predicts, e.g. 10"))
    check_real("smooth_factor", smooth_factor, 0.0, 1.0, high_open=True,
               fix=_("use 0.0 for no smoothing or a small value such as 0.1"))


def check_labels(labels, num_classes, where="labels"):
    """Raise ValueError if integer class labels (Tensor or numpy) fall outside ``[0, num_classes)``."""
    if isinstance(labels, Tensor):
        labels = labels.asnumpy()
    if not isinstance(labels, np.ndarray) or labels.size == 0:
        return
    if labels.dtype.kind not in "iu":
        raise ValueError(_("{where} must be integer class indices (sparse=True), got dtype {dtype}. Fix: "
                           "cast them, e.g. labels.astype(np.int32), or use sparse=False for (N, K) "
                           "probabilities.").format(where=where, dtype=labels.dtype))
    bad = np.flatnonzero((labels < 0) | (labels >= num_classes))
    if bad.size:
        raise ValueError(_("{where} must lie in [0, {num_classes}) for num_classes={num_classes}, got {count} "
                           "label(s) outside, e.g. {label} at position {position}. Fix: set "
                           "num_classes to the number of classes in the data, or fix the labels (a corrupted label "
                           "file?).").format(
            where=where, num_classes=num_classes, count=bad.size, label=int(labels.reshape(-1)[bad[0]]),
            position=int(bad[0])))


class CrossEntropySmooth(nn.LossBase):
    """Softmax cross-entropy on logits ``(N, K)`` with integer labels ``(N,)`` and optional label smoothing.

    With ``sparse=False`` the labels are already a ``(N, K)`` distribution and are used unchanged.

    Labels outside ``[0, num_classes)`` would become an all-``off_value`` row of the one-hot target and train
    silently with a meaningless (lower) loss. Called from Python (PyNative mode, or the loss called on its own),
    the sparse labels are checked and such a label raises ValueError naming it. Inside a compiled graph (graph
    mode ``Model.train``, ``ms.jit``) only ``construct`` runs and values cannot be checked cheaply: there the data
    readers (``course_lib.data.datasets``) and ``scripts/train.py`` check the labels where they enter.
    """

    def __init__(self, sparse=True, reduction="mean", smooth_factor=0.0, num_classes=1000, convention="seed"):
        sparse = check_bool("sparse", sparse, _("True for integer labels (N,), False for one-hot/probability labels "
                                                "(N, K)"))
        check_choice("reduction", reduction, REDUCTIONS, _("use 'mean'"))
        on_value, off_value = smoothed_target_values(smooth_factor, num_classes, convention)
        super().__init__(reduction=reduction)
        self.sparse = sparse
        self.num_classes = int(num_classes)
        self.smooth_factor = float(smooth_factor)
        self.convention = convention
        self.on_value = Tensor(on_value, ms.float32)
        self.off_value = Tensor(off_value, ms.float32)
        self.ce = nn.SoftmaxCrossEntropyWithLogits(reduction=reduction)

    def __call__(self, *args, **kwargs):
        if self.sparse and len(args) == 2 and not kwargs:
            check_labels(args[1], self.num_classes)
        return super().__call__(*args, **kwargs)

    def construct(self, logits, labels):
        if self.sparse:
            labels = ops.one_hot(labels, self.num_classes, self.on_value, self.off_value)
        return self.ce(logits, labels)

    def extend_repr(self):
        return (f"sparse={self.sparse}, smooth_factor={self.smooth_factor}, num_classes={self.num_classes}, "
                f"convention={self.convention!r}")
