"""The set-up files agree with each other, so `python course.py test`, `python course.py lab` and conda users get the
same pins. (CI's command and the lab's address and authentication: tests/test_course_cli.py.)"""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def pins(path):
    out = {}
    for line in (ROOT / path).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[name.lower()] = version
    return out


def test_environment_yml_matches_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda_pins = dict(re.match(r"([\w.-]+)==(.+)", p).groups() for p in pip_section)
    conda_pins = {k.lower(): v for k, v in conda_pins.items()}
    assert conda_pins == {**pins("requirements.txt"), **pins("requirements-torch.txt")}
    assert "python=3.11" in env["dependencies"]


def test_every_requirement_is_an_exact_pin_and_constraints_agree():
    constraints = pins("constraints.txt")
    for name, version in {**pins("requirements.txt"), **pins("requirements-torch.txt")}.items():
        assert re.fullmatch(r"\d+(\.\d+)+", version), f"{name} is not pinned exactly"
        assert constraints.get(name) == version, f"constraints.txt disagrees on {name}"


def test_pyproject_dependencies_use_the_same_pins():
    text = (ROOT / "pyproject.toml").read_text()
    requirements = pins("requirements.txt")
    for name, version in re.findall(r'"([\w-]+)==([\d.]+)"', text):
        if name.lower() != "torch":
            assert requirements[name.lower()] == version

