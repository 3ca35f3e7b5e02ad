"""check() records each attempt in the learner's progress file; tools/class_progress.py builds the class table."""
import csv
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.exercises import Incorrect, check, exercise, progress
from course_lib.exercises import engine as exercises

ROOT = Path(__file__).resolve().parents[1]
SECRET = 41.5  # an answer value that must never reach a progress file


@pytest.fixture
def progress_path(tmp_path, monkeypatch):
    path = tmp_path / "课程 progress" / "exercises.jsonl"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
    monkeypatch.setenv("COURSE_LEARNER", "li wei")
    return path


@pytest.fixture
def toy_exercise():
    @exercise("99.1", "answer 42", minutes=1)
    def _checker(answer):
        if answer != 42:
            raise Incorrect(f"expected the answer to the question, got {answer!r}")
    yield "99.1"
    exercises._REGISTRY.pop("99.1", None)
    exercises._SOLVED.discard("99.1")


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_check_records_verdicts_attempts_and_never_the_answer(progress_path, toy_exercise, capsys):
    assert check(toy_exercise, ...) is False
    assert check(toy_exercise, SECRET) is False
    assert check(toy_exercise, 7) is False
    assert check(toy_exercise, 42) is True
    rows = _lines(progress_path)
    assert [r["verdict"] for r in rows] == ["unanswered", "not yet", "not yet", "correct"]
    assert [r["attempt"] for r in rows] == [0, 1, 2, 3]
    assert {r["learner"] for r in rows} == {"li wei"}
    assert {r["exercise"] for r in rows} == {"99.1"}
    assert rows[1]["hint"].startswith("expected the answer")
    assert all(r["time"].endswith("+00:00") for r in rows)
    # The hint of a wrong answer may quote it; the record keeps the hint's first line only, never a separate answer.
    assert all(set(r) == {"learner", "exercise", "verdict", "attempt", "time", "hint"} for r in rows)


def test_attempts_count_across_kernel_restarts(progress_path, toy_exercise):
    check(toy_exercise, 1)
    importlib.reload(progress)  # a restarted kernel: nothing in memory, the file still counts
    progress.record(toy_exercise, "not yet", hint="again")
    assert [r["attempt"] for r in _lines(progress_path)] == [1, 2]


def test_torn_and_foreign_lines_are_skipped_and_counted(progress_path):
    progress_path.parent.mkdir(parents=True)
    progress_path.write_text('{"learner": "a", "exercise": "01.1", "verdict": "correct", "attempt": 1, '
                             '"time": "t"}\n{"learner": "a", "exer\n{"verdict": "hacked"}\n', encoding="utf-8")
    attempts, skipped = progress.read_attempts(progress_path)
    assert [a.exercise for a in attempts] == ["01.1"]
    assert skipped == 2


def test_unwritable_progress_file_warns_once_and_check_still_works(tmp_path, monkeypatch, toy_exercise, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(blocker / "exercises.jsonl"))
    progress._warned.clear()
    assert check(toy_exercise, 42) is True
    assert check(toy_exercise, 42) is True
    out = capsys.readouterr().out
    assert out.count("Progress not recorded") == 1 and "COURSE_PROGRESS_FILE" in out


def test_a_chinese_learner_gets_the_warning_in_chinese(tmp_path, monkeypatch, capsys):
    from course_lib.i18n import set_language

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    progress._warned.clear()
    set_language("zh")
    try:
        assert progress.record("01.1", "correct", path=blocker / "exercises.jsonl") is None
    finally:
        set_language(None)
    out = capsys.readouterr().out
    assert out.startswith("（进度未记录：无法写入 ") and "修正：把 COURSE_PROGRESS_FILE 设为" in out


def test_default_file_is_in_the_course_folder_or_the_home_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv("COURSE_PROGRESS_FILE", raising=False)
    assert progress.progress_file() == ROOT / "progress" / "exercises.jsonl"
    monkeypatch.setattr(progress, "_writable", lambda folder: False)
    assert progress.progress_file() == progress._FALLBACK


def test_learner_name_order():
    assert progress.learner_name({"COURSE_LEARNER": "x", "JUPYTERHUB_USER": "y"}) == "x"
    assert progress.learner_name({"JUPYTERHUB_USER": "y"}) == "y"
    assert progress.learner_name({}) != ""


def test_record_refuses_an_unknown_verdict(progress_path):
    with pytest.raises(ValueError, match="verdict must be one of"):
        progress.record("01.1", "maybe")


def test_print_summary_lists_the_lessons_exercises(progress_path, capsys):
    progress.record("01.1", "not yet", hint="h")
    progress.record("01.1", "correct")
    exercises.print_summary("01")
    out = capsys.readouterr().out
    assert "✓ 01.1" in out and "2 attempts" in out
    assert f"1 of {len(exercises.catalogue('01'))} exercises solved" in out


def _simulate_learner(folder: Path, name: str, script):
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "COURSE_PROGRESS_FILE": str(folder / name / "progress" / "exercises.jsonl"),
           "COURSE_LEARNER": name}
    code = "from course_lib.exercises import progress\n" + "\n".join(
        f"progress.record({ex!r}, {verdict!r}, hint={hint!r})" for ex, verdict, hint in script)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=folder)


def test_class_table_from_three_learners(tmp_path):
    homes = tmp_path / "home"
    _simulate_learner(homes, "ana", [("01.1", "correct", ""), ("01.2", "not yet", "shape"), ("01.2", "correct", "")])
    _simulate_learner(homes, "<b>bo</b>", [("01.2", "not yet", "shape (2, 3) expected")] * 3)
    _simulate_learner(homes, "chen 陈", [("01.1", "unanswered", ""), ("01.2", "not yet", "other")])
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "class_progress.py"), str(homes),
                             "--out", str(tmp_path / "out" / "class")], capture_output=True, text=True, check=True)
    assert "3 learner(s)" in result.stdout and "01.2: 1 stuck" in result.stdout
    with open(tmp_path / "out" / "class.csv", encoding="utf-8") as f:
        rows = {(r["learner"], r["exercise"]): r for r in csv.DictReader(f)}
    assert rows[("ana", "01.2")]["status"] == "solved" and rows[("ana", "01.2")]["attempts"] == "2"
    assert rows[("<b>bo</b>", "01.2")]["status"] == "stuck"
    assert rows[("chen 陈", "01.2")]["status"] == "trying"
    assert rows[("chen 陈", "01.1")]["status"] == "not started"
    page = (tmp_path / "out" / "class.html").read_text(encoding="utf-8")
    assert "<b>bo</b>" not in page and "&lt;b&gt;bo&lt;/b&gt;" in page
    assert "shape (2, 3) expected" in page  # the most common hint of the stuck exercise


def test_class_table_refuses_a_missing_folder(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "class_progress.py"), str(tmp_path / "nope")],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "neither a progress file nor a folder" in result.stderr
