"""Exercises of lesson 07 (migrating ResNet from PyTorch): the name mapping and two hyper-parameter translations."""
from numbers import Real

from course_lib.exercises import Incorrect, exercise, expect, expect_close, expect_type

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


#: The kinds of ``_kind`` in Chinese, for the Chinese hint.
_KIND_ZH = {
    "BatchNorm step counters (num_batches_tracked: MindSpore has none, so return None)":
        "BatchNorm 的步数计数器（num_batches_tracked：MindSpore 没有它，所以返回 None）",
    "shortcut (downsample) tensors (the MindSpore cell has another name)":
        "shortcut（downsample）的张量（MindSpore 中对应的 Cell 名称不同）",
    "classifier (fc) tensors (the MindSpore cell has another name)":
        "分类器（fc）的张量（MindSpore 中对应的 Cell 名称不同）",
    "BatchNorm running statistics": "BatchNorm 的滑动统计量（running statistics）",
    "BatchNorm weight/bias (MindSpore calls them differently)": "BatchNorm 的 weight/bias（MindSpore 中名称不同）",
    "convolution weights (they keep their name)": "卷积权重（名称不变）",
}


@exercise("07.1", "A function mapping a torchvision ResNet state-dict key to the MindSpore parameter name (or None).",
           difficulty=2, minutes=20,
           task_zh="一个函数：把 torchvision ResNet 的 state-dict 键映射为 MindSpore 参数名（或 None）。")
def check_name_mapping(answer):
    from course_lib.migrate.convert import torch_to_mindspore_name

    expect(callable(answer), f"Your answer should be a function name -> MindSpore name, but it is a "
                             f"{type(answer).__name__}.",
                             zh=f"你的答案应是一个“名称 -> MindSpore 名称”的函数，但它是 {type(answer).__name__}。")
    wrong_kinds = []
    for name in TORCH_NAMES:
        try:
            got = answer(name)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(f"Your function fails on {name!r}: {type(error).__name__}: "
                            f"{str(error).splitlines()[0] if str(error) else ''}",
                            zh=f"你的函数在 {name!r} 上出错：{type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else ''}") from None
        expect(got is None or isinstance(got, str),
               f"Your function returns a {type(got).__name__} for {name!r}; return a str (or None).",
               zh=f"你的函数对 {name!r} 返回了 {type(got).__name__}；请返回 str（或 None）。")
        if got != torch_to_mindspore_name(name) and _kind(name) not in wrong_kinds:
            wrong_kinds.append(_kind(name))
    expect(not wrong_kinds, f"Some names are mapped wrongly: look at the {'; the '.join(wrong_kinds)}.",
                            zh=f"有些名称映射错了：请看 {'；'.join(_KIND_ZH[kind] for kind in wrong_kinds)}。")


@exercise("07.2", "MindSpore nn.BatchNorm2d momentum and nn.CrossEntropyLoss label_smoothing for a PyTorch recipe.",
           difficulty=1, minutes=5,
           task_zh="PyTorch 训练配置对应的 MindSpore nn.BatchNorm2d momentum 和 nn.CrossEntropyLoss label_smoothing"
                   "。")
def check_hyper_parameters(answer):
    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           "Answer with a tuple of two numbers: (momentum, label_smoothing).",
           zh="请用两个数组成的元组作答：(momentum, label_smoothing)。")
    momentum, label_smoothing = answer
    expect_type(momentum, Real, "The momentum", "momentum 的值")
    expect_type(label_smoothing, Real, "The label_smoothing", "label_smoothing 的值")
    expect(abs(momentum - TORCH_BN_MOMENTUM) > 1e-9,
           "That momentum is PyTorch's value copied literally: MindSpore's momentum is the weight of the old "
           "running value, PyTorch's the weight of the new batch.",
           zh="这个 momentum 是照抄 PyTorch 的值：MindSpore 的 momentum 是旧的滑动平均值的权重，而 PyTorch 的是新 "
              "batch 的权重。")
    expect_close(momentum, 1.0 - TORCH_BN_MOMENTUM, "The momentum", rel=1e-6,
                 hint="Write both update rules side by side and match the weight of the old value.",
                 what_zh="momentum 的值", hint_zh="把两种更新公式并排写出来，对应上旧值的权重。")
    expect(abs(label_smoothing - TORCH_LABEL_SMOOTHING * (NUM_CLASSES - 1) / NUM_CLASSES) > 1e-9,
           "That is the conversion for the model zoo's CrossEntropySmooth (ε spread over K − 1 classes). MindSpore's "
           "built-in nn.CrossEntropyLoss(label_smoothing=ε) uses PyTorch's convention.",
           zh="这是模型库（model zoo）中 CrossEntropySmooth 的换算（ε 分摊到 K − 1 个类别上）。MindSpore 内置的 "
              "nn.CrossEntropyLoss(label_smoothing=ε) 与 PyTorch 使用相同的约定。")
    expect_close(label_smoothing, TORCH_LABEL_SMOOTHING, "The label_smoothing", rel=1e-6,
                 hint="Compare the two losses on the same logits, as in the lesson.",
                 what_zh="label_smoothing 的值", hint_zh="像本课那样，在相同的 logits 上比较两个损失。")
