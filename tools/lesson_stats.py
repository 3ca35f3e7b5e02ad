"""Size and focus of every notebook: prose words, code lines, "seed" mentions, MindSpore vs course_lib names,
estimated reading time.

    python tools/lesson_stats.py            # a table
    python tools/lesson_stats.py --json     # the same numbers as JSON (used by tests and the workshop plan)
    python tools/lesson_stats.py --check    # exit 1 if a limit below is broken

Definitions (kept simple on purpose, so that anyone can recount by hand):
- prose words: every word (a run of Latin letters, with ' and - inside it) in every markdown cell, recall answers
  and other instructor-only cells included; only fenced code blocks are left out. Link targets (URLs), inline code
  and HTML count as they read: ``[Cell](https://www.mindspore.cn/…)`` is many words, ``nn.Dense`` is two. This is
  the strict count an independent reader gets by splitting the markdown; it is the one the 1,500-word limit uses.
  Chinese terms beside English ones are not counted (the English reader skips them);
- code lines: non-blank, non-comment lines of code cells;
- seed mentions: "seed 000" … "seed 004" (also "seeds 001/003", "seed-003"), the course's old internal
  shorthand for its source documents, which learners must not meet;
- MindSpore names / course_lib names: distinct API names the code cells use, found with Python's ``ast``: a
  name imported from ``mindspore…`` or ``course_lib…``, or an attribute chain on such a module
  (``ms.jit``, ``nn.Dense``, ``ops.depend`` each count once);
- reading time: prose words / 120 per minute + code lines / 8 per minute;
- exercises: a markdown cell that starts ``**Exercise 03.1**``. ``**Exercise 03.1** (core, ★, 10 min)`` marks one of
  the one or two core exercises of a main lesson (a learner's day includes them); the others are optional;
- core path of a main lesson: what a learner who does only the core exercises reads (the reading time of every cell
  except solutions, recall answers and the optional exercises' cells) + the core exercises' minutes + the lesson's
  run time from benchmarks/results.json (``make bench-notebooks``). ``--check`` keeps the ten lessons' sum within
  MAX_CORE_PATH_MINUTES (5 h).
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

WORDS_PER_MINUTE = 120
CODE_LINES_PER_MINUTE = 8

#: Limits of issue "learner path"; ``--check`` and tests/test_lesson_stats.py enforce them.
MAX_MAIN_WORDS = 1500
MAX_SEED_MENTIONS = 10
MAX_CORE_PATH_MINUTES = 300
#: core exercises per main lesson
CORE_EXERCISES = (1, 2)

#: ``**Exercise 03.1** (core, ★★, 10 min) — …``: id, "core, " or nothing, stars, minutes.
EXERCISE = re.compile(r"^\*\*Exercise (?P<id>\d\d\.\d+)\*\* "
                      r"\((?P<core>core, )?(?P<stars>★{1,3}), (?P<minutes>\d+) min\)")
_ANY_EXERCISE = re.compile(r"^\*\*Exercise (?P<id>\S+)\*\*")

SEED_PATTERN = re.compile(r"\bseeds?[ _-]?(?:00[0-4])(?:\s*(?:[/,&]|and)\s*00[0-4])*\b", re.IGNORECASE)
_FENCED = re.compile(r"```.*?```|~~~.*?~~~", re.S)
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")

LIBRARIES = ("mindspore", "course_lib")


def is_main_lesson(path: Path) -> bool:
    """Main lessons are numbered (``03_model_train_eval``); appendices start with a letter (``A1_…``)."""
    return path.name[:1].isdigit()


def _cells(notebook: dict, kind: str) -> list[str]:
    out = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == kind:
            source = cell.get("source", "")
            out.append("".join(source) if isinstance(source, list) else source)
    return out


def prose_words(markdown: str) -> int:
    return len(_LATIN_WORD.findall(_FENCED.sub(" ", markdown)))


def code_lines(code: str) -> int:
    return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#")
               and not line.strip().startswith(("%", "!")))


def _parse(code: str):
    """Parse a code cell, leaving out IPython magics and shell lines (which are not Python)."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _dotted(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def api_names(codes: list[str]) -> dict[str, set[str]]:
    """Distinct names each library contributes to the code cells (see the module docstring)."""
    aliases: dict[str, tuple[str, str]] = {}   # local name -> (library, dotted origin)
    used: dict[str, set[str]] = {lib: set() for lib in LIBRARIES}
    trees = [tree for tree in (_parse(code) for code in codes) if tree is not None]

    def library_of(module: str) -> str | None:
        root = module.split(".")[0]
        return root if root in LIBRARIES else None

    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    lib = library_of(alias.name)
                    if lib:
                        local = alias.asname or alias.name.split(".")[0]
                        aliases[local] = (lib, alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                lib = library_of(node.module)
                if lib:
                    for alias in node.names:
                        aliases[alias.asname or alias.name] = (lib, f"{node.module}.{alias.name}")
    module_like = {name for name, (lib, origin) in aliases.items()
                   if origin.split(".")[-1] in ("mindspore", "course_lib", "nn", "ops", "dataset", "train", "mint",
                                                "amp", "communication", "numpy", "transforms", "vision",
                                                "context", "common", "experimental", "optim", "mindrecord")
                   or origin == lib}
    seen_chains: set[int] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and id(node) not in seen_chains:
                chain = _dotted(node)
                if chain and chain[0] in aliases:
                    # mark inner attribute nodes so only the longest chain counts
                    inner = node.value
                    while isinstance(inner, ast.Attribute):
                        seen_chains.add(id(inner))
                        inner = inner.value
                    lib, origin = aliases[chain[0]]
                    if chain[0] in module_like:
                        used[lib].add(".".join([origin] + chain[1:]))
                    else:
                        used[lib].add(origin)
            elif isinstance(node, ast.Name) and node.id in aliases and node.id not in module_like:
                lib, origin = aliases[node.id]
                used[lib].add(origin)
    # A bare module import used only through its attributes adds nothing by itself.
    return used


def _tags(cell: dict) -> list:
    return cell.get("metadata", {}).get("tags", [])


def exercises(notebook: dict) -> tuple[list[dict], list[str]]:
    """The notebook's exercises (id, core, stars, minutes) and the markers that do not follow the convention."""
    found, bad = [], []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        source = "".join(cell.get("source", ""))
        match = EXERCISE.match(source)
        if match:
            found.append({"id": match["id"], "core": bool(match["core"]), "stars": len(match["stars"]),
                          "minutes": int(match["minutes"])})
        elif _ANY_EXERCISE.match(source):
            head = source.split("—")[0].strip()
            if "core" in head:  # a core exercise must follow the convention: its minutes count
                bad.append(head[:60])
            else:  # an optional exercise: its minutes are not on the core path
                found.append({"id": _ANY_EXERCISE.match(source)["id"], "core": False, "stars": head.count("★"),
                              "minutes": None})
    return found, bad


def core_reading_minutes(notebook: dict) -> float:
    """Reading minutes of the cells a core-path learner reads: no solutions, no optional exercises' cells."""
    words = lines = 0
    optional = False
    for cell in notebook.get("cells", []):
        source = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            match = EXERCISE.match(source)
            optional = bool(_ANY_EXERCISE.match(source)) and not (match and match["core"])
        if optional or "solution" in _tags(cell):
            continue
        if cell.get("cell_type") == "markdown":
            words += prose_words(source)
        elif cell.get("cell_type") == "code":
            lines += code_lines(source)
    return words / WORDS_PER_MINUTE + lines / CODE_LINES_PER_MINUTE


def _run_seconds(stem: str) -> float | None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from course_lib.lab.results import run_seconds

    return run_seconds(stem)


def notebook_stats(path: Path) -> dict:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    markdown = _cells(notebook, "markdown")
    codes = _cells(notebook, "code")
    words = sum(prose_words(md) for md in markdown)
    lines = sum(code_lines(code) for code in codes)
    everything = "\n".join(markdown + codes)
    names = api_names(codes)
    found, bad = exercises(notebook)
    core = [e for e in found if e["core"]]
    seconds = _run_seconds(path.stem)
    core_minutes = (core_reading_minutes(notebook) + sum(e["minutes"] for e in core)
                    + (seconds or 0) / 60)
    return {
        "notebook": path.stem,
        "main": is_main_lesson(path),
        "prose_words": words,
        "code_lines": lines,
        "seed_mentions": len(SEED_PATTERN.findall(everything)),
        "mindspore_names": len(names["mindspore"]),
        "course_lib_names": len(names["course_lib"]),
        "reading_minutes": round(words / WORDS_PER_MINUTE + lines / CODE_LINES_PER_MINUTE, 1),
        "exercises": found,
        "bad_exercise_markers": bad,
        "core_exercises": [e["id"] for e in core],
        "run_seconds": None if seconds is None else round(seconds, 1),
        "core_path_minutes": round(core_minutes, 1),
    }


def all_stats(folder: Path = NOTEBOOKS) -> list[dict]:
    return [notebook_stats(path) for path in sorted(folder.glob("*.ipynb"))]


def problems(stats: list[dict]) -> list[str]:
    """The learner-path limits each notebook (and the whole course) must meet."""
    found = []
    for row in stats:
        if not row["main"]:
            continue
        if row["prose_words"] > MAX_MAIN_WORDS:
            found.append(f"{row['notebook']}: {row['prose_words']} prose words (limit {MAX_MAIN_WORDS}); "
                         f"move side investigations to an appendix")
        if row["mindspore_names"] < row["course_lib_names"]:
            found.append(f"{row['notebook']}: {row['mindspore_names']} MindSpore names < "
                         f"{row['course_lib_names']} course_lib names; show the plain-MindSpore version first")
    for row in stats:
        for marker in row["bad_exercise_markers"]:
            found.append(f"{row['notebook']}: core exercise marker {marker!r} does not read "
                         f"'**Exercise NN.M** (core, ★, 10 min)'")
        if not row["main"]:
            continue
        low, high = CORE_EXERCISES
        if not low <= len(row["core_exercises"]) <= high:
            found.append(f"{row['notebook']}: {len(row['core_exercises'])} core exercises "
                         f"({row['core_exercises']}); mark {low} or {high} with '(core, ★, N min)'")
        if row["run_seconds"] is None:
            found.append(f"{row['notebook']}: no run time in benchmarks/results.json; run make bench-notebooks")
    core_path = sum(row["core_path_minutes"] for row in stats if row["main"])
    if core_path > MAX_CORE_PATH_MINUTES:
        found.append(f"core path {core_path:.0f} min (limit {MAX_CORE_PATH_MINUTES}): reading without optional "
                     f"exercises + core exercises + run time; mark fewer or shorter core exercises, or trim")
    seeds = sum(row["seed_mentions"] for row in stats)
    if seeds > MAX_SEED_MENTIONS:
        found.append(f"{seeds} 'seed 00N' mentions in all notebooks (limit {MAX_SEED_MENTIONS}); "
                     f"name the source documents by title")
    return found


def format_table(stats: list[dict]) -> str:
    header = ("notebook", "words", "code", "seed", "MS names", "course_lib names", "reading min", "core exercises",
              "core path min")
    rows = [(r["notebook"] + ("" if r["main"] else " (appendix)"), r["prose_words"], r["code_lines"],
             r["seed_mentions"], r["mindspore_names"], r["course_lib_names"], f"{r['reading_minutes']:.0f}",
             ", ".join(r["core_exercises"]), f"{r['core_path_minutes']:.0f}" if r["main"] else "")
            for r in stats]
    main = [r for r in stats if r["main"]]
    rows.append(("main path total", sum(r["prose_words"] for r in main), sum(r["code_lines"] for r in main),
                 sum(r["seed_mentions"] for r in stats), "", "",
                 f"{sum(r['reading_minutes'] for r in main):.0f}", "",
                 f"{sum(r['core_path_minutes'] for r in main):.0f}"))
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 if a learner-path limit is broken")
    parser.add_argument("--folder", type=Path, default=NOTEBOOKS, help="folder of notebooks (default: notebooks/)")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"--folder {args.folder} is not a folder of notebooks. Fix: pass e.g. notebooks/.")
    stats = all_stats(args.folder)
    print(json.dumps(stats, indent=1) if args.json else format_table(stats))
    if args.check:
        found = problems(stats)
        for line in found:
            print("limit:", line, file=sys.stderr)
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
