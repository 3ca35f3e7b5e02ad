"""FastConv2d (course_lib.perf.fast_conv): forward and both gradients match nn.Conv2d; bad inputs fail clearly;
a ResNet-18 built on it trains like the stock one."""
import numpy as np
import pytest

import course_lib  # noqa: F401  # isort: skip  (sets the environment before mindspore is imported)
import mindspore as ms
from mindspore import nn

from course_lib.perf.fast_conv import FastConv2d, build, swap_convs

CASES = [  # in, out, kernel, stride, pad_mode, padding, size
    (3, 8, 3, 1, "pad", 1, 9),
    (4, 6, 1, 2, "valid", 0, 8),
    (3, 5, 7, 2, "pad", 3, 15),
    (4, 4, 3, 2, "same", 0, 9),
    (2, 3, 3, 1, "valid", 0, 7),
    (5, 7, 1, 1, "pad", (1, 0, 2, 1), 6),
]


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def _forward_and_grads(net, x):
    def loss(x):
        y = net(x)
        return (y * y).sum()

    grad = ms.value_and_grad(loss, 0, net.trainable_params())
    _, (dx, pgrads) = grad(x)
    return [net(x).asnumpy(), dx.asnumpy()] + [g.asnumpy() for g in pgrads]


def test_build_is_cached_by_source_hash():
    lib = build()
    assert lib.is_file() and lib.parent.parent.name == "fast_conv"
    assert build() == lib


@pytest.mark.parametrize("case", CASES, ids=[f"k{c[2]}s{c[3]}{c[4]}" for c in CASES])
def test_matches_nn_conv2d(case, mode):
    cin, cout, k, s, pad_mode, padding, size = case
    ref = nn.Conv2d(cin, cout, k, stride=s, pad_mode=pad_mode, padding=padding, has_bias=True)
    fast = FastConv2d(cin, cout, k, stride=s, pad_mode=pad_mode, padding=padding, has_bias=True)
    fast.weight.set_data(ref.weight.data.copy())
    fast.bias.set_data(ref.bias.data.copy())
    x = ms.Tensor(np.random.default_rng(0).standard_normal((2, cin, size, size)).astype(np.float32))
    expected = _forward_and_grads(ref, x)
    got = _forward_and_grads(fast, x)
    assert len(got) == 4  # output, d input, d weight, d bias
    for name, a, b in zip(["output", "d_input", "d_weight", "d_bias"], got, expected):
        assert a.shape == b.shape, name
        assert _rel(a, b) <= 1e-4, (name, _rel(a, b))


@pytest.mark.parametrize("bad, error, words", [
    (np.ones((2, 5, 5), np.float32), ValueError, "4-D NCHW"),
    (np.ones((1, 2, 5, 5), np.float16), TypeError, "float32"),
    (np.ones((1, 4, 5, 5), np.float32), ValueError, "input channels"),
])
def test_bad_inputs_are_named(bad, error, words, mode):
    with pytest.raises(error, match=words):
        FastConv2d(2, 3, 3)(ms.Tensor(bad))


@pytest.mark.parametrize("kwargs, words", [({"group": 2}, "group=2"), ({"dilation": 2}, "dilation"),
                                           ({"data_format": "NHWC"}, "NHWC")])
def test_unsupported_settings_are_named(kwargs, words):
    with pytest.raises(ValueError, match=words):
        FastConv2d(4, 4, 3, **kwargs)


def test_resnet18_trains_like_the_stock_one():
    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.models.resnet import resnet18

    ms.set_context(mode=ms.PYNATIVE_MODE)
    batches = list(create_mnist_dataset(batch_size=8, train=True, shuffle=False).create_tuple_iterator())[:4]
    curves = []
    for fast in (False, True):
        ms.set_seed(0)
        net = resnet18(num_classes=10)
        if fast:
            assert swap_convs(net) == 20  # 1 stem + 16 block convs + 3 downsample convs
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()

        def forward(x, y):
            return loss_fn(net(x), y)  # noqa: B023 (called within this iteration only)

        step = ms.value_and_grad(forward, None, opt.parameters)
        losses = []
        for image, label in batches:
            loss, grads = step(ms.ops.tile(image, (1, 3, 1, 1)), label)  # grey digits -> 3 channels
            opt(grads)
            losses.append(float(loss.asnumpy()))
        curves.append(losses)
    stock, fast = np.array(curves[0]), np.array(curves[1])
    assert stock[-1] < stock[0]  # it learns
    np.testing.assert_allclose(fast, stock, rtol=2e-3, atol=2e-3)


def test_swap_convs_runs_every_conv_as_fast_conv(monkeypatch):
    """Every conv the forward pass runs is a FastConv2d, the shortcut (down-sample) convs inside nn.SequentialCell
    included: SequentialCell.construct runs its own list, cell_list, not the registered children."""
    from course_lib.models.resnet import resnet18

    old_mode = ms.get_context("mode")
    ms.set_context(mode=ms.PYNATIVE_MODE)  # so the patched construct methods below are what runs
    try:
        net = resnet18(num_classes=10)
        stock = [cell for _, cell in net.cells_and_names() if type(cell) is nn.Conv2d]
        assert swap_convs(net) == len(stock) == 20
        registered = [cell for _, cell in net.cells_and_names() if isinstance(cell, nn.Conv2d)]
        assert len(registered) == 20 and all(type(cell) is FastConv2d for cell in registered)
        shortcuts = [cell.down_sample_layer for _, cell in net.cells_and_names()
                     if getattr(cell, "down_sample_layer", None) is not None]
        assert len(shortcuts) == 3
        for shortcut in shortcuts:
            assert [type(cell) for cell in shortcut.cell_list] == [FastConv2d, nn.BatchNorm2d]
        for _, cell in net.cells_and_names():
            if isinstance(cell, nn.SequentialCell):  # what runs is what is registered (and saved, and trained)
                assert [id(c) for c in cell.cell_list] == [id(c) for c in cell._cells.values()]

        ran = []
        fast_construct = FastConv2d.construct

        def counting(self, x):
            ran.append(id(self))
            return fast_construct(self, x)

        def refuse(self, x):
            raise AssertionError(f"a stock nn.Conv2d ran after swap_convs: {self}")

        monkeypatch.setattr(FastConv2d, "construct", counting)
        monkeypatch.setattr(nn.Conv2d, "construct", refuse)
        x = ms.Tensor(np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32))
        assert net(x).shape == (2, 10)
        assert sorted(ran) == sorted(id(cell) for cell in registered)  # each of the 20, once
    finally:
        ms.set_context(mode=old_mode)
