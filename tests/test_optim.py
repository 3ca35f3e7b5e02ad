import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from course_lib.models import lenet5, resnet18
from course_lib.train.optim import param_groups, split_weight_decay_params


def expected_split(net):
    """Which parameters should decay, derived from the layer types (not from names)."""
    decayed, not_decayed = set(), set()
    for _, cell in net.cells_and_names():
        if isinstance(cell, (nn.Conv2d, nn.Dense)):
            decayed.add(cell.weight.name)
            if cell.bias is not None:
                not_decayed.add(cell.bias.name)
        elif isinstance(cell, nn.BatchNorm2d):
            not_decayed.update({cell.gamma.name, cell.beta.name})
    return decayed, not_decayed


@pytest.fixture(scope="module")
def resnet():
    return resnet18(num_classes=10)


def test_lenet_weights_decay_biases_do_not():
    net = lenet5()
    decayed, not_decayed = split_weight_decay_params(net)
    assert [p.name for p in decayed] == ["conv1.weight", "conv2.weight", "fc1.weight", "fc2.weight", "fc3.weight"]
    assert [p.name for p in not_decayed] == ["conv1.bias", "conv2.bias", "fc1.bias", "fc2.bias", "fc3.bias"]


def test_resnet18_bn_and_bias_excluded(resnet):
    decayed, not_decayed = split_weight_decay_params(resnet)
    want_decayed, want_not_decayed = expected_split(resnet)
    assert {p.name for p in decayed} == want_decayed
    assert {p.name for p in not_decayed} == want_not_decayed
    assert len(decayed) == 21 and len(not_decayed) == 41  # 20 convs + fc; 20 BatchNorms x (gamma, beta) + fc bias
    assert len(decayed) + len(not_decayed) == len(resnet.trainable_params())
    assert "bn1.gamma" in {p.name for p in not_decayed} and "end_point.bias" in {p.name for p in not_decayed}


def test_param_groups_feed_momentum_with_per_parameter_decay(resnet):
    groups = param_groups(resnet, 1e-4)
    assert [sorted(group) for group in groups] == [["params", "weight_decay"], ["params", "weight_decay"],
                                                   ["order_params"]]
    assert groups[0]["weight_decay"] == 1e-4 and groups[1]["weight_decay"] == 0.0
    optimizer = nn.Momentum(groups, learning_rate=0.1, momentum=0.9)
    # order_params: the optimizer keeps the network's parameter order
    assert [p.name for p in optimizer.parameters] == [p.name for p in resnet.trainable_params()]
    _, want_not_decayed = expected_split(resnet)
    for param, decay, flag in zip(optimizer.parameters, optimizer.group_weight_decay, optimizer.decay_flags):
        assert (decay, flag) == ((0.0, False) if param.name in want_not_decayed else (1e-4, True)), param.name


def test_weight_decay_acts_only_on_the_decayed_group():
    net = nn.SequentialCell(nn.Dense(3, 2), nn.BatchNorm1d(2))
    before = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    optimizer = nn.SGD(param_groups(net, 0.5), learning_rate=0.1)
    optimizer(tuple(ms.Tensor(np.zeros_like(before[p.name])) for p in optimizer.parameters))  # only decay acts
    for param in net.trainable_params():
        if param.name == "0.weight":
            np.testing.assert_allclose(param.asnumpy(), before[param.name] * (1 - 0.1 * 0.5), rtol=1e-6)
        else:
            np.testing.assert_array_equal(param.asnumpy(), before[param.name])


def test_name_is_matched_on_its_last_part_not_as_substring():
    class Head(nn.Cell):
        def __init__(self):
            super().__init__()
            self.debias_proj = nn.Dense(4, 4, has_bias=False)  # the migration example's 'bias' rule would skip it
            self.alphabet = nn.Dense(4, 2)

        def construct(self, x):
            return self.alphabet(self.debias_proj(x))

    decayed, not_decayed = split_weight_decay_params(Head())
    assert [p.name for p in decayed] == ["debias_proj.weight", "alphabet.weight"]
    assert [p.name for p in not_decayed] == ["alphabet.bias"]
    seed_rule = [p.name for p in Head().trainable_params()
                 if "beta" in p.name or "gamma" in p.name or "bias" in p.name]
    assert "debias_proj.weight" in seed_rule  # the substring rule gets it wrong


def test_empty_group_is_left_out():
    net = nn.Dense(3, 2, has_bias=False)
    groups = param_groups(net, 1e-4)
    assert len(groups) == 2 and groups[0]["params"][0].name == "weight"
    nn.Momentum(groups, learning_rate=0.1, momentum=0.9)  # would raise "group `params` must not be empty"
    with pytest.raises(ValueError, match="group `params` must not be empty"):
        nn.Momentum([{"params": []}, {"params": net.trainable_params()}], learning_rate=0.1, momentum=0.9)


def test_custom_no_decay_names():
    decayed, not_decayed = split_weight_decay_params(lenet5(), no_decay_names=("weight",))
    assert len(decayed) == 5 and all(p.name.endswith(".bias") for p in decayed)
    assert all(p.name.endswith(".weight") for p in not_decayed)


@pytest.mark.parametrize("weight_decay", [-1e-4, float("nan"), float("inf")])
def test_bad_weight_decay(weight_decay):
    with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0"):
        param_groups(lenet5(), weight_decay)


@pytest.mark.parametrize("weight_decay", ["1e-4", True, None])
def test_weight_decay_of_the_wrong_type(weight_decay):
    """A wrong type is a TypeError, as in every course_lib check (validation.py's vocabulary)."""
    with pytest.raises(TypeError, match=r"weight_decay must be a number \(>= 0\), got .* Fix: pass e.g. 1e-4"):
        param_groups(lenet5(), weight_decay)


def test_bad_net_and_names():
    with pytest.raises(TypeError, match=r"net must be a mindspore.nn.Cell, got \[1, 2\] \(list\)"):
        split_weight_decay_params([1, 2])
    frozen = nn.Dense(2, 2)
    for param in frozen.get_parameters():
        param.requires_grad = False
    with pytest.raises(ValueError, match="Dense has no trainable parameters"):
        param_groups(frozen, 1e-4)
    with pytest.raises(TypeError, match="no_decay_names must be a tuple of non-empty names, got 'bias'"):
        split_weight_decay_params(lenet5(), no_decay_names="bias")
