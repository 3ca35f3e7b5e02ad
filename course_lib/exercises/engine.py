"""Exercises that check themselves: ``check("03.1", answer)`` says "correct" or what is wrong, never the solution.

Each lesson registers its exercises with ``@exercise("NN.k", N_("one-line task"))`` on a checker that receives the
learner's answer and raises ``Incorrect(_("hint"))`` when it is wrong. Checkers compute the truth themselves
(from course_lib and the embedded data), so a learner cannot pass by copying a printed number from elsewhere.
Solutions live in ``solutions/`` and in the notebooks' cells tagged ``solution`` (instructor edition only).

Optional keywords of ``@exercise``:
- ``why=N_("...")``: the explanation of the exercise's "why?" part, *encoded* (base64 of the UTF-8 text, made with
  ``python -m course_lib.exercises hide "text"``), so that nobody reads it by accident in the source. ``check``
  prints it once the answer is correct, and ``explain("NN.k")`` prints it again after a correct check;
- ``difficulty=``: 1, 2 or 3 (or "★", "★★", "★★★");
- ``minutes=``: the estimated time a first-time solver needs, in minutes.
``catalogue()`` lists every exercise with these (``print_catalogue()`` as a table).

Language (中文版): ``check``/``explain`` speak the learner's language (``course_lib.i18n.language()``: Chinese in
``notebooks/zh/``, the Chinese student edition, with ``COURSE_LANG=zh`` or ``set_language("zh")``). Every text comes
from course_lib's one message catalog (``course_lib/locale/zh/LC_MESSAGES/course_lib.po``), like course_lib's
error messages:
- the task is marked where it is written, ``@exercise("03.1", N_("task"))``, and translated when it is shown;
- a hint is translated when the check builds it: ``Incorrect(_("shape {shape} ...").format(shape=...))``,
  ``expect(condition, _("hint"))``, ``expect_type(answer, int, _("The mode"))``;
- the encoded explanation is marked too, ``why=N_("base64...")``: its catalog entry is the encoded English
  (msgid) and the encoded Chinese (msgstr) (``python -m course_lib.exercises reveal|hide TEXT`` decodes/encodes).
``python tools/messages_catalog.py update`` adds new texts to the catalog, ``check`` fails on an untranslated one.
A task or explanation without a Chinese text is shown in English, after a note saying so.
"""
from __future__ import annotations

import base64
import binascii
import importlib
import math
import pkgutil
import textwrap
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from course_lib.exercises import progress
from course_lib.i18n import CATALOG, N_, _, language

__all__ = ["Incorrect", "Exercise", "exercise", "check", "explain", "registered", "catalogue", "print_catalogue",
           "print_summary", "hide", "reveal", "expect", "expect_close", "expect_type", "first_line",
           "too_many_or_few"]

STARS = {1: "★", 2: "★★", 3: "★★★"}


class Incorrect(Exception):
    """Raised by a checker: the message tells the learner what is wrong (shape, value, missing step). Build it with
    ``_("...")`` so that it is in the learner's language: ``Incorrect(_("got {n}").format(n=n))``."""


@dataclass(frozen=True)
class Exercise:
    id: str
    task: str                       # in English: the catalog's msgid (``shown_task`` translates it)
    checker: Callable
    why: str = ""                   # encoded English (see ``hide``), the catalog's msgid; "" when it asks no "why"
    difficulty: int | None = None   # 1, 2 or 3
    minutes: int | None = None      # estimated minutes for a first-time solver

    @property
    def stars(self) -> str:
        return STARS.get(self.difficulty, "")

    def shown_task(self) -> str:
        """The task in the learner's language (the English task when the catalog has no translation)."""
        return _(self.task)

    def explanation(self) -> str:
        """The decoded "why" explanation in the learner's language ("" when there is none). Without a translation
        the English one, after a note saying so."""
        if not self.why:
            return ""
        translated = _(self.why)
        if translated == self.why:
            english = _reveal(self.why)
            return english if language() == "en" else _(NO_TRANSLATION) + english
        try:
            return _reveal(translated)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError(_("The translated explanation of exercise {id} in {catalog} is not encoded text. "
                               "Fix: paste the output of `python -m course_lib.exercises hide \"the translated "
                               "explanation\"` as its msgstr.").format(id=self.id, catalog=CATALOG)) from None


_REGISTRY: dict[str, Exercise] = {}
_SOLVED: set[str] = set()
#: The note before an English text that has no translation yet (the learner still gets the English one).
NO_TRANSLATION = N_("(No translation yet; the English original follows.) ")


def hide(text: str) -> str:
    """Encode an explanation for ``@exercise(why=...)``: base64 of its UTF-8 bytes (not secret, just unreadable)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(_("hide() needs the explanation as a non-empty string, got {text!r}.").format(text=text))
    return base64.b64encode(" ".join(text.split()).encode("utf-8")).decode("ascii")


def _reveal(encoded: str) -> str:
    return base64.b64decode("".join(encoded.split()), validate=True).decode("utf-8")


def reveal(encoded: str) -> str:
    """The text of an encoded explanation (``hide``'s inverse), e.g. to translate the msgid of a "why" entry."""
    try:
        return _reveal(encoded)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError(_("{encoded!r} is not an encoded explanation (base64 of UTF-8 text). Fix: copy the whole "
                           "msgid or why= text.").format(encoded=encoded[:40])) from None


def _difficulty(value) -> int | None:
    if value is None:
        return None
    for level, stars in STARS.items():
        if value == stars or (isinstance(value, int) and not isinstance(value, bool) and value == level):
            return level
    raise ValueError(_("difficulty is 1, 2 or 3 (or '★', '★★', '★★★'), got {value!r}.").format(value=value))


def exercise(exercise_id: str, task: str, *, why: str = "", difficulty=None, minutes: int | None = None):
    """Decorator: register ``checker(answer)`` under ``exercise_id`` ("NN.k", NN = lesson number).

    ``task`` is the English task, marked for the catalog where it is written: ``N_("...")``. ``why`` is the encoded
    explanation, ``N_(hide(text))`` pasted as a literal (``python -m course_lib.exercises hide "text"`` prints it),
    ``difficulty`` 1–3 stars, ``minutes`` the estimated time. Their Chinese texts are in the catalog.
    """
    if not (isinstance(exercise_id, str) and len(exercise_id.split(".")) == 2
            and all(part.isdigit() for part in exercise_id.split("."))):
        raise ValueError(_("exercise ids look like '03.1' (lesson.number), got {id!r}.").format(id=exercise_id))
    if why:
        try:
            _reveal(why)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError(_("why= of exercise {id} must be encoded. Fix: paste the output of "
                               "`python -m course_lib.exercises hide \"your explanation\"`.")
                             .format(id=exercise_id)) from None
    level = _difficulty(difficulty)
    if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 < minutes <= 180):
        raise ValueError(_("minutes of exercise {id} is a whole number of minutes (1-180), got {minutes!r}.")
                         .format(id=exercise_id, minutes=minutes))

    def register(checker):
        if exercise_id in _REGISTRY:
            raise ValueError(_("exercise {id!r} is registered twice.").format(id=exercise_id))
        _REGISTRY[exercise_id] = Exercise(exercise_id, task, checker, "".join(why.split()), level, minutes)
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
        raise KeyError(_("There is no exercise {id!r}. Known: {known}.").format(id=exercise_id,
                                                                                known=", ".join(exercises)))
    return exercises[exercise_id]


def _display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal or notebook output (a CJK character takes two)."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _print_why(task: Exercise) -> None:
    prefix = _("Why: ")
    width = 60 if language() == "zh" else 100  # 60 CJK characters are about as wide as 100 Latin ones
    print(textwrap.fill(task.explanation(), width=width, initial_indent=prefix,
                        subsequent_indent=" " * _display_width(prefix)))


def check(exercise_id: str, answer) -> bool:
    """Check ``answer`` for exercise ``exercise_id``; print the verdict and return True when correct.

    When the answer is correct and the exercise asks "why?", the explanation follows the verdict. Every check is
    recorded in the learner's progress file (``course_lib.exercises.progress``: id, verdict, attempt, time; never
    the answer).
    """
    task = _get(exercise_id)
    if answer is Ellipsis:
        print(_("Exercise {id}: not answered yet — replace the `...` with your answer, then run this again.")
              .format(id=exercise_id))
        progress.record(exercise_id, "unanswered")
        return False
    try:
        task.checker(answer)
    except Incorrect as wrong:
        print(_("Exercise {id}: not yet. {hint}").format(id=exercise_id, hint=wrong))
        progress.record(exercise_id, "not yet", hint=str(wrong))
        return False
    _SOLVED.add(exercise_id)
    progress.record(exercise_id, "correct")
    print(_("Exercise {id}: correct!").format(id=exercise_id))
    if task.why:
        _print_why(task)
    return True


def explain(exercise_id: str) -> None:
    """Print the explanation of an exercise's "why?" part — only after ``check`` accepted an answer (this kernel)."""
    task = _get(exercise_id)
    if not task.why:
        print(_("Exercise {id} asks no \"why?\": its check is all the feedback there is.").format(id=exercise_id))
    elif exercise_id not in _SOLVED:
        print(_("Exercise {id}: explain() answers the \"why?\" only after a correct answer. Run "
                "check(\"{id}\", your_answer) first (in this kernel: a restart forgets it).").format(id=exercise_id))
    else:
        _print_why(task)


def catalogue(lesson: str | None = None) -> list[dict]:
    """Every exercise (or those of ``lesson``, e.g. "04"): id, task (in the learner's language), difficulty (stars),
    minutes, has_why."""
    rows = []
    for exercise_id, task in registered().items():
        if lesson is not None and exercise_id.split(".")[0] != str(lesson).zfill(2):
            continue
        rows.append({"id": exercise_id, "task": task.shown_task(), "difficulty": task.stars, "minutes": task.minutes,
                     "has_why": bool(task.why)})
    return rows


def print_catalogue(lesson: str | None = None) -> None:
    """``catalogue()`` as a table, with the total estimated minutes."""
    rows = catalogue(lesson)
    why_mark = _("why")
    for row in rows:
        minutes = _("{minutes:>3} min").format(minutes=row["minutes"] or "?")
        why = why_mark if row["has_why"] else " " * _display_width(why_mark)
        print(f"{row['id']}  {row['difficulty']:<3}  {minutes}  {why}  {row['task']}")
    total = sum(row["minutes"] or 0 for row in rows)
    print(_("{count} exercises, {minutes} minutes estimated").format(count=len(rows), minutes=total))


# ------------------------------------------------------------------------- helpers for writing checkers
def expect_type(answer, kinds, what: str):
    """Raise ``Incorrect`` unless ``answer`` is one of ``kinds`` (bool is never accepted as a number).

    ``what`` names the answer in the learner's language: ``_("The number of steps")``."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(answer, bool) and bool not in kinds or not isinstance(answer, kinds):
        names = _(" or ").join(k.__name__ for k in kinds)
        raise Incorrect(_("{what} should be a {kinds}, but your answer is a {kind} ({answer!r}).")
                        .format(what=what, kinds=names, kind=type(answer).__name__, answer=answer))


def expect(condition: bool, hint: str):
    """Raise ``Incorrect(hint)`` unless ``condition`` holds (``hint``: ``_("...")``, in the learner's language)."""
    if not condition:
        raise Incorrect(hint)


def expect_close(answer, truth, what: str, rel=1e-4, abs_=1e-6, hint: str = ""):
    """Number or array ``answer`` must match ``truth`` (shape first, then values) without revealing it.

    ``what`` and ``hint`` are in the learner's language: ``_("The loss")``."""
    if isinstance(truth, (int, float)) and not isinstance(truth, bool):
        expect_type(answer, (int, float, np.integer, np.floating), what)
        if not math.isclose(float(answer), float(truth), rel_tol=rel, abs_tol=abs_):
            message = _("{what} is too large. {hint}") if float(answer) > float(truth) else _("{what} is too small. "
                                                                                              "{hint}")
            raise Incorrect(message.format(what=what, hint=hint).strip())
        return
    answer_array = np.asarray(answer.asnumpy() if hasattr(answer, "asnumpy") else answer)
    truth_array = np.asarray(truth)
    if answer_array.shape != truth_array.shape:
        raise Incorrect(_("{what} should have shape {shape}, yours has shape {yours}.")
                        .format(what=what, shape=truth_array.shape, yours=answer_array.shape))
    if not np.allclose(answer_array, truth_array, rtol=rel, atol=abs_, equal_nan=True):
        wrong = int((~np.isclose(answer_array, truth_array, rtol=rel, atol=abs_, equal_nan=True)).sum())
        raise Incorrect(_("{what}: {wrong} of {size} values differ from the expected result. {hint}")
                        .format(what=what, wrong=wrong, size=truth_array.size, hint=hint).strip())


def first_line(error: BaseException) -> str:
    """The first line of an error's message ("" when it has none), to quote it in a hint."""
    text = str(error)
    return text.splitlines()[0] if text else ""


def too_many_or_few(value, truth) -> str:
    """"too many" or "too few" (in the learner's language), for a hint about a count."""
    return _("too many") if value > truth else _("too few")


def print_summary(lesson: str | None = None, path=None) -> None:
    """Print your own progress (all lessons, or ``lesson``, e.g. "03"), read from your progress file."""
    path = Path(path) if path is not None else progress.progress_file()
    attempts, skipped = progress.read_attempts(path)
    done = {row["exercise"]: row for row in progress.summary(attempts, lesson)}
    marks = {"solved": "✓", "trying": "…", "not started": " "}
    words = {"solved": _("solved"), "trying": _("not yet"), "not started": _("not started")}
    rows = catalogue(lesson)
    for row in rows:
        status = done.get(row["id"], {}).get("status", "not started")
        tries = done.get(row["id"], {}).get("attempts", 0)
        tries_text = ""
        if tries:
            tries_text = (_("{count} attempt") if tries == 1 else _("{count} attempts")).format(count=tries)
        print(f"{marks[status]} {row['id']:<6} {words[status]:<12} {tries_text}")
    solved = sum(1 for row in rows if done.get(row["id"], {}).get("status") == "solved")
    print(_("{solved} of {total} exercises solved (recorded in {file})").format(solved=solved, total=len(rows),
                                                                                 file=path.name))
    if skipped:
        print(_("({skipped} unreadable line(s) in {path} were skipped.)").format(skipped=skipped, path=path))
