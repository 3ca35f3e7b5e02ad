"""A learner's exercise progress, recorded by ``check()`` so that the learner and an instructor can see it.

Every ``check("03.1", answer)`` appends one line of JSON to the learner's progress file: the exercise id, the
verdict (``correct``, ``not yet``, ``unanswered``), the attempt number, the time (UTC), the learner's name and, for a
wrong answer, the first line of the hint the learner was shown (in the learner's language). The answer itself is never
written.

Where the file is: ``$COURSE_PROGRESS_FILE`` if set, else ``progress/exercises.jsonl`` in the course folder (the
clone); when that folder cannot be written (a read-only USB stick), ``~/.mindspore-course/progress.jsonl``. The file
is append-only: one ``write`` of one line per check, flushed and synced, so kernel restarts, two notebooks checking
at once and a killed kernel leave whole lines (a torn last line is skipped when read, and counted).

The learner's name: ``$COURSE_LEARNER``, else ``$JUPYTERHUB_USER`` (set on a JupyterHub), else the login name.

    python -m course_lib.exercises progress                  # your own summary, lesson by lesson
    python tools/class_progress.py FOLDER... --out class-progress   # an instructor's class table (HTML + CSV)
"""
from __future__ import annotations

import datetime as _dt
import getpass
import json
import os
from dataclasses import dataclass
from pathlib import Path

from course_lib.i18n import _
from course_lib.paths import PROJECT_ROOT

__all__ = ["VERDICTS", "Attempt", "progress_file", "learner_name", "record", "read_attempts", "summary"]

VERDICTS = ("correct", "not yet", "unanswered")
#: The longest hint kept in a record (its first line only): enough to tell which mistake it was.
MAX_HINT_CHARS = 200
_FALLBACK = Path.home() / ".mindspore-course" / "progress.jsonl"
_warned: set[str] = set()


@dataclass(frozen=True)
class Attempt:
    learner: str
    exercise: str
    verdict: str
    attempt: int
    time: str
    hint: str = ""


def learner_name(environ=None) -> str:
    """``$COURSE_LEARNER``, else ``$JUPYTERHUB_USER``, else the login name ("unknown" when there is none)."""
    environ = os.environ if environ is None else environ
    for key in ("COURSE_LEARNER", "JUPYTERHUB_USER"):
        if environ.get(key, "").strip():
            return environ[key].strip()
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name (some containers)
        return "unknown"


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def progress_file(environ=None) -> Path:
    """The file ``check()`` appends to (see the module's docstring)."""
    environ = os.environ if environ is None else environ
    if environ.get("COURSE_PROGRESS_FILE", "").strip():
        return Path(environ["COURSE_PROGRESS_FILE"]).expanduser()
    default = PROJECT_ROOT / "progress" / "exercises.jsonl"
    return default if _writable(default.parent) else _FALLBACK


def read_attempts(path) -> tuple[list[Attempt], int]:
    """``(attempts, skipped)``: every whole, valid line of a progress file, and how many lines were not."""
    attempts, skipped = [], 0
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:  # no file yet, or a path that cannot hold one (record() says so when it writes)
        return [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            attempt = Attempt(learner=str(row["learner"]), exercise=str(row["exercise"]),
                              verdict=str(row["verdict"]), attempt=int(row["attempt"]), time=str(row["time"]),
                              hint=str(row.get("hint", "")))
        except (ValueError, KeyError, TypeError):
            skipped += 1  # a torn line (killed mid-write) or a hand-edited one
            continue
        if attempt.verdict not in VERDICTS:
            skipped += 1
            continue
        attempts.append(attempt)
    return attempts, skipped


def record(exercise_id: str, verdict: str, hint: str = "", path=None) -> Attempt | None:
    """Append one check to the progress file; return what was written (None if it could not be written).

    Recording never breaks ``check()``: a file that cannot be written gives one warning per file and session."""
    if verdict not in VERDICTS:
        raise ValueError(_("verdict must be one of {verdicts}, got {verdict!r}.").format(verdicts=VERDICTS,
                                                                                        verdict=verdict))
    path = Path(path) if path is not None else progress_file()
    previous = sum(1 for a in read_attempts(path)[0] if a.exercise == exercise_id and a.verdict != "unanswered")
    first_line = hint.strip().splitlines()[0] if hint.strip() else ""
    attempt = Attempt(learner=learner_name(), exercise=exercise_id, verdict=verdict,
                      attempt=previous + (verdict != "unanswered"),
                      time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                      hint=first_line[:MAX_HINT_CHARS])
    line = json.dumps(attempt.__dict__, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # One os.write of one line on a file opened with O_APPEND: concurrent writers never interleave a line.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        if str(path) not in _warned:
            _warned.add(str(path))
            print(_("(Progress not recorded: cannot write {path}: {reason}. Fix: set COURSE_PROGRESS_FILE to a "
                    "file in a folder you can write to. Your check still counts.)")
                  .format(path=path, reason=error.strerror or error))
        return None
    return attempt


def summary(attempts, lesson: str | None = None) -> list[dict]:
    """Per exercise of one learner's attempts: ``{"exercise", "status", "attempts", "last"}`` in id order.

    status: ``solved`` (a correct check at some point), ``trying`` (only wrong answers so far), ``not started``
    (only unanswered checks)."""
    rows: dict[str, dict] = {}
    for attempt in attempts:
        if lesson is not None and attempt.exercise.split(".")[0] != str(lesson).zfill(2):
            continue
        row = rows.setdefault(attempt.exercise, {"exercise": attempt.exercise, "status": "not started",
                                                 "attempts": 0, "last": ""})
        row["attempts"] = max(row["attempts"], attempt.attempt)
        row["last"] = max(row["last"], attempt.time)
        if attempt.verdict == "correct":
            row["status"] = "solved"
        elif attempt.verdict == "not yet" and row["status"] != "solved":
            row["status"] = "trying"
    return [rows[key] for key in sorted(rows, key=_exercise_order)]


def _exercise_order(exercise_id: str):
    lesson, _dot, number = exercise_id.partition(".")
    return (lesson, int(number) if number.isdigit() else 0, exercise_id)
