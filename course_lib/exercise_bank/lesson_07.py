"""Exercises of lesson 07 (migrating ResNet from PyTorch): the name mapping and two hyper-parameter translations."""
from numbers import Real

from ..exercises import Incorrect, exercise, expect, expect_close, expect_type

#: torchvision ResNet state-dict keys, one of each kind the converter meets (ResNet-18 and ResNet-50 names).
TORCH_NAMES = (
    "conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked",
    "layer1.0.conv1.weight", "layer1.0.bn2.weight", "layer1.1.bn1.running_var", "layer2.0.conv2.weight",
    "layer2.0.downsample.0.weight", "layer2.0.downsample.1.weight", "layer2.0.downsample.1.bias",
    "layer2.0.downsample.1.running_mean", "layer2.0.downsample.1.running_var",
    "layer2.0.downsample.1.num_batches_tracked", "layer3.5.bn3.bias", "layer3.5.bn3.num_batches_tracked",
    "layer4.1.bn2.running_mean", "fc.weight", "fc.bias",
)

#: The PyTorch recipe of exercise 07.2.
TORCH_BN_MOMENTUM = 0.03
TORCH_LABEL_SMOOTHING = 0.2
NUM_CLASSES = 100


def _kind(name: str) -> str:
    """What a torchvision tensor name teaches, for a hint that names the rule without giving the answer."""
    if name.endswith("num_batches_tracked"):
        return "BatchNorm step counters (num_batches_tracked: MindSpore has none, so return None)"
    if ".downsample." in name:
        return "shortcut (downsample) tensors (the MindSpore cell has another name)"
    if name.startswith("fc."):
        return "classifier (fc) tensors (the MindSpore cell has another name)"
    if name.endswith(("running_mean", "running_var")):
        return "BatchNorm running statistics"
    if ".bn" in name or name.startswith("bn"):
        return "BatchNorm weight/bias (MindSpore calls them differently)"
    return "convolution weights (they keep their name)"


@exercise("07.1", "A function mapping a torchvision ResNet state-dict key to the MindSpore parameter name (or None).")
def check_name_mapping(answer):
    from ..migration import torch_to_mindspore_name

    expect(callable(answer), f"Your answer should be a function name -> MindSpore name, but it is a "
                             f"{type(answer).__name__}.")
    wrong_kinds = []
    for name in TORCH_NAMES:
        try:
            got = answer(name)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(f"Your function fails on {name!r}: {type(error).__name__}: "
                            f"{str(error).splitlines()[0] if str(error) else ''}") from None
        expect(got is None or isinstance(got, str),
               f"Your function returns a {type(got).__name__} for {name!r}; return a str (or None).")
        if got != torch_to_mindspore_name(name) and _kind(name) not in wrong_kinds:
            wrong_kinds.append(_kind(name))
    expect(not wrong_kinds, f"Some names are mapped wrongly: look at the {'; the '.join(wrong_kinds)}.")


@exercise("07.2", "MindSpore (BatchNorm momentum, seed-convention smooth_factor) for a PyTorch recipe.")
def check_hyper_parameters(answer):
    from ..losses import seed_factor_from_pytorch

    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           "Answer with a tuple of two numbers: (momentum, smooth_factor).")
    momentum, smooth_factor = answer
    expect_type(momentum, Real, "The momentum")
    expect_type(smooth_factor, Real, "The smooth_factor")
    expect(abs(momentum - TORCH_BN_MOMENTUM) > 1e-9,
           "That momentum is PyTorch's value copied literally: MindSpore's momentum is the weight of the old "
           "running value, PyTorch's the weight of the new batch.")
    expect_close(momentum, 1.0 - TORCH_BN_MOMENTUM, "The momentum", rel=1e-6,
                 hint="Write both update rules side by side and match the weight of the old value.")
    expect(abs(smooth_factor - TORCH_LABEL_SMOOTHING) > 1e-9,
           "The same ε gives different targets: the seed's convention spreads it over K − 1 classes, "
           "PyTorch's over all K.")
    expect_close(smooth_factor, seed_factor_from_pytorch(TORCH_LABEL_SMOOTHING, NUM_CLASSES), "The smooth_factor",
                 rel=1e-6, hint="Make the off value ε_seed/(K − 1) equal PyTorch's ε/K, with K = 100.")
