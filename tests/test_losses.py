import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn

from course_lib.train.losses import CrossEntropySmooth, smoothed_target_values

K = 10


@pytest.fixture(autouse=True)
def pynative_mode():
    """Small losses run eagerly; the one graph-mode case sets GRAPH_MODE itself (each graph costs a compile)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    return rng.standard_normal((6, K)).astype(np.float32) * 3, rng.integers(0, K, 6).astype(np.int32)


def torch_loss(logits, labels, label_smoothing, reduction="mean"):
    loss = torch.nn.CrossEntropyLoss(label_smoothing=label_smoothing, reduction=reduction)
    return loss(torch.tensor(logits), torch.tensor(labels).long()).numpy()


def ms_loss(logits, labels, **kwargs):
    return CrossEntropySmooth(num_classes=K, **kwargs)(ms.Tensor(logits), ms.Tensor(labels)).asnumpy()


def test_target_values_of_both_conventions():
    assert smoothed_target_values(0.1, 10, "seed") == pytest.approx((0.9, 0.1 / 9))
    assert smoothed_target_values(0.1, 10, "pytorch") == pytest.approx((0.91, 0.01))
    for convention in ("seed", "pytorch"):  # every row of the smoothed target sums to 1
        on, off = smoothed_target_values(0.2, 7, convention)
        assert on + 6 * off == pytest.approx(1.0)


def seed_factor_from_pytorch(label_smoothing, num_classes):
    """s_seed = s_pytorch * (K - 1) / K: the relation the module docstring states."""
    return label_smoothing * (num_classes - 1) / num_classes


def test_the_stated_factor_relation_makes_targets_equal():
    assert smoothed_target_values(seed_factor_from_pytorch(0.3, 5), 5, "seed") == \
        pytest.approx(smoothed_target_values(0.3, 5, "pytorch"))


@pytest.mark.parametrize("mode, reduction, factors", [
    (ms.PYNATIVE_MODE, "mean", (0.0, 0.1, 0.4)),
    (ms.PYNATIVE_MODE, "sum", (0.0, 0.1, 0.4)),
    (ms.PYNATIVE_MODE, "none", (0.0, 0.1, 0.4)),
    (ms.GRAPH_MODE, "mean", (0.1,)),  # each factor is a new graph to compile: one is enough
])
def test_pytorch_convention_equals_torch_label_smoothing(batch, mode, reduction, factors):
    ms.set_context(mode=mode)
    logits, labels = batch
    for eps in factors:
        expected = torch_loss(logits, labels, eps, reduction)
        got = ms_loss(logits, labels, smooth_factor=eps, convention="pytorch", reduction=reduction)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
        # the seed convention gives the same numbers with the converted factor
        seed = ms_loss(logits, labels, smooth_factor=seed_factor_from_pytorch(eps, K), reduction=reduction)
        np.testing.assert_allclose(seed, expected, rtol=1e-6, atol=1e-6)


def test_seed_convention_differs_from_torch_for_the_same_factor(batch):
    logits, labels = batch
    seed = ms_loss(logits, labels, smooth_factor=0.1)
    torch_value = torch_loss(logits, labels, 0.1)
    assert abs(seed - torch_value) > 1e-3  # the same 0.1 means different targets
    np.testing.assert_allclose(seed, torch_loss(logits, labels, 0.1 * K / (K - 1)), rtol=1e-6)


def test_seed_convention_matches_a_hand_computed_value(batch):
    logits, labels = batch
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    target = np.full((len(labels), K), 0.1 / (K - 1))
    target[np.arange(len(labels)), labels] = 0.9
    expected = -(target * log_probs).sum(axis=1).mean()
    np.testing.assert_allclose(ms_loss(logits, labels, smooth_factor=0.1), expected, rtol=1e-6)


def test_dense_labels_are_used_unchanged(batch):
    logits, labels = batch
    dense = np.eye(K, dtype=np.float32)[labels] * 0.5 + 0.05
    got = CrossEntropySmooth(sparse=False, smooth_factor=0.3, num_classes=K)(ms.Tensor(logits), ms.Tensor(dense))
    expected = nn.SoftmaxCrossEntropyWithLogits(reduction="mean")(ms.Tensor(logits), ms.Tensor(dense))
    np.testing.assert_allclose(got.asnumpy(), expected.asnumpy(), rtol=1e-6)


def test_gradient_matches_torch(batch):
    logits, labels = batch
    loss = CrossEntropySmooth(smooth_factor=0.1, num_classes=K, convention="pytorch")
    grad = ms.grad(lambda x: loss(x, ms.Tensor(labels)))(ms.Tensor(logits)).asnumpy()
    t = torch.tensor(logits, requires_grad=True)
    torch.nn.CrossEntropyLoss(label_smoothing=0.1)(t, torch.tensor(labels).long()).backward()
    np.testing.assert_allclose(grad, t.grad.numpy(), atol=1e-7)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"smooth_factor": 1.0}, ValueError, "smooth_factor must be a finite number >= 0.0 and < 1.0, got 1.0"),
    ({"smooth_factor": -0.1}, ValueError, "got -0.1"),
    ({"smooth_factor": "0.1"}, TypeError, "got '0.1' (str)"),
    ({"num_classes": 1}, ValueError, "num_classes must be an integer >= 2, got 1"),
    ({"num_classes": 2.5}, TypeError, "got 2.5 (float)"),
    ({"num_classes": True}, TypeError, "got True (bool)"),
    ({"reduction": "avg"}, ValueError, "reduction must be one of ('mean', 'sum', 'none'), got 'avg'"),
    ({"convention": "tf"}, ValueError, "convention must be one of ('seed', 'pytorch'), got 'tf'"),
    ({"sparse": "yes"}, TypeError, "sparse must be True or False, got 'yes' (str)"),
])
def test_bad_arguments_are_rejected_with_the_value_and_a_fix(kwargs, error, message):
    """A wrong type is a TypeError, a wrong value a ValueError (validation.py's vocabulary)."""
    with pytest.raises(error) as info:
        CrossEntropySmooth(**kwargs)
    assert message in str(info.value)
    assert "Fix" in str(info.value)


def test_repr_names_the_convention():
    text = repr(CrossEntropySmooth(smooth_factor=0.1, num_classes=10, convention="pytorch"))
    assert "smooth_factor=0.1" in text and "convention='pytorch'" in text
