"""Solutions of lesson 02's exercises."""


def solve_02_1():
    from course_lib.models import ResidualBlock, ResNet

    return ResNet(ResidualBlock, [3, 8, 36, 3], [64, 256, 512, 1024], [256, 512, 1024, 2048], [1, 2, 2, 2], 1000)


def solve_02_2():
    from mindspore import nn

    class AnyBatchLeNet5(nn.Cell):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
            self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
            self.fc1, self.fc2, self.fc3 = nn.Dense(400, 120), nn.Dense(120, 84), nn.Dense(84, num_classes)
            self.relu, self.pool = nn.ReLU(), nn.MaxPool2d(2, 2)

        def construct(self, x):
            x = self.pool(self.relu(self.conv1(x)))
            x = self.pool(self.relu(self.conv2(x)))
            x = x.reshape(x.shape[0], -1)
            return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))

    return AnyBatchLeNet5()


def solve_02_3():
    from course_lib.models import resnet18

    net = resnet18(num_classes=10, zero_init_residual=True)
    return sorted(p.name for p in net.get_parameters() if p.name.endswith("gamma") and not p.asnumpy().any())


def _wrong_02():
    from course_lib.models import lenet5, resnet18, resnet50

    return {
        "02.1": [resnet50(), lenet5(), "resnet152"],
        "02.2": [lenet5(), "LeNet"],
        "02.3": [["layer1.0.bn1.gamma"], [p.name for p in resnet18(10).get_parameters() if p.name.endswith("gamma")]],
    }


WRONG = _wrong_02
