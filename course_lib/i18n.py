"""Which language the learner reads: ``"en"`` or ``"zh"`` (Chinese, 中文). Every part of course_lib that speaks to
the learner asks ``language()``: the exercise checks, and the messages of course_lib's errors.

Chinese when ``set_language("zh")`` was called, else when the environment variable ``COURSE_LANG`` starts with
``zh`` (``python course.py lab-zh`` sets it), else when the kernel runs in ``notebooks/zh/`` or in the Chinese
student edition ``student/zh/`` (Jupyter starts a kernel in its notebook's folder); English otherwise.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["LANGUAGES", "CATALOG", "language", "set_language", "_", "N_"]

LANGUAGES = ("en", "zh")
_LANGUAGE: str | None = None  # set by set_language(); None = detect


def set_language(lang: str | None) -> None:
    """Make ``check``/``explain`` speak ``"zh"`` (Chinese) or ``"en"``; ``None`` goes back to detection."""
    global _LANGUAGE
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(_("language must be one of {choices} (or None to detect it), got {value!r}. Fix: "
                           "set_language('zh') for Chinese, set_language('en') for English.").format(
            choices=LANGUAGES, value=lang))
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


# ------------------------------------------------------------------------------------------- messages
#: course_lib's one message catalog (gettext .po, Babel reads it): the Chinese text of every message that course_lib
#: speaks to a learner (errors, exercise tasks and hints). ``python tools/messages_catalog.py update`` adds new
#: messages, marks changed ones fuzzy; ``check`` fails on an untranslated or fuzzy entry.
CATALOG = Path(__file__).resolve().parent / "locale" / "zh" / "LC_MESSAGES" / "course_lib.po"
_CATALOG_CACHE: dict = {}


def _catalog() -> dict:
    """msgid -> Chinese msgstr for every translated, non-fuzzy entry of ``CATALOG`` (read once per process)."""
    if "zh" not in _CATALOG_CACHE:
        table = {}
        try:
            from babel.messages.pofile import read_po

            with CATALOG.open("rb") as handle:
                catalog = read_po(handle, locale="zh_CN")
            table = {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy}
        except (OSError, ImportError):  # no catalog or no Babel: English, as documented
            table = {}
        _CATALOG_CACHE["zh"] = table
    return _CATALOG_CACHE["zh"]


def _(message: str) -> str:
    """``message`` in the learner's language: its Chinese text from ``CATALOG`` when ``language()`` is ``"zh"`` and
    a translation exists, else ``message`` itself. Mark a literal for the catalog by writing it inside ``_(...)``;
    values go in with ``.format`` afterwards (``_("lr must be > 0, got {lr!r}.").format(lr=lr)``), never f-strings,
    so that the catalog's key is the same text every time."""
    if language() != "zh":
        return message
    return _catalog().get(message, message)


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it now: it is translated later, when it is shown, with
    ``_(message)`` (gettext's no-op marker). For texts written at import time, e.g. an exercise's task."""
    return message
