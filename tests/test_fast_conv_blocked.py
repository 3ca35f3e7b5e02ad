"""The blocked path of FastConv2d (course_lib.perf.fast_conv): ToBlocked/ToPlain, BlockedConv2d, BlockedBatchNorm2d,
AddReLU, BlockedMaxPool2d, BlockedResidualBlock and block_resnet give the stock layers' outputs and gradients; the
batch norm updates the moving statistics like nn.BatchNorm2d; a blocked ResNet-18 keeps its parameter names and
trains like the stock one; bad inputs fail with messages that name the problem and the fix."""
import numpy as np
import pytest

import course_lib  # noqa: F401  # isort: skip  (sets the environment before mindspore is imported)
import mindspore as ms
from mindspore import nn, ops

from course_lib.models.resnet import ResidualBlock, ResidualBlockBase, resnet18
from course_lib.perf.fast_conv import (
    AddReLU,
    BlockedBatchNorm2d,
    BlockedConv2d,
    BlockedMaxPool2d,
    BlockedResidualBlock,
    ToBlocked,
    ToPlain,
    block_resnet,
    block_size,
)

B = block_size()  # 16 with AVX-512, 8 with AVX2
TOL = 1e-4  # relative max error: float32 sums in another order, nothing more


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def _close(got, expected, what):
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    assert _rel(got, expected) <= TOL, (what, _rel(got, expected))


def _blocked_np(x):
    """numpy (N, C, H, W) -> (N, C/B, H, W, B), channel c at [:, c // B, :, :, c % B]."""
    n, c, h, w = x.shape
    return x.reshape(n, c // B, B, h, w).transpose(0, 1, 3, 4, 2)


def _tensor(rng, *shape, scale=1.0):
    return ms.Tensor((rng.standard_normal(shape) * scale).astype(np.float32))


class _Wrap(nn.Cell):
    """plain -> [ToBlocked] -> layer -> ToPlain: a blocked layer seen from NCHW, so it compares with a stock one."""

    def __init__(self, layer, blocked_input):
        super().__init__()
        self.to_blocked = ToBlocked(B) if blocked_input else None
        self.layer = layer
        self.to_plain = ToPlain(B)

    def construct(self, x):
        if self.to_blocked is not None:
            x = self.to_blocked(x)
        return self.to_plain(self.layer(x))


def _nchw(layer, blocked_input):
    """A layer that keeps the input's layout, seen from NCHW."""
    if not blocked_input:
        return layer
    return _Wrap(layer, True)


class _ThenReLU(nn.Cell):
    """stock layer + nn.ReLU, its parameters named "layer.*" like _Wrap's."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.layer(x))


def _step(net, inputs, weight):
    """One forward and backward pass of sum(net(*inputs) * weight): the output, the gradient of every input and of
    every trainable parameter (by name). The forward runs exactly once, so a batch norm updates its statistics once."""
    def loss(*xs):
        y = net(*xs)
        return (y * weight).sum(), y

    grad = ms.value_and_grad(loss, tuple(range(len(inputs))), net.trainable_params(), has_aux=True)
    (_, y), (dxs, dps) = grad(*inputs)
    if not isinstance(dxs, tuple):
        dxs = (dxs,)
    # _Wrap prefixes its layer's parameter names with "layer."
    params = {p.name.removeprefix("layer."): g.asnumpy() for p, g in zip(net.trainable_params(), dps)}
    return y.asnumpy(), [d.asnumpy() for d in dxs], params


def _compare_steps(stock, blocked, inputs, out_shape, rng):
    """_step of both nets with one random weight (a generic output gradient; sum(y * y) would give batch norm a
    zero input gradient)."""
    weight = ms.Tensor(rng.standard_normal(out_shape).astype(np.float32))
    return _step(stock, inputs, weight), _step(blocked, inputs, weight)


def _assert_same_step(expected, got):
    y0, dx0, dp0 = expected
    y1, dx1, dp1 = got
    _close(y1, y0, "output")
    assert len(dx1) == len(dx0)
    for i, (a, b) in enumerate(zip(dx1, dx0)):
        _close(a, b, f"d input {i}")
    assert sorted(dp1) == sorted(dp0)  # the same parameters, under the same names
    assert dp0  # there is something to compare
    for name in dp0:
        _close(dp1[name], dp0[name], f"d {name}")


def test_block_size_follows_the_isa():
    from course_lib.perf.fast_conv import backend

    assert B == (16 if backend()["isa"].startswith("AVX-512") else 8)


# ---------------------------------------------------------------------------------------------------- relayout


def test_to_blocked_and_to_plain_move_channels_and_gradients(mode):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2 * B, 5, 3)).astype(np.float32)
    blocked = ToBlocked(B)(ms.Tensor(x)).asnumpy()
    assert blocked.shape == (2, 2, 5, 3, B)
    np.testing.assert_array_equal(blocked, _blocked_np(x))
    assert blocked[1, 1, 4, 2, 3] == x[1, B + 3, 4, 2]  # channel c at [:, c // B, :, :, c % B]
    np.testing.assert_array_equal(ToPlain(B)(ms.Tensor(blocked)).asnumpy(), x)

    # Each is the other's gradient: d/dx sum(ToBlocked(x) * w) = ToPlain(w), and the other way round.
    w = rng.standard_normal(blocked.shape).astype(np.float32)
    v = rng.standard_normal(x.shape).astype(np.float32)
    _, (dx,), _ = _step(ToBlocked(B), [ms.Tensor(x)], ms.Tensor(w))
    np.testing.assert_array_equal(_blocked_np(dx), w)
    _, (db,), _ = _step(ToPlain(B), [ms.Tensor(blocked)], ms.Tensor(v))
    np.testing.assert_array_equal(db, _blocked_np(v))


# ---------------------------------------------------------------------------------------------------- conv

CONV_CASES = [(k, s, pad_mode) for k in (1, 3, 7) for s in (1, 2) for pad_mode in ("pad", "same", "valid")]


@pytest.mark.parametrize("blocked_input", [False, True], ids=["plain_in", "blocked_in"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[f"k{k}s{s}{p}" for k, s, p in CONV_CASES])
def test_blocked_conv_matches_nn_conv2d(case, blocked_input, pynative):
    k, s, pad_mode = case
    cin = B if blocked_input else 3
    cout = 2 * B
    padding = k // 2 if pad_mode == "pad" else 0
    has_bias = k != 1  # both branches: the bias is added in the blocked layout
    # One input size per case: see the test_*_on_one_input_shape_* tests for why.
    size = 9 + 3 * (s - 1) + ("pad", "same", "valid").index(pad_mode)  # "same" with stride 2 gets 13: uneven pads
    stock = nn.Conv2d(cin, cout, k, stride=s, pad_mode=pad_mode, padding=padding, has_bias=has_bias)
    fast = BlockedConv2d(cin, cout, k, stride=s, pad_mode=pad_mode, padding=padding, has_bias=has_bias)
    fast.weight.set_data(stock.weight.data.copy())
    if has_bias:
        rng_bias = np.random.default_rng(2).standard_normal(cout).astype(np.float32)
        stock.bias.set_data(ms.Tensor(rng_bias))
        fast.bias.set_data(ms.Tensor(rng_bias))
    rng = np.random.default_rng(0)
    x = _tensor(rng, 2, cin, size, size)

    # The raw output is blocked: channel c at [:, c // B, :, :, c % B].
    raw_in = ToBlocked(B)(x) if blocked_input else x
    raw = fast(raw_in).asnumpy()
    ref = stock(x).asnumpy()
    assert raw.ndim == 5 and raw.shape[4] == B
    _close(raw, _blocked_np(ref), "blocked output")

    expected, got = _compare_steps(stock, _Wrap(fast, blocked_input), [x], ref.shape, rng)
    assert len(got[2]) == (2 if has_bias else 1)
    _assert_same_step(expected, got)


@pytest.mark.parametrize("blocked_input", [False, True], ids=["plain_in", "blocked_in"])
def test_blocked_conv_in_graph_mode(blocked_input, mode):
    stock = nn.Conv2d(B, B, 3, stride=2, pad_mode="pad", padding=(1, 0, 2, 1), has_bias=True)
    fast = BlockedConv2d(B, B, 3, stride=2, pad_mode="pad", padding=(1, 0, 2, 1), has_bias=True)
    rng = np.random.default_rng(3)
    for a, b in ((stock.weight, fast.weight), (stock.bias, fast.bias)):
        value = rng.standard_normal(a.shape).astype(np.float32)
        a.set_data(ms.Tensor(value))
        b.set_data(ms.Tensor(value))
    x = _tensor(rng, 2, B, 9, 10)
    expected, got = _compare_steps(stock, _Wrap(fast, blocked_input), [x], (2, B, 4, 6), rng)
    _assert_same_step(expected, got)


# ---------------------------------------------------------------------------------------------------- batch norm


def _bn_pair(channels, rng, momentum=0.7):
    """A stock nn.BatchNorm2d with random gamma, beta and moving statistics, and a twin with the same values.
    momentum 0.7 (MindSpore stores 0.3): mixing up m and 1 - m shows."""
    bns = [nn.BatchNorm2d(channels, eps=1e-5, momentum=momentum) for _ in range(2)]
    values = {"gamma": rng.uniform(0.5, 1.5, channels), "beta": rng.standard_normal(channels) * 0.3,
              "moving_mean": rng.standard_normal(channels) * 0.3, "moving_variance": rng.uniform(0.5, 2.0, channels)}
    for bn in bns:
        for name, value in values.items():
            getattr(bn, name).set_data(ms.Tensor(value.astype(np.float32)))
    return bns


@pytest.mark.parametrize("blocked_input", [False, True], ids=["plain", "blocked"])
@pytest.mark.parametrize("fuse", ["none", "relu"])
def test_blocked_batch_norm_trains_like_nn_batchnorm2d(fuse, blocked_input, mode):
    rng = np.random.default_rng(4)
    channels = 2 * B
    bn_stock, bn_twin = _bn_pair(channels, rng)
    stock = _ThenReLU(bn_stock) if fuse == "relu" else bn_stock
    blocked = BlockedBatchNorm2d(bn_twin, fuse=fuse)
    assert blocked.gamma is bn_twin.gamma and blocked.moving_mean is bn_twin.moving_mean  # shared, not copied
    wrapped = _nchw(blocked, blocked_input)
    stock.set_train(True)
    wrapped.set_train(True)
    x = _tensor(rng, 2, channels, 8, 8, scale=2.0) + 0.5
    weight = ms.Tensor(rng.standard_normal((2, channels, 8, 8)).astype(np.float32))
    old_mean = bn_stock.moving_mean.asnumpy().copy()
    expected = _step(stock, [x], weight)
    got = _step(wrapped, [x], weight)
    _assert_same_step(expected, got)
    if fuse == "relu":
        assert (got[0] == 0).mean() > 0.2  # the ReLU ran
    # One step updated the moving statistics as MindSpore does.
    mean_after = bn_stock.moving_mean.asnumpy()
    assert np.abs(mean_after - old_mean).max() > 1e-2  # the step moved them, so the comparison below means something
    _close(bn_twin.moving_mean.asnumpy(), mean_after, "moving_mean")
    _close(bn_twin.moving_variance.asnumpy(), bn_stock.moving_variance.asnumpy(), "moving_variance")
    # ... and by the documented rule: moving = (1 - m) * moving + m * batch, unbiased variance, m = bn.momentum.
    xs = x.asnumpy()
    m = float(bn_stock.momentum)
    assert abs(m - 0.3) < 1e-6
    _close(bn_twin.moving_mean.asnumpy(), (1 - m) * old_mean + m * xs.mean(axis=(0, 2, 3)), "moving_mean rule")


@pytest.mark.parametrize("blocked_input", [False, True], ids=["plain", "blocked"])
@pytest.mark.parametrize("fuse", ["none", "relu"])
def test_blocked_batch_norm_eval_uses_moving_statistics(fuse, blocked_input, mode):
    rng = np.random.default_rng(5)
    channels = B
    bn_stock, bn_twin = _bn_pair(channels, rng)
    stock = _ThenReLU(bn_stock) if fuse == "relu" else bn_stock
    blocked = _nchw(BlockedBatchNorm2d(bn_twin, fuse=fuse), blocked_input)
    stock.set_train(False)
    blocked.set_train(False)
    x = _tensor(rng, 2, channels, 8, 8, scale=2.0) + 0.5
    before = bn_twin.moving_mean.asnumpy().copy(), bn_twin.moving_variance.asnumpy().copy()
    y = blocked(x).asnumpy()
    _close(y, stock(x).asnumpy(), "eval output")
    # by hand: the moving statistics, not the batch's
    g, b, mu, var = (getattr(bn_twin, n).asnumpy()[None, :, None, None]
                     for n in ("gamma", "beta", "moving_mean", "moving_variance"))
    by_hand = (x.asnumpy() - mu) / np.sqrt(var + 1e-5) * g + b
    _close(y, np.maximum(by_hand, 0) if fuse == "relu" else by_hand, "eval by hand")
    np.testing.assert_array_equal(bn_twin.moving_mean.asnumpy(), before[0])  # inference leaves them alone
    np.testing.assert_array_equal(bn_twin.moving_variance.asnumpy(), before[1])


# ---------------------------------------------------------------------------------------------------- AddReLU


class _StockAddReLU(nn.Cell):
    def construct(self, a, r):
        return ops.relu(a + r)


@pytest.mark.parametrize("shape", [(2, 3, 8, 8), (2, 2, 8, 8, B)], ids=["plain", "blocked"])
def test_add_relu_matches_relu_of_sum(shape, mode):
    rng = np.random.default_rng(6)
    a, r = _tensor(rng, *shape), _tensor(rng, *shape)
    weight = ms.Tensor(rng.standard_normal(shape).astype(np.float32))
    expected = _step(_StockAddReLU(), [a, r], weight)
    got = _step(AddReLU(), [a, r], weight)
    _close(got[0], expected[0], "output")
    assert 0.2 < (got[0] == 0).mean() < 0.8
    # dy * (y > 0) goes to both inputs; exact, there is no arithmetic in it
    for i in range(2):
        np.testing.assert_array_equal(got[1][i], expected[1][i])
        np.testing.assert_array_equal(got[1][i], weight.asnumpy() * (got[0] > 0))


# ---------------------------------------------------------------------------------------------------- max pool


@pytest.mark.parametrize("blocked_input", [False, True], ids=["plain", "blocked"])
@pytest.mark.parametrize("pad_mode", ["pad", "valid"])
def test_blocked_max_pool_matches_nn_maxpool2d(pad_mode, blocked_input, mode):
    rng = np.random.default_rng(7)
    shape = (2, B, 9, 10) if pad_mode == "pad" else (2, B, 10, 9)  # see test_*_on_one_input_shape_*
    # a permutation of distinct values, half of them negative: the maximum is unique and padding must not win
    x = ms.Tensor((rng.permutation(int(np.prod(shape))).reshape(shape) - np.prod(shape) / 2).astype(np.float32))
    if pad_mode == "pad":
        stock = nn.MaxPool2d(3, 2, pad_mode="pad", padding=1)
    else:
        stock = nn.MaxPool2d(3, 2, pad_mode="valid")
    blocked = _nchw(BlockedMaxPool2d(stock), blocked_input)
    for train in (True, False):
        stock.set_train(train)
        blocked.set_train(train)
        y = blocked(x).asnumpy()
        expected = stock(x).asnumpy()
        assert y.shape == expected.shape
        np.testing.assert_array_equal(y, expected)  # a maximum is one of the inputs: exact
        if pad_mode == "pad":
            assert (y < 0).any()  # windows of negative values: padding did not count as 0
    stock.set_train(True)
    blocked.set_train(True)
    weight = ms.Tensor(rng.standard_normal(expected.shape).astype(np.float32))
    y0, (dx0,), _ = _step(stock, [x], weight)
    y1, (dx1,), _ = _step(blocked, [x], weight)
    assert np.abs(dx0).sum() > 0
    _close(dx1, dx0, "d input")


# ---------------------------------------------------------------------------------------------------- residual blocks


def _randomize(net, seed):
    """Every parameter by name: weights ~ N(0, 1/fan_in), batch norms away from their 1/0 defaults."""
    rng = np.random.default_rng(seed)
    for param in sorted(net.get_parameters(), key=lambda p: p.name):
        shape, leaf = param.shape, param.name.rsplit(".", 1)[-1]
        if leaf == "weight":
            value = rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))
        elif leaf in ("gamma", "moving_variance"):
            value = rng.uniform(0.5, 1.5, shape)
        else:
            value = rng.standard_normal(shape) * 0.2
        param.set_data(ms.Tensor(value.astype(np.float32)))


# kind, in, out, stride, blocked input (an identity shortcut adds the input as it is, so it must be blocked), size.
# Identity blocks get another size: see the test_*_on_one_input_shape_* tests.
BLOCK_CASES = {
    "basic_down_plain_in": (ResidualBlockBase, 64, 128, 2, False, 16),
    "basic_down_blocked_in": (ResidualBlockBase, 64, 128, 2, True, 16),
    "bottleneck_down_plain_in": (ResidualBlock, 64, 256, 2, False, 16),
    "bottleneck_down_blocked_in": (ResidualBlock, 64, 256, 2, True, 16),
    "basic_identity": (ResidualBlockBase, 64, 64, 1, True, 12),
    "bottleneck_identity": (ResidualBlock, 256, 256, 1, True, 12),
}


@pytest.mark.parametrize("case", list(BLOCK_CASES))
def test_blocked_residual_block_matches_the_stock_one(case, mode):
    kind, cin, cout, stride, blocked_input, size = BLOCK_CASES[case]
    stock, twin = kind(cin, cout, stride=stride), kind(cin, cout, stride=stride)
    _randomize(stock, 8)
    _randomize(twin, 8)
    names = sorted(p.name for p in twin.get_parameters())
    blocked = BlockedResidualBlock(twin, B)
    assert sorted(p.name for p in blocked.get_parameters()) == names  # the names stay
    assert {id(p) for p in blocked.get_parameters()} == {id(p) for p in twin.get_parameters()}  # shared objects
    wrapped = _Wrap(blocked, blocked_input)
    rng = np.random.default_rng(9)
    x = _tensor(rng, 2, cin, size, size)
    stock.set_train(True)
    wrapped.set_train(True)
    expected, got = _compare_steps(stock, wrapped, [x], (2, cout, size // stride, size // stride), rng)
    _assert_same_step(expected, got)
    n_trainable = sum(1 for p in stock.trainable_params())
    assert len(got[2]) == n_trainable
    stats = {p.name: p for p in stock.get_parameters() if "moving" in p.name}
    for param in twin.get_parameters():
        name = param.name.removeprefix("layer.")
        if "moving" in name:
            _close(param.asnumpy(), stats[name].asnumpy(), name)  # updated like the stock ones
    stock.set_train(False)
    wrapped.set_train(False)
    _close(wrapped(x).asnumpy(), stock(x).asnumpy(), "eval output")


# PYNATIVE caches a Custom op's inferred output shape by op name and input shapes. An output shape computed from a
# closure (stride, padding, block), not from anything MindSpore sees, is then taken from the first layer called.


def test_convs_on_one_input_shape_keep_their_own_output_shapes(mode):
    x = _tensor(np.random.default_rng(10), 2, B, 11, 11)
    for stride in (1, 2):
        stock = nn.Conv2d(B, B, 3, stride=stride, pad_mode="pad", padding=1)
        fast = BlockedConv2d(B, B, 3, stride=stride, pad_mode="pad", padding=1)
        fast.weight.set_data(stock.weight.data.copy())
        _close(ToPlain(B)(fast(x)).asnumpy(), stock(x).asnumpy(), f"conv stride {stride}")


def test_pools_on_one_input_shape_keep_their_own_output_shapes(mode):
    x = _tensor(np.random.default_rng(11), 2, B, 11, 11)
    for stock in (nn.MaxPool2d(3, 2, pad_mode="pad", padding=1), nn.MaxPool2d(3, 2, pad_mode="valid")):
        pool = BlockedMaxPool2d(stock)
        for train in (True, False):
            stock.set_train(train)
            pool.set_train(train)
            got, expected = pool(x).asnumpy(), stock(x).asnumpy()
            assert got.shape == expected.shape, (stock.pad_mode, train, got.shape, expected.shape)
            np.testing.assert_array_equal(got, expected)


def test_relayouts_on_one_input_shape_keep_their_own_block(mode):
    plain = np.random.default_rng(12).standard_normal((2, 16, 3, 3)).astype(np.float32)
    for block in (16, 8):
        got = ToBlocked(block)(ms.Tensor(plain)).asnumpy()
        np.testing.assert_array_equal(got, plain.reshape(2, 16 // block, block, 3, 3).transpose(0, 1, 3, 4, 2))


# ---------------------------------------------------------------------------------------------------- block_resnet


def test_block_resnet_keeps_names_and_trains_like_the_stock_resnet18(pynative):
    """Four MNIST batches in training mode. On every step the blocked net gets the stock net's parameters (by name)
    and must give the same loss, gradients and moving statistics; the stock net then takes the optimiser step.

    Why not two free-running curves: with batches of 8 at 32x32, layer4's batch norms see 8 values per channel, and
    the loss is chaotic in the parameters. The stock net against swap_convs (plain FastConv2d, float differences of
    1e-6) drifts apart by 0.02-0.2 in loss at the third and fourth step; a tolerance that loose would hide bugs.

    Tolerances: the loss and the moving statistics are smooth in float noise: 1e-5 and 1e-4 (measured 5e-7 and
    2e-6). A gradient is not: a ReLU mask or a max-pool winner can flip between two float32 implementations
    on a near-tie (the MNIST background is constant), and a flip moves a few terms of one gradient. Measured on
    these batches, ||d_blocked - d_stock|| / ||d_stock|| is at most 2.5e-4 per parameter (conv1.weight, step 4; the
    same with swap_convs) and 1.5e-5 elsewhere; the bound is 5e-3. A wiring mistake (a missing ReLU, a parameter
    that is not shared, a wrong shortcut) moves gradients by far more than that; each layer alone is held to 1e-4
    by the tests above."""
    from course_lib.data.datasets import create_mnist_dataset

    batches = list(create_mnist_dataset(batch_size=8, train=True, shuffle=False).create_tuple_iterator())[:5]
    ms.set_seed(0)
    stock = resnet18(num_classes=10)
    ms.set_seed(1)  # other initial values: the copy below must really happen
    blocked = resnet18(num_classes=10)
    names = sorted(p.name for p in blocked.get_parameters())
    trainable = sorted(p.name for p in blocked.trainable_params())
    assert block_resnet(blocked) == 8  # 2 basic blocks in each of the 4 stages
    assert sorted(p.name for p in blocked.get_parameters()) == names == sorted(p.name for p in stock.get_parameters())
    assert sorted(p.name for p in blocked.trainable_params()) == trainable
    assert len(blocked.parameters_dict()) == len(stock.parameters_dict()) == len(names)
    assert isinstance(blocked.conv1, BlockedConv2d) and isinstance(blocked.maxpool, BlockedMaxPool2d)
    assert all(isinstance(unit, BlockedResidualBlock) for stage in (blocked.layer1, blocked.layer4) for unit in stage)
    assert isinstance(blocked.layer2.cell_list[0], BlockedResidualBlock)  # SequentialCell runs the new blocks

    loss_fn = nn.CrossEntropyLoss()
    steps = []
    for net in (stock, blocked):
        def forward(x, y, net=net):
            return loss_fn(net(x), y)

        steps.append(ms.value_and_grad(forward, None, net.trainable_params()))
    opt = nn.Momentum(stock.trainable_params(), learning_rate=0.002, momentum=0.9)
    stock.set_train(True)
    blocked.set_train(True)
    stock_params = {p.name: p for p in stock.get_parameters()}
    blocked_params = {p.name: p for p in blocked.get_parameters()}
    curve = []
    for image, label in batches[:4]:
        for name, param in blocked_params.items():
            param.set_data(stock_params[name].data.copy())
        x = ms.ops.tile(image, (1, 3, 1, 1))  # grey digits -> 3 channels
        loss0, grads0 = steps[0](x, label)
        loss1, grads1 = steps[1](x, label)
        curve.append(float(loss0.asnumpy()))
        assert abs(float(loss1.asnumpy()) - curve[-1]) <= 1e-5 * abs(curve[-1]), (len(curve), loss1, loss0)
        g0 = {p.name: g.asnumpy() for p, g in zip(stock.trainable_params(), grads0)}
        g1 = {p.name: g.asnumpy() for p, g in zip(blocked.trainable_params(), grads1)}
        assert sorted(g1) == sorted(g0) == trainable
        for name in g0:
            error = np.linalg.norm(g1[name] - g0[name]) / np.linalg.norm(g0[name])
            assert error <= 5e-3, (len(curve), name, error)
        for name in names:
            if "moving" in name:
                _close(blocked_params[name].asnumpy(), stock_params[name].asnumpy(), name)
        opt(grads0)
    assert curve[-1] < curve[0]  # a training curve: the stock net learns over the 4 steps

    stock.set_train(False)
    blocked.set_train(False)
    for name, param in blocked_params.items():
        param.set_data(stock_params[name].data.copy())
    x = ms.ops.tile(batches[4][0], (1, 3, 1, 1))
    _close(blocked(x).asnumpy(), stock(x).asnumpy(), "eval logits")
    assert blocked.bn1.training is False and blocked.layer3[1].bn2.training is False


# ---------------------------------------------------------------------------------------------------- bad inputs


def _raises(error, words, call):
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert "Fix:" in message, message


def test_relayout_refuses_the_wrong_tensor(pynative):
    _raises(ValueError, ["divisible by", str(B), "(2, 12, 4, 4)"],
            lambda: ToBlocked(B)(ms.Tensor(np.ones((2, 12, 4, 4), np.float32))))
    _raises(ValueError, ["5-D blocked", "(2, 16, 4, 4)"], lambda: ToPlain(B)(ms.Tensor(np.ones((2, 16, 4, 4),
                                                                                                   np.float32))))


def test_blocked_conv_refuses_channels_off_the_block():
    _raises(ValueError, ["out_channels divisible by", str(B), str(B + 4)], lambda: BlockedConv2d(3, B + 4, 3))
    _raises(ValueError, ["block must be 8 or 16", "12"], lambda: BlockedConv2d(3, 24, 3, block=12))


def test_blocked_batch_norm_refuses_what_it_cannot_replace():
    _raises(TypeError, ["nn.BatchNorm2d", "ReLU"], lambda: BlockedBatchNorm2d(nn.ReLU()))
    _raises(TypeError, ["BatchNorm1d"], lambda: BlockedBatchNorm2d(nn.BatchNorm1d(B)))
    _raises(ValueError, ["use_batch_statistics=True"],
            lambda: BlockedBatchNorm2d(nn.BatchNorm2d(B, use_batch_statistics=True)))
    _raises(ValueError, ["use_batch_statistics=False"],
            lambda: BlockedBatchNorm2d(nn.BatchNorm2d(B, use_batch_statistics=False)))
    _raises(ValueError, ["fuse", "'bogus'"], lambda: BlockedBatchNorm2d(nn.BatchNorm2d(B), fuse="bogus"))


def test_blocked_max_pool_refuses_what_it_cannot_replace():
    _raises(ValueError, ["return_indices=True"],
            lambda: BlockedMaxPool2d(nn.MaxPool2d(3, 2, pad_mode="pad", padding=1, return_indices=True)))
    _raises(ValueError, ["kernel_size=(3, 2)"],
            lambda: BlockedMaxPool2d(nn.MaxPool2d((3, 2), 2, pad_mode="pad", padding=1)))
    _raises(ValueError, ["pad_mode='SAME'"], lambda: BlockedMaxPool2d(nn.MaxPool2d(3, 2, pad_mode="same")))
    _raises(TypeError, ["nn.MaxPool2d", "AvgPool2d"], lambda: BlockedMaxPool2d(nn.AvgPool2d(2)))


def test_block_resnet_refuses_other_networks():
    dense = nn.Dense(4, 2)
    before = {p.name: p.asnumpy().copy() for p in dense.get_parameters()}
    _raises(TypeError, ["course_lib.models.resnet.ResNet", "Dense", "swap_convs"], lambda: block_resnet(dense))
    assert {p.name: p.asnumpy() for p in dense.get_parameters()}.keys() == before.keys()  # left as it was
