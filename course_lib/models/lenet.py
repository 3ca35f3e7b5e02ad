"""LeNet-5 from the programming guide's "Training", made batch-size independent (``nn.Flatten`` instead of a
fixed-size reshape)."""
from mindspore import nn
from mindspore.common.initializer import TruncatedNormal

from course_lib.i18n import _

# absolute imports: MindSpore's amp rewrite re-executes this module's source
from course_lib.validation import check_choice, check_int

__all__ = ["LeNet5", "lenet5", "LENET_INITS"]

#: ``"default"``: MindSpore 2.10's own initialisers (HeUniform weights, uniform ±1/sqrt(fan_in) biases, conv
#: biases on) — these train. ``"seed"``: the programming guide's TruncatedNormal(0.02) everywhere and no conv bias —
#: kept so lesson 03 can show that such tiny weights leave the loss stuck at ln(10) ≈ 2.30.
LENET_INITS = ("default", "seed")

#: LeNet-5 expects 32x32 inputs: two valid 5x5 convs and two 2x2 pools turn 32x32 into 16 maps of 5x5.
LENET_INPUT_SIZE = 32


def _check_init(init) -> None:
    check_choice("init", init, LENET_INITS, _("use 'default' to train, or 'seed' to reproduce the "
                                              "TruncatedNormal(0.02) initialisation of the programming guide's "
                                              "'Training'"))


class LeNet5(nn.Cell):
    """LeNet-5 for (N, in_channels, 32, 32) images -> (N, num_classes) logits, for any batch size N.

    Layers: conv 5x5 (6) -> ReLU -> max-pool 2 -> conv 5x5 (16) -> ReLU -> max-pool 2 -> flatten ->
    dense 120 -> ReLU -> dense 84 -> ReLU -> dense num_classes. ``init`` is ``"default"`` or ``"seed"``
    (see ``LENET_INITS``).

    Taught in lesson 00 (notebooks/00_environment.ipynb).
    Taught in lesson 02 (notebooks/02_cells_lenet_resnet.ipynb).
    Copies held equal by tests/test_technique_agreement.py: the lessons' ``LeNet5`` (lesson 00's has no
    convolution biases: the ``init="seed"`` layout) and lesson 02's ``AnyBatchLeNet5``.
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1, init: str = "default"):
        super().__init__()
        num_classes = check_int("num_classes", num_classes, 1, fix=_("pass the number of classes in your "
                                                                     "data, e.g. 10"))
        in_channels = check_int("in_channels", in_channels, 1,
                                fix=_("pass 1 for grey-scale images such as MNIST, 3 for RGB"))
        _check_init(init)
        self.num_classes = num_classes
        self.init = init
        if init == "seed":
            conv_kwargs = {"has_bias": False, "weight_init": TruncatedNormal(0.02)}
            dense_kwargs = {"weight_init": TruncatedNormal(0.02), "bias_init": TruncatedNormal(0.02)}
        else:
            conv_kwargs = {"has_bias": True}
            dense_kwargs = {}
        self.conv1 = nn.Conv2d(in_channels, 6, kernel_size=5, pad_mode="valid", **conv_kwargs)
        self.conv2 = nn.Conv2d(6, 16, kernel_size=5, pad_mode="valid", **conv_kwargs)
        self.fc1 = nn.Dense(16 * 5 * 5, 120, **dense_kwargs)
        self.fc2 = nn.Dense(120, 84, **dense_kwargs)
        self.fc3 = nn.Dense(84, num_classes, **dense_kwargs)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        # The programming guide used reshape(x, (self.batch_size, -1)) with batch_size = 32, which fails on a last
        # partial batch; Flatten keeps the batch axis whatever its size.
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def lenet5(num_classes: int = 10, init: str = "default", in_channels: int = 1) -> LeNet5:
    """Build a LeNet-5 for 32x32 inputs with ``num_classes`` outputs (see ``LeNet5``).

    Taught in lesson 02 (notebooks/02_cells_lenet_resnet.ipynb).
    """
    return LeNet5(num_classes=num_classes, in_channels=in_channels, init=init)
