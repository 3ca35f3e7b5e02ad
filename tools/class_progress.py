"""Gather learners' exercise progress into one class table (HTML and CSV): who has done what, where many are stuck.

    python tools/class_progress.py FOLDER_OR_FILE... --out class-progress
    python tools/class_progress.py /home --out class-progress      # a JupyterHub: every learner's home folder

Every ``*.jsonl`` progress file found below the given folders (``course_lib.exercises.progress`` writes them;
learners can
also hand them in, e.g. collected into one folder) is read. A learner is the name recorded in the file
(``$COURSE_LEARNER``, ``$JUPYTERHUB_USER`` or the login name). Writes ``OUT.csv`` (one row per learner and exercise)
and ``OUT.html`` (learners x exercises, then per exercise: solved, trying, stuck, and the hint most often shown).
"Stuck" means at least ``--stuck`` wrong answers (default 3) and no correct one yet. Nothing of the answers is in
the files, so nothing of them can reach the table.
"""
from __future__ import annotations

import argparse
import collections
import csv
import html
import io
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from course_lib.exercises.progress import read_attempts, summary  # noqa: E402

#: Folders never searched for progress files (environments, caches, the course's generated folders).
SKIP_DIRS = {".venv", "venv", "node_modules", ".git", "site-packages", "__pycache__", ".ipynb_checkpoints", "build"}


def find_progress_files(sources) -> list[Path]:
    files = []
    for source in sources:
        source = Path(source)
        if source.is_file():
            files.append(source)
            continue
        if not source.is_dir():
            raise SystemExit(f"class_progress: {source} is neither a progress file nor a folder. Fix: name the "
                             "folder that holds the learners' progress files (or their home folders).")
        for root, dirs, names in os.walk(source):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            files.extend(Path(root) / name for name in sorted(names) if name.endswith(".jsonl"))
    return files


def gather(files, stuck_after: int = 3):
    """``(rows, per_exercise, skipped)``: rows of (learner, exercise, status, attempts, last) and a summary."""
    attempts_by_learner = collections.defaultdict(list)
    skipped = 0
    for path in files:
        attempts, bad = read_attempts(path)
        skipped += bad
        for attempt in attempts:
            attempts_by_learner[attempt.learner].append(attempt)
    rows, hints = [], collections.defaultdict(collections.Counter)
    for learner in sorted(attempts_by_learner):
        attempts = attempts_by_learner[learner]
        for row in summary(attempts):
            status = row["status"]
            if status == "trying" and row["attempts"] >= stuck_after:
                status = "stuck"
            rows.append({"learner": learner, **row, "status": status})
        for attempt in attempts:
            if attempt.verdict == "not yet" and attempt.hint:
                hints[attempt.exercise][attempt.hint] += 1
    per_exercise = {}
    for row in rows:
        counts = per_exercise.setdefault(row["exercise"], collections.Counter())
        counts[row["status"]] += 1
    summary_rows = []
    for exercise in sorted(per_exercise, key=lambda e: (e.split(".")[0], int(e.split(".")[1]) if
                                                         e.partition(".")[2].isdigit() else 0)):
        counts = per_exercise[exercise]
        common = hints[exercise].most_common(1)
        summary_rows.append({"exercise": exercise, "solved": counts["solved"], "trying": counts["trying"],
                             "stuck": counts["stuck"], "common_hint": common[0][0] if common else ""})
    return rows, summary_rows, skipped


def render_csv(rows) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["learner", "exercise", "status", "attempts", "last"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def render_html(rows, summary_rows, stuck_after: int) -> str:
    learners = sorted({row["learner"] for row in rows})
    exercises = [row["exercise"] for row in summary_rows]
    cell = {(row["learner"], row["exercise"]): row for row in rows}
    marks = {"solved": "✓", "trying": "…", "stuck": "✗", "not started": ""}
    e = html.escape
    head = "".join(f"<th>{e(x)}</th>" for x in exercises)
    body = []
    for learner in learners:
        cells = []
        for exercise in exercises:
            row = cell.get((learner, exercise))
            if row is None:
                cells.append("<td></td>")
            else:
                cells.append(f'<td class="{e(row["status"]).replace(" ", "-")}" title="{e(row["status"])}, '
                             f'{row["attempts"]} attempt(s)">{marks[row["status"]]} {row["attempts"] or ""}</td>')
        body.append(f"<tr><th>{e(learner)}</th>{''.join(cells)}</tr>")
    per_exercise = "".join(
        f"<tr><td>{e(r['exercise'])}</td><td>{r['solved']}</td><td>{r['trying']}</td><td>{r['stuck']}</td>"
        f"<td>{e(r['common_hint'])}</td></tr>" for r in summary_rows)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Class progress</title>
<style>body{{font-family:sans-serif;margin:1em}} table{{border-collapse:collapse;margin-bottom:2em}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:center}} .solved{{background:#d8f5d0}}
.trying{{background:#fff3c4}} .stuck{{background:#f8c8c8;font-weight:bold}} td:last-child{{text-align:left}}</style>
</head><body>
<h1>Class progress</h1>
<p>{len(learners)} learner(s). ✓ solved, … trying, ✗ stuck ({stuck_after} or more wrong answers, none correct);
the number is the attempts so far.</p>
<table><tr><th>learner</th>{head}</tr>
{''.join(body)}
</table>
<h2>Per exercise</h2>
<table><tr><th>exercise</th><th>solved</th><th>trying</th><th>stuck</th><th>hint shown most often</th></tr>
{per_exercise}
</table></body></html>
"""


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="progress files, or folders to search for *.jsonl files")
    parser.add_argument("--out", default="class-progress", help="output name: writes OUT.html and OUT.csv")
    parser.add_argument("--stuck", type=int, default=3, help="wrong answers after which a learner counts as stuck")
    args = parser.parse_args(argv)
    if args.stuck < 1:
        parser.error(f"--stuck must be at least 1, got {args.stuck}")
    files = find_progress_files(args.sources)
    if not files:
        raise SystemExit(f"class_progress: no *.jsonl progress file below {', '.join(args.sources)}. Fix: learners' "
                         "files are progress/exercises.jsonl in their course folder; collect those or name /home.")
    rows, summary_rows, skipped = gather(files, args.stuck)
    out = Path(args.out)
    _write_atomic(out.with_name(out.name + ".csv"), render_csv(rows))
    _write_atomic(out.with_name(out.name + ".html"), render_html(rows, summary_rows, args.stuck))
    learners = len({row["learner"] for row in rows})
    print(f"{len(files)} file(s), {learners} learner(s), {len(summary_rows)} exercise(s): "
          f"{out.name}.html and {out.name}.csv written in {out.parent.resolve()}")
    for row in summary_rows:
        if row["stuck"]:
            print(f"  {row['exercise']}: {row['stuck']} stuck — most common hint: {row['common_hint']}")
    if skipped:
        print(f"({skipped} unreadable line(s) skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
