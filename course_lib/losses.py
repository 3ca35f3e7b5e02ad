"""Cross-entropy with label smoothing (seed 003's ``CrossEntropySmooth``) in MindSpore 2.10 spelling.

Label smoothing replaces the one-hot target by ``on_value`` for the true class and ``off_value`` for every
other class. Two conventions are in use, and they differ for the same ``smooth_factor`` ``s`` and ``K`` classes:

* ``convention="seed"`` (seed 003, MindSpore model zoo): ``on = 1 - s``, ``off = s / (K - 1)``.
* ``convention="pytorch"`` (``torch.nn.CrossEntropyLoss(label_smoothing=s)``): the mass ``s`` is spread over
  all ``K`` classes, the true one included: ``on = 1 - s + s / K``, ``off = s / K``.

They give the same targets when ``s_seed = s_pytorch * (K - 1) / K`` (see :func:`seed_factor_from_pytorch`).
"""
from numbers import Integral, Real

import mindspore as ms
from mindspore import Tensor, nn, ops

__all__ = ["CrossEntropySmooth", "smoothed_target_values", "seed_factor_from_pytorch", "pytorch_factor_from_seed"]

CONVENTIONS = ("seed", "pytorch")
REDUCTIONS = ("mean", "sum", "none")


def smoothed_target_values(smooth_factor: float, num_classes: int, convention: str = "seed") -> tuple:
    """Return ``(on_value, off_value)`` of the smoothed one-hot target for one convention (plain floats)."""
    _check_smoothing_args(smooth_factor, num_classes, convention)
    if convention == "seed":
        return 1.0 - smooth_factor, smooth_factor / (num_classes - 1)
    return 1.0 - smooth_factor + smooth_factor / num_classes, smooth_factor / num_classes


def seed_factor_from_pytorch(label_smoothing: float, num_classes: int) -> float:
    """The seed-convention ``smooth_factor`` that equals PyTorch's ``label_smoothing`` for ``num_classes``."""
    _check_smoothing_args(label_smoothing, num_classes, "pytorch")
    return label_smoothing * (num_classes - 1) / num_classes


def pytorch_factor_from_seed(smooth_factor: float, num_classes: int) -> float:
    """PyTorch's ``label_smoothing`` that equals a seed-convention ``smooth_factor`` for ``num_classes``."""
    _check_smoothing_args(smooth_factor, num_classes, "seed")
    return smooth_factor * num_classes / (num_classes - 1)


def _check_smoothing_args(smooth_factor, num_classes, convention):
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}. Fix: use 'seed' for "
                         "seed 003's off = s/(K-1), or 'pytorch' to match torch's label_smoothing.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, Integral) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}. Fix: pass the number of "
                         "classes the network predicts, e.g. 10.")
    if isinstance(smooth_factor, bool) or not isinstance(smooth_factor, Real) or not 0.0 <= smooth_factor < 1.0:
        raise ValueError(f"smooth_factor must be a float in [0, 1), got {smooth_factor!r}. Fix: use 0.0 for no "
                         "smoothing or a small value such as 0.1.")


class CrossEntropySmooth(nn.LossBase):
    """Softmax cross-entropy on logits ``(N, K)`` with integer labels ``(N,)`` and optional label smoothing.

    With ``sparse=False`` the labels are already a ``(N, K)`` distribution and are used unchanged.
    """

    def __init__(self, sparse=True, reduction="mean", smooth_factor=0.0, num_classes=1000, convention="seed"):
        if not isinstance(sparse, bool):
            raise ValueError(f"sparse must be True or False, got {sparse!r}. Fix: True for integer labels (N,), "
                             "False for one-hot/probability labels (N, K).")
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}. Fix: use 'mean'.")
        on_value, off_value = smoothed_target_values(smooth_factor, num_classes, convention)
        super().__init__(reduction=reduction)
        self.sparse = sparse
        self.num_classes = int(num_classes)
        self.smooth_factor = float(smooth_factor)
        self.convention = convention
        self.on_value = Tensor(on_value, ms.float32)
        self.off_value = Tensor(off_value, ms.float32)
        self.ce = nn.SoftmaxCrossEntropyWithLogits(reduction=reduction)

    def construct(self, logits, labels):
        if self.sparse:
            labels = ops.one_hot(labels, self.num_classes, self.on_value, self.off_value)
        return self.ce(logits, labels)

    def extend_repr(self):
        return (f"sparse={self.sparse}, smooth_factor={self.smooth_factor}, num_classes={self.num_classes}, "
                f"convention={self.convention!r}")
