import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import numpy as np
import pytest

import mindspore as ms
from mindspore import Tensor, nn, ops

from course_lib.cells import NetWithLoss, SegmentationEvalCell, TrainOneStepCell


@pytest.fixture(autouse=True)
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    yield


class TinyConvNet(nn.Cell):
    """A LeNet-like miniature: conv -> relu -> pool -> dense, for (N, 1, 8, 8) inputs."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="valid", has_bias=True)
        self.pool = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(4 * 3 * 3, 5)

    def construct(self, x):
        return self.fc(self.flatten(self.pool(ops.relu(self.conv(x)))))


class TwoInputTwoOutput(nn.Cell):
    """Image-ish features + extra features -> (class logits, a regression value)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Dense(6, 8)
        self.b = nn.Dense(2, 8)
        self.cls = nn.Dense(8, 3)
        self.reg = nn.Dense(8, 1)

    def construct(self, x, extra):
        hidden = ops.relu(self.a(x) + self.b(extra))
        return self.cls(hidden), self.reg(hidden)


def _batches(count, batch=8, seed=0):
    rs = np.random.RandomState(seed)
    return [(Tensor(rs.randn(batch, 1, 8, 8).astype(np.float32)), Tensor(rs.randint(0, 5, batch).astype(np.int32)))
            for _ in range(count)]


def _two_input_data(n=32, seed=0):
    rs = np.random.RandomState(seed)
    x = rs.randn(n, 6).astype(np.float32)
    extra = rs.randn(n, 2).astype(np.float32)
    cls = (x[:, 0] + extra[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)
    reg = (0.5 * x[:, 2:3] - extra[:, 1:2]).astype(np.float32)
    return Tensor(x), Tensor(extra), Tensor(cls), Tensor(reg)


def _ce():
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def _params(net):
    return {p.name: p.asnumpy().copy() for p in net.trainable_params()}


# ------------------------------------------------------------------------------------------ TrainOneStepCell
def test_same_losses_and_weights_as_nn_train_one_step_cell_step_by_step():
    batches = _batches(6)
    runs = {}
    for name, cell_class in (("course_lib", TrainOneStepCell), ("nn", nn.TrainOneStepCell)):
        ms.set_seed(1)
        net = TinyConvNet()
        train_step = cell_class(nn.WithLossCell(net, _ce()), nn.Momentum(net.trainable_params(), 0.05, 0.9))
        train_step.set_train()
        losses, weights = [], []
        for data, label in batches:
            losses.append(float(train_step(data, label).asnumpy()))
            weights.append(_params(net))
        runs[name] = (losses, weights)
    ours, theirs = runs["course_lib"], runs["nn"]
    assert ours[0] == theirs[0]
    assert len(set(ours[0])) == len(ours[0])  # the weights really moved between steps
    for step_ours, step_theirs in zip(ours[1], theirs[1]):
        assert step_ours.keys() == step_theirs.keys()
        for key in step_ours:
            np.testing.assert_allclose(step_ours[key], step_theirs[key], rtol=1e-6, atol=1e-7)


def test_same_losses_as_nn_train_one_step_cell_in_pynative_mode():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    batches = _batches(3)
    losses = {}
    for cell_class in (TrainOneStepCell, nn.TrainOneStepCell):
        ms.set_seed(1)
        net = TinyConvNet()
        train_step = cell_class(nn.WithLossCell(net, _ce()), nn.Momentum(net.trainable_params(), 0.05, 0.9))
        losses[cell_class] = [float(train_step(data, label).asnumpy()) for data, label in batches]
    assert losses[TrainOneStepCell] == losses[nn.TrainOneStepCell]


def test_sens_two_doubles_the_sgd_update():
    data, label = _batches(1)[0]
    deltas = {}
    for sens in (1.0, 2.0):
        ms.set_seed(2)
        net = TinyConvNet()
        before = _params(net)
        train_step = TrainOneStepCell(nn.WithLossCell(net, _ce()), nn.SGD(net.trainable_params(), 0.1), sens=sens)
        train_step(data, label)
        after = _params(net)
        deltas[sens] = {key: after[key] - before[key] for key in before}
    for key, delta in deltas[1.0].items():
        assert np.abs(delta).max() > 1e-5
        np.testing.assert_allclose(deltas[2.0][key], 2.0 * delta, rtol=1e-5, atol=1e-7)


def _second_step_delta(cell_class, second_sens):
    data, label = _batches(1)[0]
    ms.set_seed(3)
    net = TinyConvNet()
    train_step = cell_class(nn.WithLossCell(net, _ce()), nn.SGD(net.trainable_params(), 0.1), sens=1.0)
    train_step(data, label)  # compiles the graph with sens = 1.0
    if cell_class is TrainOneStepCell:
        train_step.set_sens(second_sens)
    else:
        train_step.sens = second_sens
    before = net.fc.weight.asnumpy().copy()
    train_step(data, label)
    return net.fc.weight.asnumpy() - before


def test_set_sens_takes_effect_after_the_graph_is_compiled():
    np.testing.assert_allclose(_second_step_delta(TrainOneStepCell, 2.0),
                               2.0 * _second_step_delta(TrainOneStepCell, 1.0), rtol=1e-5, atol=1e-7)


def test_nn_train_one_step_cell_ignores_a_sens_change_after_compilation_in_graph_mode():
    # Why course_lib keeps sens in a Parameter: a Python float attribute is frozen into the compiled graph.
    np.testing.assert_array_equal(_second_step_delta(nn.TrainOneStepCell, 2.0),
                                  _second_step_delta(nn.TrainOneStepCell, 1.0))


def test_sens_property_and_parameter():
    net = TinyConvNet()
    train_step = TrainOneStepCell(nn.WithLossCell(net, _ce()), nn.SGD(net.trainable_params(), 0.1), sens=4)
    assert train_step.sens == 4.0 and isinstance(train_step.sens, float)
    train_step.set_sens(0.5)
    assert train_step.sens == 0.5
    assert "sens" in train_step.parameters_dict()
    assert "sens" not in [p.name for p in train_step.trainable_params()]


@pytest.mark.parametrize("sens", [0, -1.0, float("nan"), float("inf"), True, "1.0", None])
def test_bad_sens_is_rejected(sens):
    net = TinyConvNet()
    with pytest.raises(ValueError, match=r"sens must be a positive finite number, got .*Fix:"):
        TrainOneStepCell(nn.WithLossCell(net, _ce()), nn.SGD(net.trainable_params(), 0.1), sens=sens)


def test_set_sens_rejects_bad_values():
    net = TinyConvNet()
    train_step = TrainOneStepCell(nn.WithLossCell(net, _ce()), nn.SGD(net.trainable_params(), 0.1))
    with pytest.raises(ValueError, match="got 0"):
        train_step.set_sens(0)
    assert train_step.sens == 1.0


def test_network_and_optimizer_types_are_checked():
    net = TinyConvNet()
    optimizer = nn.SGD(net.trainable_params(), 0.1)
    with pytest.raises(TypeError, match=r"network must be a mindspore.nn.Cell .*got function.*Fix: wrap"):
        TrainOneStepCell(lambda x, y: x, optimizer)
    with pytest.raises(TypeError, match=r"optimizer must be a mindspore.nn.Optimizer, got list"):
        TrainOneStepCell(nn.WithLossCell(net, _ce()), net.trainable_params())


DP_WORKER = '''
import course_lib  # noqa: F401
import sys
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn
from mindspore.communication import get_group_size, get_rank, init
from course_lib.cells import TrainOneStepCell

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
init()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
rank, size = get_rank(), get_group_size()
rs = np.random.RandomState(0)
x = rs.randn(4, 8, 6).astype(np.float32)  # 4 steps, global batch 8
y = rs.randint(0, 3, (4, 8)).astype(np.int32)
shard = slice(rank * 8 // size, (rank + 1) * 8 // size)  # each rank trains on its own half of every batch
for name, cell_class in (("ours", TrainOneStepCell), ("nn", nn.TrainOneStepCell)):
    ms.set_seed(1)
    net = nn.Dense(6, 3)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = cell_class(nn.WithLossCell(net, loss_fn), nn.Momentum(net.trainable_params(), 0.1, 0.9), sens=1.0)
    step.set_train()
    for i in range(4):
        step(Tensor(x[i, shard]), Tensor(y[i, shard]))
    np.savez(f"{sys.argv[1]}/rank{rank}_{name}.npz", weight=net.weight.asnumpy(), bias=net.bias.asnumpy(),
             reducer=np.array(step.reducer_flag if name == "ours" else True))
'''


@pytest.mark.slow
def test_data_parallel_under_msrun_ranks_identical_and_equal_to_nn_train_one_step_cell(tmp_path):
    from course_lib.parallel.launch import launch

    worker = tmp_path / "dp_cells_worker.py"
    worker.write_text(DP_WORKER)
    out = tmp_path / "out"
    out.mkdir()
    launch(worker, [str(out)], worker_num=2, timeout=240, log_dir=tmp_path / "logs")
    runs = {(rank, name): np.load(out / f"rank{rank}_{name}.npz") for rank in (0, 1) for name in ("ours", "nn")}
    assert bool(runs[(0, "ours")]["reducer"]) and bool(runs[(1, "ours")]["reducer"])
    for key in ("weight", "bias"):
        reference = runs[(0, "nn")][key]
        for rank in (0, 1):
            np.testing.assert_array_equal(runs[(rank, "ours")][key], runs[(rank, "nn")][key])
            np.testing.assert_array_equal(runs[(rank, "ours")][key], reference)
    # The gradient mean over two half batches is the full-batch gradient: compare with one process.
    rs = np.random.RandomState(0)
    x = rs.randn(4, 8, 6).astype(np.float32)
    y = rs.randint(0, 3, (4, 8)).astype(np.int32)
    ms.set_seed(1)
    net = nn.Dense(6, 3)
    step = TrainOneStepCell(nn.WithLossCell(net, _ce()), nn.Momentum(net.trainable_params(), 0.1, 0.9))
    assert step.reducer_flag is False
    for i in range(4):
        step(Tensor(x[i]), Tensor(y[i]))
    initial = runs[(0, "ours")]["weight"]
    assert np.abs(net.weight.asnumpy()).sum() > 0 and initial.shape == net.weight.shape
    np.testing.assert_allclose(runs[(0, "ours")]["weight"], net.weight.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[(0, "ours")]["bias"], net.bias.asnumpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- NetWithLoss
def test_single_loss_equals_with_loss_cell():
    data, label = _batches(1)[0]
    net = TinyConvNet()
    ours = NetWithLoss(net, _ce())(data, label).asnumpy()
    theirs = nn.WithLossCell(net, _ce())(data, label).asnumpy()
    assert ours == theirs
    assert NetWithLoss(net, _ce()).backbone_network is net


def test_two_inputs_two_losses_value_is_the_weighted_sum():
    x, extra, cls, reg = _two_input_data()
    backbone = TwoInputTwoOutput()
    net_with_loss = NetWithLoss(backbone, {"cls": _ce(), "reg": nn.MSELoss()}, loss_weights={"cls": 1.0, "reg": 0.5},
                                num_inputs=2)
    total = float(net_with_loss(x, extra, cls, reg).asnumpy())
    logits, value = backbone(x, extra)
    expected = float(_ce()(logits, cls).asnumpy()) + 0.5 * float(nn.MSELoss()(value, reg).asnumpy())
    assert total == pytest.approx(expected, rel=1e-6)
    assert net_with_loss.loss_names == ("cls", "reg")
    assert net_with_loss.loss_weights == (1.0, 0.5)


def test_two_inputs_two_losses_trains_and_return_terms_matches():
    x, extra, cls, reg = _two_input_data()
    results = {}
    for return_terms in (False, True):
        ms.set_seed(4)
        backbone = TwoInputTwoOutput()
        net_with_loss = NetWithLoss(backbone, [_ce(), nn.MSELoss()], loss_weights=[1.0, 0.5], num_inputs=2,
                                    return_terms=return_terms)
        train_step = TrainOneStepCell(net_with_loss, nn.Adam(backbone.trainable_params(), 0.01))
        train_step.set_train()
        outputs = [train_step(x, extra, cls, reg) for _ in range(40)]
        results[return_terms] = outputs
    totals = [float(o.asnumpy()) for o in results[False]]
    assert totals[-1] < 0.5 * totals[0]
    with_terms = results[True]
    assert all(isinstance(o, tuple) and len(o) == 3 for o in with_terms)
    assert [float(o[0].asnumpy()) for o in with_terms] == totals
    last_total, last_cls, last_reg = (float(t.asnumpy()) for t in with_terms[-1])
    assert last_total == pytest.approx(last_cls + 0.5 * last_reg, rel=1e-6)


def test_one_output_and_one_label_shared_by_two_losses():
    # The migration guide's training script (its Trainer): loss1(logits, label) + loss2(logits, label).
    data, label = _batches(1)[0]
    net = TinyConvNet()
    focal_like = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="sum")
    total = float(NetWithLoss(net, [_ce(), focal_like])(data, label).asnumpy())
    logits = net(data)
    expected = float(_ce()(logits, label).asnumpy()) + float(focal_like(logits, label).asnumpy())
    assert total == pytest.approx(expected, rel=1e-6)


def test_wrong_number_of_call_arguments_is_explained():
    x, extra, cls, reg = _two_input_data()
    net_with_loss = NetWithLoss(TwoInputTwoOutput(), [_ce(), nn.MSELoss(), nn.MSELoss()], num_inputs=2)
    with pytest.raises(ValueError, match=r"got 4 arguments: 2 backbone input\(s\) leave 2 label\(s\)"):
        net_with_loss(x, extra, cls, reg)


def test_output_count_mismatch_is_explained():
    x, extra, cls, _ = _two_input_data()
    net_with_loss = NetWithLoss(TwoInputTwoOutput(), _ce(), num_inputs=2)
    with pytest.raises(ValueError, match=r"backbone returned 2 outputs but there are 1 loss function"):
        net_with_loss(x, extra, cls)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"backbone": "net"}, TypeError, r"backbone must be a mindspore.nn.Cell, got str"),
    ({"loss_fns": "ce"}, TypeError, r"loss_fns must be a Cell, a list/tuple of Cells or a dict of Cells, got str"),
    ({"loss_fns": []}, ValueError, r"loss_fns is empty"),
    ({"loss_fns": [nn.MSELoss(), np.mean]}, TypeError, r"every loss function must be a mindspore.nn.Cell, got loss1"),
    ({"loss_fns": {"": nn.MSELoss()}}, TypeError, r"dict keys must be non-empty strings"),
    ({"loss_weights": [1.0, 2.0]}, ValueError, r"one number per loss \(1: \['loss'\]\)"),
    ({"loss_weights": [-1.0]}, ValueError, r"loss weight for 'loss' must be a finite number >= 0, got -1.0"),
    ({"loss_fns": {"a": nn.MSELoss()}, "loss_weights": {"b": 1.0}}, ValueError, r"keys must match the loss names"),
    ({"num_inputs": 0}, ValueError, r"num_inputs must be a positive int .*got 0"),
    ({"return_terms": "yes"}, TypeError, r"return_terms must be True or False"),
])
def test_bad_constructor_arguments_are_explained(kwargs, error, message):
    arguments = {"backbone": TinyConvNet(), "loss_fns": _ce(), **kwargs}
    with pytest.raises(error, match=message):
        NetWithLoss(**arguments)


# ---- SegmentationEvalCell -------------------------------------------------------------------------------

class _PixelNet(nn.Cell):
    """Per-pixel logits that depend on the column, so a left-right flip changes them."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="same", has_bias=True)

    def construct(self, x):
        return self.conv(x)


@pytest.mark.parametrize("flip_test", [False, True])
def test_segmentation_eval_cell_returns_loss_logits_label(flip_test):
    ms.set_seed(0)
    net = _PixelNet()
    loss_fn = nn.CrossEntropyLoss(ignore_index=255)
    x = Tensor(np.random.default_rng(0).random((2, 1, 4, 6), dtype=np.float32))
    y = Tensor(np.random.default_rng(1).integers(0, 2, (2, 4, 6)).astype(np.int32))
    loss, logits, label = SegmentationEvalCell(net, loss_fn, flip_test=flip_test)(x, y)
    plain = net(x).asnumpy()
    expected = (plain + net(Tensor(x.asnumpy()[..., ::-1].copy())).asnumpy()[..., ::-1]) / 2 if flip_test else plain
    np.testing.assert_allclose(logits.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    assert np.array_equal(label.asnumpy(), y.asnumpy())
    assert float(loss.asnumpy()) == pytest.approx(float(loss_fn(Tensor(expected), y).asnumpy()), rel=1e-5)


def test_segmentation_eval_cell_bad_arguments():
    with pytest.raises(TypeError, match="network must be a mindspore.nn.Cell"):
        SegmentationEvalCell(lambda x: x, nn.CrossEntropyLoss())
    with pytest.raises(TypeError, match="loss_fn must be a mindspore.nn.Cell"):
        SegmentationEvalCell(_PixelNet(), "ce")
    with pytest.raises(TypeError, match="flip_test must be True or False"):
        SegmentationEvalCell(_PixelNet(), nn.CrossEntropyLoss(), flip_test=1)
