"""ResNet v1.5 (torchvision layout) in MindSpore model-zoo naming, completing the ResNet-50 migration example.

The ResNet-50 migration example calls
``_conv7x7``, ``_bn``, ``_bn_last`` and ``_fc`` without defining them and pads with
``pad_mode='same'``; here every helper is defined and padding is explicit, so that with the same weights
the network computes what torchvision's ``resnet18/34/50/101`` computes, and has the same parameter count
(resnet18: 11,689,512; resnet50: 25,557,032 at 1000 classes).

Parameter names (the contract the PyTorch -> MindSpore converter relies on)::

    conv1.weight  bn1.{gamma,beta,moving_mean,moving_variance}                     # stem
    layer{1..4}.{i}.conv{1,2[,3]}.weight  layer{1..4}.{i}.bn{1,2[,3]}.{gamma,...}   # blocks
    layer{1..4}.0.down_sample_layer.0.weight  layer{1..4}.0.down_sample_layer.1.{gamma,...}  # shortcut
    end_point.weight  end_point.bias                                               # classifier
"""
import math

from mindspore import nn, ops
from mindspore.common.initializer import HeNormal, HeUniform, Uniform

from course_lib.validation import check_bool, check_int, wrong_type  # absolute: amp rewrite re-executes this source

__all__ = ["ResNet", "ResidualBlockBase", "ResidualBlock", "resnet18", "resnet34", "resnet50", "resnet101"]

# torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu") on every conv.
_CONV_INIT = {"mode": "fan_out", "nonlinearity": "relu"}
# PyTorch's BatchNorm momentum 0.1 updates running stats as new = 0.9 * old + 0.1 * batch; MindSpore's
# momentum is the weight of the old value, so the same behaviour is momentum=0.9.
_BN_EPS = 1e-5
_BN_MOMENTUM = 0.9

#: Smallest input side the factories accept: the stem and four stages downsample by 32 in total.
MIN_INPUT_SIZE = 32


def _conv3x3(in_channel: int, out_channel: int, stride: int = 1) -> nn.Conv2d:
    """3x3 conv, padding 1 on every side (PyTorch's ``padding=1``), no bias (a BN follows)."""
    return nn.Conv2d(in_channel, out_channel, kernel_size=3, stride=stride, pad_mode="pad", padding=1,
                     has_bias=False, weight_init=HeNormal(**_CONV_INIT))


def _conv1x1(in_channel: int, out_channel: int, stride: int = 1) -> nn.Conv2d:
    """1x1 conv without padding, no bias (a BN follows)."""
    return nn.Conv2d(in_channel, out_channel, kernel_size=1, stride=stride, pad_mode="valid",
                     has_bias=False, weight_init=HeNormal(**_CONV_INIT))


def _conv7x7(in_channel: int, out_channel: int, stride: int = 1) -> nn.Conv2d:
    """7x7 stem conv, padding 3 on every side (PyTorch's ``padding=3``), no bias."""
    return nn.Conv2d(in_channel, out_channel, kernel_size=7, stride=stride, pad_mode="pad", padding=3,
                     has_bias=False, weight_init=HeNormal(**_CONV_INIT))


def _bn(channel: int) -> nn.BatchNorm2d:
    """BatchNorm with PyTorch's defaults (eps 1e-5, momentum 0.1 == MindSpore 0.9), gamma 1, beta 0."""
    return nn.BatchNorm2d(channel, eps=_BN_EPS, momentum=_BN_MOMENTUM, gamma_init="ones", beta_init="zeros")


def _bn_last(channel: int) -> nn.BatchNorm2d:
    """Last BN of a residual branch with gamma 0 ("zero-init residual"): each block starts as identity.

    Goyal et al. 2017 report it helps large-batch training; torchvision does it only when
    ``zero_init_residual=True`` (default False), and so does this module.
    """
    return nn.BatchNorm2d(channel, eps=_BN_EPS, momentum=_BN_MOMENTUM, gamma_init="zeros", beta_init="zeros")


def _fc(in_channel: int, out_channel: int) -> nn.Dense:
    """Classifier initialised like PyTorch's ``nn.Linear``: weight and bias uniform in ±1/sqrt(in_channel)."""
    return nn.Dense(in_channel, out_channel, weight_init=HeUniform(math.sqrt(5)),
                    bias_init=Uniform(1 / math.sqrt(in_channel)), has_bias=True)


def _make_down_sample(in_channel: int, out_channel: int, stride: int):
    """1x1 conv + BN on the shortcut when the block changes shape; ``None`` when identity fits."""
    if stride == 1 and in_channel == out_channel:
        return None
    return nn.SequentialCell([_conv1x1(in_channel, out_channel, stride), _bn(out_channel)])


class ResidualBlockBase(nn.Cell):
    """Basic block of ResNet-18/34 (torchvision ``BasicBlock``): two 3x3 convs plus a shortcut.

    ``stride`` is applied by the first conv (and the 1x1 shortcut conv). The migration example names the BNs ``bn1d``/
    ``bn2d``; they are ``bn1``/``bn2`` here so the names line up with torchvision's.
    """

    expansion = 1

    def __init__(self, in_channel: int, out_channel: int, stride: int = 1, zero_init_residual: bool = False):
        super().__init__()
        self.conv1 = _conv3x3(in_channel, out_channel, stride=stride)
        self.bn1 = _bn(out_channel)
        self.conv2 = _conv3x3(out_channel, out_channel, stride=1)
        self.bn2 = _bn_last(out_channel) if zero_init_residual else _bn(out_channel)
        self.relu = nn.ReLU()
        self.down_sample_layer = _make_down_sample(in_channel, out_channel, stride)
        self.down_sample = self.down_sample_layer is not None

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down_sample:
            identity = self.down_sample_layer(x)
        return self.relu(out + identity)


class ResidualBlock(nn.Cell):
    """Bottleneck block of ResNet-50/101 (1x1 -> 3x3 -> 1x1, ``out_channel = 4 * width``), ResNet v1.5.

    v1.5 (torchvision, NVIDIA) puts the stride on the 3x3 conv; v1 put it on the first 1x1. The migration example's
    ``stride != 1`` branch ``e2`` (3x3 conv with stride 1, BN, ReLU, then a 2x2 MaxPool) is yet another
    variant with different numbers, so it is not used here.
    """

    expansion = 4

    def __init__(self, in_channel: int, out_channel: int, stride: int = 1, zero_init_residual: bool = False):
        super().__init__()
        channel = out_channel // self.expansion
        self.stride = stride
        self.conv1 = _conv1x1(in_channel, channel, stride=1)
        self.bn1 = _bn(channel)
        self.conv2 = _conv3x3(channel, channel, stride=stride)
        self.bn2 = _bn(channel)
        self.conv3 = _conv1x1(channel, out_channel, stride=1)
        self.bn3 = _bn_last(out_channel) if zero_init_residual else _bn(out_channel)
        self.relu = nn.ReLU()
        self.down_sample_layer = _make_down_sample(in_channel, out_channel, stride)
        self.down_sample = self.down_sample_layer is not None

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.down_sample:
            identity = self.down_sample_layer(x)
        return self.relu(out + identity)


_BLOCKS = (ResidualBlockBase, ResidualBlock)
_STEM_CHANNELS = 64


def _check_resnet_args(block, layer_nums, in_channels, out_channels, strides, num_classes, image_channels,
                       zero_init_residual):
    from course_lib.i18n import _  # here, not at the top: the blocks' line numbers are quoted by lesson 02

    if not (isinstance(block, type) and issubclass(block, _BLOCKS)):
        raise wrong_type("block", block, _("ResidualBlockBase or ResidualBlock (or a subclass)"),
                         _("ResidualBlockBase for ResNet-18/34, ResidualBlock for ResNet-50/101"))
    lists = {"layer_nums": layer_nums, "in_channels": in_channels, "out_channels": out_channels,
             "strides": strides}
    for name, values in lists.items():
        if not isinstance(values, (list, tuple)):
            raise wrong_type(name, values, _("a list of 4 values (one per stage)"),
                             _("e.g. layer_nums=[3, 4, 6, 3] for ResNet-50"))
        if len(values) != 4:
            raise ValueError(_("{name} must be a list of 4 values (one per stage), got {values!r}. Fix: e.g. "
                               "layer_nums=[3, 4, 6, 3] for ResNet-50.").format(name=name, values=values))
        for i, value in enumerate(values):
            check_int(f"{name}[{i}]", value, 1, fix=_("every stage needs a positive int"))
    check_int("num_classes", num_classes, 1, fix=_("pass the number of classes in your data, e.g. 1000"))
    check_int("image_channels", image_channels, 1, fix=_("pass 3 for RGB images"))
    check_bool("zero_init_residual", zero_init_residual,
               _("False (torchvision's default) unless you want each block to start as identity"))
    expected_in = [_STEM_CHANNELS] + list(out_channels[:3])
    if list(in_channels) != expected_in:
        raise ValueError(_("in_channels must be [64] followed by the first three out_channels, i.e. {expected_in}, "
                           "got {in_channels!r}. Fix: each stage starts where the previous one ended; the stem "
                           "outputs 64 channels.").format(expected_in=expected_in, in_channels=list(in_channels)))
    for i, channels in enumerate(out_channels):
        if channels % block.expansion:
            raise ValueError(_("out_channels[{i}] must be a multiple of {expansion} for {block}, got "
                               "{channels}. Fix: e.g. [256, 512, 1024, 2048].").format(
                i=i, expansion=block.expansion, block=block.__name__, channels=channels))


class ResNet(nn.Cell):
    """ResNet: 7x7 stem, max-pool, four stages of residual blocks, global average pool, dense classifier.

    Args follow the ResNet-50 migration example: ``block`` class, ``layer_nums`` (blocks per stage), ``in_channels`` /
    ``out_channels`` / ``strides`` per stage, ``num_classes``. ``zero_init_residual`` starts each block's last
    BN at gamma 0 (see ``_bn_last``). Any input side >= 32 works (the network downsamples by 32).
    """

    def __init__(self, block, layer_nums, in_channels, out_channels, strides, num_classes: int,
                 zero_init_residual: bool = False, image_channels: int = 3):
        super().__init__()
        _check_resnet_args(block, layer_nums, in_channels, out_channels, strides, num_classes, image_channels,
                           zero_init_residual)
        num_classes, image_channels = int(num_classes), int(image_channels)  # numpy ints are fine
        self.num_classes = num_classes
        self.conv1 = _conv7x7(image_channels, _STEM_CHANNELS, stride=2)
        self.bn1 = _bn(_STEM_CHANNELS)
        self.relu = nn.ReLU()
        # PyTorch pads 1 on each side; pad_mode="same" with stride 2 would pad only bottom/right.
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)
        stages = []
        for stage in range(4):
            stages.append(self._make_layer(block, layer_nums[stage], in_channels[stage], out_channels[stage],
                                           strides[stage], zero_init_residual))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.flatten = nn.Flatten()
        self.end_point = _fc(out_channels[3], num_classes)

    @staticmethod
    def _make_layer(block, layer_num: int, in_channel: int, out_channel: int, stride: int,
                    zero_init_residual: bool = False) -> nn.SequentialCell:
        """One stage: a first block that may change stride/channels, then ``layer_num - 1`` identity-shape ones."""
        layers = [block(in_channel, out_channel, stride=stride, zero_init_residual=zero_init_residual)]
        for _block in range(1, layer_num):
            layers.append(block(out_channel, out_channel, stride=1, zero_init_residual=zero_init_residual))
        return nn.SequentialCell(layers)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        c1 = self.maxpool(x)
        c2 = self.layer1(c1)
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        out = ops.mean(c5, (2, 3), keep_dims=True)  # global average pool == torch's AdaptiveAvgPool2d(1)
        out = self.flatten(out)
        return self.end_point(out)


_BASIC_CHANNELS = ([64, 64, 128, 256], [64, 128, 256, 512])
_BOTTLENECK_CHANNELS = ([64, 256, 512, 1024], [256, 512, 1024, 2048])
_STRIDES = [1, 2, 2, 2]


def resnet18(num_classes: int = 1000, zero_init_residual: bool = False) -> ResNet:
    """ResNet-18 (basic blocks [2, 2, 2, 2]); 11,689,512 parameters at 1000 classes, as torchvision."""
    return ResNet(ResidualBlockBase, [2, 2, 2, 2], *_BASIC_CHANNELS, _STRIDES, num_classes, zero_init_residual)


def resnet34(num_classes: int = 1000, zero_init_residual: bool = False) -> ResNet:
    """ResNet-34 (basic blocks [3, 4, 6, 3]); 21,797,672 parameters at 1000 classes."""
    return ResNet(ResidualBlockBase, [3, 4, 6, 3], *_BASIC_CHANNELS, _STRIDES, num_classes, zero_init_residual)


def resnet50(num_classes: int = 1000, zero_init_residual: bool = False) -> ResNet:
    """ResNet-50 v1.5 (bottlenecks [3, 4, 6, 3]); 25,557,032 parameters at 1000 classes, as torchvision."""
    return ResNet(ResidualBlock, [3, 4, 6, 3], *_BOTTLENECK_CHANNELS, _STRIDES, num_classes, zero_init_residual)


def resnet101(num_classes: int = 1000, zero_init_residual: bool = False) -> ResNet:
    """ResNet-101 v1.5 (bottlenecks [3, 4, 23, 3]); 44,549,160 parameters at 1000 classes."""
    return ResNet(ResidualBlock, [3, 4, 23, 3], *_BOTTLENECK_CHANNELS, _STRIDES, num_classes, zero_init_residual)

