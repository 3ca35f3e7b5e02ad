"""docs/WORKSHOP.md's tracks add up: they fit their length, name real sections, budget reading + exercise time."""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import workshop_plan  # noqa: E402

HEADER = ("| start | lesson | must do | skip | exercise | reading | exercise min | minutes |\n"
          "|---|---|---|---|---|---|---|---|\n")


def _notebook(folder, name, cells):
    """cells: markdown strings, or ("code", source) pairs."""
    folder.mkdir(exist_ok=True)
    nb_cells = [c if isinstance(c, dict) else
                {"cell_type": "code", "metadata": {}, "source": c[1], "outputs": [], "execution_count": None}
                if isinstance(c, tuple) else {"cell_type": "markdown", "metadata": {}, "source": c} for c in cells]
    (folder / name).write_text(json.dumps({"cells": nb_cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


@pytest.fixture
def lessons(tmp_path):
    folder = tmp_path / "notebooks"
    words = " ".join(["word"] * 240)                      # 2 minutes of reading
    _notebook(folder, "01_first.ipynb", [
        "# 01 — First\n\n## What you will learn\n\n" + " ".join(["w"] * 119),  # 1 min with its heading
        "## 1. Load",
        words,
        ("code", "a = 1\n" * 16),                          # 2 minutes of code
        "### 1.1 Detail\n\n" + words,                      # nested: counts in "1. Load"
        "## 2. Extra `sink`\n\n" + words,
        "## Exercises\n\n" + words,
        ("code", "x = 1\n" * 80),                          # exercise cells: budgeted by the exercise minutes
        {"cell_type": "markdown", "metadata": {"tags": ["solution"]}, "source": "## 2. Extra `sink`\n" + words},
    ])
    return folder


def test_sections_count_words_and_code_up_to_the_next_heading_of_the_same_level(lessons):
    minutes = workshop_plan.section_minutes(lessons / "01_first.ipynb")
    # "1. Load": its heading (1 word: numbers are no words) + 240 words + 16 code lines + "1.1 Detail" (1 + 240)
    assert minutes["1. Load"] == pytest.approx((1 + 240 + 1 + 240) / 120 + 16 / 8)
    assert minutes["1.1 Detail"] == pytest.approx(241 / 120)
    assert minutes["2. Extra `sink`"] == pytest.approx(242 / 120)
    assert minutes["What you will learn"] == pytest.approx((4 + 119) / 120)
    assert len(minutes) == 6  # the solution cell's heading and text (instructor edition only) are not read


def _plan(rows, length=60, name="Short"):
    return f"# Plan\n\n### {name} track ({length} min)\n\n" + HEADER + "\n".join(rows) + "\n\nAfter the table.\n"


SETUP = "| 0:00 | set-up | `python course.py preflight` | — | — | — | — | 10 |"
GOOD = [SETUP, "| 0:10 | 01 | 1. Load | 2. Extra `sink` | 01.1 | 8 | 10 | 20 |",
        "| 0:30 | break | | | | | | 10 |"]


def test_a_plan_that_adds_up_has_no_problems(lessons):
    tracks = workshop_plan.parse_plan(_plan(GOOD))
    assert [(t.name, t.length, t.total) for t in tracks] == [("Short", 60, 40)]
    row = tracks[0].rows[1]
    assert (row.must, row.skip, row.exercise, row.reading, row.exercise_minutes) == \
        (["1. Load"], ["2. Extra `sink`"], "01.1", 8, 10)
    # reading: What you will learn (123 words) + 1. Load (482 words, 16 lines) = 1.025 + 4.02 + 2 -> 8
    assert workshop_plan.row_reading(row, lessons) == 8
    assert workshop_plan.problems(tracks, {"01.1": 10}, lessons) == []


@pytest.mark.parametrize("rows, length, complaint", [
    (GOOD, 35, "40 minutes do not fit in 35"),
    ([SETUP, GOOD[1].replace("1. Load", "1. Loading"), GOOD[2]], 60, "no heading '1. Loading'"),
    ([SETUP, GOOD[1].replace("2. Extra `sink`", "—"), GOOD[2]], 60, "'2. Extra `sink`' is neither must-do nor skipped"),
    ([SETUP, GOOD[1].replace("| 8 |", "| 6 |"), GOOD[2]], 60, "read in 8 min, the plan says 6"),
    ([SETUP, GOOD[1].replace("| 20 |", "| 15 |"), GOOD[2].replace("0:30", "0:25")], 60,
     "15 min < reading 8 + exercise 10"),
    ([SETUP, GOOD[1].replace("| 10 |", "| 5 |").replace("| 20 |", "| 13 |"), GOOD[2].replace("0:30", "0:23")], 60,
     "01.1 takes 10 min in the exercise bank, the plan says 5"),
    ([SETUP, GOOD[1].replace("01.1", "02.1"), GOOD[2]], 60, "recommend exercises of the lesson"),
    ([SETUP, GOOD[1], GOOD[2].replace("0:30", "0:35")], 60, "break starts at 0:35, but the row before ends at 0:30"),
    ([SETUP, GOOD[1]], 60, "no break"),
    ([SETUP, GOOD[1].replace("| 20 |", "| 101 |")], 120, "111 minutes without a break"),
    # the set-up slot: first, long enough, naming the pre-flight check
    (GOOD[1:], 60, "the first row must be the 'set-up' slot"),
    ([SETUP.replace("| 10 |", "| 5 |"), GOOD[1].replace("0:10", "0:05"), GOOD[2].replace("0:30", "0:25")], 60,
     "the set-up slot needs at least 10 min"),
    ([SETUP.replace("`python course.py preflight`", "install"), GOOD[1], GOOD[2]], 60, "must name"),
    # every exercise minute a row includes is budgeted
    ([SETUP, GOOD[1].replace("| 01.1 |", "| 01.1 · 01.2 |"), GOOD[2]], 60,
     "exercise 01.1 · 01.2 takes 25 min in the exercise bank, the plan says 10"),
])
def test_a_plan_that_does_not_add_up_is_reported(lessons, rows, length, complaint):
    found = workshop_plan.problems(workshop_plan.parse_plan(_plan(rows, length)), {"01.1": 10, "01.2": 15},
                                   lessons)
    assert any(complaint in line for line in found), found


def test_two_exercises_in_one_row_are_budgeted_together(lessons):
    rows = [SETUP, "| 0:10 | 01 | 1. Load | 2. Extra `sink` | 01.1 · 01.2 | 8 | 25 | 35 |",
            "| 0:45 | break | | | | | | 10 |"]
    assert workshop_plan.problems(workshop_plan.parse_plan(_plan(rows)), {"01.1": 10, "01.2": 15}, lessons) == []


def test_every_track_of_the_real_plan_starts_with_the_preflight_check():
    for track in workshop_plan.parse_plan(WORKSHOP):
        assert track.rows[0].lesson == "set-up" and "python course.py preflight" in track.rows[0].must[0]


def test_a_malformed_table_is_refused():
    with pytest.raises(ValueError, match="columns should be"):
        workshop_plan.parse_plan("### A track (10 min)\n\n| start | lesson |\n|---|---|\n| 0:00 | 01 |\n")
    with pytest.raises(ValueError, match="cells, not 8"):
        workshop_plan.parse_plan(_plan(["| 0:00 | 01 | 1. Load |"]))


# ----------------------------------------------------------------------------------- the real docs/WORKSHOP.md
WORKSHOP = (ROOT / "docs" / "WORKSHOP.md").read_text()


def test_workshop_has_a_half_day_and_a_full_day_track():
    tracks = {track.name.lower(): track for track in workshop_plan.parse_plan(WORKSHOP)}
    assert tracks["half-day"].length == 180 and tracks["full-day"].length == 360
    for track in tracks.values():
        assert 0.8 * track.length <= track.total <= track.length, (track.name, track.total)
        assert sum(row.lesson == "break" for row in track.rows) >= 1
    assert {row.lesson for row in tracks["full-day"].rows} >= {f"{n:02d}" for n in range(10)}


def test_workshop_plan_adds_up_and_names_existing_sections():
    assert workshop_plan.problems(workshop_plan.parse_plan(WORKSHOP), workshop_plan.exercise_minutes()) == []


def test_workshop_explains_both_editions_and_ships_no_solutions_to_learners():
    assert "make lab-student" in WORKSHOP and "make lab`" in WORKSHOP
    assert "make student-bundle" in WORKSHOP and "build/course-student" in WORKSHOP
    offline = WORKSHOP[WORKSHOP.index("## A room of laptops"):]
    offline = offline[:offline.index("\n## ", 1)] if "\n## " in offline[1:] else offline
    # one archive per platform in the room (tools/make_bundles.py), without solutions, installed offline
    assert "tools/make_bundles.py --platform" in offline and re.search(r"no\s+`?solutions/", offline, re.I)
    assert "build/bundles/course-student-<platform>-py<version>" in offline
    assert "--no-index --find-links wheelhouse" in offline and "SIZE_" not in offline
    assert "Copy each archive" in offline and "make lab" in offline.split("Copy each archive")[1]
