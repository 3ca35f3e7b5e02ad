"""Solutions of lesson 09's exercises (the notebook's cells tagged `solution` do the same on the trained LeNet)."""
import binascii
from pathlib import Path

import numpy as np


def solve_09_1():
    import tempfile

    import mindspore as ms
    from mindspore import nn

    from course_lib.models import lenet5

    net = lenet5(num_classes=10)
    net.set_train(False)
    images = np.random.default_rng(0).standard_normal((16, 1, 32, 32)).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        name = str(Path(folder) / "fixed")
        ms.export(net, ms.Tensor(images[:1]), file_name=name, file_format="MINDIR")  # a batch of one
        graph = nn.GraphCell(ms.load(name + ".mindir"))
        graph_logits = graph(ms.Tensor(images)).asnumpy()
    eager_logits = net(ms.Tensor(images)).asnumpy()
    return tuple(graph_logits.shape), float(np.abs(graph_logits - eager_logits).max())


def second_choice_share(predictions, labels):
    """Among the misclassified images, the share whose true label is the network's second choice."""
    classes, _ = predictions.top_k(2)
    wrong = classes[:, 0] != labels
    return float((classes[wrong, 1] == labels[wrong]).mean())


def solve_09_2():
    return second_choice_share


def checkpoint_is_verified(path):
    """True only when the file ends with MindSpore's CRC mark and the stored CRC-32 matches its content."""
    raw = Path(path).read_bytes()
    if raw[-17:-10] != b"crc_num":  # saved without crc_check=True, or cut off: nothing to verify against
        return False
    return binascii.crc32(raw[:-17]) == int.from_bytes(raw[-10:], byteorder="big")


def solve_09_3():
    return checkpoint_is_verified


def _only_looks_for_the_mark(path):
    return Path(path).read_bytes()[-17:-10] == b"crc_num"


def _trusts_mindspore_crc_check(path):
    import mindspore as ms

    try:
        ms.load_checkpoint(str(path), crc_check=True)
    except ValueError:
        return False
    return True


def _strict_loader(path):
    from course_lib.train.checkpoint import load_checkpoint

    load_checkpoint(path)
    return True


def _over_all_images(predictions, labels):
    classes, _ = predictions.top_k(2)
    return float((classes[:, 1] == labels).mean())


def _label_in_top_two(predictions, labels):
    classes, _ = predictions.top_k(2)
    return float((classes == labels[:, None]).any(axis=1).mean())


def _count_not_share(predictions, labels):
    classes, _ = predictions.top_k(2)
    wrong = classes[:, 0] != labels
    return int((classes[wrong, 1] == labels[wrong]).sum())


def _third_choice(predictions, labels):
    classes, _ = predictions.top_k(3)
    wrong = classes[:, 0] != labels
    return float((classes[wrong, 2] == labels[wrong]).mean())


WRONG = {
    "09.1": [((1, 10), 0.0), ((16, 10), 0.25), "it fails", ((16, 10), -1e-3)],
    "09.2": [0.3, _over_all_images, _label_in_top_two, _count_not_share, _third_choice],
    "09.3": [True, _only_looks_for_the_mark, _trusts_mindspore_crc_check, _strict_loader, lambda path: "ok"],
}
