"""Which language the learner reads: ``"en"`` or ``"zh"`` (Chinese, 中文). Every part of course_lib that speaks to
the learner asks ``language()``: the exercise checks, and the messages of course_lib's errors.

Chinese when ``set_language("zh")`` was called, else when the environment variable ``COURSE_LANG`` starts with
``zh`` (``python course.py lab-zh`` sets it), else when the kernel runs in ``notebooks/zh/`` or in the Chinese
student edition ``student/zh/`` (Jupyter starts a kernel in its notebook's folder); English otherwise.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["LANGUAGES", "language", "set_language"]

LANGUAGES = ("en", "zh")
_LANGUAGE: str | None = None  # set by set_language(); None = detect


def set_language(lang: str | None) -> None:
    """Make ``check``/``explain`` speak ``"zh"`` (Chinese) or ``"en"``; ``None`` goes back to detection."""
    global _LANGUAGE
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"language is one of {LANGUAGES} (or None to detect it), got {lang!r}.")
    _LANGUAGE = lang


def language() -> str:
    """``"zh"`` or ``"en"``: set_language(), else $COURSE_LANG, else "zh" in notebooks/zh/ or student/zh/."""
    if _LANGUAGE is not None:
        return _LANGUAGE
    env = os.environ.get("COURSE_LANG", "").strip().lower()
    if env:
        return "zh" if env.startswith("zh") else "en"
    try:
        cwd = Path.cwd()
    except OSError:  # the folder was deleted under the kernel
        return "en"
    return "zh" if cwd.name == "zh" and cwd.parent.name in ("notebooks", "student") else "en"
