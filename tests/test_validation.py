"""course_lib.validation: one exception type and one wording per kind of mistake, in every module (issue 26, item 3)."""
import re
from pathlib import Path

import numpy as np
import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib import validation
from course_lib.validation import (
    check_bool,
    check_choice,
    check_int,
    check_ndim,
    check_path,
    check_real,
    check_str,
    check_together,
    check_type,
    describe_range,
    shown,
    wrong_type,
)


def test_wrong_type_names_the_argument_the_expected_type_the_value_and_the_fix():
    with pytest.raises(TypeError) as info:
        check_type("net", "lenet", (int, float), "a mindspore.nn.Cell", "pass the network itself.")
    assert str(info.value) == ("net must be a mindspore.nn.Cell, got 'lenet' (str). Fix: pass the network itself.")
    assert check_type("n", 3, int, "an int", "x") == 3
    assert str(wrong_type("x", None, "a thing", "pass one")) == "x must be a thing, got None (NoneType). Fix: pass one."


def test_a_long_repr_is_cut_to_its_first_line():
    class Page:
        def __repr__(self):
            return "Net<\n  (conv1): Conv2d\n>"

    assert shown(Page()) == "Net<..."
    assert shown("x" * 100).endswith("...") and len(shown("x" * 100)) == 83
    assert shown([1, 2]) == "[1, 2]"


@pytest.mark.parametrize("value", [1, 0, "yes", None, 1.0])
def test_check_bool_accepts_only_true_and_false(value):
    expected = f"flag must be True or False, got {value!r} ({type(value).__name__}). Fix: pass True or False."
    with pytest.raises(TypeError, match=re.escape(expected)):
        check_bool("flag", value)


def test_check_bool_returns_a_python_bool():
    assert check_bool("flag", np.bool_(True)) is True and check_bool("flag", False) is False


def test_check_int_kinds():
    assert check_int("n", np.int64(3), 1, 5) == 3 and type(check_int("n", np.int64(3), 1)) is int
    with pytest.raises(TypeError, match=re.escape("n must be an integer (>= 1 and <= 5), got 2.0 (float). Fix: ")):
        check_int("n", 2.0, 1, 5)
    with pytest.raises(ValueError, match=re.escape("n must be an integer >= 1 and <= 5, got 6. Fix: set n to a value "
                                                   ">= 1 and <= 5.")):
        check_int("n", 6, 1, 5)
    with pytest.raises(ValueError, match=r"Fix: use 4\.$"):
        check_int("n", 0, 1, fix="use 4.")  # one final period, whether or not the fix has one


def test_check_real_kinds():
    assert check_real("lr", 1, 0, low_open=True) == 1.0
    with pytest.raises(TypeError, match=re.escape("lr must be a number (> 0), got '0.1' (str).")):
        check_real("lr", "0.1", 0, low_open=True)
    for bad in (float("nan"), float("inf"), 0.0):
        with pytest.raises(ValueError, match="lr must be a finite number > 0, got"):
            check_real("lr", bad, 0, low_open=True)


def test_check_choice_is_a_value_error_whatever_the_type():
    assert check_choice("mode", "max", ("max", "min")) == "max"
    for bad in ("maximum", 1, None, np.zeros(2)):
        with pytest.raises(ValueError, match=re.escape("mode must be one of ('max', 'min'), got ")):
            check_choice("mode", bad, ("max", "min"))
    with pytest.raises(ValueError, match="got True"):  # True == 1, but True is not the choice 1
        check_choice("n", True, (1, 2))
    with pytest.raises(ValueError, match=r"Fix: pass e\.g\. 'max'\.$"):
        check_choice("mode", "x", ("max", "min"))


def test_check_str_and_check_path():
    assert check_str("s", "a", "x") == "a" and check_str("s", None, "x", none_ok=True) is None
    with pytest.raises(TypeError, match=re.escape("s must be a str, got 3 (int). Fix: pass a name.")):
        check_str("s", 3, "pass a name")
    with pytest.raises(ValueError, match=re.escape("s must not be empty, got ' '. Fix: pass a name.")):
        check_str("s", " ", "pass a name")
    assert check_path("p", "a/b", "x") == Path("a/b") and check_path("p", None, "x", none_ok=True) is None
    with pytest.raises(TypeError, match=re.escape("p must be a path (str or Path), got 3 (int).")):
        check_path("p", 3, "pass a folder")
    with pytest.raises(TypeError, match=re.escape("p must be a path (str or Path) or None, got b'x' (bytes).")):
        check_path("p", b"x", "pass a folder", none_ok=True)
    with pytest.raises(ValueError, match=re.escape("p must not be empty, got ''.")):
        check_path("p", "", "pass a folder")


def test_check_ndim_and_check_together():
    assert check_ndim("x", (2, 3), {2: "(N, C)"}, "x") == (2, 3)
    with pytest.raises(ValueError, match=re.escape("x must be shaped (C, H, W) or (N, C, H, W), got shape (3,). "
                                                   "Fix: add axes.")):
        check_ndim("x", np.zeros(3).shape, {3: "(C, H, W)", 4: "(N, C, H, W)"}, "add axes")
    check_together("a", None, "b", None, "x")
    check_together("a", 1, "b", 2, "x")
    with pytest.raises(ValueError, match=re.escape("a and b go together: pass both or neither, got a=1, b=None. "
                                                   "Fix: pass both.")):
        check_together("a", 1, "b", None, "pass both")


def test_describe_range():
    assert describe_range(1, 8) == ">= 1 and <= 8"
    assert describe_range(0, low_open=True) == "> 0"
    assert describe_range(high=1, high_open=True) == "< 1"
    assert describe_range() == "(any value)"


def test_the_vocabulary_is_written_in_the_module_docstring():
    doc = validation.__doc__
    for kind, error in [("wrong type", "TypeError"), ("integer out of range", "ValueError"),
                        ("not one of the choices", "ValueError"), ("wrong array shape", "ValueError")]:
        line = next(line for line in doc.splitlines() if line.startswith(kind))
        assert error in line


# ------------------------------------------------------------------ the same mistake in two modules
def _message(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def test_a_bool_where_an_int_is_expected_reads_the_same_in_every_module():
    """Before: a ValueError in data/ and models/ (each with its own wording), a TypeError in train/."""
    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.models.resnet import resnet18
    from course_lib.train.metrics import MIoU

    errors = [_message(lambda: create_mnist_dataset(batch_size=True)),
              _message(lambda: resnet18(num_classes=True)),
              _message(lambda: MIoU(num_classes=True))]
    for error, text in errors:
        assert error is TypeError
        assert re.match(r"\w+ must be an integer \(>= 1\), got True \(bool\)\. Fix: ", text), text
    rules = {text.split(" must ")[1].split(". Fix")[0] for _, text in errors}
    assert rules == {"be an integer (>= 1), got True (bool)"}


def test_a_non_bool_flag_is_a_type_error_in_trainer_callbacks_and_losses():
    """Before: the same bad flag was a TypeError in train/trainer.py and a ValueError in train/callbacks.py."""
    from course_lib.train.callbacks import ProgressBar
    from course_lib.train.losses import CrossEntropySmooth

    pieces = [_message(lambda: ProgressBar(per_epoch="yes")), _message(lambda: CrossEntropySmooth(sparse="yes"))]
    for error, text in pieces:
        assert error is TypeError
        assert re.match(r"\w+ must be True or False, got 'yes' \(str\)\. Fix: ", text), text


def test_the_wrong_network_type_reads_the_same_in_trainer_optim_and_checkpoint(tmp_path):
    from course_lib.train.checkpoint import save_checkpoint
    from course_lib.train.optim import param_groups

    for call in (lambda: param_groups("lenet", 1e-4), lambda: save_checkpoint("lenet", tmp_path / "x.ckpt")):
        error, text = _message(call)
        assert error is TypeError and "must be a" in text and "got 'lenet' (str). Fix: " in text, text


# ------------------------------------------------------------------ every library message goes through _()
LIBRARY = ["validation.py", "paths.py", "locks.py", "staging.py", "i18n.py", "inference.py", "models", "data", "train"]
#: Raised inside a compiled ``construct`` (graph mode cannot call ``_``): English only.
GRAPH_CODE = {("models/segmentation.py", "construct")}


def _library_files():
    root = Path(validation.__file__).parent
    for entry in LIBRARY:
        path = root / entry
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _is_text(node):
    import ast

    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)) or (
        isinstance(node, ast.BinOp) and (_is_text(node.left) or _is_text(node.right)))


def test_every_raised_message_of_the_library_is_marked_for_translation():
    import ast

    root = Path(validation.__file__).parent
    unmarked = []
    for path in _library_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            if (path.relative_to(root).as_posix(), function.name) in GRAPH_CODE:
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args \
                        and _is_text(node.exc.args[0]) and ast.unparse(node.exc.func).split(".")[-1][:1].isupper():
                    unmarked.append(f"{path.relative_to(root)}:{node.lineno}")
    assert unmarked == [], f"raise with an unmarked message (wrap the literal in _()): {unmarked}"
