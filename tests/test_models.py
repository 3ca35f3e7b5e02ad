import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from course_lib.models import (
    LeNet5,
    ResidualBlock,
    ResidualBlockBase,
    ResNet,
    lenet5,
    resnet18,
    resnet34,
    resnet50,
    resnet101,
)


def _count(net):
    return sum(int(p.size) for p in net.trainable_params())


def _images(shape, seed=0):
    return ms.Tensor(np.random.RandomState(seed).randn(*shape).astype(np.float32))


# ---------------------------------------------------------------- LeNet-5

@pytest.mark.parametrize("batch", [32, 7])
def test_lenet_output_shape_any_batch_including_last_partial_batch(graph, batch):
    net = lenet5()
    assert net(_images((batch, 1, 32, 32))).shape == (batch, 10)


def test_lenet_num_classes_and_in_channels(pynative):
    net = LeNet5(num_classes=3, in_channels=3)
    assert net(_images((2, 3, 32, 32))).shape == (2, 3)
    assert net.conv1.weight.shape == (6, 3, 5, 5)


def test_lenet_parameter_names_and_counts():
    default_names = [p.name for p in lenet5().trainable_params()]
    assert default_names == ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight",
                             "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"]
    assert _count(lenet5()) == 61_706
    seed_net = lenet5(init="seed")  # the programming guide's "Training": convs without bias
    assert [p.name for p in seed_net.trainable_params()] == [n for n in default_names if n not in
                                                               ("conv1.bias", "conv2.bias")]
    assert _count(seed_net) == 61_706 - 6 - 16


def test_lenet_seed_init_is_truncated_normal_002_and_default_is_larger():
    ms.set_seed(1)
    seed_net = lenet5(init="seed")
    for param in seed_net.trainable_params():
        assert 0.015 < float(param.asnumpy().std()) < 0.025, param.name
    ms.set_seed(1)
    default_net = lenet5()
    fc1 = default_net.fc1.weight.asnumpy()
    bound = 1 / math.sqrt(400)  # HeUniform(sqrt(5)) == uniform(±1/sqrt(fan_in)), fan_in = 16*5*5
    assert np.abs(fc1).max() <= bound + 1e-7
    assert float(fc1.std()) == pytest.approx(bound / math.sqrt(3), rel=0.05)


def test_lenet_same_seed_same_weights():
    ms.set_seed(7)
    first = lenet5().fc3.weight.asnumpy()
    ms.set_seed(7)
    second = lenet5().fc3.weight.asnumpy()
    np.testing.assert_array_equal(first, second)


def test_lenet_graph_and_pynative_agree_for_same_weights_and_input():
    previous = ms.get_context("mode")
    try:
        ms.set_seed(3)
        net = lenet5()
        x = _images((5, 1, 32, 32), seed=3)
        ms.set_context(mode=ms.PYNATIVE_MODE)
        eager = net(x).asnumpy()
        ms.set_context(mode=ms.GRAPH_MODE)
        compiled = net(x).asnumpy()
    finally:
        ms.set_context(mode=previous)
    assert eager.shape == (5, 10)
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad, error, fragment", [
    (0, ValueError, "num_classes must be an integer >= 1, got 0"),
    (-3, ValueError, "got -3"),
    (2.5, TypeError, "got 2.5 (float)"),
    (True, TypeError, "got True (bool)"),
    ("10", TypeError, "got '10' (str)"),
])
def test_lenet_rejects_bad_num_classes(bad, error, fragment):
    with pytest.raises(error, match="num_classes") as info:
        lenet5(num_classes=bad)
    assert fragment in str(info.value)
    assert "Fix:" in str(info.value)


def test_lenet_rejects_unknown_init_and_bad_channels():
    with pytest.raises(ValueError) as info:
        lenet5(init="xavier")
    assert "init must be one of ('default', 'seed'), got 'xavier'" in str(info.value)
    with pytest.raises(ValueError, match="in_channels must be an integer >= 1, got 0"):
        LeNet5(in_channels=0)


# ---------------------------------------------------------------- ResNet

@pytest.mark.parametrize("factory, count", [
    (resnet18, 11_689_512), (resnet34, 21_797_672), (resnet50, 25_557_032), (resnet101, 44_549_160),
])
def test_resnet_parameter_counts_match_torchvision(factory, count):
    assert _count(factory(num_classes=1000)) == count


def test_resnet_parameter_name_contract():
    names = {p.name for p in resnet50(num_classes=10).get_parameters()}
    expected = {
        "conv1.weight", "bn1.gamma", "bn1.beta", "bn1.moving_mean", "bn1.moving_variance",
        "layer1.0.conv1.weight", "layer1.0.bn1.gamma", "layer1.2.conv3.weight", "layer1.2.bn3.moving_variance",
        "layer1.0.down_sample_layer.0.weight", "layer1.0.down_sample_layer.1.beta",
        "layer2.0.down_sample_layer.0.weight", "layer2.0.down_sample_layer.1.gamma",
        "layer2.0.down_sample_layer.1.moving_mean", "layer3.5.bn2.beta", "layer4.2.conv2.weight",
        "end_point.weight", "end_point.bias",
    }
    assert expected <= names
    assert not [n for n in names if n.endswith(".bias") and n != "end_point.bias"], "convs must have no bias"
    assert not [n for n in names if "layer1.1.down_sample" in n or "layer2.1.down_sample" in n]

    basic_names = {p.name for p in resnet18(num_classes=10).get_parameters()}
    assert "layer1.0.down_sample_layer.0.weight" not in basic_names  # 64 -> 64, stride 1: identity shortcut
    assert {"layer1.1.bn2.gamma", "layer2.0.down_sample_layer.0.weight", "layer4.1.conv2.weight"} <= basic_names
    assert not [n for n in basic_names if "conv3" in n or "bn3" in n or "bn1d" in n]


@pytest.mark.parametrize("factory", [resnet18, resnet34, resnet50])
def test_resnet_output_shape_64x64(pynative, factory):
    net = factory(num_classes=10)
    net.set_train(False)
    assert net(_images((2, 3, 64, 64))).shape == (2, 10)


def test_resnet101_output_shape_smallest_input(pynative):
    net = resnet101(num_classes=5)
    net.set_train(False)
    assert net(_images((1, 3, 32, 32))).shape == (1, 5)


def test_resnet18_non_square_and_224_inputs(pynative):
    net = resnet18(num_classes=4)
    net.set_train(False)
    assert net(_images((1, 3, 37, 50))).shape == (1, 4)
    assert net(_images((1, 3, 224, 224))).shape == (1, 4)


def test_resnet18_graph_mode_matches_pynative(graph):
    ms.set_seed(5)
    net = resnet18(num_classes=10)
    net.set_train(False)
    x = _images((2, 3, 64, 64), seed=5)
    compiled = net(x).asnumpy()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = net(x).asnumpy()
    assert compiled.shape == (2, 10)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)


def test_resnet_stage_shapes_64x64(pynative):
    net = resnet18(num_classes=10)
    net.set_train(False)
    x = net.maxpool(net.relu(net.bn1(net.conv1(_images((1, 3, 64, 64))))))
    assert x.shape == (1, 64, 16, 16)
    shapes = []
    for stage in (net.layer1, net.layer2, net.layer3, net.layer4):
        x = stage(x)
        shapes.append(x.shape)
    assert shapes == [(1, 64, 16, 16), (1, 128, 8, 8), (1, 256, 4, 4), (1, 512, 2, 2)]


def _reference_maxpool_3x3_s2_p1(x):
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    out_h, out_w = (x.shape[2] - 1) // 2 + 1, (x.shape[3] - 1) // 2 + 1
    out = np.empty(x.shape[:2] + (out_h, out_w), np.float32)
    for i in range(out_h):
        for j in range(out_w):
            out[:, :, i, j] = padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3))
    return out


def _reference_conv(x, w, stride, pad):
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    out_h = (x.shape[2] + 2 * pad - k) // stride + 1
    out_w = (x.shape[3] + 2 * pad - k) // stride + 1
    out = np.empty((x.shape[0], w.shape[0], out_h, out_w), np.float32)
    for i in range(out_h):
        for j in range(out_w):
            patch = padded[:, :, stride * i:stride * i + k, stride * j:stride * j + k]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def test_resnet_padding_is_symmetric_like_pytorch(pynative):
    """Stem conv (7x7, pad 3), max-pool (3x3, pad 1) and a stride-2 3x3 conv pad every side, as PyTorch does."""
    net = resnet18(num_classes=10)
    x = np.random.RandomState(0).randn(1, 3, 9, 9).astype(np.float32)
    stem = net.conv1(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(stem, _reference_conv(x, net.conv1.weight.asnumpy(), 2, 3), rtol=1e-4, atol=1e-4)
    pooled = net.maxpool(ms.Tensor(stem)).asnumpy()
    np.testing.assert_array_equal(pooled, _reference_maxpool_3x3_s2_p1(stem))
    conv = net.layer2[0].conv1
    y = np.random.RandomState(1).randn(1, 64, 6, 6).astype(np.float32)
    np.testing.assert_allclose(conv(ms.Tensor(y)).asnumpy(), _reference_conv(y, conv.weight.asnumpy(), 2, 1),
                               rtol=1e-4, atol=1e-4)


def test_resnet_initialisation_like_torchvision():
    ms.set_seed(2)
    net = resnet18(num_classes=1000)
    conv = net.layer4[1].conv2.weight.asnumpy()  # (512, 512, 3, 3): kaiming normal, fan_out, relu
    assert float(conv.std()) == pytest.approx(math.sqrt(2 / (512 * 9)), rel=0.03)
    assert np.all(net.layer1[0].bn2.gamma.asnumpy() == 1) and np.all(net.bn1.beta.asnumpy() == 0)
    fc = net.end_point.weight.asnumpy()
    bound = 1 / math.sqrt(512)  # like torch.nn.Linear: uniform(±1/sqrt(fan_in))
    assert np.abs(fc).max() <= bound + 1e-7 and float(fc.std()) == pytest.approx(bound / math.sqrt(3), rel=0.03)
    assert np.all(ResidualBlock(64, 256).bn3.gamma.asnumpy() == 1)
    for bn in (net.bn1, net.layer3[1].bn2, net.layer2[0].down_sample_layer[1]):
        assert bn.eps == 1e-5
        assert bn.momentum == pytest.approx(0.1)  # MindSpore stores 1 - momentum: 0.9 given == PyTorch's 0.1


def test_zero_init_residual_zeroes_last_bn_of_each_block():
    bottleneck = ResidualBlock(64, 256, stride=2, zero_init_residual=True)
    assert np.all(bottleneck.bn3.gamma.asnumpy() == 0)
    assert np.all(bottleneck.bn2.gamma.asnumpy() == 1)
    assert np.all(bottleneck.down_sample_layer[1].gamma.asnumpy() == 1)
    basic = resnet18(num_classes=10, zero_init_residual=True)  # the flag reaches every block
    assert all(np.all(block.bn2.gamma.asnumpy() == 0) for stage in (basic.layer1, basic.layer4) for block in stage)
    assert np.all(basic.layer3[0].bn1.gamma.asnumpy() == 1)


def test_blocks_expansion_and_shortcut():
    assert ResidualBlockBase.expansion == 1 and ResidualBlock.expansion == 4
    assert ResidualBlock(256, 256, stride=1).down_sample_layer is None
    block = ResidualBlock(256, 512, stride=2)
    assert isinstance(block.down_sample_layer, nn.SequentialCell)
    assert block.conv2.stride == (2, 2) and block.conv1.stride == (1, 1)  # v1.5: stride on 3x3


@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"num_classes": 0}, ValueError, "num_classes must be an integer >= 1, got 0"),
    ({"layer_nums": [2, 2, 2]}, ValueError, "layer_nums must be a list of 4 values"),
    ({"layer_nums": 4}, TypeError, "layer_nums must be a list of 4 values (one per stage), got 4 (int)"),
    ({"layer_nums": [2, 0, 2, 2]}, ValueError, "layer_nums[1] must be an integer >= 1, got 0"),
    ({"in_channels": [64, 64, 64, 256]}, ValueError,
     "in_channels must be [64] followed by the first three out_channels"),
    ({"block": nn.Dense}, TypeError, "block must be ResidualBlockBase or ResidualBlock"),
    ({"block": ResidualBlock, "out_channels": [66, 128, 256, 512], "in_channels": [64, 66, 128, 256]},
     ValueError, "out_channels[0] must be a multiple of 4"),
    ({"zero_init_residual": "yes"}, TypeError, "zero_init_residual must be True or False, got 'yes'"),
])
def test_resnet_rejects_bad_arguments(kwargs, error, fragment):
    args = {"block": ResidualBlockBase, "layer_nums": [2, 2, 2, 2], "in_channels": [64, 64, 128, 256],
            "out_channels": [64, 128, 256, 512], "strides": [1, 2, 2, 2], "num_classes": 10}
    args.update(kwargs)
    with pytest.raises(error) as info:
        ResNet(**args)
    assert fragment in str(info.value)
    assert "Fix:" in str(info.value)


def test_resnet_factories_reject_bad_num_classes():
    with pytest.raises(ValueError, match="num_classes must be an integer >= 1, got -1"):
        resnet18(num_classes=-1)
    with pytest.raises(TypeError, match=r"num_classes must be an integer \(>= 1\), got 1.0 \(float\)"):
        resnet50(num_classes=1.0)



# ---- the 32-pixel rule: one check for the scripts (run.factory) and timing ---------------------------------------
def test_check_image_size_is_the_rule_the_networks_follow(pynative):
    from course_lib.models import LENET_INPUT_SIZE, MIN_INPUT_SIZE, check_image_size

    assert check_image_size("lenet5", LENET_INPUT_SIZE) == LENET_INPUT_SIZE
    assert lenet5()(_images((1, 1, LENET_INPUT_SIZE, LENET_INPUT_SIZE))).shape == (1, 10)
    assert check_image_size("resnet18", MIN_INPUT_SIZE) == MIN_INPUT_SIZE
    net = resnet18(num_classes=3)
    net.set_train(False)
    assert net(_images((1, 3, MIN_INPUT_SIZE, MIN_INPUT_SIZE))).shape == (1, 3)
    assert check_image_size("segmentation_fcn", 16) == 16  # other models: no rule
    with pytest.raises(ValueError, match=r"lenet5 takes 32x32 images, got image_size=28\. Fix: image_size=32\."):
        check_image_size("lenet5", 28)
    with pytest.raises(ValueError, match=r"resnet50 downsamples by 32, so image_size must be >= 32, got 31\. "
                                         r"Fix: --image_size 32 or larger"):
        check_image_size("resnet50", 31, fix="--image_size ")


@pytest.mark.parametrize("model, dataset, size", [("lenet5", "digits_mnist", 64), ("resnet18", "imagefolder", 16)])
def test_the_scripts_and_timing_refuse_the_same_sizes_with_the_same_words(model, dataset, size):
    from course_lib.models import check_image_size
    from course_lib.perf.timing import time_step_in_subprocess
    from course_lib.run.config import load_config
    from course_lib.run.factory import check_classification_config

    with pytest.raises(ValueError) as expected:
        check_image_size(model, size, fix="--image_size ")
    with pytest.raises(ValueError) as scripts:
        check_classification_config(load_config(model=model, dataset=dataset, image_size=size))
    assert str(scripts.value) == str(expected.value)
    with pytest.raises(ValueError) as timing:
        time_step_in_subprocess(model=model, image_size=size)
    assert str(timing.value) == str(expected.value).replace("--image_size ", "image_size=")
