"""For learners: the exercises that check themselves (``from course_lib.exercises import check``).

- ``engine.py``: ``check``, ``explain``, ``@exercise`` and the helpers the checkers use;
- ``lesson_00.py`` … ``lesson_09.py``: the checkers of each lesson's exercises (imported on first ``check``);
- ``progress.py``: the learner's progress file that every ``check`` appends to.

Their texts (tasks, hints, explanations) are in course_lib's message catalog, ``course_lib/locale/``, with the
messages of course_lib's errors. ``python -m course_lib.exercises progress`` prints your own progress; ``… list`` every
exercise.
"""
from course_lib.exercises.engine import (
                                         Incorrect,
                                         catalogue,
                                         check,
                                         exercise,
                                         expect,
                                         expect_close,
                                         expect_type,
                                         explain,
                                         first_line,
                                         hide,
                                         print_catalogue,
                                         print_summary,
                                         registered,
                                         reveal,
                                         too_many_or_few,
)

__all__ = ["Incorrect", "catalogue", "check", "exercise", "expect", "expect_close", "expect_type", "explain",
           "first_line", "hide", "print_catalogue", "print_summary", "registered", "reveal", "too_many_or_few"]
