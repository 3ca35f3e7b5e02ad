"""`make install` refuses an interpreter that cannot run MindSpore 2.10 within seconds, before any download."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def fake_python(tmp_path, output, name="python3.12"):
    """A stand-in interpreter: whatever it is asked, it prints ``output`` (version, implementation, machine)."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\necho '{output}'\n")
    path.chmod(0o755)
    return path


def make_install(tmp_path, python):
    venv = tmp_path / "venv"
    start = time.monotonic()
    result = subprocess.run(["make", "-s", "install", f"PYTHON={python}", f"VENV={venv}"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    return result, time.monotonic() - start, venv


@pytest.mark.parametrize("output, found", [
    ("3.12.3 CPython x86_64", "Python 3.12.3"),
    ("3.13.0 CPython x86_64", "Python 3.13.0"),
    ("3.10.14 CPython x86_64", "Python 3.10.14"),
    ("3.11.9 PyPy x86_64", "PyPy 3.11.9"),
])
def test_a_wrong_interpreter_is_refused_before_the_venv_is_made(tmp_path, output, found):
    result, seconds, venv = make_install(tmp_path, fake_python(tmp_path, output))
    assert result.returncode != 0
    assert found in result.stderr and "3.11" in result.stderr
    for way in ("pyenv", "uv", "deadsnakes", "conda env create -f environment.yml"):
        assert way in result.stderr
    assert not venv.exists()          # nothing created, nothing downloaded
    assert seconds < 30               # generous: a refusal, not an install


def test_an_interpreter_that_does_not_run_is_named(tmp_path):
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\nexit 127\n")
    broken.chmod(0o755)
    result, _, venv = make_install(tmp_path, broken)
    assert result.returncode != 0 and f"PYTHON={broken} does not run" in result.stderr and not venv.exists()


def test_no_interpreter_at_all_is_explained():
    result = subprocess.run(["sh", str(ROOT / "tools" / "check_python.sh"), ""], capture_output=True, text=True)
    assert result.returncode == 1 and "No Python interpreter found" in result.stderr


def test_the_course_interpreter_passes():
    result = subprocess.run(["sh", str(ROOT / "tools" / "check_python.sh"), sys.executable],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_make_prefers_python311_when_both_are_on_path(tmp_path):
    fake_python(tmp_path, "3.12.3 CPython x86_64", name="python3")
    fake_python(tmp_path, "3.11.9 CPython x86_64", name="python3.11")
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    env.pop("PYTHON", None)
    result = subprocess.run(["make", "-s", "--eval", "print-python: ; @echo $(PYTHON)", "print-python"],
                            cwd=ROOT, capture_output=True, text=True, env=env)
    assert result.stdout.strip() == str(tmp_path / "python3.11")
