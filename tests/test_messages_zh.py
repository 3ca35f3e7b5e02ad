"""A Chinese learner gets Chinese errors from course_lib's library modules (validation, data, models, train,
inference, paths, locks, staging); an English learner gets them unchanged (issue 26, item 5)."""
import re

import numpy as np
import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.i18n import _, set_language

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def zh():
    set_language("zh")
    try:
        yield
    finally:
        set_language(None)


@pytest.fixture
def en():
    set_language("en")
    try:
        yield
    finally:
        set_language(None)


def _error(call, error):
    with pytest.raises(error) as info:
        call()
    return str(info.value)


def _calls(tmp_path):
    """(call, exception type, the value that must appear in the message) for mistakes in every module."""
    from mindspore import nn

    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.data.stats import expected_steps
    from course_lib.inference import predict
    from course_lib.models.lenet import lenet5
    from course_lib.models.segmentation import segmentation_fcn
    from course_lib.paths import lesson_dir
    from course_lib.train.callbacks import ProgressBar
    from course_lib.train.checkpoint import load_checkpoint, save_checkpoint
    from course_lib.train.losses import CrossEntropySmooth
    from course_lib.train.metrics import MIoU
    from course_lib.train.schedules import cosine_lr

    return [
        (lambda: create_mnist_dataset(batch_size=-7), ValueError, "-7"),
        (lambda: create_mnist_dataset(batch_size=2.5), TypeError, "2.5"),
        (lambda: create_mnist_dataset(num_shards=2), ValueError, "num_shards=2"),
        (lambda: expected_steps(10, 2, "yes"), TypeError, "'yes'"),
        (lambda: lenet5(init="xavier"), ValueError, "'xavier'"),
        (lambda: segmentation_fcn(num_classes=1), ValueError, "num_classes=4"),
        (lambda: ProgressBar(per_epoch="yes"), TypeError, "'yes'"),
        (lambda: CrossEntropySmooth(smooth_factor=1.5), ValueError, "1.5"),
        (lambda: MIoU(4).eval(), RuntimeError, "MIoU.eval()"),
        (lambda: cosine_lr(0.1, 0.2, 10, 5), ValueError, "lr_min=0.2"),
        (lambda: save_checkpoint(nn.Dense(2, 2), tmp_path / "net.pth"), ValueError, "'net.pth'"),
        (lambda: load_checkpoint(tmp_path / "missing.ckpt"), FileNotFoundError, "missing.ckpt"),
        (lambda: predict(lenet5(), np.zeros((32, 32), np.float32)), ValueError, "(32, 32)"),
        (lambda: lesson_dir("../x"), ValueError, "'../x'"),
    ]


def test_a_chinese_learner_reads_chinese_errors_with_the_values_filled_in(zh, tmp_path):
    for call, error, value in _calls(tmp_path):
        message = _error(call, error)
        assert CJK.search(message), f"not translated: {message}"
        assert value in message, f"{value!r} missing from: {message}"
        assert "Fix:" not in message, f"an English 'Fix:' left in: {message}"


def test_the_same_mistakes_read_english_for_an_english_learner(en, tmp_path):
    for call, error, value in _calls(tmp_path):
        message = _error(call, error)
        assert not CJK.search(message), message
        assert value in message and "Fix:" in message, message


def test_a_bool_where_an_int_is_expected_gives_the_same_chinese_sentence_in_two_modules(zh):
    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.train.metrics import MIoU

    data = _error(lambda: create_mnist_dataset(batch_size=True), TypeError)
    metric = _error(lambda: MIoU(num_classes=True), TypeError)
    template = _("{name} must be an integer ({rule}), got {value!r} ({type}). Fix: {fix}.")
    assert CJK.search(template)
    # Same template, different argument name and fix: the text between the name and the fix is identical.
    assert data.split("batch_size", 1)[1].split("修正")[0] == metric.split("num_classes", 1)[1].split("修正")[0]


def test_validation_templates_have_chinese_text_with_the_same_placeholders(zh):
    from course_lib import validation
    from course_lib.i18n import _catalog

    catalog = _catalog()
    source = open(validation.__file__, encoding="utf-8").read()
    marked = re.findall(r'_\("((?:[^"\\]|\\.)*)"\)', source)
    assert len(marked) >= 15
    for english in marked:
        if english not in catalog:  # a template split over several literals is checked by tools/messages_catalog.py
            continue
        chinese = catalog[english]
        assert sorted(re.findall(r"\{[^}]*\}", chinese)) == sorted(re.findall(r"\{[^}]*\}", english)), english


def test_the_language_is_read_when_the_error_is_raised_not_at_import():
    from course_lib.train.losses import CrossEntropySmooth

    set_language("zh")
    try:
        chinese = _error(lambda: CrossEntropySmooth(reduction="avg"), ValueError)
    finally:
        set_language(None)
    set_language("en")
    try:
        english = _error(lambda: CrossEntropySmooth(reduction="avg"), ValueError)
    finally:
        set_language(None)
    assert CJK.search(chinese) and not CJK.search(english)
    assert "'avg'" in chinese and "'avg'" in english
