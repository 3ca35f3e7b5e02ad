"""Exercises of lesson 07 (migrating ResNet from PyTorch): the name mapping and two hyper-parameter translations."""
from numbers import Real

from course_lib.exercises import Incorrect, exercise, expect, expect_close, expect_type, first_line
from course_lib.i18n import N_, _

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
    """What a torchvision tensor name teaches, for a hint that names the rule without giving the answer (English; the
    hint translates it)."""
    if name.endswith("num_batches_tracked"):
        return N_("BatchNorm step counters (num_batches_tracked: MindSpore has none, so return None)")
    if ".downsample." in name:
        return N_("shortcut (downsample) tensors (the MindSpore cell has another name)")
    if name.startswith("fc."):
        return N_("classifier (fc) tensors (the MindSpore cell has another name)")
    if name.endswith(("running_mean", "running_var")):
        return N_("BatchNorm running statistics")
    if ".bn" in name or name.startswith("bn"):
        return N_("BatchNorm weight/bias (MindSpore calls them differently)")
    return N_("convolution weights (they keep their name)")


@exercise("07.1", N_("A function mapping a torchvision ResNet state-dict key to the MindSpore parameter name (or "
                     "None)."),
           difficulty=2, minutes=20)
def check_name_mapping(answer):
    from course_lib.migrate.convert import torch_to_mindspore_name

    expect(callable(answer), _("Your answer should be a function name -> MindSpore name, but it is a {kind}.")
                             .format(kind=type(answer).__name__))
    wrong_kinds = []
    for name in TORCH_NAMES:
        try:
            got = answer(name)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(_("Your function fails on {name!r}: {error_type}: {message}")
                            .format(name=name, error_type=type(error).__name__, message=first_line(error))) from None
        expect(got is None or isinstance(got, str),
               _("Your function returns a {kind} for {name!r}; return a str (or None).")
               .format(kind=type(got).__name__, name=name))
        if got != torch_to_mindspore_name(name) and _kind(name) not in wrong_kinds:
            wrong_kinds.append(_kind(name))
    # Translators: the separator between two kinds of names in "look at the {kinds}."
    separator = _("; the ")
    expect(not wrong_kinds, _("Some names are mapped wrongly: look at the {kinds}.")
                            .format(kinds=separator.join(_(kind) for kind in wrong_kinds)))


@exercise("07.2", N_("MindSpore nn.BatchNorm2d momentum and nn.CrossEntropyLoss label_smoothing for a PyTorch recipe."),
           difficulty=1, minutes=5)
def check_hyper_parameters(answer):
    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           _("Answer with a tuple of two numbers: (momentum, label_smoothing)."))
    momentum, label_smoothing = answer
    expect_type(momentum, Real, _("The momentum"))
    expect_type(label_smoothing, Real, _("The label_smoothing"))
    expect(abs(momentum - TORCH_BN_MOMENTUM) > 1e-9,
           _("That momentum is PyTorch's value copied literally: MindSpore's momentum is the weight of the old "
             "running value, PyTorch's the weight of the new batch."))
    expect_close(momentum, 1.0 - TORCH_BN_MOMENTUM, _("The momentum"), rel=1e-6,
                 hint=_("Write both update rules side by side and match the weight of the old value."))
    expect(abs(label_smoothing - TORCH_LABEL_SMOOTHING * (NUM_CLASSES - 1) / NUM_CLASSES) > 1e-9,
           _("That is the conversion for the model zoo's CrossEntropySmooth (ε spread over K − 1 classes). "
             "MindSpore's built-in nn.CrossEntropyLoss(label_smoothing=ε) uses PyTorch's convention."))
    expect_close(label_smoothing, TORCH_LABEL_SMOOTHING, _("The label_smoothing"), rel=1e-6,
                 hint=_("Compare the two losses on the same logits, as in the lesson."))
