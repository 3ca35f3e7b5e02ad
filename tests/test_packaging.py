"""The set-up files agree with each other, so `python course.py test`, `python course.py lab` and conda users get the
same pins. (CI's command and the lab's address and authentication: tests/test_course_cli.py.)"""
import ast
import re
import sys
from pathlib import Path

import yaml
from packaging.utils import canonicalize_name

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import course_cli  # noqa: E402
from pins_table import PLATFORMS, PYTHONS, marker_env, read_requirements  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: Every requirement file an install reads (constraints.txt aside).
REQUIREMENT_FILES = ("requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt")
FAST_CONV = "requirements-fast-conv.txt"
ONEDNN = {"onednn-cpu-gomp", "onednn-devel-cpu-gomp"}


def pins(path):
    """{name: {versions}} of a requirement file, over every environment marker."""
    out = {}
    for req in read_requirements(ROOT / path):
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"{path}: {req} is not pinned exactly"
        assert re.fullmatch(r"\d+(\.\d+)+", specs[0].version), f"{path}: {req} is not pinned exactly"
        out.setdefault(canonicalize_name(req.name), set()).add(specs[0].version)
    return out


def test_environment_yml_installs_the_same_pins_and_course_lib():
    # conda runs pip on these lines from environment.yml's folder, as repo2docker (Binder) does: the same files,
    # the same constraints, and course_lib itself (without it every lesson's first cell fails).
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip_section == ["-r requirements.txt", "-c constraints.txt", "-e ."]
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert python.split("=")[1] in {"3.10", "3.11", "3.12"}


def test_the_default_install_leaves_torch_and_the_private_onednn_out():
    assert "torch" not in pins("requirements.txt")
    assert not ONEDNN & set(pins("requirements.txt"))
    assert set(pins("requirements-torch.txt")) == {"torch"}
    assert set(pins(FAST_CONV)) == ONEDNN


def test_every_requirement_is_an_exact_pin_and_constraints_agree():
    constraints = pins("constraints.txt")
    requirements = {}
    for path in REQUIREMENT_FILES:
        requirements.update(pins(path))
    assert ONEDNN <= set(requirements)
    for name, versions in requirements.items():
        assert versions <= constraints.get(name, set()), f"constraints.txt disagrees on {name}"
    assert pins("constraints.txt")["numpy"] == {"1.26.4"}  # numpy 2 breaks MindSpore 2.10


def test_the_private_onednn_is_pinned_for_linux_x86_64_only_and_is_a_no_op_elsewhere():
    # Its wheels are manylinux1_x86_64 only: pip must skip the lines everywhere else, not fail to find a wheel.
    for path in (FAST_CONV, "constraints.txt"):
        lines = [req for req in read_requirements(ROOT / path) if canonicalize_name(req.name) in ONEDNN]
        assert sorted(canonicalize_name(req.name) for req in lines) == sorted(ONEDNN), path
        for req in lines:
            assert str(req.specifier) == "==2023.2.0", f"{path}: {req}"
            for platform in PLATFORMS:
                for python in PYTHONS:
                    holds = req.marker is not None and req.marker.evaluate(marker_env(platform, python))
                    assert holds == (platform.label == "Linux x86-64"), f"{path}: {req} on {platform.label}"


def test_the_full_install_and_the_wheelhouse_read_every_requirement_file(monkeypatch):
    assert course_cli.requirement_files(False) == ["requirements.txt"]
    assert course_cli.requirement_files(True) == list(REQUIREMENT_FILES)
    # `python course.py fast-conv` compiles against the private oneDNN's headers: it needs the full install.
    assert course_cli.COMMANDS["fast-conv"][2] == "full"
    commands = []
    monkeypatch.setattr(course_cli, "run", lambda command, **kwargs: commands.append(command))
    monkeypatch.setattr(course_cli, "existing_environment", lambda options: None)
    options = type("Options", (), {"interpreter": {"executable": "python3"}, "args": []})
    course_cli.cmd_wheelhouse(options, None)
    files = [commands[0][i + 1] for i, arg in enumerate(commands[0]) if arg == "-r"]
    assert files == list(REQUIREMENT_FILES)
    assert commands[0][commands[0].index("-c") + 1] == "constraints.txt"


def test_fast_conv_looks_for_the_distributions_this_file_pins():
    # course_lib.perf.fast_conv finds the wheels by distribution name (importlib.metadata): the names must match.
    tree = ast.parse((ROOT / "course_lib" / "perf" / "fast_conv" / "__init__.py").read_text(encoding="utf-8"))
    names = next(ast.literal_eval(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and any(getattr(target, "id", None) == "PRIVATE_PACKAGES" for target in node.targets))
    assert {canonicalize_name(name) for name in names} == ONEDNN


def test_pyproject_dependencies_use_the_same_pins():
    text = (ROOT / "pyproject.toml").read_text()
    requirements = {**pins("requirements.txt"), **pins("requirements-torch.txt")}
    found = re.findall(r"[\"']([\w-]+)==([\d.]+)", text)
    assert found
    for name, version in found:
        assert version in requirements[canonicalize_name(name)], f"pyproject.toml pins {name}=={version}"

