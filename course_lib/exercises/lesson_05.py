"""Exercises of lesson 05 (eval networks, eval_indexes, Metric.set_indexes, mIoU)."""
import re

import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_close, expect_type
from course_lib.i18n import N_, _

#: 05.1: what the learner's eval network returns, in this order.
REORDERED_OUTPUTS = ("logits", "label", "loss")
NUM_CLASSES = 4

#: Where a course_lib message's fix starts, in English ("Fix:") or in Chinese (escaped here).
_FIX = re.compile(r" Fix:| ?\u4fee\u6b63\uff1a")


def _model_with_eval_indexes(eval_indexes):
    """Build a Model with a custom eval network and these eval_indexes: MindSpore's own validation runs."""
    from mindspore import nn
    from mindspore.train import Loss, Model

    from course_lib.train.metrics import MIoU

    net = nn.Dense(2, 2)
    return Model(net, eval_network=net, eval_indexes=eval_indexes, metrics={"miou": MIoU(NUM_CLASSES), "loss": Loss()})


@exercise("05.1", N_("An eval network returns (logits, label, loss): the eval_indexes to pass to Model."),
           difficulty=1, minutes=5)
def check_eval_indexes(answer):
    expect(isinstance(answer, (list, tuple)) and len(answer) == 3,
           _("eval_indexes holds three positions: where the loss, the prediction and the label are."))
    expect(all(isinstance(i, int) and not isinstance(i, bool) for i in answer),
           _("Each entry is the position (an int) of one output of the eval network."))
    try:
        _model_with_eval_indexes(answer)
    except ValueError as error:
        raise Incorrect(_("Model(...) refuses it: {message}").format(message=str(error).splitlines()[0])) from None
    expect(all(0 <= i < 3 for i in answer), _("The eval network has three outputs: positions 0, 1 and 2."))
    roles = (("loss", "Loss"), ("logits", "MIoU"), ("label", "MIoU"))
    for position, (wanted, metric) in enumerate(roles):
        got = REORDERED_OUTPUTS[answer[position]]
        expect(got == wanted, _("eval_indexes[{position}] must point at the {wanted}, but yours points at the {got}: "
                                "the {metric} metric would get the wrong output. Order: loss, prediction, label.")
                              .format(position=position, wanted=wanted, got=got, metric=metric))


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


@exercise("05.2", N_("Metrics {'miou': ..., 'loss': ...} that work with eval_indexes=None, via set_indexes."),
           difficulty=1, minutes=5)
def check_set_indexes(answer):
    from mindspore.train import Loss

    from course_lib.train.metrics import MIoU

    expect_type(answer, dict, _("The metrics"))
    expect(set(answer) == {"miou", "loss"}, _("Use exactly the keys 'miou' and 'loss', got {answer}.")
                                            .format(answer=sorted(answer)))
    expect(isinstance(answer["miou"], MIoU) and answer["miou"].num_classes == NUM_CLASSES,
           _("answer['miou'] should be a course_lib.train.metrics.MIoU for the 4 shapes classes."))
    expect(isinstance(answer["loss"], Loss), _("answer['loss'] should be a mindspore.train.Loss."))
    model = _model_with_eval_indexes(None)
    model._metric_fns = answer          # the routing under test is Model's own _update_metrics
    outputs, miou, loss = _fake_outputs()
    for metric in answer.values():
        metric.clear()
    try:
        model._update_metrics(outputs)
    except ValueError as error:
        raise Incorrect(_("With eval_indexes=None every metric receives (loss, logits, label), and one of yours "
                          "failed: {message} Make each metric pick the outputs it needs.")
                        .format(message=_FIX.split(str(error).splitlines()[0])[0])) from None
    expect_close(answer["loss"].eval(), loss, _("The loss your Loss metric reports"),
                 hint=_("It should read output 0 of (loss, logits, label)."))
    expect_close(answer["miou"].eval(), miou, _("The mIoU your MIoU metric reports"),
                 hint=_("It should read (logits, label), in that order."))


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


@exercise("05.3", N_("per_image_miou(pred, label, num_classes): the mean over images of each image's mIoU."),
           difficulty=2, minutes=15,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("VGhlIHBlci1pbWFnZSBtZWFuIGlzIGhpZ2hlciBvbiB0aGUgc2hhcGVzIGRhdGEuIEVhY2ggaW1hZ2UgYXZlcmFnZXMgb25s"
                   "eSBvdmVyIHRoZSBjbGFzc2VzIHByZXNlbnQgaW4gaXQ6IHRoZSBiYWNrZ3JvdW5kLCB3aXRoIGFuIElvVSBuZWFyIDEsIGlz"
                   "IGluIGV2ZXJ5IGltYWdlIGFuZCBpcyBvbmUgb2Ygb25seSAyIHRvIDQgY2xhc3NlcyB0aGVyZSwgc28gaXQgd2VpZ2hzIG1v"
                   "cmUuIE92ZXIgdGhlIGRhdGEgc2V0LCBvbmUgY29uZnVzaW9uIG1hdHJpeCBnaXZlcyBlYWNoIG9mIHRoZSA0IGNsYXNzZXMg"
                   "dGhlIHNhbWUgd2VpZ2h0LCBhbmQgdGhlIGhhcmRlciBzaGFwZSBjbGFzc2VzIGNvdW50IGZ1bGx5LiBBbHdheXMgc2F5IHdo"
                   "aWNoIG9mIHRoZSB0d28gYSBwYXBlciByZXBvcnRzLg=="))
def check_per_image_miou(answer):
    expect(callable(answer), _("Store the function itself (per_image_miou), not its result."))
    pred, label = _per_image_fixture()
    try:
        value = answer(pred.copy(), label.copy(), NUM_CLASSES)
    except Exception as error:  # noqa: BLE001 - any failure of the learner's code becomes a hint
        raise Incorrect(_("Calling it on label maps (N, H, W) raised {error_type}: {error}")
                        .format(error_type=type(error).__name__, error=error)) from None
    expect_type(value, (int, float, np.floating), _("Its result"))
    truth = float(np.mean([_miou(pred[i:i + 1], label[i:i + 1]) for i in range(len(pred))]))
    if np.isclose(value, _miou(pred, label), rtol=1e-6):
        raise Incorrect(_("That is the mIoU over all the pixels of the batch: compute one mIoU per image, then "
                          "average those."))
    zeroed = float(np.mean([_miou(pred[i:i + 1], label[i:i + 1], absent_as_zero=True) for i in range(len(pred))]))
    if np.isclose(value, zeroed, rtol=1e-6):
        raise Incorrect(_("A class absent from an image (neither labelled nor predicted) counts as 0 in your answer: "
                          "leave it out of that image's mean (NaN), as MIoU does."))
    expect_close(value, truth, _("Your per-image mean"), rel=1e-6,
                 hint=_("Check that pixels labelled ignore_label (255) are skipped."))
