"""tools/changed_notebooks.py (behind `make check`): which notebooks a change must re-run."""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from changed_notebooks import changed_notebooks  # noqa: E402


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture()
def repo(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "course_lib").mkdir()
    for name in ("00_a", "01_b"):
        (tmp_path / "notebooks" / f"{name}.ipynb").write_text("{}")
    (tmp_path / "course_lib" / "x.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    return tmp_path


def test_nothing_changed_means_no_notebook(repo):
    assert changed_notebooks("main", root=repo) == []


def test_a_changed_or_new_notebook_is_run(repo):
    (repo / "notebooks" / "01_b.ipynb").write_text('{"x": 1}')
    (repo / "notebooks" / "A1_c.ipynb").write_text("{}")
    assert changed_notebooks("main", root=repo) == ["notebooks/01_b.ipynb", "notebooks/A1_c.ipynb"]


def test_a_change_to_course_lib_runs_every_notebook(repo):
    (repo / "course_lib" / "x.py").write_text("x = 2\n")
    assert changed_notebooks("main", root=repo) == ["notebooks/00_a.ipynb", "notebooks/01_b.ipynb"]


def test_an_unknown_base_is_a_clear_error(repo):
    with pytest.raises(SystemExit, match="with a branch or commit named 'nope'"):
        changed_notebooks("nope", root=repo)
