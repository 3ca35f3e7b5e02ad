"""Exercises of lesson 02 (Cells, LeNet, ResNet)."""
import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_type

RESNET152_PARAMS = 60_192_808  # torchvision's resnet152 with 1000 classes


def _trainable(net) -> int:
    return int(sum(np.prod(p.shape) for p in net.trainable_params()))


@exercise("02.1", "Build resnet152(num_classes=1000) on top of ResNet ([3, 8, 36, 3] bottleneck blocks).",
           difficulty=1, minutes=10,
           task_zh="基于 ResNet 构建 resnet152(num_classes=1000)（瓶颈残差块数为 [3, 8, 36, 3]）。")
def check_resnet152(answer):
    from mindspore import nn

    from course_lib.models import ResNet, ResidualBlock

    expect_type(answer, nn.Cell, "Your answer", "你的答案")
    expect(isinstance(answer, ResNet), "Build it with course_lib.models.ResNet, like resnet50 is built.",
                                       zh="请像构建 resnet50 那样，用 course_lib.models.ResNet 来构建。")
    blocks = [len(getattr(answer, f"layer{i}")) for i in range(1, 5)]
    expect(blocks == [3, 8, 36, 3], f"Your stages have {blocks} blocks; ResNet-152 has [3, 8, 36, 3].",
                                    zh=f"你的各个阶段分别有 {blocks} 个残差块；ResNet-152 是 [3, 8, 36, 3]。")
    expect(all(isinstance(b, ResidualBlock) for b in answer.layer1), "ResNet-152 uses the bottleneck block.",
                                                                     zh="ResNet-152 使用瓶颈残差块（bottleneck）。")
    count = _trainable(answer)
    expect(count == RESNET152_PARAMS, f"Your network has {count:,} trainable parameters; check the channel "
                                      f"lists and num_classes (torchvision's has {RESNET152_PARAMS:,}).",
                                      zh=f"你的网络有 {count:,} 个可训练参数；请检查通道列表和 num_classes（"
                                         f"torchvision 的版本有 {RESNET152_PARAMS:,} 个）。")


@exercise("02.2", "A LeNet-5 whose construct works for any batch size without nn.Flatten (give an instance).",
           difficulty=2, minutes=15,
           task_zh="一个不用 nn.Flatten、construct 适用于任意 batch 大小的 LeNet-5（给出一个实例）。")
def check_any_batch(answer):
    import mindspore as ms
    from mindspore import nn

    expect_type(answer, nn.Cell, "Your answer", "你的答案")
    expect(not any(isinstance(c, nn.Flatten) for _, c in answer.cells_and_names()),
           "The point is to do without nn.Flatten: reshape with the batch size read from x.shape[0].",
           zh="本题的要点是不用 nn.Flatten：用从 x.shape[0] 读出的 batch 大小做 reshape。")
    for batch in (32, 7):
        x = ms.Tensor(np.zeros((batch, 1, 32, 32), np.float32))
        try:
            out = answer(x)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(f"With a batch of {batch}, your network fails: {type(error).__name__}: "
                            f"{str(error).splitlines()[0]}",
                            zh=f"batch 大小为 {batch} 时，你的网络出错：{type(error).__name__}: "
                               f"{str(error).splitlines()[0]}") from None
        expect(tuple(out.shape) == (batch, 10), f"With a batch of {batch} the output should be ({batch}, 10), "
                                                f"yours is {tuple(out.shape)}.",
                                                zh=f"batch 大小为 {batch} 时，输出形状应为 ({batch}, 10)，你的是 "
                                                   f"{tuple(out.shape)}。")


@exercise("02.3", "resnet18(num_classes=10, zero_init_residual=True): the sorted names of the all-zero BN gammas.",
           difficulty=2, minutes=10,
           why=("V2l0aCB6ZXJvX2luaXRfcmVzaWR1YWw9VHJ1ZSwgdGhlIGxhc3QgQmF0Y2hOb3JtIG9mIGVhY2ggYmxvY2sgc3RhcnRzIHdp"
                "dGggZ2FtbWEgPSAwLiBCYXRjaE5vcm0gb3V0cHV0cyBnYW1tYSAqIHhfbm9ybWFsaXNlZCArIGJldGEsIGFuZCBiZXRhIHN0"
                "YXJ0cyBhdCAwIHRvbywgc28gdGhlIHJlc2lkdWFsIGJyYW5jaCBvdXRwdXRzIHplcm9zIGFuZCB0aGUgYmxvY2sgY29tcHV0"
                "ZXMgUmVMVShzaG9ydGN1dChpbnB1dCkgKyAwKTogUmVMVShpbnB1dCkgaW4gZXZlcnkgYmxvY2sgd2hvc2Ugc2hvcnRjdXQg"
                "aXMgdGhlIGlkZW50aXR5LiBFYWNoIGJsb2NrIHN0YXJ0cyBhcyAoYWxtb3N0KSB0aGUgaWRlbnRpdHksIHNvIGEgZGVlcCBS"
                "ZXNOZXQgc3RhcnRzIGxpa2UgYSBzaGFsbG93IG9uZSwgYW5kIHRoZSBicmFuY2hlcyBsZWFybiBmcm9tIHRoZXJlLg=="),
           task_zh="resnet18(num_classes=10, zero_init_residual=True)：全为零的 BN gamma 的名称（排好序）。",
           why_zh=("6K6+572uIHplcm9faW5pdF9yZXNpZHVhbD1UcnVlIOaXtu+8jOavj+S4quaui+W3ruWdl+acgOWQjuS4gOS4qiBCYXRjaE5v"
                   "cm0g55qEIGdhbW1hIOWIneWni+S4uiAw44CCQmF0Y2hOb3JtIOeahOi+k+WHuuaYryBnYW1tYSAqIHhfbm9ybWFsaXNlZCAr"
                   "IGJldGHvvIzogIwgYmV0YSDnmoTliJ3lp4vlgLzkuZ/mmK8gMO+8jOWboOatpOaui+W3ruWIhuaUr+i+k+WHuuWFqOmbtu+8"
                   "jOaui+W3ruWdl+iuoeeul+eahOaYryBSZUxVKHNob3J0Y3V0KGlucHV0KSArIDAp77ya5ZyoIHNob3J0Y3V0IOS4uuaBkuet"
                   "ieaYoOWwhOeahOaui+W3ruWdl+S4reWwseaYryBSZUxVKGlucHV0KeOAguavj+S4quaui+W3ruWdl+W8gOWni+aXtu+8iOWH"
                   "oOS5ju+8ieaYr+aBkuetieaYoOWwhO+8jOaJgOS7pea3seWxgiBSZXNOZXQg5byA5aeL5pe25bCx5YOP5LiA5Liq5rWF5bGC"
                   "572R57uc77yM5ZCE5YiG5pSv5YaN5LuO6L+Z6YeM5byA5aeL5a2m5Lmg44CC"))
def check_zero_gammas(answer):
    from course_lib.models import resnet18

    expect(isinstance(answer, (list, tuple)) and all(isinstance(a, str) for a in answer),
           "Answer with a list of parameter names (strings), e.g. ['layer1.0.bn2.gamma', ...].",
           zh="请用参数名（字符串）组成的列表作答，例如 ['layer1.0.bn2.gamma', ...]。")
    net = resnet18(num_classes=10, zero_init_residual=True)
    truth = sorted(p.name for p in net.get_parameters() if p.name.endswith("gamma") and not p.asnumpy().any())
    answer = sorted(answer)
    expect(len(answer) == len(truth), f"You listed {len(answer)} names; {len(truth)} gammas are zero "
                                      f"(one per residual block).",
                                      zh=f"你列出了 {len(answer)} 个名称；全为零的 gamma 有 {len(truth)} 个（每个残"
                                         "差块一个）。")
    missing = [n for n in truth if n not in answer]
    expect(not missing, f"{len(missing)} of your names are not zero-initialised gammas: look at the last BN "
                        f"of each block, not the shortcut's.",
                        zh=f"你的名称中有 {len(missing)} 个不是初始化为零的 gamma：看每个残差块的最后一个 BN，而不是"
                           " shortcut 的 BN。")
