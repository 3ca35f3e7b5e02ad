"""The GitHub Actions workflow (it cannot run here) and Binder's postBuild: their structure, and postBuild's checks."""
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "course.yml"


def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def test_workflow_says_it_has_never_run():
    head = WORKFLOW.read_text().split("\nname:")[0]
    assert "never run" in head and "cannot" in head


def test_workflow_matrix_is_every_os_and_python_the_course_supports():
    job = workflow()["jobs"]["course"]
    matrix = job["strategy"]["matrix"]
    assert set(matrix["os"]) == {"ubuntu-latest", "ubuntu-24.04-arm", "macos-14", "macos-13", "windows-latest"}
    assert matrix["python"] == ["3.10", "3.11", "3.12"]  # strings: YAML would read 3.10 as 3.1
    assert job["strategy"]["fail-fast"] is False


def test_workflow_runs_the_front_door_the_unit_tests_and_lesson_00():
    steps = workflow()["jobs"]["course"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    assert "python course.py --full install" in runs and "python course.py unit" in runs
    assert re.search(r"pytest --nbval-lax .*notebooks/00_environment\.ipynb", runs)
    assert "\"$py\" tools/pins_table.py --check" in runs  # packaging comes with the venv
    # Windows keeps the venv's interpreter under Scripts\python.exe.
    assert ".venv/Scripts/python.exe" in runs and ".venv/bin/python" in runs
    setup = next(step for step in steps if step.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == "${{ matrix.python }}"


def test_postbuild_is_an_executable_bash_script_that_stops_at_the_first_error():
    text = (ROOT / "postBuild").read_text()
    assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text
    assert "\r" not in text  # a CRLF shebang fails on Binder
    mode = subprocess.run(["git", "ls-files", "-s", "postBuild"], cwd=ROOT, capture_output=True, text=True).stdout
    assert mode.startswith("100755") or os.stat(ROOT / "postBuild").st_mode & stat.S_IXUSR


def test_postbuild_installs_course_lib_and_verifies_the_data():
    lines = [line for line in (ROOT / "postBuild").read_text().splitlines() if line.startswith("python ")]
    assert "python -m pip install --no-deps -e ." in lines
    checks = [line for line in lines if line.startswith("python -c ")]
    assert any("verify_embedded_data" in line for line in checks)
    # Run postBuild's checks as they are written, with this interpreter (course_lib installed, the data on disk).
    outputs = []
    for line in checks:
        code = re.fullmatch(r'python -c "(.*)"', line).group(1)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stderr[-2000:]
        outputs.append(result.stdout)
    assert "data verified against data/MANIFEST.sha256: digits_mnist, digits_png, shapes" in "".join(outputs)
