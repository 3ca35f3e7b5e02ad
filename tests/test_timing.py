"""course_lib.perf.timing.time_step_in_subprocess: clear errors for bad inputs, and real quick runs in fresh
processes."""
import math
import re

import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.perf.timing import HOST_BLOCKING_VARIABLE, time_step_in_subprocess

QUICK = {"model": "lenet5", "batch_size": 8, "image_size": 32, "steps": 2, "warmup": 1}


# One vocabulary (issue 26): a wrong type is a TypeError, a bad value of the right type a ValueError.
@pytest.mark.parametrize("kwargs, error, names_value, names_fix", [
    ({"model": "vgg16"}, ValueError, r"'vgg16'", r"model='lenet5'"),
    ({"api": "eager"}, ValueError, r"'eager'", r"api='graph' or api='jit'"),
    ({"api": "pynative"}, ValueError, r"'pynative'", r"api='graph' or api='jit'"),
    ({"host_blocking": "1"}, TypeError, r"'1'", r"bool or None"),
    ({"host_blocking": 1}, TypeError, r"got 1\.", r"bool or None"),
    ({"batch_size": 0}, ValueError, r"got 0", r"e\.g\. 32"),
    ({"batch_size": 8.0}, TypeError, r"got 8\.0", r"e\.g\. 32"),
    ({"batch_size": True}, TypeError, r"got True", r"e\.g\. 32"),
    ({"image_size": 28}, ValueError, r"image_size=28", r"image_size=32"),
    ({"model": "resnet18", "image_size": 16}, ValueError, r"got 16", r"image_size=32 or larger"),
    ({"steps": 0}, ValueError, r"got 0", r"steps=10"),
    ({"warmup": -1}, ValueError, r"got -1", r"warmup=2"),
    ({"seed": -3}, ValueError, r"got -3", r"seed=1"),
    ({"timeout": 0}, ValueError, r"got 0", r"timeout=600"),
])
def test_bad_inputs_name_the_value_and_the_fix(kwargs, error, names_value, names_fix):
    with pytest.raises(error, match=names_value) as caught:
        time_step_in_subprocess(**kwargs)
    assert re.search(names_fix, str(caught.value)), str(caught.value)


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


# --- cpu_info on each OS (issue 25 part 4): Linux reads /proc/cpuinfo, macOS sysctl, Windows neither -------------
from course_lib.perf import timing  # noqa: E402


def test_cpu_info_on_linux_reads_proc_cpuinfo(monkeypatch, tmp_path):
    fake = tmp_path / "cpuinfo"
    fake.write_text("model name\t: Test CPU\nflags\t\t: fpu avx2 avx512f\nmodel name\t: second\n")
    monkeypatch.setattr(timing.sys, "platform", "linux")
    monkeypatch.setattr(timing, "Path", lambda path: fake if path == "/proc/cpuinfo" else timing.Path(path))
    info = timing.cpu_info()
    assert (info["model"], info["avx2"], info["avx512f"], info["amx_tile"]) == ("Test CPU", True, True, False)
    assert info["source"] == "/proc/cpuinfo" and timing.cpu_kind(info) == "Test CPU, AVX-512"


def test_cpu_info_on_an_intel_mac_reads_sysctl(monkeypatch):
    answers = {"machdep.cpu.brand_string": "Intel(R) Core(TM) i7", "machdep.cpu.features": "FPU SSE AVX1.0",
               "machdep.cpu.leaf7_features": "AVX2 BMI2"}
    monkeypatch.setattr(timing.sys, "platform", "darwin")
    monkeypatch.setattr(timing, "_sysctl", lambda name: answers.get(name, ""))
    monkeypatch.delattr(timing.os, "sched_getaffinity", raising=False)
    info = timing.cpu_info()
    assert info["model"] == "Intel(R) Core(TM) i7" and info["avx2"] and not info["avx512f"]
    assert info["source"] == "sysctl" and info["cores"] >= 1 and timing.cpu_kind(info) == "Intel(R) Core(TM) i7, AVX2"


def test_cpu_info_on_apple_silicon_has_no_x86_flags(monkeypatch):
    monkeypatch.setattr(timing.sys, "platform", "darwin")
    monkeypatch.setattr(timing, "_sysctl", lambda name: "Apple M2" if name == "machdep.cpu.brand_string" else "")
    info = timing.cpu_info()
    assert info["model"] == "Apple M2" and not any(info[flag] for flag in timing.CPU_FLAGS_OF_INTEREST)


def test_cpu_info_on_windows_says_the_flags_are_unknown(monkeypatch):
    monkeypatch.setattr(timing.sys, "platform", "win32")
    monkeypatch.setattr(timing.platform, "processor", lambda: "Intel64 Family 6 Model 85")
    monkeypatch.setattr(timing, "Path", lambda path: pytest.fail(f"read {path} on Windows"))
    info = timing.cpu_info()
    assert info["model"] == "Intel64 Family 6 Model 85" and info["source"].startswith("platform.processor")
    assert timing.cpu_kind(info) == "Intel64 Family 6 Model 85, SIMD flags unknown"


def test_a_failing_sysctl_leaves_the_info_unknown_instead_of_raising(monkeypatch):
    monkeypatch.setattr(timing.sys, "platform", "darwin")

    def broken(*args, **kwargs):
        raise FileNotFoundError("sysctl")

    monkeypatch.setattr(timing.subprocess, "run", broken)
    info = timing.cpu_info()
    assert info["model"] == "unknown" and not info["avx2"]
