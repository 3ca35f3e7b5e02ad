"""Exercises of lesson 05 (eval networks, eval_indexes, Metric.set_indexes, mIoU)."""
import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_close, expect_type

#: 05.1: what the learner's eval network returns, in this order.
REORDERED_OUTPUTS = ("logits", "label", "loss")
NUM_CLASSES = 4


def _model_with_eval_indexes(eval_indexes):
    """Build a Model with a custom eval network and these eval_indexes: MindSpore's own validation runs."""
    from mindspore import nn
    from mindspore.train import Loss, Model

    from course_lib.train.metrics import MIoU

    net = nn.Dense(2, 2)
    return Model(net, eval_network=net, eval_indexes=eval_indexes, metrics={"miou": MIoU(NUM_CLASSES), "loss": Loss()})


@exercise("05.1", "An eval network returns (logits, label, loss): the eval_indexes to pass to Model.",
           difficulty=1, minutes=5,
           task_zh="评估网络返回 (logits, label, loss)：要传给 Model 的 eval_indexes。")
def check_eval_indexes(answer):
    expect(isinstance(answer, (list, tuple)) and len(answer) == 3,
           "eval_indexes holds three positions: where the loss, the prediction and the label are.",
           zh="eval_indexes 包含三个位置：损失、预测值和标签分别在哪里。")
    expect(all(isinstance(i, int) and not isinstance(i, bool) for i in answer),
           "Each entry is the position (an int) of one output of the eval network.",
           zh="每一项都是评估网络某个输出的位置（int）。")
    try:
        _model_with_eval_indexes(answer)
    except ValueError as error:
        raise Incorrect(f"Model(...) refuses it: {str(error).splitlines()[0]}",
                        zh=f"Model(...) 拒绝了它：{str(error).splitlines()[0]}") from None
    expect(all(0 <= i < 3 for i in answer), "The eval network has three outputs: positions 0, 1 and 2.",
                                            zh="评估网络有三个输出：位置 0、1 和 2。")
    roles = (("loss", "Loss metric"), ("logits", "MIoU metric"), ("label", "MIoU metric"))
    for position, (wanted, metric) in enumerate(roles):
        got = REORDERED_OUTPUTS[answer[position]]
        expect(got == wanted, f"eval_indexes[{position}] must point at the {wanted}, but yours points at the {got}: "
                              f"the {metric} would get the wrong output. Order: loss, prediction, label.",
                              zh=f"eval_indexes[{position}] 必须指向 {wanted}，但你的指向了 {got}："
                                 f"{metric.split()[0]} 评价指标会拿到错误的输出。顺序是：损失、预测值、标签。")


def _fake_outputs():
    """(loss, logits, label) of one made-up batch, and its true mIoU and loss."""
    from mindspore import Tensor

    from course_lib.train.metrics import MIoU

    rng = np.random.default_rng(5)
    logits = rng.standard_normal((2, NUM_CLASSES, 6, 6)).astype(np.float32)
    label = rng.integers(0, NUM_CLASSES, (2, 6, 6)).astype(np.int32)
    label[:, 0, :] = 255
    truth = MIoU(NUM_CLASSES)
    truth.update(logits, label)
    return (Tensor(np.float32(0.375)), Tensor(logits), Tensor(label)), truth.eval(), 0.375


@exercise("05.2", "Metrics {'miou': ..., 'loss': ...} that work with eval_indexes=None, via set_indexes.",
           difficulty=1, minutes=5,
           task_zh="适用于 eval_indexes=None 的评价指标 {'miou': ..., 'loss': ...}，通过 set_indexes 实现。")
def check_set_indexes(answer):
    from mindspore.train import Loss

    from course_lib.train.metrics import MIoU

    expect_type(answer, dict, "The metrics", "评价指标")
    expect(set(answer) == {"miou", "loss"}, f"Use exactly the keys 'miou' and 'loss', got {sorted(answer)}.",
                           zh=f"请只使用 'miou' 和 'loss' 这两个键，你的是 {sorted(answer)}。")
    expect(isinstance(answer["miou"], MIoU) and answer["miou"].num_classes == NUM_CLASSES,
           "answer['miou'] should be a course_lib.train.metrics.MIoU for the 4 shapes classes.",
           zh="answer['miou'] 应为针对 shapes 数据集 4 个类别的 course_lib.train.metrics.MIoU。")
    expect(isinstance(answer["loss"], Loss), "answer['loss'] should be a mindspore.train.Loss.",
                             zh="answer['loss'] 应为 mindspore.train.Loss。")
    model = _model_with_eval_indexes(None)
    model._metric_fns = answer          # the routing under test is Model's own _update_metrics
    outputs, miou, loss = _fake_outputs()
    for metric in answer.values():
        metric.clear()
    try:
        model._update_metrics(outputs)
    except ValueError as error:
        raise Incorrect(f"With eval_indexes=None every metric receives (loss, logits, label), and one of yours "
                        f"failed: {str(error).splitlines()[0].split(' Fix:')[0]} Make each metric pick the "
                        "outputs it needs.",
                        zh="eval_indexes=None 时，每个评价指标都会收到 (loss, logits, label)，"
                           f"而你的一个评价指标出错了：{str(error).splitlines()[0].split(' Fix:')[0]} "
                           "请让每个评价指标挑选它需要的输出。") from None
    expect_close(answer["loss"].eval(), loss, "The loss your Loss metric reports",
                 hint="It should read output 0 of (loss, logits, label).",
                 what_zh="你的 Loss 评价指标报告的损失", hint_zh="它应读取 (loss, logits, label) 中的第 0 个输出。")
    expect_close(answer["miou"].eval(), miou, "The mIoU your MIoU metric reports",
                 hint="It should read (logits, label), in that order.",
                 what_zh="你的 MIoU 评价指标报告的 mIoU", hint_zh="它应按 (logits, label) 的顺序读取。")


def _per_image_fixture():
    """Predictions and labels (3, 6, 6): image 2 has no triangles, image 3 has an ignored row."""
    rng = np.random.default_rng(11)
    label = rng.integers(0, NUM_CLASSES, (3, 6, 6)).astype(np.int32)
    label[1][label[1] == 3] = 0
    label[2, 0, :] = 255
    pred = np.where(rng.random((3, 6, 6)) < 0.7, label, rng.integers(0, NUM_CLASSES, (3, 6, 6))).astype(np.int32)
    pred[1][pred[1] == 3] = 1                      # image 2: triangles neither labelled nor predicted
    pred[2, 0, :] = 3                              # predictions on ignored pixels must not count
    return pred, label


def _miou(pred, label, absent_as_zero=False):
    from course_lib.train.metrics import MIoU

    metric = MIoU(NUM_CLASSES)
    metric.update(pred, label)
    value = metric.eval()
    return float(np.nan_to_num(metric.per_class_iou).mean()) if absent_as_zero else value


@exercise("05.3", "per_image_miou(pred, label, num_classes): the mean over images of each image's mIoU.",
           difficulty=2, minutes=15,
           why=("VGhlIHBlci1pbWFnZSBtZWFuIGlzIGhpZ2hlciBvbiB0aGUgc2hhcGVzIGRhdGEuIEVhY2ggaW1hZ2UgYXZlcmFnZXMgb25s"
                "eSBvdmVyIHRoZSBjbGFzc2VzIHByZXNlbnQgaW4gaXQ6IHRoZSBiYWNrZ3JvdW5kLCB3aXRoIGFuIElvVSBuZWFyIDEsIGlz"
                "IGluIGV2ZXJ5IGltYWdlIGFuZCBpcyBvbmUgb2Ygb25seSAyIHRvIDQgY2xhc3NlcyB0aGVyZSwgc28gaXQgd2VpZ2hzIG1v"
                "cmUuIE92ZXIgdGhlIGRhdGEgc2V0LCBvbmUgY29uZnVzaW9uIG1hdHJpeCBnaXZlcyBlYWNoIG9mIHRoZSA0IGNsYXNzZXMg"
                "dGhlIHNhbWUgd2VpZ2h0LCBhbmQgdGhlIGhhcmRlciBzaGFwZSBjbGFzc2VzIGNvdW50IGZ1bGx5LiBBbHdheXMgc2F5IHdo"
                "aWNoIG9mIHRoZSB0d28gYSBwYXBlciByZXBvcnRzLg=="),
           task_zh="per_image_miou(pred, label, num_classes)：各图像 mIoU 的平均值。",
           why_zh=("5ZyoIHNoYXBlcyDmlbDmja7kuIrvvIzpgJDlm77lg4/msYLlubPlnYflvpfliLDnmoTlgLzmm7Tpq5jjgILmr4/lvKDlm77l"
                   "g4/lj6rlr7nlhbbkuK3lh7rnjrDnmoTnsbvliKvmsYLlubPlnYfvvJrog4zmma/nmoQgSW9VIOaOpei/kSAx77yM5a6D5Ye6"
                   "546w5Zyo5q+P5byg5Zu+5YOP5Lit77yM6ICM5q+P5byg5Zu+5YOP5Y+q5pyJIDIg5YiwIDQg5Liq57G75Yir77yM5omA5Lul"
                   "6IOM5pmv55qE5p2D6YeN5pu05aSn44CC5Zyo5pW05Liq5pWw5o2u6ZuG5LiK77yM5LiA5Liq5re35reG55+p6Zi157uZIDQg"
                   "5Liq57G75Yir55u45ZCM55qE5p2D6YeN77yM6L6D6Zq+55qE5b2i54q257G75Yir5Lmf5bCx5a6M5YWo6K6h5YWl44CC6K66"
                   "5paH5oql5ZGK55qE5piv5Lik6ICF5Lit55qE5ZOq5LiA5Liq77yM5LiA5a6a6KaB6K+05riF5qWa44CC"))
def check_per_image_miou(answer):
    expect(callable(answer), "Store the function itself (per_image_miou), not its result.",
                             zh="请保存函数本身（per_image_miou），而不是它的结果。")
    pred, label = _per_image_fixture()
    try:
        value = answer(pred.copy(), label.copy(), NUM_CLASSES)
    except Exception as error:  # noqa: BLE001 - any failure of the learner's code becomes a hint
        raise Incorrect(f"Calling it on label maps (N, H, W) raised {type(error).__name__}: {error}",
                        zh=f"在标签图 (N, H, W) 上调用它时抛出了 {type(error).__name__}: {error}") from None
    expect_type(value, (int, float, np.floating), "Its result", "它的结果")
    truth = float(np.mean([_miou(pred[i:i + 1], label[i:i + 1]) for i in range(len(pred))]))
    if np.isclose(value, _miou(pred, label), rtol=1e-6):
        raise Incorrect("That is the mIoU over all the pixels of the batch: compute one mIoU per image, then "
                        "average those.",
                        zh="这是整个 batch 全部像素上的 mIoU：请先对每张图像计算一个 mIoU，再求这些值的平均。")
    zeroed = float(np.mean([_miou(pred[i:i + 1], label[i:i + 1], absent_as_zero=True) for i in range(len(pred))]))
    if np.isclose(value, zeroed, rtol=1e-6):
        raise Incorrect("A class absent from an image (neither labelled nor predicted) counts as 0 in your "
                        "answer: leave it out of that image's mean (NaN), as MIoU does.",
                        zh="在你的答案中，图像中不存在的类别（既没有标注也没有预测）被算作 0：应像 MIoU 那样，把它"
                           "排除在该图像的平均值之外（NaN）。")
    expect_close(value, truth, "Your per-image mean", rel=1e-6,
                 hint="Check that pixels labelled ignore_label (255) are skipped.",
                 what_zh="你的逐图像平均值", hint_zh="检查标为 ignore_label (255) 的像素是否被跳过。")
