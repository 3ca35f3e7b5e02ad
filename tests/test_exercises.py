"""Every exercise passes with its reference solution and fails, with a hint, on typical wrong answers."""
import course_lib  # noqa: F401  (sets env before mindspore)
import importlib
import json
import re
from pathlib import Path

import pytest

from course_lib.exercises import Incorrect, check, expect_close, registered

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = registered()


def solutions_module(exercise_id):
    return importlib.import_module(f"solutions.lesson_{exercise_id.split('.')[0]}")


def wrong_answers(exercise_id):
    wrong = solutions_module(exercise_id).WRONG
    return (wrong() if callable(wrong) else wrong)[exercise_id]


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_solution_passes(exercise_id, capsys):
    solve = getattr(solutions_module(exercise_id), "solve_" + exercise_id.replace(".", "_"))
    answer = solve()
    capsys.readouterr()
    assert check(exercise_id, answer) is True
    assert capsys.readouterr().out.strip() == f"Exercise {exercise_id}: correct!"


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_wrong_answers_fail_with_a_hint(exercise_id, capsys):
    answers = wrong_answers(exercise_id)
    assert len(answers) >= 2
    for answer in answers:
        assert check(exercise_id, answer) is False
        message = capsys.readouterr().out
        assert message.startswith(f"Exercise {exercise_id}: not yet. ") and len(message) > 40


def test_placeholder_and_unknown_ids(capsys):
    first = next(iter(EXERCISES))
    assert check(first, ...) is False
    assert "not answered yet" in capsys.readouterr().out
    with pytest.raises(KeyError, match="no exercise '99.9'"):
        check("99.9", 1)


def test_expect_close_reports_shape_then_values_without_the_truth():
    with pytest.raises(Incorrect, match=r"shape \(2,\), yours has shape \(3,\)"):
        expect_close([1, 2, 3], [1, 2], "The vector")
    with pytest.raises(Incorrect, match="1 of 2 values differ") as info:
        expect_close([1, 5], [1, 2], "The vector")
    assert "2]" not in str(info.value)
    with pytest.raises(Incorrect, match="too large"):
        expect_close(3.0, 2.0, "The loss")


def test_every_notebook_exercise_is_registered_and_checked_in_its_notebook():
    seen = set()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        sources = ["".join(c["source"]) for c in cells]
        ids = re.findall(r'check\("(\d\d\.\d)"', "\n".join(sources))
        lesson = notebook.name[:2]
        assert len(ids) >= 2, f"{notebook.name} should end with at least two checked exercises"
        assert all(i.startswith(lesson + ".") for i in ids)
        for cell in cells:
            tags = cell.get("metadata", {}).get("tags", [])
            if "exercise" in tags:
                assert "..." in "".join(cell["source"]), f"{notebook.name}: exercise cell without a placeholder"
        seen |= set(ids)
    assert seen == set(EXERCISES)
