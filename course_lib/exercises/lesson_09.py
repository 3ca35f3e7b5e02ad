"""Exercises of lesson 09 (inference, MindIR export, checkpoint integrity)."""
import functools
import tempfile
from pathlib import Path

import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_close, expect_type, first_line
from course_lib.i18n import N_, _


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


@exercise("09.1", N_("Export LeNet-5 with dynamic_batch=False from one image, run the graph on 16: "
                     "(output shape, max |graph - eager|)."),
           difficulty=1, minutes=5,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("QSBNaW5kSVIgZmlsZSBzdG9yZXMgdGhlIG9wZXJhdG9ycywgbm90IGEgZml4ZWQgYmF0Y2ggc2l6ZTogd2hlbiB0aGUgZ3Jh"
                   "cGggcnVucywgTWluZFNwb3JlIGluZmVycyBldmVyeSBzaGFwZSBhZ2FpbiBmcm9tIHRoZSBpbnB1dCBpdCBnZXRzLiBObyBs"
                   "YXllciBvZiBMZU5ldC01IG5lZWRzIHRoZSBiYXRjaCBzaXplOiBjb252b2x1dGlvbnMsIHBvb2xpbmcgYW5kIERlbnNlIHdv"
                   "cmsgaW1hZ2UgYnkgaW1hZ2UsIGFuZCBubi5GbGF0dGVuIGtlZXBzIHRoZSBmaXJzdCBheGlzIHdoYXRldmVyIGl0cyBzaXpl"
                   "LiBDb2RlIHRoYXQgcmVhZHMgdGhlIGJhdGNoIHNpemUgd2hpbGUgdGhlIGdyYXBoIGlzIHRyYWNlZCwgc3VjaCBhcyB4LnJl"
                   "c2hhcGUoeC5zaGFwZVswXSwgLTEpLCBpcyBkaWZmZXJlbnQ6IGl0IGJha2VzIHRoZSAxIG9mIHRoZSBleGFtcGxlIGludG8g"
                   "dGhlIGdyYXBoLCBhbmQgdGhlIGV4cG9ydGVkIGdyYXBoIHRoZW4gZmFpbHMgb24gMTYgaW1hZ2VzLg=="))
def check_fixed_batch_export(answer):
    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           _("Answer with a tuple of two items: (the graph's output shape, the largest absolute difference), e.g. "
             "((2, 3), 0.5)."))
    shape, difference = answer
    expect(isinstance(shape, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in shape),
           _("The first item should be a shape, a tuple of ints such as (2, 3); yours is {shape!r}. Tip: "
             "tuple(graph_logits.shape).").format(shape=shape))
    expect_type(difference, (int, float, np.floating), _("The largest absolute difference"))
    expect(difference >= 0, _("A largest *absolute* difference cannot be negative: use np.abs(...).max()."))

    truth_shape, truth_difference = _fixed_batch_truth()
    shape = tuple(int(d) for d in shape)
    expect(shape != (1, truth_shape[1]), _("That is the output for the single example image: run the exported graph "
                                           "on all 16 images of `images`."))
    expect(shape == truth_shape, _("Your shape {shape} is not what the exported graph returns for the 16 images (one "
                                   "row of logits per image, one column per class).").format(shape=shape))
    expect_close(float(difference), truth_difference, _("Your largest difference"), rel=0, abs_=1e-5,
                 hint=_("The graph and the eager network (in inference mode, on the same 16 images) should agree to "
                        "about 1e-6; compare graph(Tensor(images)) with eval_net(Tensor(images))."))


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


@exercise("09.2", N_("A function (predictions, labels) -> share of misclassified images whose label is the "
                     "second choice."),
           difficulty=2, minutes=10)
def check_second_choice_share(answer):
    from course_lib.inference import Predictions, softmax

    expect(callable(answer), _("Your answer should be a function second_choice_share(predictions, labels), but it is "
                               "a {kind} ({answer!r}).").format(kind=type(answer).__name__, answer=answer))
    for logits, labels in _second_choice_cases():
        probabilities = softmax(logits)
        predictions = Predictions(labels=probabilities.argmax(axis=1).astype(np.int64), probabilities=probabilities)
        truth, wrong = _second_choice_truth(probabilities, labels)
        try:
            share = answer(predictions, labels.copy())
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(_("Your function fails on {n_labels} predictions with {shape} classes: {error_type}: "
                              "{message}")
                            .format(n_labels=len(labels), shape=logits.shape[1], error_type=type(error).__name__,
                                    message=first_line(error))) from None
        expect_type(share, (int, float, np.floating), _("The value your function returns"))
        expect(0 <= share <= 1, _("Your function returns {share!r}: a share is a fraction between 0 and 1 (count / "
                                  "number of misclassified images).").format(share=share))
        top_two = predictions.top_k(2)[0]
        if np.isclose(share, (top_two[:, 1] == labels).mean()) and not np.isclose(share, truth):
            raise Incorrect(_("You divide by the number of all images: divide by the number of misclassified ones "
                              "(top-1 class != label)."))
        if np.isclose(share, (top_two == labels[:, None]).any(axis=1).mean()) and not np.isclose(share, truth):
            raise Incorrect(_("Your share counts the correctly classified images too: look only at the misclassified "
                              "ones (top-1 class != label)."))
        expect_close(float(share), truth, _("On {n_labels} predictions ({n_wrong} wrong), your share")
                                          .format(n_labels=len(labels), n_wrong=int(wrong.sum())),
                     rel=1e-6, hint=_("top_k(2) gives the classes best first: column 1 is the second choice."))


def _flip_one_bit(raw: bytes, marker: bytes) -> bytes:
    offset = raw.find(marker)
    assert offset > 0, "the weight bytes were not found in the checkpoint"
    flipped = bytearray(raw)
    flipped[offset + 2] ^= 0x10
    return bytes(flipped)


@exercise("09.3", N_("A function path -> True only when the checkpoint carries a CRC-32 checksum that matches it."),
           difficulty=3, minutes=15)
def check_crc_verifier(answer):
    import mindspore as ms
    from mindspore import nn

    expect(callable(answer), _("Your answer should be a function checkpoint_is_verified(path) -> bool, but it is a "
                               "{kind} ({answer!r}).").format(kind=type(answer).__name__, answer=answer))
    net = nn.Dense(4, 3)
    weight_bytes = net.weight.asnumpy().tobytes()[16:32]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        ms.save_checkpoint(net, str(folder / "with_crc.ckpt"), crc_check=True)
        ms.save_checkpoint(net, str(folder / "without_crc.ckpt"), crc_check=False)
        with_crc, without_crc = (folder / "with_crc.ckpt").read_bytes(), (folder / "without_crc.ckpt").read_bytes()
        cases = [  # (file name, content, expected verdict, hint when the verdict is wrong)
            ("intact.ckpt", with_crc, True,
             N_("Your function rejects an intact checkpoint saved with crc_check=True.")),
            ("flipped.ckpt", _flip_one_bit(with_crc, weight_bytes), False,
             N_("Your function accepts a CRC-protected checkpoint with one flipped bit in a weight: recompute the "
                "CRC-32 of the content and compare it with the stored checksum, not only look for the 'crc_num' "
                "mark.")),
            ("checksum_flipped.ckpt", with_crc[:-1] + bytes([with_crc[-1] ^ 0x01]), False,
             N_("Your function accepts a checkpoint whose stored checksum was changed: compare the stored checksum "
                "with the CRC-32 you compute.")),
            ("no_crc.ckpt", without_crc, False,
             N_("Your function accepts a checkpoint saved WITHOUT a checksum (crc_check=False): nothing can be "
                "verified, and ms.load_checkpoint(..., crc_check=True) only logs a warning for such a file.")),
            ("no_crc_flipped.ckpt", _flip_one_bit(without_crc, weight_bytes), False,
             N_("Your function accepts a checkpoint without a checksum whose bytes were changed.")),
            ("truncated.ckpt", with_crc[: len(with_crc) // 2], False,
             N_("Your function accepts a checkpoint cut in half (an interrupted copy).")),
        ]
        for name, content, expected, hint in cases:
            path = folder / name
            path.write_bytes(content)
            try:
                verdict = answer(path)
            except Exception as error:  # noqa: BLE001 - show the learner what failed
                raise Incorrect(_("For the file {name} your function raises {error_type} instead of returning True "
                                  "or False. Catch the error (or read the bytes yourself) and return False.")
                                .format(name=name, error_type=type(error).__name__)) from None
            expect(isinstance(verdict, (bool, np.bool_)),
                   _("Your function should return True or False, but returns a {kind} ({verdict!r}).")
                   .format(kind=type(verdict).__name__, verdict=verdict))
            expect(bool(verdict) == expected, _(hint))
