"""`python course.py install` refuses an interpreter that cannot run MindSpore 2.10 within seconds, before any
download, and accepts every one that can (CPython 3.10, 3.11.0 and up, 3.12). Ported from tools/check_python.sh."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import course_cli  # noqa: E402


def info(version="3.11.9", implementation="CPython", system="Linux", machine="x86_64", bits=64, venv=True,
         executable="/usr/bin/python3"):
    return {"version": [int(n) for n in version.split(".")], "implementation": implementation, "system": system,
            "machine": machine, "bits": bits, "venv": venv, "executable": executable}


def fake_python(tmp_path, probe, name="python3.12"):
    """A stand-in interpreter: whatever it is asked, it prints the probe result ``probe``."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\necho '{json.dumps(probe)}'\n")
    path.chmod(0o755)
    return path


def course_install(tmp_path, python):
    venv = tmp_path / "venv"
    result = subprocess.run([sys.executable, str(ROOT / "course.py"), "--python", str(python), "--venv", str(venv),
                             "install"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return result, venv


@pytest.mark.parametrize("probe, found", [
    (info("3.13.0"), "CPython 3.13.0"),
    (info("3.9.18"), "CPython 3.9.18"),
    (info("3.11.9", implementation="PyPy"), "PyPy 3.11.9"),
    (info("3.12.3", system="Linux", machine="riscv64"), "Linux riscv64"),
])
def test_a_wrong_interpreter_is_refused_before_the_venv_is_made(tmp_path, probe, found):
    result, venv = course_install(tmp_path, fake_python(tmp_path, probe))
    assert result.returncode == 1
    assert found in result.stderr and "cannot run the course" in result.stderr
    assert "MindSpore 2.10" in result.stderr
    assert "Fix:" in result.stderr and "Nothing was downloaded" in result.stderr
    for way in ("pyenv", "uv python install", "deadsnakes", "conda env create -f environment.yml"):
        assert way in result.stderr
    assert "Traceback" not in result.stderr
    assert not venv.exists()          # nothing created, nothing downloaded


def test_an_interpreter_that_does_not_run_is_named(tmp_path):
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\nexit 127\n")
    broken.chmod(0o755)
    result, venv = course_install(tmp_path, broken)
    assert result.returncode == 1 and f"--python {broken} does not run" in result.stderr and not venv.exists()


def test_no_venv_module_is_explained():
    why = course_cli.problems_of(info("3.11.2", venv=False))
    assert why == ["it cannot create a virtual environment: its venv/ensurepip modules are missing "
                   "(Debian/Ubuntu: 'sudo apt install python3.11-venv')"]


@pytest.mark.parametrize("version", ["3.10.0", "3.10.14", "3.11.0", "3.11.2", "3.11.7", "3.12.0", "3.12.12"])
@pytest.mark.parametrize("system, machine", [("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "arm64"),
                                             ("Darwin", "x86_64"), ("Windows", "AMD64")])
def test_every_supported_python_and_platform_passes(version, system, machine):
    assert course_cli.problems_of(info(version, system=system, machine=machine)) == []


@pytest.mark.parametrize("system, machine, bits", [("Windows", "ARM64", 64), ("Windows", "AMD64", 32),
                                                   ("Windows", "x86", 32), ("Linux", "armv7l", 32),
                                                   ("FreeBSD", "amd64", 64)])
def test_platforms_without_mindspore_wheels_are_refused(system, machine, bits):
    why = course_cli.problems_of(info("3.12.3", system=system, machine=machine, bits=bits))
    assert len(why) == 1 and f"no wheels for {system} {machine} ({bits}-bit)" in why[0]


def test_the_course_interpreter_passes():
    assert course_cli.problems_of(course_cli.probe_running()) == []
    assert course_cli.probe([sys.executable]) == course_cli.probe_running()
