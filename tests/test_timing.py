"""course_lib.timing.time_step_in_subprocess: clear errors for bad inputs, and real quick runs in fresh processes."""
import course_lib  # noqa: F401  (sets env before mindspore)
import math
import re

import pytest

from course_lib.timing import HOST_BLOCKING_VARIABLE, time_step_in_subprocess

QUICK = {"model": "lenet5", "batch_size": 8, "image_size": 32, "steps": 2, "warmup": 1}


@pytest.mark.parametrize("kwargs, names_value, names_fix", [
    ({"model": "vgg16"}, r"'vgg16'", r"model='lenet5'"),
    ({"api": "eager"}, r"'eager'", r"api='graph' or api='jit'"),
    ({"api": "pynative"}, r"'pynative'", r"api='graph' or api='jit'"),
    ({"host_blocking": "1"}, r"'1'", r"bool or None"),
    ({"host_blocking": 1}, r"got 1\.", r"bool or None"),
    ({"batch_size": 0}, r"got 0", r"e\.g\. 32"),
    ({"batch_size": 8.0}, r"got 8\.0", r"e\.g\. 32"),
    ({"batch_size": True}, r"got True", r"e\.g\. 32"),
    ({"image_size": 28}, r"image_size=28", r"image_size=32"),
    ({"model": "resnet18", "image_size": 16}, r"got 16", r"image_size=32 or larger"),
    ({"steps": 0}, r"got 0", r"steps=10"),
    ({"warmup": -1}, r"got -1", r"warmup=2"),
    ({"seed": -3}, r"got -3", r"seed=1"),
    ({"timeout": 0}, r"got 0", r"timeout=600"),
])
def test_bad_inputs_name_the_value_and_the_fix(kwargs, names_value, names_fix):
    with pytest.raises(ValueError, match=names_value) as error:
        time_step_in_subprocess(**kwargs)
    assert re.search(names_fix, str(error.value)), str(error.value)


def _check_numbers(result):
    for key in ("median", "min", "max", "first_step", "images_per_second"):
        assert math.isfinite(result[key]) and result[key] > 0, (key, result[key])
    assert result["n"] == QUICK["steps"]
    assert result["images_per_second"] == pytest.approx(QUICK["batch_size"] / result["median"])


def test_graph_step_without_the_variable(monkeypatch):
    monkeypatch.setenv(HOST_BLOCKING_VARIABLE, "1")  # removed in the child, even though course_lib sets it again
    result = time_step_in_subprocess(api="graph", host_blocking=False, **QUICK)
    _check_numbers(result)
    assert result["api"] == "graph" and result["host_blocking_seen"] is None


def test_jit_step_with_the_variable(monkeypatch):
    monkeypatch.setenv(HOST_BLOCKING_VARIABLE, "0")
    result = time_step_in_subprocess(api="jit", host_blocking=True, **QUICK)
    _check_numbers(result)
    assert result["api"] == "jit" and result["host_blocking_seen"] == "1"


def test_none_keeps_the_users_value(monkeypatch):
    monkeypatch.setenv(HOST_BLOCKING_VARIABLE, "0")
    assert time_step_in_subprocess(api="jit", host_blocking=None, **QUICK)["host_blocking_seen"] == "0"
