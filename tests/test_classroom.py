"""classroom/: the container's start script, the image's staging and the hub config's numbers (no podman needed;
classroom/test_image.py and classroom/test_hub.py are the slow end-to-end checks)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "classroom"))

import start_lab  # noqa: E402


def test_sync_copies_what_is_missing_and_never_overwrites(tmp_path):
    edition, work = tmp_path / "edition", tmp_path / "我的 work"
    (edition / "zh").mkdir(parents=True)
    (edition / "00.ipynb").write_text("course v2")
    (edition / "zh" / "00.ipynb").write_text("中文")
    (edition / "01.ipynb").write_text("new lesson")
    work.mkdir()
    (work / "00.ipynb").write_text("the learner's edits")
    (work / "notes.txt").write_text("mine")
    copied, kept = start_lab.sync_edition(edition, work)
    assert sorted(copied) == ["01.ipynb", str(Path("zh") / "00.ipynb")]
    assert kept == ["00.ipynb"]
    assert (work / "00.ipynb").read_text() == "the learner's edits"
    assert (work / "notes.txt").read_text() == "mine"
    assert start_lab.sync_edition(edition, work) == ([], ["00.ipynb"])  # a restart changes nothing


def test_lab_always_has_a_token():
    with pytest.raises(SystemExit, match="always uses authentication"):
        start_lab.lab_command("  ", Path("/w"), "8888")
    command = start_lab.lab_command("abc", Path("/w"), "8888")
    assert "--IdentityProvider.token=abc" in command


def _hub_defaults():
    text = (ROOT / "classroom" / "hub" / "jupyterhub_config.py").read_text()
    return dict(re.findall(r'_setting\("(MEM_LIMIT|CPU_LIMIT|IDLE_TIMEOUT)", "([^"]+)"\)', text))


def test_helm_values_match_the_tested_hub():
    values = yaml.safe_load((ROOT / "classroom" / "helm" / "values.yaml").read_text())
    hub = _hub_defaults()
    assert set(hub) == {"MEM_LIMIT", "CPU_LIMIT", "IDLE_TIMEOUT"}
    assert values["singleuser"]["memory"]["limit"] == hub["MEM_LIMIT"]
    assert float(values["singleuser"]["cpu"]["limit"]) == float(hub["CPU_LIMIT"])
    assert values["cull"]["timeout"] == int(hub["IDLE_TIMEOUT"])
    assert values["singleuser"]["uid"] != 0
    assert values["singleuser"]["cmd"][-1] == "--singleuser"


def test_student_staging_leaves_out_solutions_and_tests(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "classroom" / "stage_course.py"), str(ROOT), str(tmp_path / "c")],
                   check=True, capture_output=True)
    staged = {p.name for p in (tmp_path / "c").iterdir()}
    assert {"course_lib", "data", "edition"} <= staged
    assert not {"solutions", "tests", ".git", ".venv"} & staged
    lesson = (tmp_path / "c" / "edition" / "00_environment.ipynb").read_text(encoding="utf-8")
    assert '"solution"' not in lesson and '"outputs": []' in lesson


def test_containerfile_runs_as_a_user_with_a_volume():
    text = (ROOT / "classroom" / "Containerfile").read_text()
    assert "USER learner" in text and "VOLUME /home/learner/work" in text
    assert re.search(r"^ARG BASE=", text, re.M), "the base image is a build argument"


def test_hub_memory_limit_is_what_the_measurements_call_for():
    import json

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import kernel_memory

    records = json.loads((ROOT / "benchmarks" / "kernel_memory.json").read_text())["records"]
    limit = _hub_defaults()["MEM_LIMIT"]
    assert limit.endswith("M") and int(limit[:-1]) == kernel_memory.memory_limit_gib(records) * 1024
