"""The exercise checker speaks the notebook's language: Chinese in the zh edition (notebooks/zh/), else English."""
import course_lib  # noqa: F401  (sets env before mindspore)
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.exercises import engine as exercises
from course_lib.exercises import Incorrect, check, exercise, expect, explain, hide
from course_lib.i18n import language, set_language

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def toy(monkeypatch):
    """Two exercises of a lesson 98 that does not exist: one with Chinese texts, one without."""
    monkeypatch.setattr(exercises, "_REGISTRY", dict(exercises.registered()))
    monkeypatch.setattr(exercises, "_SOLVED", set())
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.chdir(ROOT)
    set_language(None)

    @exercise("98.1", "Give 2.", why=hide("Because one plus one is two."), task_zh="给出 2。",
              why_zh=hide("因为一加一等于二。"))
    def _(answer):
        expect(answer != 3, "Too large by one.", zh="大了一。")
        expect(answer == 2, "Not two.")

    @exercise("98.2", "Give 1.", why=hide("Only English here."))
    def _(answer):
        expect(answer == 1, "Not one.")

    yield
    set_language(None)


def test_english_by_default(toy, capsys):
    assert language() == "en"
    assert check("98.1", 2) is True
    assert capsys.readouterr().out == "Exercise 98.1: correct!\nWhy: Because one plus one is two.\n"
    assert check("98.1", 3) is False
    assert capsys.readouterr().out == "Exercise 98.1: not yet. Too large by one.\n"


def test_chinese_framing_hints_and_explanation(toy, capsys):
    set_language("zh")
    assert check("98.1", ...) is False
    assert capsys.readouterr().out.startswith("练习 98.1：尚未作答。")
    explain("98.1")
    assert "答对之后 explain() 才会解释" in capsys.readouterr().out
    assert check("98.1", 3) is False
    assert capsys.readouterr().out == "练习 98.1：还不对。大了一。\n"
    assert check("98.1", 5) is False  # no Chinese hint: the English one, after a note saying so
    assert capsys.readouterr().out == f"练习 98.1：还不对。{exercises.NO_ZH}Not two.\n"
    assert check("98.1", 2) is True
    assert capsys.readouterr().out == "练习 98.1：正确！\n原因：因为一加一等于二。\n"
    explain("98.1")
    assert capsys.readouterr().out == "原因：因为一加一等于二。\n"


def test_chinese_without_a_chinese_explanation_falls_back_to_english(toy, capsys):
    set_language("zh")
    assert check("98.2", 1) is True
    assert capsys.readouterr().out == f"练习 98.2：正确！\n原因：{exercises.NO_ZH}Only English here.\n"
    assert exercises.registered()["98.1"].task_zh == "给出 2。"


def test_language_detection_environment_and_zh_folder(toy, monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_LANG", "zh_CN")
    assert language() == "zh"
    monkeypatch.setenv("COURSE_LANG", "en")
    assert language() == "en"
    monkeypatch.delenv("COURSE_LANG")
    zh = tmp_path / "notebooks" / "zh"
    zh.mkdir(parents=True)
    monkeypatch.chdir(zh)  # where Jupyter starts the kernel of a notebooks/zh/ lesson
    assert language() == "zh"
    student_zh = tmp_path / "build" / "student" / "zh"
    student_zh.mkdir(parents=True)
    monkeypatch.chdir(student_zh)  # the Chinese student edition (tools/make_editions.py)
    assert language() == "zh"
    monkeypatch.chdir(zh)
    set_language("en")  # an explicit choice wins
    assert language() == "en"
    monkeypatch.chdir(tmp_path / "notebooks")
    set_language(None)
    assert language() == "en"
    with pytest.raises(ValueError, match="language must be one of"):
        set_language("fr")


def test_why_zh_must_be_encoded_and_needs_an_english_why(toy):
    with pytest.raises(ValueError, match="why_zh= of exercise 98.3 must be encoded"):
        exercise("98.3", "x", why=hide("a"), why_zh="不是编码")(lambda a: None)
    with pytest.raises(ValueError, match="has why_zh= but no why="):
        exercise("98.4", "x", why_zh=hide("中文"))(lambda a: None)
    assert Incorrect("hint").zh == "" and Incorrect("hint", zh="提示").zh == "提示"


def test_a_kernel_in_notebooks_zh_prints_chinese():
    """As Jupyter runs it: a fresh interpreter whose cwd is notebooks/zh/, no COURSE_LANG."""
    folder = ROOT / "notebooks" / "zh"
    created = not folder.exists()
    folder.mkdir(exist_ok=True)
    try:
        env = {k: v for k, v in os.environ.items() if k != "COURSE_LANG"}
        code = ("from course_lib.exercises import check, registered\n"
                "check(next(iter(registered())), ...)\n")
        out = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                             timeout=300, check=True).stdout
    finally:
        if created:
            folder.rmdir()
    assert out.startswith("练习 ") and "尚未作答" in out


# ------------------------------------------------------------------ the exercise bank itself, in Chinese
CJK = re.compile(r"[\u3400-\u9fff]")
BANK = exercises.registered()


def _solutions(exercise_id):
    return importlib.import_module(f"solutions.lesson_{exercise_id.split('.')[0]}")


@pytest.mark.parametrize("exercise_id", list(BANK))
def test_every_exercise_speaks_chinese(exercise_id, monkeypatch, capsys):
    """In zh mode the wrong answers of tests/test_exercises.py get Chinese hints, the solution Chinese framing and
    the Chinese "why", never the English text after NO_ZH."""
    monkeypatch.setattr(exercises, "_SOLVED", set())
    task = BANK[exercise_id]
    assert CJK.search(task.task_zh), f"{exercise_id} has no task_zh"
    assert bool(task.why_zh) == bool(task.why), f"{exercise_id}: why_zh= goes with why="
    module = _solutions(exercise_id)
    wrong = module.WRONG
    set_language("zh")
    try:
        for answer in (wrong() if callable(wrong) else wrong)[exercise_id]:
            assert check(exercise_id, answer) is False
            out = capsys.readouterr().out
            prefix = f"练习 {exercise_id}：还不对。"
            assert out.startswith(prefix) and exercises.NO_ZH not in out, out
            assert CJK.search(out[len(prefix):]), f"the hint is not Chinese: {out}"
        answer = getattr(module, "solve_" + exercise_id.replace(".", "_"))()
        capsys.readouterr()
        assert check(exercise_id, answer) is True
        verdict, *why = capsys.readouterr().out.strip().split("\n")
        assert verdict == f"练习 {exercise_id}：正确！"
        if task.why:
            assert why[0].startswith("原因：") and exercises.NO_ZH not in "".join(why)
            assert re.sub(r"\s", "", "".join(why))[3:] == re.sub(r"\s", "", task.explanation_zh())
            assert CJK.search(task.explanation_zh())
        else:
            assert not why
    finally:
        set_language(None)


def test_every_hint_of_the_bank_has_a_chinese_version():
    """Also the branches no listed wrong answer reaches: each Incorrect/expect call passes zh=, each expect_type and
    expect_close call passes the Chinese name of what it checks (what_zh)."""
    import ast

    missing = []
    for path in sorted((ROOT / "course_lib" / "exercises").glob("lesson_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            keywords = {k.arg for k in node.keywords}
            name = node.func.id
            if (name in ("Incorrect", "expect") and "zh" not in keywords
                    or name == "expect_type" and len(node.args) < 4 and "what_zh" not in keywords
                    or name == "expect_close" and "what_zh" not in keywords):
                missing.append(f"{path.name}:{node.lineno} {name}")
    assert not missing, f"no Chinese text: {missing}"


def test_helpers_give_chinese_hints_only_when_given_chinese_names():
    with pytest.raises(Incorrect) as info:
        exercises.expect_type("3", int, "The mode", "模式")
    assert info.value.zh == "模式应为 int，而你给出的是 str（'3'）。"
    with pytest.raises(Incorrect) as info:
        exercises.expect_close(3.0, 2.0, "The loss", what_zh="损失", hint_zh="再算一遍。")
    assert info.value.zh == "损失偏大。再算一遍。"
    with pytest.raises(Incorrect) as info:
        exercises.expect_close([1, 2, 3], [1, 2], "The vector", what_zh="向量")
    assert info.value.zh == "向量的形状应为 (2,)，你的形状是 (3,)。"
    with pytest.raises(Incorrect) as info:
        exercises.expect_close([1, 5], [1, 2], "The vector", what_zh="向量")
    assert info.value.zh == "向量：2 个值中有 1 个与预期结果不同。" and "2]" not in info.value.zh
    with pytest.raises(Incorrect) as info:
        exercises.expect_close(1.0, 2.0, "The loss")
    assert info.value.zh == ""  # no Chinese name: check() shows the English hint after NO_ZH
