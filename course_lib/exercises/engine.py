"""Exercises that check themselves: ``check("03.1", answer)`` says "correct" or what is wrong, never the solution.

Each lesson registers its exercises with ``@exercise("NN.k", "one-line task")`` on a checker that receives the
learner's answer and raises ``Incorrect("hint")`` when it is wrong. Checkers compute the truth themselves
(from course_lib and the embedded data), so a learner cannot pass by copying a printed number from elsewhere.
Solutions live in ``solutions/`` and in the notebooks' cells tagged ``solution`` (instructor edition only).

Optional keywords of ``@exercise``:
- ``why=``: the explanation of the exercise's "why?" part, *encoded* (base64 of the UTF-8 text, made with
  ``python -m course_lib.exercises hide "text"``), so that nobody reads it by accident in the source. ``check``
  prints it once the answer is correct, and ``explain("NN.k")`` prints it again after a correct check;
- ``difficulty=``: 1, 2 or 3 (or "★", "★★", "★★★");
- ``minutes=``: the estimated time a first-time solver needs, in minutes.
``catalogue()`` lists every exercise with these (``print_catalogue()`` as a table).

Language (中文版): ``check``/``explain`` speak the notebook's language. Chinese when ``set_language("zh")`` was
called, else when the environment variable ``COURSE_LANG`` starts with ``zh`` (``make lab-zh`` sets it), else when
the kernel runs in ``notebooks/zh/`` or in the Chinese student edition ``build/student/zh/`` (Jupyter starts a
kernel in its notebook's folder); English otherwise. In Chinese the fixed words are Chinese, and so are an
exercise's task, hints and explanation where a Chinese text exists: ``@exercise(..., task_zh="…",
why_zh=hide("…"))`` and ``Incorrect("English hint", zh="中文提示")`` (or ``expect(condition, hint, zh=...)``;
``expect_type``/``expect_close`` take ``what_zh=``, and ``hint_zh=``). Where none exists the English text is shown,
after a note saying so.
"""
from __future__ import annotations

import base64
import binascii
import importlib
import math
import pkgutil
import textwrap
from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path

import numpy as np

from course_lib.exercises import progress
from course_lib.i18n import language

__all__ = ["Incorrect", "Exercise", "exercise", "check", "explain", "registered", "catalogue", "print_catalogue",
           "print_summary", "hide", "expect", "expect_close", "expect_type"]

STARS = {1: "★", 2: "★★", 3: "★★★"}


class Incorrect(Exception):
    """Raised by a checker: the message tells the learner what is wrong (shape, value, missing step).

    ``zh=`` is the same hint in Chinese, shown to learners of the Chinese edition (see ``language``)."""

    def __init__(self, hint: str = "", *, zh: str = ""):
        super().__init__(hint)
        self.zh = zh


@dataclass(frozen=True)
class Exercise:
    id: str
    task: str
    checker: Callable
    why: str = ""                   # encoded (see ``hide``); "" when the exercise asks no "why"
    difficulty: int | None = None   # 1, 2 or 3
    minutes: int | None = None      # estimated minutes for a first-time solver
    task_zh: str = ""               # the task in Chinese ("" = none yet)
    why_zh: str = ""                # the explanation in Chinese, encoded like ``why`` ("" = none yet)

    @property
    def stars(self) -> str:
        return STARS.get(self.difficulty, "")

    def explanation(self) -> str:
        """The decoded "why" explanation ("" when there is none)."""
        return _reveal(self.why) if self.why else ""

    def explanation_zh(self) -> str:
        """The decoded Chinese "why" explanation ("" when there is none)."""
        return _reveal(self.why_zh) if self.why_zh else ""


_REGISTRY: dict[str, Exercise] = {}
_SOLVED: set[str] = set()
#: Modules whose import registers the exercises of lessons (one per lesson group).
#: Chinese where the English text has no Chinese version yet (the learner still gets the English one).
NO_ZH = "（暂无中文版，以下为英文原文）"


def hide(text: str) -> str:
    """Encode an explanation for ``@exercise(why=...)``: base64 of its UTF-8 bytes (not secret, just unreadable)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("hide() needs the explanation as a non-empty string.")
    return base64.b64encode(" ".join(text.split()).encode("utf-8")).decode("ascii")


def _reveal(encoded: str) -> str:
    return base64.b64decode("".join(encoded.split()), validate=True).decode("utf-8")


def _difficulty(value) -> int | None:
    if value is None:
        return None
    for level, stars in STARS.items():
        if value == stars or (isinstance(value, int) and not isinstance(value, bool) and value == level):
            return level
    raise ValueError(f"difficulty is 1, 2 or 3 (or '★', '★★', '★★★'), got {value!r}.")


def exercise(exercise_id: str, task: str, *, why: str = "", difficulty=None, minutes: int | None = None,
             task_zh: str = "", why_zh: str = ""):
    """Decorator: register ``checker(answer)`` under ``exercise_id`` ("NN.k", NN = lesson number).

    ``why`` is the encoded explanation (``hide(text)``), ``difficulty`` 1–3 stars, ``minutes`` the estimated time;
    ``task_zh`` and ``why_zh`` (encoded too) are their Chinese versions, for the Chinese edition.
    """
    if not (isinstance(exercise_id, str) and len(exercise_id.split(".")) == 2
            and all(part.isdigit() for part in exercise_id.split("."))):
        raise ValueError(f"exercise ids look like '03.1' (lesson.number), got {exercise_id!r}.")
    for name, value in (("why", why), ("why_zh", why_zh)):
        if value:
            try:
                _reveal(value)
            except (binascii.Error, UnicodeDecodeError, ValueError):
                raise ValueError(f"{name}= of exercise {exercise_id} must be encoded: paste the output of "
                                 f"`python -m course_lib.exercises hide \"your explanation\"`.") from None
    if why_zh and not why:
        raise ValueError(f"exercise {exercise_id} has why_zh= but no why=: the English explanation comes first.")
    level = _difficulty(difficulty)
    if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 < minutes <= 180):
        raise ValueError(f"minutes of exercise {exercise_id} is a whole number of minutes (1-180), got {minutes!r}.")

    def register(checker):
        if exercise_id in _REGISTRY:
            raise ValueError(f"exercise {exercise_id!r} is registered twice.")
        _REGISTRY[exercise_id] = Exercise(exercise_id, task, checker, "".join(why.split()), level, minutes,
                                          task_zh, "".join(why_zh.split()))
        return checker

    return register


def _import_lessons() -> None:
    """Import every ``course_lib/exercises/lesson_NN.py``: each registers its lesson's exercises."""
    import course_lib.exercises as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("lesson_"):
            importlib.import_module(f"{package.__name__}.{module.name}")


def registered() -> dict[str, Exercise]:
    """All exercises, by id (importing the exercise bank on first use)."""
    _import_lessons()
    return dict(sorted(_REGISTRY.items()))


def _get(exercise_id: str) -> Exercise:
    exercises = registered()
    if exercise_id not in exercises:
        raise KeyError(f"There is no exercise {exercise_id!r}. Known: {', '.join(exercises)}.")
    return exercises[exercise_id]


def _print_why(task: Exercise) -> None:
    if language() == "zh":
        text = task.explanation_zh() or NO_ZH + task.explanation()
        print(textwrap.fill(text, width=60, initial_indent="原因：", subsequent_indent="      "))
        return
    print(textwrap.fill(task.explanation(), width=100, initial_indent="Why: ", subsequent_indent="     "))


def check(exercise_id: str, answer) -> bool:
    """Check ``answer`` for exercise ``exercise_id``; print the verdict and return True when correct.

    When the answer is correct and the exercise asks "why?", the explanation follows the verdict. Every check is
    recorded in the learner's progress file (``course_lib.exercises.progress``: id, verdict, attempt, time; never
    the answer).
    """
    task = _get(exercise_id)
    zh = language() == "zh"
    if answer is Ellipsis:
        print(f"练习 {exercise_id}：尚未作答。把 `...` 换成你的答案，再运行本单元。" if zh else
              f"Exercise {exercise_id}: not answered yet — replace the `...` with your answer, then run this again.")
        progress.record(exercise_id, "unanswered")
        return False
    try:
        task.checker(answer)
    except Incorrect as wrong:
        if zh:
            print(f"练习 {exercise_id}：还不对。{getattr(wrong, 'zh', '') or NO_ZH + str(wrong)}")
        else:
            print(f"Exercise {exercise_id}: not yet. {wrong}")
        progress.record(exercise_id, "not yet", hint=str(wrong))
        return False
    _SOLVED.add(exercise_id)
    progress.record(exercise_id, "correct")
    print(f"练习 {exercise_id}：正确！" if zh else f"Exercise {exercise_id}: correct!")
    if task.why:
        _print_why(task)
    return True


def explain(exercise_id: str) -> None:
    """Print the explanation of an exercise's "why?" part — only after ``check`` accepted an answer (this kernel)."""
    task = _get(exercise_id)
    zh = language() == "zh"
    if not task.why:
        print(f"练习 {exercise_id} 没有“为什么”部分：check 的结果就是全部反馈。" if zh else
              f"Exercise {exercise_id} asks no \"why?\": its check is all the feedback there is.")
    elif exercise_id not in _SOLVED:
        print(f"练习 {exercise_id}：答对之后 explain() 才会解释“为什么”。请先运行 check(\"{exercise_id}\", 你的答案)"
              f"（在当前内核中；重启内核后需重新检查）。" if zh else
              f"Exercise {exercise_id}: explain() answers the \"why?\" only after a correct answer. Run "
              f"check(\"{exercise_id}\", your_answer) first (in this kernel: a restart forgets it).")
    else:
        _print_why(task)


def catalogue(lesson: str | None = None) -> list[dict]:
    """Every exercise (or those of ``lesson``, e.g. "04"): id, task, difficulty (stars), minutes, has_why."""
    rows = []
    for exercise_id, task in registered().items():
        if lesson is not None and exercise_id.split(".")[0] != str(lesson).zfill(2):
            continue
        rows.append({"id": exercise_id, "task": task.task, "difficulty": task.stars, "minutes": task.minutes,
                     "has_why": bool(task.why)})
    return rows


def print_catalogue(lesson: str | None = None) -> None:
    """``catalogue()`` as a table, with the total estimated minutes."""
    rows = catalogue(lesson)
    for row in rows:
        minutes = f"{row['minutes']:>3} min" if row["minutes"] else "  ? min"
        why = "why" if row["has_why"] else "   "
        print(f"{row['id']}  {row['difficulty']:<3}  {minutes}  {why}  {row['task']}")
    total = sum(row["minutes"] or 0 for row in rows)
    print(f"{len(rows)} exercises, {total} minutes estimated")


# ------------------------------------------------------------------------- helpers for writing checkers
def expect_type(answer, kinds, what: str, what_zh: str = ""):
    """Raise ``Incorrect`` unless ``answer`` is one of ``kinds`` (bool is never accepted as a number).

    ``what_zh``: ``what`` in Chinese, for the Chinese hint (none without it)."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(answer, bool) and bool not in kinds or not isinstance(answer, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise Incorrect(f"{what} should be a {names}, but your answer is a {type(answer).__name__} ({answer!r}).",
                        zh=what_zh and f"{what_zh}应为 {names.replace(' or ', ' 或 ')}，而你给出的是 "
                                       f"{type(answer).__name__}（{answer!r}）。")


def expect(condition: bool, hint: str, zh: str = ""):
    """Raise ``Incorrect(hint, zh=zh)`` unless ``condition`` holds (``zh``: the hint in Chinese, optional)."""
    if not condition:
        raise Incorrect(hint, zh=zh)


def expect_close(answer, truth, what: str, rel=1e-4, abs_=1e-6, hint: str = "", what_zh: str = "",
                 hint_zh: str = ""):
    """Number or array ``answer`` must match ``truth`` (shape first, then values) without revealing it.

    ``what_zh`` and ``hint_zh``: ``what`` and ``hint`` in Chinese, for the Chinese hint (none without ``what_zh``)."""
    if isinstance(truth, (int, float)) and not isinstance(truth, bool):
        expect_type(answer, (int, float, np.integer, np.floating), what, what_zh)
        if not math.isclose(float(answer), float(truth), rel_tol=rel, abs_tol=abs_):
            large = float(answer) > float(truth)
            raise Incorrect(f"{what} is {'too large' if large else 'too small'}. {hint}".strip(),
                            zh=what_zh and f"{what_zh}{'偏大' if large else '偏小'}。{hint_zh}")
        return
    answer_array = np.asarray(answer.asnumpy() if hasattr(answer, "asnumpy") else answer)
    truth_array = np.asarray(truth)
    if answer_array.shape != truth_array.shape:
        raise Incorrect(f"{what} should have shape {truth_array.shape}, yours has shape {answer_array.shape}.",
                        zh=what_zh and f"{what_zh}的形状应为 {truth_array.shape}，你的形状是 {answer_array.shape}。")
    if not np.allclose(answer_array, truth_array, rtol=rel, atol=abs_, equal_nan=True):
        wrong = int((~np.isclose(answer_array, truth_array, rtol=rel, atol=abs_, equal_nan=True)).sum())
        raise Incorrect(f"{what}: {wrong} of {truth_array.size} values differ from the expected result. "
                        f"{hint}".strip(),
                        zh=what_zh and f"{what_zh}：{truth_array.size} 个值中有 {wrong} 个与预期结果不同。{hint_zh}")


def print_summary(lesson: str | None = None, path=None) -> None:
    """Print your own progress (all lessons, or ``lesson``, e.g. "03"), read from your progress file."""
    path = Path(path) if path is not None else progress.progress_file()
    attempts, skipped = progress.read_attempts(path)
    done = {row["exercise"]: row for row in progress.summary(attempts, lesson)}
    zh = language() == "zh"
    marks = {"solved": "✓", "trying": "…", "not started": " "}
    words = ({"solved": "已完成", "trying": "尚未答对", "not started": "未开始"} if zh else
             {"solved": "solved", "trying": "not yet", "not started": "not started"})
    rows = catalogue(lesson)
    for row in rows:
        status = done.get(row["id"], {}).get("status", "not started")
        tries = done.get(row["id"], {}).get("attempts", 0)
        tries_text = (f"{tries} 次尝试" if zh else f"{tries} attempt{'s' * (tries != 1)}") if tries else ""
        print(f"{marks[status]} {row['id']:<6} {words[status]:<12} {tries_text}")
    solved = sum(1 for row in rows if done.get(row["id"], {}).get("status") == "solved")
    print(f"已完成 {solved}/{len(rows)} 道练习（记录在 {path.name}）" if zh else
          f"{solved} of {len(rows)} exercises solved (recorded in {path.name})")
    if skipped:
        print(f"({skipped} unreadable line(s) in {path} were skipped.)")
