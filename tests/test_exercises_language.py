"""The exercise checker speaks the notebook's language: Chinese in the zh edition (notebooks/zh/), else English."""
import ast
import os
import re
import string
import subprocess
import sys
from pathlib import Path

import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib import i18n
from course_lib.exercises import Incorrect, check, exercise, expect, explain, hide, reveal
from course_lib.exercises import engine as exercises
from course_lib.i18n import N_, _, language, set_language

ROOT = Path(__file__).resolve().parent.parent
BANK_FOLDER = ROOT / "course_lib" / "exercises"


@pytest.fixture
def toy(monkeypatch):
    """Two exercises of a lesson 98 that does not exist: one whose texts the catalog translates, one it does not."""
    monkeypatch.setattr(exercises, "_REGISTRY", dict(exercises.registered()))
    monkeypatch.setattr(exercises, "_SOLVED", set())
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.chdir(ROOT)
    set_language(None)
    monkeypatch.setitem(i18n._CATALOG_CACHE, "zh", {**i18n._catalog(), "Give 2.": "给出 2。",
                                                    hide("Because one plus one is two."): hide("因为一加一等于二。"),
                                                    "Too large by one.": "大了一。"})

    @exercise("98.1", N_("Give 2."), why=N_(hide("Because one plus one is two.")))
    def check_98_1(answer):
        expect(answer != 3, _("Too large by one."))
        expect(answer == 2, _("Not two."))

    @exercise("98.2", N_("Give 1."), why=N_(hide("Only English here.")))
    def check_98_2(answer):
        expect(answer == 1, _("Not one."))

    yield
    set_language(None)


def test_english_by_default(toy, capsys):
    assert language() == "en"
    assert check("98.1", 2) is True
    assert capsys.readouterr().out == "Exercise 98.1: correct!\nWhy: Because one plus one is two.\n"
    assert check("98.1", 3) is False
    assert capsys.readouterr().out == "Exercise 98.1: not yet. Too large by one.\n"
    assert exercises.registered()["98.1"].shown_task() == "Give 2."


def test_chinese_framing_hints_and_explanation(toy, capsys):
    set_language("zh")
    assert check("98.1", ...) is False
    assert capsys.readouterr().out.startswith("练习 98.1：尚未作答。")
    explain("98.1")
    assert "答对之后 explain() 才会解释" in capsys.readouterr().out
    assert check("98.1", 3) is False
    assert capsys.readouterr().out == "练习 98.1：还不对。大了一。\n"
    assert check("98.1", 5) is False  # a hint the catalog lacks: the English one (messages_catalog.py check fails)
    assert capsys.readouterr().out == "练习 98.1：还不对。Not two.\n"
    assert check("98.1", 2) is True
    assert capsys.readouterr().out == "练习 98.1：正确！\n原因：因为一加一等于二。\n"
    explain("98.1")
    assert capsys.readouterr().out == "原因：因为一加一等于二。\n"
    assert exercises.registered()["98.1"].shown_task() == "给出 2。"
    assert exercises.catalogue("98")[0]["task"] == "给出 2。"


def test_chinese_without_a_chinese_explanation_falls_back_to_english(toy, capsys):
    set_language("zh")
    assert check("98.2", 1) is True
    note = _(exercises.NO_TRANSLATION)
    assert note == "（暂无中文版，以下为英文原文）"
    assert capsys.readouterr().out == f"练习 98.2：正确！\n原因：{note}Only English here.\n"
    assert exercises.registered()["98.2"].shown_task() == "Give 1."


def test_a_chinese_explanation_that_is_not_encoded_is_a_clear_error(toy, monkeypatch):
    monkeypatch.setitem(i18n._CATALOG_CACHE["zh"], hide("Only English here."), "没有编码")
    set_language("zh")
    with pytest.raises(ValueError, match=r"course_lib\.po 中练习 98\.2 的译文解释不是编码后的文本。修正："):
        exercises.registered()["98.2"].explanation()
    set_language("en")
    assert exercises.registered()["98.2"].explanation() == "Only English here."


def test_why_must_be_encoded_and_reveal_decodes(toy):
    with pytest.raises(ValueError, match="why= of exercise 98.3 must be encoded"):
        exercise("98.3", "x", why="不是编码")(lambda a: None)
    assert reveal(hide("一加一  等于二")) == "一加一 等于二"
    with pytest.raises(ValueError, match="is not an encoded explanation"):
        reveal("not base64!")


def test_hide_and_reveal_on_the_command_line():
    run = [sys.executable, "-m", "course_lib.exercises"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    hidden = subprocess.run(run + ["hide", "Because", "二"], capture_output=True, text=True, check=True, env=env,
                            cwd=ROOT).stdout
    assert hidden.startswith('why=N_("') and hidden.rstrip().endswith('"),')
    encoded = "".join(re.findall(r'"([^"]*)"', hidden))
    shown = subprocess.run(run + ["reveal", encoded], capture_output=True, text=True, check=True, env=env,
                           cwd=ROOT).stdout
    assert shown == "Because 二\n"


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


def _in(lang, function):
    set_language(lang)
    try:
        return function()
    finally:
        set_language(None)


# Each exercise's solution and wrong answers, in Chinese: tests/test_exercises.py (one check per answer).


def _bank_sources():
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(BANK_FOLDER.glob("*.py"))}


def test_the_bank_has_no_inline_translation():
    """One translation system: the exercise texts are in the catalog, none is written in Chinese in the source, and
    no checker passes a second-language text (the old zh=, what_zh=, task_zh= keywords are gone)."""
    for name, source in _bank_sources().items():
        code = ast.parse(source)
        texts = [node.value for node in ast.walk(code) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 and node is not (code.body[0].value if isinstance(code.body[0], ast.Expr) else None)]
        assert not [text for text in texts if CJK.search(text)], f"{name}: Chinese text outside the catalog"
        keywords = {k.arg for node in ast.walk(code) if isinstance(node, ast.Call) for k in node.keywords}
        assert not keywords & {"zh", "what_zh", "hint_zh", "task_zh", "why_zh"}, name


def _is_translated(node) -> bool:
    """``_("...")``, ``_("...").format(...)``, ``_(variable)``, or a ``what`` argument passed on (a name)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        node = node.func.value
    return (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_") or isinstance(node, ast.Name)


def test_every_hint_of_the_bank_goes_through_the_catalog():
    """Also the branches no listed wrong answer reaches: every hint of Incorrect/expect and every ``what``/``hint`` of
    expect_type/expect_close is built with ``_()`` (translated when the check runs), every task with ``N_()``."""
    untranslated = []
    for name, source in _bank_sources().items():
        if not name.startswith("lesson_"):
            continue
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            function, args = node.func.id, node.args
            keywords = {k.arg: k.value for k in node.keywords}
            checked = {"Incorrect": args[:1], "expect": args[1:2], "expect_type": args[2:3],
                       "expect_close": args[2:3] + [keywords[k] for k in ("hint",) if k in keywords]}.get(function, [])
            untranslated += [f"{name}:{node.lineno} {function}" for arg in checked if not _is_translated(arg)]
            if function == "exercise":
                marked = [args[1]] + [keywords[k] for k in ("why",) if k in keywords]
                untranslated += [f"{name}:{node.lineno} exercise" for arg in marked
                                 if not (isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "N_")]
    assert not untranslated, f"not built with _() / N_(): {untranslated}"


def _exercise_entries():
    from tools.messages_catalog import extract, load

    catalog = load()
    for message in extract():
        if message.id and any(path.startswith("course_lib/exercises/") for path, _line in message.locations):
            yield message, catalog.get(message.id)


def test_every_exercise_text_has_its_chinese_entry_with_the_same_placeholders():
    def fields(text):
        return {field for _text, field, _spec, _conversion in string.Formatter().parse(text) if field is not None}

    entries = list(_exercise_entries())
    assert len(entries) > 200
    for message, entry in entries:
        assert entry is not None and entry.string and not entry.fuzzy, f"no Chinese for {message.id!r}"
        assert fields(entry.string) <= fields(message.id), (message.id, entry.string)


def test_the_chinese_explanations_are_encoded_in_the_catalog_too():
    """The Chinese "why" texts are no more readable in the .po than the English ones in the source."""
    po_text = i18n.CATALOG.read_text(encoding="utf-8")
    whys = [task for task in BANK.values() if task.why]
    assert whys
    for task in whys:
        chinese = _in("zh", task.explanation)
        assert CJK.search(chinese) and chinese[:20] not in po_text, task.id
        assert task.explanation()[:40] not in po_text, task.id


def test_helpers_give_chinese_hints(monkeypatch):
    monkeypatch.setitem(i18n._CATALOG_CACHE, "zh", {**i18n._catalog(), "The mode": "模式", "The loss": "损失",
                                                    "Compute it again.": "再算一遍。", "The vector": "向量"})
    set_language("zh")
    try:
        with pytest.raises(Incorrect) as info:
            exercises.expect_type("3", int, _("The mode"))
        assert str(info.value) == "模式应为 int，而你给出的是 str（'3'）。"
        with pytest.raises(Incorrect) as info:
            exercises.expect_type(3, (float, str), _("The mode"))
        assert str(info.value) == "模式应为 float 或 str，而你给出的是 int（3）。"
        with pytest.raises(Incorrect) as info:
            exercises.expect_close(3.0, 2.0, _("The loss"), hint=_("Compute it again."))
        assert str(info.value) == "损失偏大。再算一遍。"
        with pytest.raises(Incorrect) as info:
            exercises.expect_close(1.0, 2.0, _("The loss"))
        assert str(info.value) == "损失偏小。"
        with pytest.raises(Incorrect) as info:
            exercises.expect_close([1, 2, 3], [1, 2], _("The vector"))
        assert str(info.value) == "向量的形状应为 (2,)，你的形状是 (3,)。"
        with pytest.raises(Incorrect) as info:
            exercises.expect_close([1, 5], [1, 2], _("The vector"))
        assert str(info.value) == "向量：2 个值中有 1 个与预期结果不同。" and "2]" not in str(info.value)
        assert exercises.too_many_or_few(3, 2) == "偏多" and exercises.too_many_or_few(1, 2) == "偏少"
    finally:
        set_language(None)
    with pytest.raises(Incorrect, match=r"^The loss is too small\.$"):
        exercises.expect_close(1.0, 2.0, _("The loss"))
    assert exercises.too_many_or_few(3, 2) == "too many"


def test_progress_summary_and_catalogue_speak_chinese(tmp_path, capsys):
    progress_file = tmp_path / "progress.jsonl"
    first = next(iter(BANK))
    set_language("zh")
    try:
        exercises.print_summary(first.split(".")[0], path=progress_file)
        out = capsys.readouterr().out
        assert "未开始" in out and f"已完成 0/{len(exercises.catalogue(first.split('.')[0]))} 道练习" in out
        exercises.print_catalogue(first.split(".")[0])
        out = capsys.readouterr().out
        assert "分钟" in out and "共 " in out and CJK.search(out.splitlines()[0])
    finally:
        set_language(None)
