"""Exercises of lesson 09 (inference, MindIR export, checkpoint integrity)."""
import functools
import tempfile
from pathlib import Path

import numpy as np

from ..exercises import Incorrect, expect, expect_close, expect_type, exercise


@functools.lru_cache(maxsize=1)
def _fixed_batch_truth():
    """Export a LeNet-5 from one image (fixed batch), run the graph on 16: (output shape, max |graph - eager|)."""
    import mindspore as ms

    from ..inference import export_mindir, load_mindir
    from ..models import lenet5

    net = lenet5(num_classes=10)
    net.set_train(False)
    images = np.random.default_rng(9).standard_normal((16, 1, 32, 32)).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        graph = load_mindir(export_mindir(net, images[:1], Path(folder) / "fixed.mindir", dynamic_batch=False))
        graph_logits = graph(ms.Tensor(images)).asnumpy()
    return tuple(graph_logits.shape), float(np.abs(graph_logits - net(ms.Tensor(images)).asnumpy()).max())


@exercise("09.1", "Export LeNet-5 with dynamic_batch=False from one image, run the graph on 16: "
                  "(output shape, max |graph - eager|).")
def check_fixed_batch_export(answer):
    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           "Answer with a tuple of two items: (the graph's output shape, the largest absolute difference), "
           "e.g. ((2, 3), 0.5).")
    shape, difference = answer
    expect(isinstance(shape, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in shape),
           f"The first item should be a shape, a tuple of ints such as (2, 3); yours is {shape!r}. "
           f"Tip: tuple(graph_logits.shape).")
    expect_type(difference, (int, float, np.floating), "The largest absolute difference")
    expect(difference >= 0, "A largest *absolute* difference cannot be negative: use np.abs(...).max().")

    truth_shape, truth_difference = _fixed_batch_truth()
    shape = tuple(int(d) for d in shape)
    expect(shape != (1, truth_shape[1]), "That is the output for the single example image: run the exported "
                                         "graph on all 16 images of `images`.")
    expect(shape == truth_shape, f"Your shape {shape} is not what the exported graph returns for the 16 images "
                                 f"(one row of logits per image, one column per class).")
    expect_close(float(difference), truth_difference, "Your largest difference", rel=0, abs_=1e-5,
                 hint="The graph and the eager network (in inference mode, on the same 16 images) should agree "
                      "to about 1e-6; compare graph(Tensor(images)) with eval_net(Tensor(images)).")


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
                  "second choice.")
def check_second_choice_share(answer):
    from ..inference import Predictions, softmax

    expect(callable(answer), f"Your answer should be a function second_choice_share(predictions, labels), "
                             f"but it is a {type(answer).__name__} ({answer!r}).")
    for logits, labels in _second_choice_cases():
        probabilities = softmax(logits)
        predictions = Predictions(labels=probabilities.argmax(axis=1).astype(np.int64), probabilities=probabilities)
        truth, wrong = _second_choice_truth(probabilities, labels)
        try:
            share = answer(predictions, labels.copy())
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(f"Your function fails on {len(labels)} predictions with {logits.shape[1]} classes: "
                            f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from None
        expect_type(share, (int, float, np.floating), "The value your function returns")
        expect(0 <= share <= 1, f"Your function returns {share!r}: a share is a fraction between 0 and 1 "
                                f"(count / number of misclassified images).")
        top_two = predictions.top_k(2)[0]
        if np.isclose(share, (top_two[:, 1] == labels).mean()) and not np.isclose(share, truth):
            raise Incorrect("You divide by the number of all images: divide by the number of misclassified ones "
                            "(top-1 class != label).")
        if np.isclose(share, (top_two == labels[:, None]).any(axis=1).mean()) and not np.isclose(share, truth):
            raise Incorrect("Your share counts the correctly classified images too: look only at the misclassified "
                            "ones (top-1 class != label).")
        expect_close(float(share), truth, f"On {len(labels)} predictions ({int(wrong.sum())} wrong), your share",
                     rel=1e-6, hint="top_k(2) gives the classes best first: column 1 is the second choice.")


def _flip_one_bit(raw: bytes, marker: bytes) -> bytes:
    offset = raw.find(marker)
    assert offset > 0, "the weight bytes were not found in the checkpoint"
    flipped = bytearray(raw)
    flipped[offset + 2] ^= 0x10
    return bytes(flipped)


@exercise("09.3", "A function path -> True only when the checkpoint carries a CRC-32 checksum that matches it.")
def check_crc_verifier(answer):
    import mindspore as ms
    from mindspore import nn

    expect(callable(answer), f"Your answer should be a function checkpoint_is_verified(path) -> bool, but it is "
                             f"a {type(answer).__name__} ({answer!r}).")
    net = nn.Dense(4, 3)
    weight_bytes = net.weight.asnumpy().tobytes()[16:32]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        ms.save_checkpoint(net, str(folder / "with_crc.ckpt"), crc_check=True)
        ms.save_checkpoint(net, str(folder / "without_crc.ckpt"), crc_check=False)
        with_crc, without_crc = (folder / "with_crc.ckpt").read_bytes(), (folder / "without_crc.ckpt").read_bytes()
        cases = [  # (file name, content, expected verdict, hint when the verdict is wrong)
            ("intact.ckpt", with_crc, True,
             "Your function rejects an intact checkpoint saved with crc_check=True."),
            ("flipped.ckpt", _flip_one_bit(with_crc, weight_bytes), False,
             "Your function accepts a CRC-protected checkpoint with one flipped bit in a weight: recompute the "
             "CRC-32 of the content and compare it with the stored checksum, not only look for the 'crc_num' mark."),
            ("checksum_flipped.ckpt", with_crc[:-1] + bytes([with_crc[-1] ^ 0x01]), False,
             "Your function accepts a checkpoint whose stored checksum was changed: compare the stored checksum "
             "with the CRC-32 you compute."),
            ("no_crc.ckpt", without_crc, False,
             "Your function accepts a checkpoint saved WITHOUT a checksum (crc_check=False): nothing can be "
             "verified, and ms.load_checkpoint(..., crc_check=True) only logs a warning for such a file."),
            ("no_crc_flipped.ckpt", _flip_one_bit(without_crc, weight_bytes), False,
             "Your function accepts a checkpoint without a checksum whose bytes were changed."),
            ("truncated.ckpt", with_crc[: len(with_crc) // 2], False,
             "Your function accepts a checkpoint cut in half (an interrupted copy)."),
        ]
        for name, content, expected, hint in cases:
            path = folder / name
            path.write_bytes(content)
            try:
                verdict = answer(path)
            except Exception as error:  # noqa: BLE001 - show the learner what failed
                raise Incorrect(f"For the file {name} your function raises "
                                f"{type(error).__name__} instead of returning True or False. Catch the error (or "
                                f"read the bytes yourself) and return False.") from None
            expect(isinstance(verdict, (bool, np.bool_)),
                   f"Your function should return True or False, but returns a {type(verdict).__name__} "
                   f"({verdict!r}).")
            expect(bool(verdict) == expected, hint)
