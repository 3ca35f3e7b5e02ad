"""The set-up files agree with each other, so `python course.py test`, `python course.py lab` and conda users get the
same pins. (CI's command and the lab's address and authentication: tests/test_course_cli.py.)"""
import re
import sys
from pathlib import Path

import yaml
from packaging.utils import canonicalize_name

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from pins_table import read_requirements  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


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


def test_the_default_install_leaves_torch_out():
    assert "torch" not in pins("requirements.txt")
    assert set(pins("requirements-torch.txt")) == {"torch"}


def test_every_requirement_is_an_exact_pin_and_constraints_agree():
    constraints = pins("constraints.txt")
    for name, versions in {**pins("requirements.txt"), **pins("requirements-torch.txt")}.items():
        assert versions <= constraints.get(name, set()), f"constraints.txt disagrees on {name}"
    assert pins("constraints.txt")["numpy"] == {"1.26.4"}  # numpy 2 breaks MindSpore 2.10


def test_pyproject_dependencies_use_the_same_pins():
    text = (ROOT / "pyproject.toml").read_text()
    requirements = {**pins("requirements.txt"), **pins("requirements-torch.txt")}
    found = re.findall(r"[\"']([\w-]+)==([\d.]+)", text)
    assert found
    for name, version in found:
        assert version in requirements[canonicalize_name(name)], f"pyproject.toml pins {name}=={version}"

