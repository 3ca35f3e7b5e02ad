"""No dead code: vulture over course_lib, scripts, tools, benchmarks, recipes and classroom (tools/dead_code.py), with
the notebooks' code as usage and every remaining name explained in tools/vulture_whitelist.py."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import dead_code  # noqa: E402


def test_vulture_is_installed():
    dead_code.require_vulture()  # fails with the pip command, never skips


def test_no_dead_code_and_no_stale_whitelist_entry():
    hits, stale = dead_code.check()
    assert not hits, ("unused code (delete it and the tests that only exercise it, or explain in "
                      f"{dead_code.WHITELIST} why it is alive):\n" + "\n".join(hits))
    assert not stale, f"{dead_code.WHITELIST} entries vulture no longer reports (remove their lines): {stale}"


def test_every_whitelist_entry_says_why_it_is_alive():
    names = dead_code.whitelist_names(ROOT / dead_code.WHITELIST)
    assert names and all(len(reason.split()) >= 3 for reason in names.values()), \
        [name for name, reason in names.items() if len(reason.split()) < 3]


def _notebook(path, *sources):
    cells = [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
             for i, s in enumerate(sources)]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_notebooks_count_as_usage_and_tests_do_not(tmp_path):
    (tmp_path / "course_lib").mkdir()
    (tmp_path / "course_lib" / "tool.py").write_text(
        "def used_in_a_notebook():\n    return 1\n\n\ndef used_only_by_tests():\n    return 2\n")
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "01_x.ipynb", "%matplotlib inline\nfrom course_lib.tool import "
                                                     "used_in_a_notebook\nused_in_a_notebook()")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_tool.py").write_text("from course_lib.tool import used_only_by_tests\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "vulture_whitelist.py").write_text("_.gone  # a name nothing defines any more\n")
    hits, stale = dead_code.check(tmp_path)
    assert [hit.split(": ", 1)[1] for hit in hits] == ["unused function 'used_only_by_tests' (60% confidence)"]
    assert stale == ["gone"]



def test_a_public_name_only_tests_use_is_dead_although_it_is_in_all(tmp_path):
    (tmp_path / "course_lib").mkdir()
    (tmp_path / "course_lib" / "api.py").write_text(
        '__all__ = ["used", "only_for_tests"]\n\n\ndef used():\n    return 1\n\n\ndef only_for_tests():\n'
        '    return 2\n')
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text("from course_lib.api import used\n\nused()\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "vulture_whitelist.py").write_text("")
    hits, stale = dead_code.check(tmp_path)
    assert hits == ["course_lib/api.py:1: exported in __all__ but no code besides tests uses 'only_for_tests'"]
    (tmp_path / "tools" / "vulture_whitelist.py").write_text("_.only_for_tests  # learners call it from lesson 03\n")
    assert dead_code.check(tmp_path) == ([], [])

def test_a_notebook_cell_that_is_not_python_is_an_error(tmp_path):
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "02_y.ipynb", "print(1)", "def broken(:\n    pass")
    with pytest.raises(ValueError, match=r"02_y.ipynb, code cell 1: not Python"):
        dead_code.notebook_code(tmp_path)


def test_without_vulture_the_check_fails_with_the_pip_command(monkeypatch):
    monkeypatch.setattr(dead_code.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match=r"vulture is not installed.*Fix: .* -m pip install vulture==2\.16"):
        dead_code.check()
