"""Exercises that check themselves: ``check("03.1", answer)`` says "correct" or what is wrong, never the solution.

Each lesson registers its exercises with ``@exercise("NN.k", "one-line task")`` on a checker that receives the
learner's answer and raises ``Incorrect("hint")`` when it is wrong. Checkers compute the truth themselves
(from course_lib and the embedded data), so a learner cannot pass by copying a printed number from elsewhere.
Solutions live in ``solutions/`` and in the notebooks' cells tagged ``solution`` (instructor edition only).
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

__all__ = ["Incorrect", "Exercise", "exercise", "check", "registered", "expect", "expect_close", "expect_type"]


class Incorrect(Exception):
    """Raised by a checker: the message tells the learner what is wrong (shape, value, missing step)."""


@dataclass(frozen=True)
class Exercise:
    id: str
    task: str
    checker: Callable


_REGISTRY: dict[str, Exercise] = {}
#: Modules whose import registers the exercises of lessons (one per lesson group).
_EXERCISE_MODULES = ("course_lib.exercise_bank",)


def exercise(exercise_id: str, task: str):
    """Decorator: register ``checker(answer)`` under ``exercise_id`` ("NN.k", NN = lesson number)."""
    if not (isinstance(exercise_id, str) and len(exercise_id.split(".")) == 2
            and all(part.isdigit() for part in exercise_id.split("."))):
        raise ValueError(f"exercise ids look like '03.1' (lesson.number), got {exercise_id!r}.")

    def register(checker):
        if exercise_id in _REGISTRY:
            raise ValueError(f"exercise {exercise_id!r} is registered twice.")
        _REGISTRY[exercise_id] = Exercise(exercise_id, task, checker)
        return checker

    return register


def registered() -> dict[str, Exercise]:
    """All exercises, by id (importing the exercise bank on first use)."""
    for module in _EXERCISE_MODULES:
        importlib.import_module(module)
    return dict(sorted(_REGISTRY.items()))


def check(exercise_id: str, answer) -> bool:
    """Check ``answer`` for exercise ``exercise_id``; print the verdict and return True when correct."""
    exercises = registered()
    if exercise_id not in exercises:
        raise KeyError(f"There is no exercise {exercise_id!r}. Known: {', '.join(exercises)}.")
    task = exercises[exercise_id]
    if answer is Ellipsis:
        print(f"Exercise {exercise_id}: not answered yet — replace the `...` with your answer, then run this again.")
        return False
    try:
        task.checker(answer)
    except Incorrect as wrong:
        print(f"Exercise {exercise_id}: not yet. {wrong}")
        return False
    print(f"Exercise {exercise_id}: correct!")
    return True


# ------------------------------------------------------------------------- helpers for writing checkers
def expect_type(answer, kinds, what: str):
    """Raise ``Incorrect`` unless ``answer`` is one of ``kinds`` (bool is never accepted as a number)."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(answer, bool) and bool not in kinds or not isinstance(answer, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise Incorrect(f"{what} should be a {names}, but your answer is a {type(answer).__name__} ({answer!r}).")


def expect(condition: bool, hint: str):
    """Raise ``Incorrect(hint)`` unless ``condition`` holds."""
    if not condition:
        raise Incorrect(hint)


def expect_close(answer, truth, what: str, rel=1e-4, abs_=1e-6, hint: str = ""):
    """Number or array ``answer`` must match ``truth`` (shape first, then values) without revealing it."""
    if isinstance(truth, (int, float)) and not isinstance(truth, bool):
        expect_type(answer, (int, float, np.integer, np.floating), what)
        if not math.isclose(float(answer), float(truth), rel_tol=rel, abs_tol=abs_):
            direction = "too large" if float(answer) > float(truth) else "too small"
            raise Incorrect(f"{what} is {direction}. {hint}".strip())
        return
    answer_array = np.asarray(answer.asnumpy() if hasattr(answer, "asnumpy") else answer)
    truth_array = np.asarray(truth)
    if answer_array.shape != truth_array.shape:
        raise Incorrect(f"{what} should have shape {truth_array.shape}, yours has shape {answer_array.shape}.")
    if not np.allclose(answer_array, truth_array, rtol=rel, atol=abs_, equal_nan=True):
        wrong = int((~np.isclose(answer_array, truth_array, rtol=rel, atol=abs_, equal_nan=True)).sum())
        raise Incorrect(f"{what}: {wrong} of {truth_array.size} values differ from the expected result. "
                        f"{hint}".strip())
