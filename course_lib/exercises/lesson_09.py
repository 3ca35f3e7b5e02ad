"""Exercises of lesson 09 (inference, MindIR export, checkpoint integrity)."""
import functools
import tempfile
from pathlib import Path

import numpy as np

from course_lib.exercises import Incorrect, expect, expect_close, expect_type, exercise


@functools.lru_cache(maxsize=1)
def _fixed_batch_truth():
    """Export a LeNet-5 from one image (fixed batch), run the graph on 16: (output shape, max |graph - eager|)."""
    import mindspore as ms

    from course_lib.inference import export_mindir, load_mindir
    from course_lib.models import lenet5

    net = lenet5(num_classes=10)
    net.set_train(False)
    images = np.random.default_rng(9).standard_normal((16, 1, 32, 32)).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        graph = load_mindir(export_mindir(net, images[:1], Path(folder) / "fixed.mindir", dynamic_batch=False))
        graph_logits = graph(ms.Tensor(images)).asnumpy()
    return tuple(graph_logits.shape), float(np.abs(graph_logits - net(ms.Tensor(images)).asnumpy()).max())


@exercise("09.1", "Export LeNet-5 with dynamic_batch=False from one image, run the graph on 16: "
                  "(output shape, max |graph - eager|).",
           difficulty=1, minutes=5,
           why=("QSBNaW5kSVIgZmlsZSBzdG9yZXMgdGhlIG9wZXJhdG9ycywgbm90IGEgZml4ZWQgYmF0Y2ggc2l6ZTogd2hlbiB0aGUgZ3Jh"
                "cGggcnVucywgTWluZFNwb3JlIGluZmVycyBldmVyeSBzaGFwZSBhZ2FpbiBmcm9tIHRoZSBpbnB1dCBpdCBnZXRzLiBObyBs"
                "YXllciBvZiBMZU5ldC01IG5lZWRzIHRoZSBiYXRjaCBzaXplOiBjb252b2x1dGlvbnMsIHBvb2xpbmcgYW5kIERlbnNlIHdv"
                "cmsgaW1hZ2UgYnkgaW1hZ2UsIGFuZCBubi5GbGF0dGVuIGtlZXBzIHRoZSBmaXJzdCBheGlzIHdoYXRldmVyIGl0cyBzaXpl"
                "LiBDb2RlIHRoYXQgcmVhZHMgdGhlIGJhdGNoIHNpemUgd2hpbGUgdGhlIGdyYXBoIGlzIHRyYWNlZCwgc3VjaCBhcyB4LnJl"
                "c2hhcGUoeC5zaGFwZVswXSwgLTEpLCBpcyBkaWZmZXJlbnQ6IGl0IGJha2VzIHRoZSAxIG9mIHRoZSBleGFtcGxlIGludG8g"
                "dGhlIGdyYXBoLCBhbmQgdGhlIGV4cG9ydGVkIGdyYXBoIHRoZW4gZmFpbHMgb24gMTYgaW1hZ2VzLg=="),
           task_zh="以 dynamic_batch=False 用一张图像导出 LeNet-5，在 16 张图像上运行该计算图：（输出形状，max "
                   "|graph - eager|）。",
           why_zh=("TWluZElSIOaWh+S7tuWtmOWCqOeahOaYr+eul+WtkO+8jOiAjOS4jeaYr+WbuuWumueahCBiYXRjaCDlpKflsI/vvJrorqHn"
                   "rpflm77ov5DooYzml7bvvIxNaW5kU3BvcmUg5Lya5qC55o2u5b6X5Yiw55qE6L6T5YWl6YeN5paw5o6o5a+85q+P5Liq5b2i"
                   "54q244CCTGVOZXQtNSDmsqHmnInlk6rkuIDlsYLpnIDopoHnn6XpgZMgYmF0Y2gg5aSn5bCP77ya5Y2356ev44CB5rGg5YyW"
                   "5ZKMIERlbnNlIOmDvemAkOW8oOWbvuWDj+iuoeeul++8jG5uLkZsYXR0ZW4g5peg6K6656ys5LiA5Liq6L205aSa5aSn6YO9"
                   "5Lya5L+d55WZ5a6D44CC5Zyo6L+96Liq6K6h566X5Zu+5pe26K+75Y+WIGJhdGNoIOWkp+Wwj+eahOS7o+egge+8iOS+i+Wm"
                   "giB4LnJlc2hhcGUoeC5zaGFwZVswXSwgLTEp77yJ5YiZ5LiN5ZCM77ya5a6D5oqK56S65L6L5Lit55qEIDEg5Zu65YyW6L+b"
                   "6K6h566X5Zu+77yM5a+85Ye655qE6K6h566X5Zu+5ZyoIDE2IOW8oOWbvuWDj+S4iuWwseS8muWHuumUmeOAgg=="))
def check_fixed_batch_export(answer):
    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           "Answer with a tuple of two items: (the graph's output shape, the largest absolute difference), "
           "e.g. ((2, 3), 0.5).",
           zh="请用包含两项的元组作答：（计算图的输出形状，最大绝对差），例如 ((2, 3), 0.5)。")
    shape, difference = answer
    expect(isinstance(shape, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in shape),
           f"The first item should be a shape, a tuple of ints such as (2, 3); yours is {shape!r}. "
           f"Tip: tuple(graph_logits.shape).",
           zh=f"第一项应为形状，即由 int 组成的元组，例如 (2, 3)；你的是 {shape!r}。提示：tuple(graph_logits.shape)"
              "。")
    expect_type(difference, (int, float, np.floating), "The largest absolute difference", "最大绝对差")
    expect(difference >= 0, "A largest *absolute* difference cannot be negative: use np.abs(...).max().",
                            zh="最大*绝对*差不可能是负数：请用 np.abs(...).max()。")

    truth_shape, truth_difference = _fixed_batch_truth()
    shape = tuple(int(d) for d in shape)
    expect(shape != (1, truth_shape[1]), "That is the output for the single example image: run the exported "
                                         "graph on all 16 images of `images`.",
                                         zh="这是单张示例图像的输出：请在 `images` 的全部 16 张图像上运行导出的计算"
                                            "图。")
    expect(shape == truth_shape, f"Your shape {shape} is not what the exported graph returns for the 16 images "
                                 f"(one row of logits per image, one column per class).",
                                 zh=f"你的形状 {shape} 不是导出的计算图对 16 张图像返回的形状（每张图像一行 logits，"
                                    "每个类别一列）。")
    expect_close(float(difference), truth_difference, "Your largest difference", rel=0, abs_=1e-5,
                 hint="The graph and the eager network (in inference mode, on the same 16 images) should agree "
                      "to about 1e-6; compare graph(Tensor(images)) with eval_net(Tensor(images)).",
                 what_zh="你的最大差值",
                 hint_zh="计算图与动态图网络（处于推理模式，使用相同的 16 张图像）的结果应在约 1e-6 内一致；"
                         "请比较 graph(Tensor(images)) 与 eval_net(Tensor(images))。")


def _second_choice_cases():
    """Logits where roughly half the images are right, and the label often comes second when they are not."""
    rng = np.random.default_rng(92)
    cases = []
    for count, num_classes in ((240, 10), (60, 4)):
        logits = rng.standard_normal((count, num_classes))
        labels = rng.integers(0, num_classes, size=count)
        logits[np.arange(count), labels] += rng.choice([0.0, 1.0, 3.0], size=count)
        cases.append((logits.astype(np.float32), labels.astype(np.int64)))
    return cases


def _second_choice_truth(probabilities, labels):
    order = np.argsort(-probabilities, axis=1)
    wrong = order[:, 0] != labels
    return float((order[wrong, 1] == labels[wrong]).mean()), wrong


@exercise("09.2", "A function (predictions, labels) -> share of misclassified images whose label is the "
                  "second choice.",
           difficulty=2, minutes=10,
           task_zh="一个函数 (predictions, labels) -> 被错分的图像中，标签是第二选择的图像所占的比例。")
def check_second_choice_share(answer):
    from course_lib.inference import Predictions, softmax

    expect(callable(answer), f"Your answer should be a function second_choice_share(predictions, labels), "
                             f"but it is a {type(answer).__name__} ({answer!r}).",
                             zh="你的答案应是函数 second_choice_share(predictions, labels)，但它是 "
                                f"{type(answer).__name__}（{answer!r}）。")
    for logits, labels in _second_choice_cases():
        probabilities = softmax(logits)
        predictions = Predictions(labels=probabilities.argmax(axis=1).astype(np.int64), probabilities=probabilities)
        truth, wrong = _second_choice_truth(probabilities, labels)
        try:
            share = answer(predictions, labels.copy())
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(f"Your function fails on {len(labels)} predictions with {logits.shape[1]} classes: "
                            f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                            zh=f"你的函数在 {len(labels)} 个预测、{logits.shape[1]} 个类别上出错："
                               f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from None
        expect_type(share, (int, float, np.floating), "The value your function returns", "你的函数的返回值")
        expect(0 <= share <= 1, f"Your function returns {share!r}: a share is a fraction between 0 and 1 "
                                f"(count / number of misclassified images).",
                                zh=f"你的函数返回了 {share!r}：比例是 0 到 1 之间的分数（数量 / 错分图像数）。")
        top_two = predictions.top_k(2)[0]
        if np.isclose(share, (top_two[:, 1] == labels).mean()) and not np.isclose(share, truth):
            raise Incorrect("You divide by the number of all images: divide by the number of misclassified ones "
                            "(top-1 class != label).",
                            zh="你除以的是全部图像数：应除以错分图像数（top-1 类别 != 标签）。")
        if np.isclose(share, (top_two == labels[:, None]).any(axis=1).mean()) and not np.isclose(share, truth):
            raise Incorrect("Your share counts the correctly classified images too: look only at the misclassified "
                            "ones (top-1 class != label).",
                            zh="你的比例把分类正确的图像也算进去了：只看错分的图像（top-1 类别 != 标签）。")
        expect_close(float(share), truth, f"On {len(labels)} predictions ({int(wrong.sum())} wrong), your share",
                     rel=1e-6, hint="top_k(2) gives the classes best first: column 1 is the second choice.",
                     what_zh=f"在 {len(labels)} 个预测（{int(wrong.sum())} 个错误）上，你的比例",
                     hint_zh="top_k(2) 按从好到差的顺序给出类别：第 1 列是第二选择。")


def _flip_one_bit(raw: bytes, marker: bytes) -> bytes:
    offset = raw.find(marker)
    assert offset > 0, "the weight bytes were not found in the checkpoint"
    flipped = bytearray(raw)
    flipped[offset + 2] ^= 0x10
    return bytes(flipped)


@exercise("09.3", "A function path -> True only when the checkpoint carries a CRC-32 checksum that matches it.",
           difficulty=3, minutes=15,
           task_zh="一个函数 path -> 只有当检查点带有与内容相符的 CRC-32 校验和时才返回 True。")
def check_crc_verifier(answer):
    import mindspore as ms
    from mindspore import nn

    expect(callable(answer), f"Your answer should be a function checkpoint_is_verified(path) -> bool, but it is "
                             f"a {type(answer).__name__} ({answer!r}).",
                             zh="你的答案应是函数 checkpoint_is_verified(path) -> bool，但它是 "
                                f"{type(answer).__name__}（{answer!r}）。")
    net = nn.Dense(4, 3)
    weight_bytes = net.weight.asnumpy().tobytes()[16:32]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        ms.save_checkpoint(net, str(folder / "with_crc.ckpt"), crc_check=True)
        ms.save_checkpoint(net, str(folder / "without_crc.ckpt"), crc_check=False)
        with_crc, without_crc = (folder / "with_crc.ckpt").read_bytes(), (folder / "without_crc.ckpt").read_bytes()
        cases = [  # (file name, content, expected verdict, hint when the verdict is wrong, in Chinese)
            ("intact.ckpt", with_crc, True,
             "Your function rejects an intact checkpoint saved with crc_check=True.",
             "你的函数拒绝了一个用 crc_check=True 保存的完好检查点。"),
            ("flipped.ckpt", _flip_one_bit(with_crc, weight_bytes), False,
             "Your function accepts a CRC-protected checkpoint with one flipped bit in a weight: recompute the "
             "CRC-32 of the content and compare it with the stored checksum, not only look for the 'crc_num' mark.",
             "你的函数接受了一个带 CRC 保护、但某个权重中有一位被翻转的检查点：请重新计算内容的 CRC-32，并与存储的"
             "校验和比较，而不是只查找 'crc_num' 标记。"),
            ("checksum_flipped.ckpt", with_crc[:-1] + bytes([with_crc[-1] ^ 0x01]), False,
             "Your function accepts a checkpoint whose stored checksum was changed: compare the stored checksum "
             "with the CRC-32 you compute.",
             "你的函数接受了一个存储的校验和被改动过的检查点：请把存储的校验和与你计算出的 CRC-32 进行比较。"),
            ("no_crc.ckpt", without_crc, False,
             "Your function accepts a checkpoint saved WITHOUT a checksum (crc_check=False): nothing can be "
             "verified, and ms.load_checkpoint(..., crc_check=True) only logs a warning for such a file.",
             "你的函数接受了一个保存时没有校验和（crc_check=False）的检查点：这样的文件无从验证，而 "
             "ms.load_checkpoint(..., crc_check=True) 对它只会记录一条警告。"),
            ("no_crc_flipped.ckpt", _flip_one_bit(without_crc, weight_bytes), False,
             "Your function accepts a checkpoint without a checksum whose bytes were changed.",
             "你的函数接受了一个没有校验和、字节又被改动过的检查点。"),
            ("truncated.ckpt", with_crc[: len(with_crc) // 2], False,
             "Your function accepts a checkpoint cut in half (an interrupted copy).",
             "你的函数接受了一个被截掉一半的检查点（复制被中断）。"),
        ]
        for name, content, expected, hint, hint_zh in cases:
            path = folder / name
            path.write_bytes(content)
            try:
                verdict = answer(path)
            except Exception as error:  # noqa: BLE001 - show the learner what failed
                raise Incorrect(f"For the file {name} your function raises "
                                f"{type(error).__name__} instead of returning True or False. Catch the error (or "
                                f"read the bytes yourself) and return False.",
                                zh=f"对于文件 {name}，你的函数抛出了 {type(error).__name__}，而没有返回 True 或 "
                                   "False。请捕获该错误（或自己读取字节）并返回 False。") from None
            expect(isinstance(verdict, (bool, np.bool_)),
                   f"Your function should return True or False, but returns a {type(verdict).__name__} "
                   f"({verdict!r}).",
                   zh=f"你的函数应返回 True 或 False，但返回的是 {type(verdict).__name__}（{verdict!r}）。")
            expect(bool(verdict) == expected, hint, zh=hint_zh)
