"""course.py, the front door on Linux, macOS and Windows: the other OSes' code paths are run here by simulating the
platform (venv layout, interpreter lookup with `py -3.x`, refusals), plus the install stamp, the active
environment, odd file names (run for real, nothing through a shell) and the lab's authentication (a real server)."""
import ast
import importlib.machinery
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import course_cli  # noqa: E402


def info(version="3.11.9", system="Linux", machine="x86_64", executable="/usr/bin/python3", **more):
    return {"version": [int(n) for n in version.split(".")], "implementation": "CPython", "system": system,
            "machine": machine, "bits": 64, "venv": True, "executable": executable, **more}


# ------------------------------------------------------------------------------------ the file itself
@pytest.mark.parametrize("name", ["course.py", "tools/course_cli.py", "tools/preflight.py"])
def test_the_front_door_parses_on_old_pythons(name):
    """An old `python` must get as far as finding a supported one or saying why: no 3.8+ syntax in these files."""
    ast.parse((ROOT / name).read_text(encoding="utf-8"), feature_version=(3, 6))


def test_help_lists_every_command_with_one_line():
    out = subprocess.run([sys.executable, str(ROOT / "course.py"), "--help"], capture_output=True, text=True,
                         check=True).stdout
    for name, (text, _, _) in course_cli.COMMANDS.items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(text)}$", out, re.M), name


def test_every_make_target_is_a_course_py_command_and_the_makefile_only_forwards():
    makefile = (ROOT / "Makefile").read_text()
    names = re.search(r"^COMMANDS := (.*?)\n(?=\S)", makefile, re.S | re.M).group(1).replace("\\", " ").split()
    assert sorted(names) == sorted(course_cli.COMMANDS)
    assert "SHELL" not in makefile and "/bin/bash" not in makefile
    for name in ("lab", "test", "notebooks"):
        dry = subprocess.run(["make", "-s", "-n", name], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        assert dry.strip().endswith(f"course.py {name}"), dry


def test_arguments_after_the_command_reach_the_tool(monkeypatch):
    commands = []
    monkeypatch.setattr(course_cli, "run", lambda command, env=None, cwd=None, check=True: commands.append(command))
    env = course_cli.Environment("py")
    course_cli.cmd_unit(type("Options", (), {"args": ["-x", "tests/test_metrics.py"]}), env)
    course_cli.cmd_unit(type("Options", (), {"args": []}), env)
    unit = ["py", "-m", "pytest", "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]
    assert commands == [unit + ["-x", "tests/test_metrics.py"], unit + ["tests"]]


def test_check_is_the_quick_loop_and_test_runs_every_unit_test(monkeypatch):
    commands = []
    monkeypatch.setattr(course_cli, "run", lambda command, env=None, cwd=None, check=True: commands.append(command))
    monkeypatch.setattr(course_cli, "cmd_browser_deps", lambda options, env: 0)
    monkeypatch.setattr(course_cli, "nbval_twice", lambda env, names: commands.append(["nbval", *names]))
    monkeypatch.setitem(sys.modules, "changed_notebooks",
                        type(sys)("changed_notebooks"))  # a stand-in: one notebook changed against CHECK_BASE
    sys.modules["changed_notebooks"].changed_notebooks = lambda base: [f"notebooks/03_changed_vs_{base}.ipynb"]
    monkeypatch.setenv("CHECK_BASE", "topic")
    options, env = type("Options", (), {"args": []}), course_cli.Environment("py")
    course_cli.cmd_check(options, env)
    assert commands[0] == ["py", "-m", "ruff", "check"] and commands[1] == ["py", "-m", "codespell_lib"]
    assert commands[2][-4:] == ["--no-loadscope-reorder", "-m", "not slow", "tests"]
    assert commands[3][:3] == ["py", "-m", "pytest"] and commands[3][-1] == "notebooks/03_changed_vs_topic.ipynb"
    assert len(commands) == 4
    commands.clear()
    course_cli.cmd_test(options, env)
    unit = [c for c in commands if c[:3] == ["py", "-m", "pytest"]]
    assert len(unit) == 1 and "not slow" not in unit[0] and unit[0][-1] == "tests"
    assert commands[-1][0] == "nbval"


def test_the_slow_marker_is_registered_and_strict():
    import tomllib

    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(marker.startswith("slow:") for marker in pytest_options["markers"])
    assert "--strict-markers" in pytest_options["addopts"]  # a misspelt @pytest.mark.slwo fails, not skips nothing


def test_the_hosted_ci_runs_the_pre_flight_check_through_the_front_door():
    import yaml
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "course.yml").read_text())
    runs = [step["run"] for step in workflow["jobs"]["course"]["steps"] if "run" in step]
    assert "python course.py preflight" in runs and "python course.py unit" in runs


def test_ci_runs_the_readme_test_command():
    assert "python3 course.py test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    readme_zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "python course.py test" in readme and "python course.py lab" in readme
    assert "python course.py test" in readme_zh and "python course.py lab-zh" in readme_zh
    for text in (readme, readme_zh):
        assert "Windows" in text and "macOS" in text and "3.10" in text and "3.12" in text
        assert "只能用 Python 3.11" not in text and "Python 3.11 only" not in text


@pytest.mark.parametrize("doc", ["README.md", "README.zh-CN.md", "docs/WORKSHOP.md", "docs/WORKSHOP.zh-CN.md"])
def test_the_docs_point_to_the_preflight_check(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert "python course.py preflight" in text and "python tools/preflight.py" in text


# ------------------------------------------------------------------------------ venv layout per OS
@pytest.mark.parametrize("system, expected", [("Windows", ("Scripts", "python.exe")), ("Darwin", ("bin", "python")),
                                              ("Linux", ("bin", "python"))])
def test_venv_layout_per_os(system, expected):
    assert course_cli.venv_python(os.path.join("C", "course", ".venv"), system=system) == \
        os.path.join("C", "course", ".venv", *expected)


class Recorder:
    """Stands in for subprocess runs: records every command (an argument list) and pretends it worked."""

    def __init__(self, venv, system):
        self.commands, self.venv, self.system = [], venv, system

    def run(self, command, env=None, cwd=None, check=True):
        assert isinstance(command, list)
        self.commands.append(command)
        if command[1:3] == ["-m", "venv"]:  # make the interpreter the venv would have
            python = Path(course_cli.venv_python(self.venv, self.system))
            python.parent.mkdir(parents=True, exist_ok=True)
            python.write_text("")
        return 0

    def pip(self, python, args, pip_opts):
        self.commands.append([python, "-m", "pip", "install"] + pip_opts + args)


@pytest.fixture
def simulated(tmp_path, monkeypatch):
    """prepare() on another OS: platform.system() says so; subprocesses are recorded; no active environment."""
    def make(system):
        venv = str(tmp_path / "我的 course" / ".venv")
        recorder = Recorder(venv, system)
        monkeypatch.setattr(course_cli.platform, "system", lambda: system)
        monkeypatch.setattr(course_cli, "run", recorder.run)
        monkeypatch.setattr(course_cli, "pip_install", recorder.pip)
        monkeypatch.setattr(course_cli, "probe", lambda command: None)
        monkeypatch.setattr(course_cli, "in_active_environment", lambda: False)
        monkeypatch.setattr(course_cli, "ROOT", str(tmp_path))
        for name in ("requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt", "constraints.txt",
                     "pyproject.toml"):
            (tmp_path / name).write_text(f"# {name}\n")
        options = type("Options", (), {"venv": venv, "interpreter": info(executable=r"C:\Python312\python.exe")})
        return recorder, options
    return make


@pytest.mark.parametrize("system, bindir, exe", [("Windows", "Scripts", "python.exe"), ("Darwin", "bin", "python")])
def test_install_uses_the_os_venv_layout(simulated, system, bindir, exe):
    recorder, options = simulated(system)
    env = course_cli.prepare(options, full=False)
    python = os.path.join(options.venv, bindir, exe)
    assert env.python == python
    assert recorder.commands[0] == [r"C:\Python312\python.exe", "-m", "venv", options.venv]
    assert recorder.commands[1] == [python, "-m", "pip", "install", "-r", "requirements.txt", "-c", "constraints.txt"]
    assert recorder.commands[2] == [python, "-m", "pip", "install", "--no-deps", "-e", "."]
    recorder.commands.clear()
    assert course_cli.prepare(options, full=False).python == python and recorder.commands == []  # stamp: done


def test_full_install_adds_torch_and_the_private_onednn_and_a_default_install_leaves_them_out(simulated):
    recorder, options = simulated("Linux")
    course_cli.prepare(options, full=False)
    assert "requirements-torch.txt" not in recorder.commands[1]
    assert "requirements-fast-conv.txt" not in recorder.commands[1]
    recorder.commands.clear()
    course_cli.prepare(options, full=True)  # the default stamp does not cover the full install
    pip = [c for c in recorder.commands if c[1:4] == ["-m", "pip", "install"]]
    assert pip[0][4:] == ["-r", "requirements.txt", "-r", "requirements-torch.txt", "-r", "requirements-fast-conv.txt",
                          "-c", "constraints.txt"]
    recorder.commands.clear()
    course_cli.prepare(options, full=False)  # a full install also satisfies the default one
    assert recorder.commands == []


def test_pip_opts_reach_pip_as_separate_arguments(simulated, monkeypatch):
    recorder, options = simulated("Linux")
    monkeypatch.setenv("PIP_OPTS", "--no-index --find-links=wheelhouse")
    course_cli.prepare(options, full=False)
    assert recorder.commands[1][4:6] == ["--no-index", "--find-links=wheelhouse"]


def test_an_offline_install_reads_only_the_wheelhouse(simulated):
    recorder, options = simulated("Windows")
    options.wheelhouse = os.path.join("E:", "course usb", "wheelhouse")
    course_cli.prepare(options, full=False)
    assert recorder.commands[1][4:7] == ["--no-index", "--find-links", os.path.abspath(options.wheelhouse)]


def test_pip_errors_are_not_hidden_and_nothing_is_stamped(simulated, monkeypatch, capsys):
    recorder, options = simulated("Linux")
    fake_pip = Path(options.venv).parent / "pip-fails.py"
    fake_pip.parent.mkdir(parents=True, exist_ok=True)
    fake_pip.write_text("import sys\nprint('Collecting soupsieve==4.1.2')\n"
                        "print('ERROR: No matching distribution found for soupsieve==4.1.2', file=sys.stderr)\n"
                        "sys.exit(1)\n")
    monkeypatch.setattr(course_cli, "pip_install", lambda python, args, opts: real_pip(sys.executable, fake_pip))
    with pytest.raises(course_cli.CourseError, match="its error is above"):
        course_cli.prepare(options, full=False)
    captured = capsys.readouterr()
    assert "Collecting soupsieve==4.1.2" in captured.out
    assert not (Path(options.venv) / course_cli.STAMP_NAME).exists()


def real_pip(python, script):
    """course_cli.pip_install's loop around a stand-in for pip (a script that fails like pip does)."""
    original = course_cli.subprocess.Popen
    try:
        course_cli.subprocess.Popen = lambda command, **kw: original([python, str(script)], **kw)
        course_cli.__dict__["pip_install_original"](python, [], [])
    finally:
        course_cli.subprocess.Popen = original


course_cli.pip_install_original = course_cli.pip_install


def test_two_installs_never_run_at_once_and_a_dead_holder_frees_the_lock(tmp_path, capsys):
    path = tmp_path / ".venv.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT / 'tools')!r}); import course_cli\n"
                               f"h = course_cli.lock({str(path)!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    holder.kill()  # killed while holding it (kill -9): the OS releases the lock, the next install goes on
    holder.wait()
    handle = course_cli.lock(str(path))
    handle.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT / 'tools')!r}); import course_cli\n"
                               f"h = course_cli.lock({str(path)!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    import threading
    got = threading.Event()
    waiter = threading.Thread(target=lambda: (course_cli.lock(str(path)).close(), got.set()))
    waiter.start()
    assert not got.wait(1)  # the second one waits while the first holds the lock ...
    holder.stdin.close()
    holder.wait()
    waiter.join(60)
    assert got.is_set()      # ... and goes on once it is released
    assert "waiting for another course.py install to finish" in capsys.readouterr().out


# ------------------------------------------------------------------------------------- the stamp
def _course_with_a_venv(tmp_path):
    """Every file the install stamp reads, each pinning numpy, and an empty .venv beside them."""
    for name in ("requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt", "constraints.txt",
                 "pyproject.toml"):
        (tmp_path / name).write_text("numpy==1.26.4\n")
    venv = tmp_path / ".venv"
    venv.mkdir()
    return venv


def test_the_stamp_follows_the_contents_of_the_requirement_files_not_their_mtimes(tmp_path):
    venv = _course_with_a_venv(tmp_path)
    course_cli.write_stamp(str(tmp_path), str(venv), full=False)
    assert course_cli.stamp_is_current(str(tmp_path), str(venv), full=False)
    assert not course_cli.stamp_is_current(str(tmp_path), str(venv), full=True)
    later = time.time() + 3600
    os.utime(tmp_path / "requirements.txt", (later, later))  # touched (a git checkout), same contents
    assert course_cli.stamp_is_current(str(tmp_path), str(venv), full=False)
    (tmp_path / "constraints.txt").write_text("numpy==1.26.5\n")  # a changed pin
    assert not course_cli.stamp_is_current(str(tmp_path), str(venv), full=False)
    assert [p.name for p in venv.iterdir()] == [course_cli.STAMP_NAME]  # written atomically: no temp file left


def test_a_changed_fast_conv_pin_reinstalls_the_full_install_only(tmp_path):
    venv = _course_with_a_venv(tmp_path)
    course_cli.write_stamp(str(tmp_path), str(venv), full=True)
    assert course_cli.stamp_is_current(str(tmp_path), str(venv), full=True)
    (tmp_path / "requirements-fast-conv.txt").write_text('onednn-cpu-gomp==2023.2.0; sys_platform == "linux"\n')
    assert not course_cli.stamp_is_current(str(tmp_path), str(venv), full=True)
    assert course_cli.stamp_is_current(str(tmp_path), str(venv), full=False)  # the default install does not read it


# ----------------------------------------------------------------------------- interpreter lookup
def fake_which(available):
    return lambda name: available.get(name)


def test_windows_uses_the_py_launcher_newest_first(monkeypatch):
    probed = []
    where = r"C:\Users\Li Wei\AppData\Local\Programs\Python\Python311\python.exe"
    installed = {("py", "-3.11"): info("3.11.9", system="Windows", machine="AMD64", executable=where)}

    def run_probe(command):
        probed.append(command)
        return installed.get(tuple(command))
    running = info("3.13.1", system="Windows", machine="AMD64", executable=r"C:\Python313\python.exe")
    chosen = course_cli.choose_interpreter(running=running, which=fake_which({"py": r"C:\Windows\py.exe"}),
                                           run_probe=run_probe)
    assert probed == [["py", "-3.12"], ["py", "-3.11"]]
    assert chosen["executable"].endswith("Python311\\python.exe")


def test_macos_finds_python312_on_path_when_python3_is_too_old():
    running = info("3.9.6", system="Darwin", machine="arm64", executable="/usr/bin/python3")
    found = {"/opt/homebrew/bin/python3.12": info("3.12.7", system="Darwin", machine="arm64",
                                                  executable="/opt/homebrew/bin/python3.12")}
    chosen = course_cli.choose_interpreter(
        running=running, which=fake_which({"python3.12": "/opt/homebrew/bin/python3.12", "py": "/bin/py"}),
        run_probe=lambda command: found.get(command[0]))
    assert chosen["executable"] == "/opt/homebrew/bin/python3.12"


def test_the_running_interpreter_is_used_when_it_can():
    running = info("3.10.12")
    assert course_cli.choose_interpreter(running=running, which=fake_which({}), run_probe=None) is running


@pytest.mark.parametrize("system, fixes", [
    ("Windows", ["python.org", "winget install Python.Python.3.12", "py -3.12 course.py lab"]),
    ("Darwin", ["python.org", "brew install python@3.12", "pyenv install 3.12", "uv python install 3.12"]),
    ("Linux", ["python3.12-venv", "deadsnakes", "pyenv install 3.12", "conda env create -f environment.yml"]),
])
def test_no_supported_interpreter_is_refused_with_what_was_tried_and_the_fix(system, fixes):
    machine = {"Windows": "AMD64", "Darwin": "arm64", "Linux": "x86_64"}[system]
    running = info("3.13.0", system=system, machine=machine, executable="/x/python3")
    which = fake_which({"py": "py.exe", "python3.10": "/x/python3.10"})
    probes = {"/x/python3.10": info("3.10.4", system=system, machine=machine, venv=False)}
    with pytest.raises(course_cli.CourseError) as error:
        course_cli.choose_interpreter(running=running, which=which, run_probe=lambda c: probes.get(c[0]))
    message = str(error.value)
    assert "/x/python3: CPython 3.13.0" in message and "/x/python3.10: CPython 3.10.4" in message
    assert "venv/ensurepip modules are missing" in message and "Nothing was downloaded" in message
    if system == "Windows":
        assert "py -3.12: does not run" in message
    for fix in fixes:
        assert fix in message


def test_a_restart_runs_course_py_again_under_the_chosen_interpreter(monkeypatch):
    calls = []
    monkeypatch.setattr(course_cli, "choose_interpreter", lambda requested: info("3.12.3", executable="/x/py3.12"))
    monkeypatch.setattr(course_cli.subprocess, "call", lambda command, env: calls.append((command, env)) or 7)
    monkeypatch.delenv("COURSE_PY_CHILD", raising=False)
    assert course_cli.main(["lab", "--port", "9000"]) == 7
    (command, env), = calls
    assert command == ["/x/py3.12", os.path.join(course_cli.ROOT, "course.py"), "lab", "--port", "9000"]
    assert env["COURSE_PY_CHILD"] == "1" and "COURSE_PY_CHILD" not in os.environ


def test_a_working_venv_is_used_when_no_supported_python_is_on_path(monkeypatch, tmp_path):
    venv = tmp_path / ".venv"
    python = Path(course_cli.venv_python(str(venv)))
    python.parent.mkdir(parents=True)
    python.write_text("")
    calls = []

    def nothing_found(requested):
        raise course_cli.CourseError("No Python interpreter here can run the course.")
    monkeypatch.setattr(course_cli, "choose_interpreter", nothing_found)
    monkeypatch.setattr(course_cli, "probe", lambda command: info("3.11.4", executable=command[0]))
    monkeypatch.setattr(course_cli.subprocess, "call", lambda command, env: calls.append(command) or 0)
    monkeypatch.delenv("COURSE_PY_CHILD", raising=False)
    assert course_cli.main(["--venv", str(venv), "lab"]) == 0
    assert calls == [[str(python), os.path.join(course_cli.ROOT, "course.py"), "--venv", str(venv), "lab"]]


# -------------------------------------------------------------------------- the active environment
def test_an_active_environment_with_the_course_is_used_and_no_venv_is_made(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(course_cli, "in_active_environment", lambda: True)
    monkeypatch.setattr(course_cli, "find_course_lib", lambda: os.path.join(course_cli.ROOT, "course_lib"))
    monkeypatch.setattr(course_cli, "unmet_pins", lambda root, full: [])
    options = type("Options", (), {"venv": str(tmp_path / ".venv"), "interpreter": info()})
    env = course_cli.prepare(options, full=True)
    assert env.python == sys.executable and env.active
    assert "no .venv is made" in capsys.readouterr().out and not (tmp_path / ".venv").exists()


def test_an_active_environment_with_wrong_pins_is_named_not_duplicated(tmp_path, monkeypatch):
    monkeypatch.setattr(course_cli, "in_active_environment", lambda: True)
    monkeypatch.setattr(course_cli, "find_course_lib", lambda: os.path.join(course_cli.ROOT, "course_lib"))
    monkeypatch.setattr(course_cli, "unmet_pins", lambda root, full: ["numpy: pinned 1.26.4, installed 2.1.0"])
    options = type("Options", (), {"venv": str(tmp_path / ".venv"), "interpreter": info()})
    with pytest.raises(course_cli.CourseError, match=r"(?s)numpy: pinned 1.26.4, installed 2.1.0.*Fix: install them"):
        course_cli.prepare(options, full=False)
    assert not (tmp_path / ".venv").exists()


def test_an_active_environment_with_another_checkouts_course_lib_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(course_cli, "in_active_environment", lambda: True)
    monkeypatch.setattr(course_cli, "find_course_lib", lambda: str(tmp_path / "old clone" / "course_lib"))
    options = type("Options", (), {"venv": str(tmp_path / ".venv"), "interpreter": info()})
    with pytest.raises(course_cli.CourseError, match=r"(?s)imports course_lib from .*old clone.*pip install --no-deps"):
        course_cli.prepare(options, full=False)
    assert not (tmp_path / ".venv").exists()


def test_find_course_lib_ignores_course_py_s_own_folder_but_not_pythonpath(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    (checkout / "course_lib").mkdir(parents=True)
    (checkout / "course_lib" / "__init__.py").write_text("")
    monkeypatch.setattr(course_cli, "ROOT", str(checkout))
    monkeypatch.setattr(sys, "argv", [str(checkout / "course.py")])
    monkeypatch.setattr(sys, "path", [str(checkout / "tools"), str(checkout)])
    monkeypatch.setattr(sys, "meta_path", [importlib.machinery.PathFinder])  # no editable install's finder
    monkeypatch.delitem(sys.modules, "course_lib", raising=False)  # conftest imported it; course.py never does
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert course_cli.find_course_lib() is None  # only there because Python put the script's folder on sys.path
    monkeypatch.setenv("PYTHONPATH", str(checkout))
    assert course_cli.find_course_lib() == str(checkout / "course_lib")


def test_an_active_environment_without_the_course_gets_the_course_venv(simulated, monkeypatch, capsys):
    recorder, options = simulated("Linux")
    monkeypatch.setattr(course_cli, "in_active_environment", lambda: True)
    monkeypatch.setattr(course_cli, "find_course_lib", lambda: None)
    course_cli.prepare(options, full=False)
    assert "does not have the course" in capsys.readouterr().out and recorder.commands[0][1:3] == ["-m", "venv"]


def test_pins_are_checked_with_pep440_and_markers(tmp_path):
    (tmp_path / "requirements.txt").write_text("pytest==9.2.0\nnot-a-package-xyz==1.0 ; python_version < '3'\n"
                                               "also-missing-xyz==2.0\n")
    assert course_cli.unmet_pins(str(tmp_path), False) == ["also-missing-xyz: pinned 2.0, installed nothing"]
    assert course_cli.version_matches("2.13.0+cpu", "2.13.0") and not course_cli.version_matches("2.13.1", "2.13.0")


@pytest.mark.parametrize("system, machine, unmet", [("linux", "x86_64", True), ("linux", "aarch64", False),
                                                     ("darwin", "arm64", False), ("win32", "AMD64", False)])
def test_the_private_onednn_is_a_full_pin_on_linux_x86_64_only(tmp_path, monkeypatch, system, machine, unmet):
    """An active environment without the onednn wheels lacks the full install's pins on Linux x86-64 only."""
    shutil.copy(ROOT / "requirements-fast-conv.txt", tmp_path)
    (tmp_path / "requirements-torch.txt").write_text("")
    (tmp_path / "requirements.txt").write_text("")
    monkeypatch.setattr(sys, "platform", system)  # what pip's marker parser reads
    monkeypatch.setattr(platform, "machine", lambda: machine)
    from importlib import metadata

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "version", not_installed)
    missing = ["onednn-cpu-gomp: pinned 2023.2.0, installed nothing",
               "onednn-devel-cpu-gomp: pinned 2023.2.0, installed nothing"]
    assert course_cli.unmet_pins(str(tmp_path), True) == (missing if unmet else [])
    assert course_cli.unmet_pins(str(tmp_path), False) == []


# ---------------------------------------------------------------------------------- odd file names
ODD = "x; touch PWNED $(id) `id` 课程 'a\".ipynb"


def fake_course(tmp_path):
    """A copy of the front door in a folder with a space and Chinese characters, with a notebook whose name is a
    shell command, and a ready 'venv' whose python records its arguments instead of running them."""
    root = tmp_path / "my course 课程"
    (root / "tools").mkdir(parents=True)
    (root / "notebooks").mkdir()
    shutil.copy(ROOT / "course.py", root)
    shutil.copy(ROOT / "tools" / "course_cli.py", root / "tools")
    for name in ("requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt", "constraints.txt",
                 "pyproject.toml"):
        (root / name).write_text("")
    (root / "notebooks" / ODD.replace("'", "").replace('"', "")).write_text("{}")
    (root / "notebooks" / "00 first.ipynb").write_text("{}")
    venv = root / ".venv"
    log = tmp_path / "argv.jsonl"
    python = Path(course_cli.venv_python(str(venv)))
    python.parent.mkdir(parents=True)
    recorder = tmp_path / "record_argv.py"
    recorder.write_text(f"import json, sys\n"
                        f"with open({str(log)!r}, 'a') as f: f.write(json.dumps(sys.argv[1:]) + '\\n')\n")
    # A #! line cannot hold a path with a space (a clone in "/tmp/ci run/" has one): a sh shim quotes it instead.
    python.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(recorder))} \"$@\"\n")
    python.chmod(0o755)
    course_cli.write_stamp(str(root), str(venv), full=True)
    return root, log


@pytest.mark.skipif(os.name == "nt", reason="the recording interpreter is a #! script")
def test_notebooks_with_shell_metacharacters_are_only_ever_file_names(tmp_path):
    root, log = fake_course(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    plain = getattr(sys, "_base_executable", sys.executable)  # a plain `python`, not inside an environment
    result = subprocess.run([plain, str(root / "course.py"), "notebooks"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    odd = ODD.replace("'", "").replace('"', "")
    assert calls == [["tools/execute_notebook.py", os.path.join("notebooks", "00 first.ipynb"),
                      os.path.join("notebooks", odd)]]
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))


@pytest.mark.skipif(os.name == "nt", reason="the recording interpreter is a #! script")
def test_the_nbval_run_passes_odd_names_and_copies_as_arguments(tmp_path):
    root, log = fake_course(tmp_path)
    sys.path.insert(0, str(root / "tools"))
    env = course_cli.Environment(course_cli.venv_python(str(root / ".venv")))
    saved = course_cli.ROOT
    try:
        course_cli.ROOT = str(root)
        names = course_cli.notebooks()
        assert course_cli.nbval_twice(env, names) == 0
    finally:
        course_cli.ROOT = saved
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    odd = ODD.replace("'", "").replace('"', "")
    assert call[:7] == ["-m", "pytest", "-p", "nbval_groups", "-n", "2", "--no-loadscope-reorder"]
    assert os.path.join("notebooks", odd) in call
    copies = [a for a in call if a.startswith(os.path.join("build", "nbval-second-run."))]
    assert sorted(os.path.basename(c) for c in copies) == ["00 first.ipynb", odd]
    assert not (root / "build" / os.path.dirname(copies[0]).split(os.sep)[-1]).exists()  # the copy is removed
    assert not list(tmp_path.rglob("PWNED*"))


def test_nbval_runs_the_longest_recorded_lessons_first(tmp_path):
    names = [os.path.join("notebooks", n) for n in ("00_a.ipynb", "01_b.ipynb", "02_new.ipynb", "03_c.ipynb")]
    assert course_cli.longest_first(names, str(tmp_path)) == names  # no records: the order is kept
    (tmp_path / "benchmarks").mkdir()
    records = [{"notebook": "00_a.ipynb", "seconds": 4.4}, {"notebook": "01_b.ipynb", "seconds": 37.5},
               {"notebook": "03_c.ipynb", "seconds": 9.1}]
    (tmp_path / "benchmarks" / "results.json").write_text(json.dumps({"notebooks": {"records": records}}))
    assert course_cli.longest_first(names, str(tmp_path)) == [names[2], names[1], names[3], names[0]]
    (tmp_path / "benchmarks" / "results.json").write_text("{not json")
    assert course_cli.longest_first(names, str(tmp_path)) == names


def test_lab_folder_with_spaces_and_chinese_is_one_argument():
    command, port = course_cli.lab_command("py", r"C:\Users\Li Wei\课程; rm -rf ~", ["--port=9001"], "t0k",
                                           is_root=False)
    assert r"--notebook-dir=C:\Users\Li Wei\课程; rm -rf ~" in command and port == 9001


# ------------------------------------------------------------------------------- the lab's auth
@pytest.mark.parametrize("arg", ["--IdentityProvider.token=", "--ServerApp.token=''", "--NotebookApp.token=",
                                 "--ServerApp.password=", "--ip=0.0.0.0", "--ServerApp.ip=0.0.0.0",
                                 "--ServerApp.identity_provider_class=x.NoAuth", "--ServerApp.allow_remote_access=1",
                                 "--ServerApp.disable_check_xsrf=True", "--ServerApp.authorizer_class=x.Y"])
def test_lab_refuses_options_that_weaken_its_authentication(arg):
    with pytest.raises(course_cli.CourseError, match="refusing the JupyterLab option"):
        course_cli.lab_command("python", "notebooks", ["--no-browser", arg], "token", is_root=False)


def test_lab_always_passes_its_token_on_the_command_line():
    command, _ = course_cli.lab_command("python", "notebooks", ["--no-browser"], "abc123", is_root=True)
    assert command[:4] == ["python", "-m", "jupyter", "lab"]
    assert "--ip=127.0.0.1" in command and "--IdentityProvider.token=abc123" in command
    assert "--allow-root" in command and any(a.startswith("--port=") for a in command)


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310  (http://127.0.0.1, the lab under test)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0


def test_lab_has_authentication_even_when_the_users_config_switches_it_off(tmp_path):
    """A Jupyter config with an empty token (and password), as a learner may have: the lab still asks for the
    token course.py prints, and gives the server's pages with it."""
    config = tmp_path / "jupyter config"
    config.mkdir()
    (config / "jupyter_server_config.py").write_text(
        "c.IdentityProvider.token = ''\nc.ServerApp.token = ''\nc.ServerApp.password = ''\n"
        "c.ServerApp.ip = '0.0.0.0'\nc.ServerApp.open_browser = False\n")
    (config / "jupyter_server_config.json").write_text(json.dumps({"IdentityProvider": {"token": ""}}))
    folder = tmp_path / "课程 notebooks"
    folder.mkdir()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log_path = tmp_path / "lab.log"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_TOKEN="", LAB_DIR=str(folder),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    with open(log_path, "w") as log:
        server = subprocess.Popen([sys.executable, str(ROOT / "course.py"), "lab", "--no-browser", f"--port={port}"],
                                  cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=(os.name != "nt"))
    try:
        token, deadline = None, time.time() + 120
        while True:
            text = log_path.read_text(errors="replace")
            found = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)", text)
            if found and http_status(f"http://127.0.0.1:{port}/api/status?token={found.group(1)}") == 200:
                token = found.group(1)
                break
            assert server.poll() is None and time.time() < deadline, "the lab did not start:\n" + text[-3000:]
            time.sleep(1)
        assert len(token) >= 32
        base = f"http://127.0.0.1:{port}"
        assert http_status(f"{base}/api/contents") == 403
        assert http_status(f"{base}/api/contents?token=") == 403
        assert http_status(f"{base}/api/contents?token=wrong") == 403
        assert http_status(f"{base}/api/contents?token={token}") == 200
        assert http_status(f"{base}/lab?token={token}") == 200
        request = urllib.request.Request(f"{base}/lab")  # noqa: S310  (http://127.0.0.1, the lab under test)
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(request, timeout=5)
            status, location = 200, ""
        except urllib.error.HTTPError as error:
            status, location = error.code, error.headers.get("Location", "")
        assert status == 302 and "/login" in location
    finally:
        if server.poll() is None:
            if os.name == "nt":
                server.terminate()
            else:
                os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_lab_args_that_disable_the_token_are_refused_before_anything_starts(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    env["LAB_ARGS"] = "--no-browser --IdentityProvider.token=''"
    plain = getattr(sys, "_base_executable", sys.executable)  # not inside an environment: would make a venv
    result = subprocess.run([plain, str(ROOT / "course.py"), "--venv", str(tmp_path / "venv"), "lab"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "refusing the JupyterLab option '--IdentityProvider.token='" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "venv").exists()  # refused before any install


def test_preflight_runs_without_the_venv_and_says_pass_or_fail_per_item():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "preflight.py")], capture_output=True, text=True,
                            timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert [line.split()[1] for line in lines] == ["Python", "OS/CPU", "MindSpore", "disk", "RAM", "lab", "training"]
    assert ("VERDICT: PASS" in result.stdout) == (result.returncode == 0) == all(x.startswith("PASS") for x in lines)
    assert platform.machine() in result.stdout
