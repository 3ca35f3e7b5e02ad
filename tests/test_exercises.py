"""Every exercise passes with its reference solution and fails, with a hint, on typical wrong answers."""
import importlib
import json
import re
from pathlib import Path

import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.exercises import Incorrect, catalogue, check, exercise, expect_close, explain, hide, registered
from course_lib.exercises import engine as exercises
from course_lib.i18n import _, set_language

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = registered()
CJK = re.compile(r"[\u3400-\u9fff]")


def solutions_module(exercise_id):
    return importlib.import_module(f"solutions.lesson_{exercise_id.split('.')[0]}")


def wrong_answers(exercise_id):
    wrong = solutions_module(exercise_id).WRONG
    return (wrong() if callable(wrong) else wrong)[exercise_id]


def in_language(lang, function):
    set_language(lang)
    try:
        return function()
    finally:
        set_language(None)


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_solution_passes_and_wrong_answers_fail_with_a_hint_each_checked_once(exercise_id, monkeypatch, capsys):
    """The reference solution passes and each typical wrong answer fails with a hint. Each answer is computed and
    checked once (some checkers train a network), in the Chinese edition, where more can go wrong: the hint, the
    verdict and the "why" must all come from the catalog, never the English text after the "no translation yet"
    note. The English side needs no second run: its texts are the catalog's msgids (tests/test_exercises_language.py
    checks each has its Chinese entry), its verdict lines are checked on toy exercises there, and its "why" here."""
    task = EXERCISES[exercise_id]
    assert CJK.search(in_language("zh", task.shown_task)), f"{exercise_id} has no Chinese task in the catalog"
    note = in_language("zh", lambda: _(exercises.NO_TRANSLATION))
    monkeypatch.setattr(exercises, "_SOLVED", set())
    answers = wrong_answers(exercise_id)
    assert len(answers) >= 2
    set_language("zh")
    try:
        for answer in answers:
            assert check(exercise_id, answer) is False
            out = capsys.readouterr().out
            prefix = f"练习 {exercise_id}：还不对。"
            assert out.startswith(prefix) and note not in out, out
            assert CJK.search(out[len(prefix):]) and len(out) > len(prefix) + 5, f"no Chinese hint: {out}"
        solve = getattr(solutions_module(exercise_id), "solve_" + exercise_id.replace(".", "_"))
        answer = solve()
        capsys.readouterr()
        assert check(exercise_id, answer) is True
        verdict, *why = capsys.readouterr().out.strip().split("\n")
    finally:
        set_language(None)
    assert verdict == f"练习 {exercise_id}：正确！"
    if task.why:  # then the explanation of the "why?" part, ready to read, in both languages
        explanation = in_language("zh", task.explanation)
        assert why[0].startswith("原因：") and note not in "".join(why) and CJK.search(explanation)
        assert re.sub(r"\s", "", "".join(why))[3:] == re.sub(r"\s", "", explanation)
        english = in_language("en", task.explanation)
        assert len(english) > 40 and not CJK.search(english) and english != explanation
    else:
        assert not why


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
    for notebook in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):  # main lessons; appendices have none
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


@pytest.fixture
def scratch_registry(monkeypatch):
    """A registry of its own (with the real exercises in it) and no solved exercises, for mechanism tests."""
    monkeypatch.setattr(exercises, "_REGISTRY", dict(registered()))
    monkeypatch.setattr(exercises, "_import_lessons", lambda: None)
    monkeypatch.setattr(exercises, "_SOLVED", set())


def test_why_is_shown_by_check_when_correct_and_by_explain_only_after(scratch_registry, capsys):
    @exercise("98.1", "Give 42.", why=hide("Because 42 is   the answer, 图模式 included."), difficulty="★★", minutes=5)
    def check_98_1(answer):
        exercises.expect(answer == 42, "Not 42.")

    explain("98.1")
    refusal = capsys.readouterr().out
    assert "only after a correct answer" in refusal and 'check("98.1"' in refusal and "42 is" not in refusal
    assert check("98.1", 41) is False
    assert "Because" not in capsys.readouterr().out
    explain("98.1")
    assert "Because" not in capsys.readouterr().out
    assert check("98.1", 42) is True
    assert capsys.readouterr().out == ("Exercise 98.1: correct!\n"
                                       "Why: Because 42 is the answer, 图模式 included.\n")
    explain("98.1")
    assert capsys.readouterr().out == "Why: Because 42 is the answer, 图模式 included.\n"


def test_exercise_keywords_are_optional_and_validated(scratch_registry, capsys):
    exercise("98.2", "No keywords: as before.")(lambda answer: None)
    plain = exercises._REGISTRY["98.2"]
    assert (plain.why, plain.difficulty, plain.minutes, plain.stars) == ("", None, None, "")
    assert check("98.2", 1) is True and capsys.readouterr().out == "Exercise 98.2: correct!\n"
    explain("98.2")
    assert "asks no" in capsys.readouterr().out
    exercise("98.3", "Stars as an int.", difficulty=3, minutes=20)(lambda answer: None)
    assert exercises._REGISTRY["98.3"].stars == "★★★"
    with pytest.raises(ValueError, match="must be encoded"):
        exercise("98.4", "Plain-text why.", why="Because graph mode freezes attributes.")
    for bad in (0, 4, "***", True, 2.0):
        with pytest.raises(ValueError, match="difficulty"):
            exercise("98.5", "Bad difficulty.", difficulty=bad)
    for bad in (0, -3, 2.5, True, 500):
        with pytest.raises(ValueError, match="minutes"):
            exercise("98.6", "Bad minutes.", minutes=bad)
    with pytest.raises(ValueError, match="registered twice"):
        exercise("98.3", "Again.")(lambda answer: None)


def test_catalogue_lists_difficulty_minutes_and_why(scratch_registry, capsys):
    exercise("98.7", "Listed.", why=hide("Shown later."), difficulty=1, minutes=7)(lambda answer: None)
    rows = catalogue()
    assert [row["id"] for row in rows] == sorted(EXERCISES) + ["98.7"]
    assert catalogue("98") == [{"id": "98.7", "task": "Listed.", "difficulty": "★", "minutes": 7, "has_why": True}]
    assert [row["id"] for row in catalogue(4)] == [i for i in EXERCISES if i.startswith("04.")]
    exercises.print_catalogue("98")
    out = capsys.readouterr().out
    assert "98.7  ★      7 min  why  Listed." in out and "1 exercises, 7 minutes estimated" in out
    assert "Shown later" not in out


def test_nbval_compares_only_the_verdict_of_a_check():
    """Adding an explanation must not break a committed notebook whose check cell's output is checked."""
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns((ROOT / "nbval_sanitize.cfg").read_text())

    def sanitize(text):
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    before = "Exercise 04.1: correct!\n"
    after = before + "Why: In graph mode a Python attribute is\n     a constant.\n"
    assert sanitize(after) == sanitize(before) == before
    assert sanitize("Exercise 04.1: not yet. Why: no.\n") == "Exercise 04.1: not yet. Why: no.\n"


def test_explanations_are_not_in_plain_text_in_the_package():
    sources = "\n".join(path.read_text() for path in (ROOT / "course_lib").rglob("*.py"))
    for exercise_id, task in EXERCISES.items():
        if task.why:
            text = task.explanation()
            assert len(text) > 40, f"{exercise_id}: the explanation should be a sentence or more"
            assert text[:40] not in sources, f"{exercise_id}: the explanation is readable in course_lib"


def _exercise_texts():
    """Exercise id -> the markdown cell that states it in its notebook."""
    texts = {}
    for notebook in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            source = "".join(cell["source"])
            match = re.match(r"\*\*Exercise (\d\d\.\d)\*\*", source)
            if cell["cell_type"] == "markdown" and match:
                texts[match[1]] = source
    return texts


def test_every_exercise_has_a_difficulty_and_an_estimated_time():
    missing = [i for i, task in EXERCISES.items() if task.difficulty is None or task.minutes is None]
    assert not missing, f"add difficulty= and minutes= to @exercise of {missing}"


def test_every_why_question_gets_an_explanation_after_a_correct_answer():
    asking = [i for i, text in _exercise_texts().items() if re.search(r"\bwhy\b", text, re.I)]
    assert asking, "some exercises ask why"
    missing = [i for i in asking if not EXERCISES[i].why]
    assert not missing, f"{missing} ask 'why?' but have no why= explanation in the exercise bank"


def test_the_notebook_states_the_same_difficulty_and_time_as_the_bank():
    """Where a notebook shows ★ and minutes next to an exercise, they agree with the bank."""
    for exercise_id, text in _exercise_texts().items():
        first_line = text.split("—")[0]
        stars = re.search(r"★+", first_line)
        minutes = re.search(r"(\d+)\s*min", first_line)
        task = EXERCISES[exercise_id]
        if stars:
            assert stars[0] == task.stars, exercise_id
        if minutes:
            assert int(minutes[1]) == task.minutes, exercise_id
