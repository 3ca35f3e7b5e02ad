"""Exercises of lesson 02 (Cells, LeNet, ResNet)."""
import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_type
from course_lib.i18n import N_, _

RESNET152_PARAMS = 60_192_808  # torchvision's resnet152 with 1000 classes


def _trainable(net) -> int:
    return int(sum(np.prod(p.shape) for p in net.trainable_params()))


@exercise("02.1", N_("Build resnet152(num_classes=1000) on top of ResNet ([3, 8, 36, 3] bottleneck blocks)."),
           difficulty=1, minutes=10)
def check_resnet152(answer):
    from mindspore import nn

    from course_lib.models import ResidualBlock, ResNet

    expect_type(answer, nn.Cell, _("Your answer"))
    expect(isinstance(answer, ResNet), _("Build it with course_lib.models.ResNet, like resnet50 is built."))
    blocks = [len(getattr(answer, f"layer{i}")) for i in range(1, 5)]
    expect(blocks == [3, 8, 36, 3], _("Your stages have {blocks} blocks; ResNet-152 has [3, 8, 36, 3].")
                                    .format(blocks=blocks))
    expect(all(isinstance(b, ResidualBlock) for b in answer.layer1), _("ResNet-152 uses the bottleneck block."))
    count = _trainable(answer)
    expect(count == RESNET152_PARAMS, _("Your network has {count:,} trainable parameters; check the channel lists "
                                        "and num_classes (torchvision's has {params:,}).")
                                      .format(count=count, params=RESNET152_PARAMS))


@exercise("02.2", N_("A LeNet-5 whose construct works for any batch size without nn.Flatten (give an instance)."),
           difficulty=2, minutes=15)
def check_any_batch(answer):
    import mindspore as ms
    from mindspore import nn

    expect_type(answer, nn.Cell, _("Your answer"))
    expect(not any(isinstance(c, nn.Flatten) for _name, c in answer.cells_and_names()),
           _("The point is to do without nn.Flatten: reshape with the batch size read from x.shape[0]."))
    for batch in (32, 7):
        x = ms.Tensor(np.zeros((batch, 1, 32, 32), np.float32))
        try:
            out = answer(x)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(_("With a batch of {batch}, your network fails: {error_type}: {message}")
                            .format(batch=batch, error_type=type(error).__name__,
                                    message=str(error).splitlines()[0])) from None
        expect(tuple(out.shape) == (batch, 10), _("With a batch of {batch} the output should be ({batch}, 10), yours "
                                                  "is {shape}.").format(batch=batch, shape=tuple(out.shape)))


@exercise("02.3", N_("resnet18(num_classes=10, zero_init_residual=True): the sorted names of the all-zero BN gammas."),
           difficulty=2, minutes=10,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("V2l0aCB6ZXJvX2luaXRfcmVzaWR1YWw9VHJ1ZSwgdGhlIGxhc3QgQmF0Y2hOb3JtIG9mIGVhY2ggYmxvY2sgc3RhcnRzIHdp"
                   "dGggZ2FtbWEgPSAwLiBCYXRjaE5vcm0gb3V0cHV0cyBnYW1tYSAqIHhfbm9ybWFsaXNlZCArIGJldGEsIGFuZCBiZXRhIHN0"
                   "YXJ0cyBhdCAwIHRvbywgc28gdGhlIHJlc2lkdWFsIGJyYW5jaCBvdXRwdXRzIHplcm9zIGFuZCB0aGUgYmxvY2sgY29tcHV0"
                   "ZXMgUmVMVShzaG9ydGN1dChpbnB1dCkgKyAwKTogUmVMVShpbnB1dCkgaW4gZXZlcnkgYmxvY2sgd2hvc2Ugc2hvcnRjdXQg"
                   "aXMgdGhlIGlkZW50aXR5LiBFYWNoIGJsb2NrIHN0YXJ0cyBhcyAoYWxtb3N0KSB0aGUgaWRlbnRpdHksIHNvIGEgZGVlcCBS"
                   "ZXNOZXQgc3RhcnRzIGxpa2UgYSBzaGFsbG93IG9uZSwgYW5kIHRoZSBicmFuY2hlcyBsZWFybiBmcm9tIHRoZXJlLg=="))
def check_zero_gammas(answer):
    from course_lib.models import resnet18

    expect(isinstance(answer, (list, tuple)) and all(isinstance(a, str) for a in answer),
           _("Answer with a list of parameter names (strings), e.g. ['layer1.0.bn2.gamma', ...]."))
    net = resnet18(num_classes=10, zero_init_residual=True)
    truth = sorted(p.name for p in net.get_parameters() if p.name.endswith("gamma") and not p.asnumpy().any())
    answer = sorted(answer)
    expect(len(answer) == len(truth), _("You listed {n_answer} names; {n_truth} gammas are zero (one per residual "
                                        "block).").format(n_answer=len(answer), n_truth=len(truth)))
    missing = [n for n in truth if n not in answer]
    expect(not missing, _("{n_missing} of your names are not zero-initialised gammas: look at the last BN of each "
                          "block, not the shortcut's.").format(n_missing=len(missing)))
