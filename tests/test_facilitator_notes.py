"""Facilitator notes (docs/facilitator/): one page per lesson 00-09 in both languages, current with the course."""
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import facilitator_notes  # noqa: E402

from course_lib.exercises import catalogue  # noqa: E402


def test_every_lesson_has_both_languages_of_each_hand_written_part():
    notes = yaml.safe_load(facilitator_notes.NOTES.read_text(encoding="utf-8"))
    assert sorted(notes) == [f"{n:02d}" for n in range(10)]
    for lesson, entry in notes.items():
        for part in ("title", "key_idea", "demo"):
            assert entry[part]["en"].strip() and entry[part]["zh"].strip(), (lesson, part)
        sentences = [s for s in entry["key_idea"]["en"].replace("e.g.", "eg").split(". ") if s.strip()]
        assert len(sentences) <= 2, f"{lesson}: the key idea is two sentences, got {len(sentences)}"


def test_committed_pages_are_current():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "facilitator_notes.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_stuck_points_come_from_the_checkers_in_both_languages():
    hints = facilitator_notes.checker_hints("03")
    assert set(hints) == {row["id"] for row in catalogue("03")}
    english, chinese = zip(*hints["03.1"])
    assert any("Epochs are counted from 1" in h for h in english)
    assert any("从 1 开始计数" in h for h in chinese)
    page_en = (facilitator_notes.OUT / "03_model_train_eval.md").read_text(encoding="utf-8")
    page_zh = (facilitator_notes.OUT / "zh" / "03_model_train_eval.md").read_text(encoding="utf-8")
    assert "Epochs are counted from 1" in page_en and "从 1 开始计数" in page_zh
    assert "../../notebooks/03_model_train_eval.ipynb" in page_en
    assert "../../../notebooks/zh/03_model_train_eval.ipynb" in page_zh


def test_every_exercise_is_listed_with_its_minutes():
    for lesson in (f"{n:02d}" for n in range(10)):
        page = next(facilitator_notes.OUT.glob(f"{lesson}_*.md")).read_text(encoding="utf-8")
        for row in catalogue(lesson):
            assert f"| {row['id']} " in page and f"| {row['minutes']} |" in page


def test_class_records_go_only_to_another_folder(tmp_path):
    progress = tmp_path / "p.jsonl"
    progress.write_text('{"learner": "a", "exercise": "03.1", "verdict": "not yet", "attempt": 1, "time": "t", '
                        '"hint": "Epochs are counted from 1"}\n', encoding="utf-8")
    refused = subprocess.run([sys.executable, str(ROOT / "tools" / "facilitator_notes.py"), "--progress",
                              str(progress)], capture_output=True, text=True)
    assert refused.returncode != 0 and "--progress needs --out" in refused.stderr
    subprocess.run([sys.executable, str(ROOT / "tools" / "facilitator_notes.py"), "--progress", str(progress),
                    "--out", str(tmp_path / "notes")], check=True, capture_output=True)
    page = (tmp_path / "notes" / "03_model_train_eval.md").read_text(encoding="utf-8")
    assert "What this class recorded" in page and "| 03.1 | 0 | 1 | 0 | Epochs are counted from 1 |" in page
