"""Exercises of lesson 02 (Cells, LeNet, ResNet)."""
import numpy as np

from ..exercises import Incorrect, exercise, expect, expect_type

RESNET152_PARAMS = 60_192_808  # torchvision's resnet152 with 1000 classes


def _trainable(net) -> int:
    return int(sum(np.prod(p.shape) for p in net.trainable_params()))


@exercise("02.1", "Build resnet152(num_classes=1000) on top of ResNet ([3, 8, 36, 3] bottleneck blocks).")
def check_resnet152(answer):
    from mindspore import nn

    from ..models import ResNet, ResidualBlock

    expect_type(answer, nn.Cell, "Your answer")
    expect(isinstance(answer, ResNet), "Build it with course_lib.models.ResNet, like resnet50 is built.")
    blocks = [len(getattr(answer, f"layer{i}")) for i in range(1, 5)]
    expect(blocks == [3, 8, 36, 3], f"Your stages have {blocks} blocks; ResNet-152 has [3, 8, 36, 3].")
    expect(all(isinstance(b, ResidualBlock) for b in answer.layer1), "ResNet-152 uses the bottleneck block.")
    count = _trainable(answer)
    expect(count == RESNET152_PARAMS, f"Your network has {count:,} trainable parameters; check the channel "
                                      f"lists and num_classes (torchvision's has {RESNET152_PARAMS:,}).")


@exercise("02.2", "A LeNet-5 whose construct works for any batch size without nn.Flatten (give an instance).")
def check_any_batch(answer):
    import mindspore as ms
    from mindspore import nn

    expect_type(answer, nn.Cell, "Your answer")
    expect(not any(isinstance(c, nn.Flatten) for _, c in answer.cells_and_names()),
           "The point is to do without nn.Flatten: reshape with the batch size read from x.shape[0].")
    for batch in (32, 7):
        x = ms.Tensor(np.zeros((batch, 1, 32, 32), np.float32))
        try:
            out = answer(x)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(f"With a batch of {batch}, your network fails: {type(error).__name__}: "
                            f"{str(error).splitlines()[0]}") from None
        expect(tuple(out.shape) == (batch, 10), f"With a batch of {batch} the output should be ({batch}, 10), "
                                                f"yours is {tuple(out.shape)}.")


@exercise("02.3", "resnet18(num_classes=10, zero_init_residual=True): the sorted names of the all-zero BN gammas.")
def check_zero_gammas(answer):
    from ..models import resnet18

    expect(isinstance(answer, (list, tuple)) and all(isinstance(a, str) for a in answer),
           "Answer with a list of parameter names (strings), e.g. ['layer1.0.bn2.gamma', ...].")
    net = resnet18(num_classes=10, zero_init_residual=True)
    truth = sorted(p.name for p in net.get_parameters() if p.name.endswith("gamma") and not p.asnumpy().any())
    answer = sorted(answer)
    expect(len(answer) == len(truth), f"You listed {len(answer)} names; {len(truth)} gammas are zero "
                                      f"(one per residual block).")
    missing = [n for n in truth if n not in answer]
    expect(not missing, f"{len(missing)} of your names are not zero-initialised gammas: look at the last BN "
                        f"of each block, not the shortcut's.")
