"""A PyTorch reference ResNet for lesson 07: torchvision's ResNet v1.5 with torchvision's module names (so a real
torchvision ``state_dict`` loads into it), without needing torchvision.

torch is optional for the course: this module imports it only inside the functions that need it.
"""
from course_lib.i18n import _
from course_lib.migrate.convert import RESNET_LAYOUTS
from course_lib.validation import check_int

__all__ = ["build_torch_resnet"]


def build_torch_resnet(depth: int = 50, num_classes: int = 1000):
    """A PyTorch ResNet v1.5 with torchvision's module names and initialisation (no torchvision needed).

    Stride sits on the 3x3 convolution of the bottleneck (v1.5); the stem is 7x7/2 conv, BN, ReLU, 3x3/2 max-pool.
    """
    if depth not in RESNET_LAYOUTS:
        raise ValueError(_("depth must be one of {resnet_layouts}, got {depth!r}. Fix: use 18 or 50.").format(
            resnet_layouts=sorted(RESNET_LAYOUTS), depth=depth))
    check_int("num_classes", num_classes, 1, fix=_("pass the number of classes in your data, e.g. 10"))
    classes = _torch_resnet_classes()
    block_kind, layers = RESNET_LAYOUTS[depth]
    block = classes["BasicBlock"] if block_kind == "basic" else classes["Bottleneck"]
    return classes["ResNet"](block, layers, num_classes)


_TORCH_CLASSES = {}


def _torch_resnet_classes():
    """Define the torch modules on first use, so importing this module never imports torch."""
    if _TORCH_CLASSES:
        return _TORCH_CLASSES
    import torch
    from torch import nn

    def conv3x3(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)

    def conv1x1(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = conv3x3(inplanes, planes, stride)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(planes, planes)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = conv1x1(inplanes, planes)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = conv3x3(planes, planes, stride)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = conv1x1(planes, planes * self.expansion)
            self.bn3 = nn.BatchNorm2d(planes * self.expansion)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self, block, layers, num_classes):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, 64, layers[0])
            self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
            self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
            self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512 * block.expansion, num_classes)
            for module in self.modules():
                if isinstance(module, nn.Conv2d):
                    nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(module, nn.BatchNorm2d):
                    nn.init.constant_(module.weight, 1)
                    nn.init.constant_(module.bias, 0)

        def _make_layer(self, block, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes * block.expansion:
                downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                           nn.BatchNorm2d(planes * block.expansion))
            layers = [block(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes * block.expansion
            layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            x = torch.flatten(self.avgpool(x), 1)
            return self.fc(x)

    _TORCH_CLASSES.update(BasicBlock=BasicBlock, Bottleneck=Bottleneck, ResNet=ResNet)
    return _TORCH_CLASSES
