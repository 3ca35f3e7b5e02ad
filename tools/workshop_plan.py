"""The workshop plan in docs/WORKSHOP.md, read and checked: do the tracks fit, do their sections exist?

    python tools/workshop_plan.py            # each track, row by row: budget vs reading + exercise minutes
    python tools/workshop_plan.py --check    # exit 1 if the plan does not add up (tests/test_workshop_plan.py)

A track is a heading ``### <Name> track (<N> min)`` followed by a table with the columns

    | start | lesson | must do | skip | exercise | reading | exercise min | minutes |

- ``start``: h:mm from the beginning; each row starts when the previous one ends;
- ``lesson``: a lesson number ("04"), ``break``, or ``set-up``. Every track starts with a set-up row (SETUP_MINUTES
  at least) whose "must do" is the pre-flight check, ``python course.py preflight``: Python, MindSpore, disk, RAM,
  the lab's port and a training step, checked on every laptop before the first lesson;
- ``must do`` / ``skip``: section headings of that lesson's notebook, separated by " · " ("—" for none). Every
  "##" section of the lesson is in one of the two lists, except the framing ones (FRAMING below: always done,
  their reading counts in the budget; the exercises are budgeted by the exercise's minutes instead);
- ``exercise``: the exercises of the lesson the row includes ("04.2", or "04.2 · 04.1"); ``exercise min``: the sum
  of their ``minutes`` in the exercise bank, so every exercise minute a track includes is budgeted;
- ``reading``: minutes to read the must-do and framing sections at tools/lesson_stats.py's rates (120 prose
  words and 8 code lines a minute), rounded up; at least what the notebook needs now;
- ``minutes``: the row's budget; at least reading + exercise min. A track's minutes add up to at most N.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import lesson_stats  # noqa: E402

WORKSHOP = ROOT / "docs" / "WORKSHOP.md"
NOTEBOOKS = ROOT / "notebooks"
#: "##" sections every track keeps in full (their reading is counted); "Exercises" is budgeted by exercise minutes.
FRAMING = ("What you will learn", "Before you start", "Summary", "Where to go next", "Recall", "Exercises")
#: The longest stretch of a track without a break.
MAX_MINUTES_WITHOUT_BREAK = 100
#: The first row of every track: the pre-flight check on every laptop.
SETUP = "set-up"
SETUP_COMMAND = "python course.py preflight"
SETUP_MINUTES = 10

_TRACK = re.compile(r"^###\s+(?P<name>.+?)\s+track\s+\((?P<length>\d+)\s*min\)\s*$", re.M)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
COLUMNS = ("start", "lesson", "must do", "skip", "exercise", "reading", "exercise min", "minutes")


@dataclass
class Row:
    start: int
    lesson: str
    must: list[str]
    skip: list[str]
    exercise: str
    reading: int
    exercise_minutes: int
    minutes: int


def exercise_ids(cell: str) -> list[str]:
    """The exercises of a row's "exercise" cell ("04.2 · 04.1" -> ["04.2", "04.1"]; "—" -> [])."""
    return _names(cell.replace("`", ""))


@dataclass
class Track:
    name: str
    length: int
    rows: list[Row] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(row.minutes for row in self.rows)


def _clock(text: str) -> int:
    hours, minutes = text.strip().split(":")
    return int(hours) * 60 + int(minutes)


def _names(cell: str) -> list[str]:
    cell = cell.strip()
    return [] if cell in ("", "—", "-") else [name.strip() for name in cell.split(" · ") if name.strip()]


def _int(cell: str) -> int:
    return int(cell.strip()) if cell.strip() not in ("", "—", "-") else 0


def parse_plan(text: str) -> list[Track]:
    """Every track of WORKSHOP.md's text, with its table rows."""
    tracks = []
    for match in _TRACK.finditer(text):
        track = Track(match["name"].strip(), int(match["length"]))
        lines = text[match.end():].splitlines()
        table = []
        for line in lines:
            if line.startswith("|"):
                table.append(line)
            elif table or line.startswith("#"):
                break
        if not table:
            raise ValueError(f"track {track.name!r}: no table after its heading")
        header = [cell.strip().lower() for cell in table[0].strip("|").split("|")]
        if tuple(header) != COLUMNS:
            raise ValueError(f"track {track.name!r}: the columns should be {COLUMNS}, found {tuple(header)}")
        for line in table[2:]:
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if len(cells) != len(COLUMNS):
                raise ValueError(f"track {track.name!r}: row {line!r} has {len(cells)} cells, not {len(COLUMNS)}")
            start, lesson, must, skip, exercise, reading, exercise_minutes, minutes = cells
            track.rows.append(Row(_clock(start), lesson.strip("* "), _names(must), _names(skip),
                                  exercise.strip(" `"), _int(reading), _int(exercise_minutes), _int(minutes)))
        tracks.append(track)
    return tracks


def notebook_of(lesson: str, folder: Path = NOTEBOOKS) -> Path:
    found = sorted(folder.glob(f"{lesson}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"lesson {lesson!r}: expected one notebook {lesson}_*.ipynb, found {len(found)}")
    return found[0]


def sections(path: Path) -> list[dict]:
    """The headings of a notebook in order, each with the prose words and code lines until the next heading.

    Cells tagged ``solution`` (exercise solutions, recall answers) are left out: learners read the student edition.
    """
    notebook = json.loads(path.read_text(encoding="utf-8"))
    found = [{"level": 0, "title": "", "words": 0, "code": 0}]   # text before the first heading
    for cell in notebook.get("cells", []):
        if "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        source = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "code":
            found[-1]["code"] += lesson_stats.code_lines(source)
            continue
        if cell.get("cell_type") != "markdown":
            continue
        chunk, fenced = [], False
        for line in source.splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            heading = None if fenced else _HEADING.match(line)
            if heading:
                found[-1]["words"] += lesson_stats.prose_words("\n".join(chunk))
                chunk = [heading[2]]
                found.append({"level": len(heading[1]), "title": heading[2].strip(), "words": 0, "code": 0})
            else:
                chunk.append(line)
        found[-1]["words"] += lesson_stats.prose_words("\n".join(chunk))
    return found


def section_minutes(path: Path) -> dict[str, float]:
    """Reading minutes of each heading's section, its subsections included (titles as written, '#' removed)."""
    found = sections(path)
    minutes = {}
    for i, section in enumerate(found[1:], start=1):
        words, code = section["words"], section["code"]
        for later in found[i + 1:]:
            if later["level"] <= section["level"]:
                break
            words, code = words + later["words"], code + later["code"]
        minutes.setdefault(section["title"], words / lesson_stats.WORDS_PER_MINUTE
                           + code / lesson_stats.CODE_LINES_PER_MINUTE)
    return minutes


def is_framing(title: str) -> bool:
    return any(title.lower().startswith(name.lower()) for name in FRAMING)


def row_reading(row: Row, folder: Path = NOTEBOOKS) -> int:
    """Minutes to read the row's must-do sections and the lesson's framing sections (not Exercises), rounded up."""
    path = notebook_of(row.lesson, folder)
    minutes = section_minutes(path)
    framing = [s["title"] for s in sections(path) if s["level"] == 2 and is_framing(s["title"])
               and not s["title"].lower().startswith("exercises")]
    return math.ceil(sum(minutes[title] for title in row.must + framing if title in minutes) - 1e-9)


def problems(tracks: list[Track], exercises: dict | None = None, folder: Path = NOTEBOOKS) -> list[str]:
    """Everything that keeps the plan from adding up; ``exercises``: id -> minutes (None skips that check)."""
    found = []
    if not tracks:
        return ["no track found (a heading '### <Name> track (<N> min)' followed by its table)"]
    for track in tracks:
        where = f"{track.name} track"
        if track.total > track.length:
            found.append(f"{where}: {track.total} minutes do not fit in {track.length}")
        clock, since_break, lessons = 0, 0, []
        first = track.rows[0] if track.rows else None
        if first is None or first.lesson.lower() != SETUP:
            found.append(f"{where}: the first row must be the {SETUP!r} slot (`{SETUP_COMMAND}` on every laptop)")
        elif first.minutes < SETUP_MINUTES or SETUP_COMMAND not in " ".join(first.must):
            found.append(f"{where}: the set-up slot needs at least {SETUP_MINUTES} min and must name "
                         f"`{SETUP_COMMAND}` in its 'must do' column")
        for row in track.rows:
            if row.start != clock:
                found.append(f"{where}: {row.lesson} starts at {row.start // 60}:{row.start % 60:02d}, but the "
                             f"row before ends at {clock // 60}:{clock % 60:02d}")
            clock = row.start + row.minutes
            if row.lesson.lower() == "break":
                since_break = 0
                continue
            since_break += row.minutes
            if row.lesson.lower() == SETUP:
                continue
            if since_break > MAX_MINUTES_WITHOUT_BREAK:
                found.append(f"{where}: {since_break} minutes without a break up to lesson {row.lesson} "
                             f"(at most {MAX_MINUTES_WITHOUT_BREAK})")
            lessons.append(row.lesson)
            try:
                path = notebook_of(row.lesson, folder)
            except ValueError as error:
                found.append(f"{where}: {error}")
                continue
            titles = [s["title"] for s in sections(path)]
            for name in row.must + row.skip:
                if name not in titles:
                    found.append(f"{where}, lesson {row.lesson}: no heading {name!r} in {path.name}")
            if set(row.must) & set(row.skip):
                found.append(f"{where}, lesson {row.lesson}: {sorted(set(row.must) & set(row.skip))} both "
                             f"must-do and skipped")
            for section in sections(path):
                if section["level"] == 2 and not is_framing(section["title"]) \
                        and section["title"] not in row.must + row.skip:
                    found.append(f"{where}, lesson {row.lesson}: section {section['title']!r} is neither must-do "
                                 f"nor skipped")
            ids = exercise_ids(row.exercise)
            if not ids or any(not re.fullmatch(rf"{re.escape(row.lesson)}\.\d+", e) for e in ids):
                found.append(f"{where}, lesson {row.lesson}: recommend exercises of the lesson, not "
                             f"{row.exercise!r}")
            elif exercises is not None:
                unknown = [e for e in ids if e not in exercises]
                if unknown:
                    found.append(f"{where}: exercise {', '.join(unknown)} is not in the exercise bank")
                elif sum(exercises[e] for e in ids) != row.exercise_minutes:
                    found.append(f"{where}: exercise {' · '.join(ids)} takes {sum(exercises[e] for e in ids)} min "
                                 f"in the exercise bank, the plan says {row.exercise_minutes}")
            needed = row_reading(row, folder)
            if row.reading < needed:
                found.append(f"{where}, lesson {row.lesson}: its must-do sections read in {needed} min, the plan "
                             f"says {row.reading}")
            if row.minutes < row.reading + row.exercise_minutes:
                found.append(f"{where}, lesson {row.lesson}: {row.minutes} min < reading {row.reading} + exercise "
                             f"{row.exercise_minutes}")
        if len(lessons) != len(set(lessons)):
            found.append(f"{where}: a lesson appears twice")
        if not any(row.lesson.lower() == "break" for row in track.rows):
            found.append(f"{where}: no break")
    return found


def exercise_minutes() -> dict:
    import course_lib  # noqa: F401  (environment before mindspore)
    from course_lib.exercises import registered

    return {exercise_id: task.minutes for exercise_id, task in registered().items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the plan does not add up")
    parser.add_argument("--file", type=Path, default=WORKSHOP)
    args = parser.parse_args(argv)
    tracks = parse_plan(args.file.read_text(encoding="utf-8"))
    for track in tracks:
        print(f"{track.name} track: {track.total} of {track.length} min")
        for row in track.rows:
            if row.lesson.lower() in ("break", SETUP):
                print(f"  {row.start // 60}:{row.start % 60:02d}  {row.lesson.lower()} {row.minutes}")
                continue
            print(f"  {row.start // 60}:{row.start % 60:02d}  {row.lesson}  budget {row.minutes:>3}  reading now "
                  f"{row_reading(row):>3} (plan {row.reading})  exercise {row.exercise} {row.exercise_minutes}")
    found = problems(tracks, exercise_minutes())
    for line in found:
        print("plan:", line, file=sys.stderr)
    return 1 if found and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
