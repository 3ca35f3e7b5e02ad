"""One-shot: move course_lib's flat modules into packages by audience and rewrite every reference (issue #26).

Run once from the repository root on a clean tree: python tools/relayout.py. Kept in git history only.
"""
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

MOVES = {  # old dotted -> new dotted
    "data": "data.datasets", "datagen": "data.generate", "pipeline_stats": "data.stats",
    "trainer": "train.trainer", "callbacks": "train.callbacks", "checkpoint": "train.checkpoint",
    "schedules": "train.schedules", "optim": "train.optim", "losses": "train.losses", "metrics": "train.metrics",
    "distributed": "parallel.launch", "_launch_watchdog": "parallel._watchdog",
    "migration": "migrate.convert",
    "config": "run.config", "env": "run.env",
    "lesson": "lab.lesson", "mindspore_log": "lab.mindspore_log", "plotting": "lab.plotting",
    "diagrams": "lab.diagrams",
    "progress": "exercises.progress",
    "timing": "perf.timing", "profiling": "perf.profiling",
}
FOLDER_MOVES = {"configs": "run/configs", "fast_conv": "perf/fast_conv", "exercise_bank": "exercises"}
EXERCISES_FILE = ("exercises.py", "exercises/engine.py")

_DOTTED = re.compile(r"(?<![\w.])course_lib\.(" + "|".join(sorted(MOVES, key=len, reverse=True)) + r"|exercise_bank)(?!\w)")
_PATHS = re.compile(r"(?<![\w/])course_lib/(" + "|".join(sorted(MOVES, key=len, reverse=True)) + r")\.py")
_FOLDERS = re.compile(r"(?<![\w/])course_lib/(configs|fast_conv|exercise_bank)(?!\w)")
_FROM_PACKAGE = re.compile(r"^(\s*)from course_lib import ([\w ,]+?)(\s*(#.*)?)$", re.M)


def _dotted(match):
    old = match.group(1)
    return "course_lib." + ("exercises" if old == "exercise_bank" else MOVES[old])


def _from_package(match):
    indent, names, tail = match.group(1), match.group(2), match.group(3) or ""
    keep, lines = [], []
    for item in [n.strip() for n in names.split(",") if n.strip()]:
        name, _, alias = item.partition(" as ")
        name, alias = name.strip(), alias.strip()
        if name in MOVES:
            package, _, leaf = MOVES[name].rpartition(".")
            bound = alias or name
            lines.append(f"from course_lib.{package} import {leaf}" + (f" as {bound}" if bound != leaf else ""))
        else:
            keep.append(item)
    if not lines:
        return match.group(0)
    if keep:
        lines.insert(0, "from course_lib import " + ", ".join(keep))
    return "\n".join(indent + line + (tail if i == 0 else "") for i, line in enumerate(lines))


def rewrite(text: str) -> str:
    text = _PATHS.sub(lambda m: "course_lib/" + MOVES[m.group(1)].replace(".", "/") + ".py", text)
    text = text.replace("course_lib/exercises.py", "course_lib/exercises/engine.py")
    text = _FOLDERS.sub(lambda m: "course_lib/" + FOLDER_MOVES[m.group(1)], text)
    text = _DOTTED.sub(_dotted, text)
    return _FROM_PACKAGE.sub(_from_package, text)


def absolute_imports(path: Path) -> None:
    """``from .x import y`` -> ``from course_lib.x import y`` (the package of ``path``)."""
    rel = path.relative_to(ROOT).with_suffix("").parts
    package = list(rel[:-1])
    text = path.read_text(encoding="utf-8")

    def fix(match):
        dots, rest = match.group(2), match.group(3)
        base = package[:len(package) - (len(dots) - 1)]
        target = ".".join(base + ([rest] if rest else []))
        return f"{match.group(1)}from {target} import"

    new = re.sub(r"^(\s*)from (\.+)([\w.]*) import", fix, text, flags=re.M)
    if new != text:
        path.write_text(new, encoding="utf-8")


def git(*args):
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def main():
    for path in sorted((ROOT / "course_lib").rglob("*.py")):
        absolute_imports(path)
    # catalogs: remember each entry's English before the rewrite
    catalogs = sorted((ROOT / "i18n" / "zh").glob("*.yaml"))
    for folder in ("data", "train", "parallel", "migrate", "lab", "perf", "exercises"):
        (ROOT / "course_lib" / folder).mkdir(exist_ok=True)
    git("mv", "course_lib/exercise_bank", "course_lib/exercises_tmp")
    git("mv", "course_lib/exercises.py", "course_lib/exercises_tmp/engine.py")
    (ROOT / "course_lib" / "exercises").rmdir()
    git("mv", "course_lib/exercises_tmp", "course_lib/exercises")
    for old, new in MOVES.items():
        target = ROOT / "course_lib" / (new.replace(".", "/") + ".py")
        target.parent.mkdir(exist_ok=True)
        git("mv", f"course_lib/{old}.py", str(target.relative_to(ROOT)))
    git("mv", "course_lib/configs", "course_lib/run/configs")
    git("mv", "course_lib/fast_conv", "course_lib/perf/fast_conv")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    changed = []
    for name in files:
        path = ROOT / name
        if name.startswith(("notebooks/zh/", "tools/relayout.py")) or not path.is_file():
            continue
        if path.suffix not in {".py", ".md", ".toml", ".txt", ".cfg", ".yml", ".ipynb", ".sh", ".json", ".html",
                               ".in", ""} and name not in ("Makefile",):
            continue
        if path.suffix == ".ipynb":
            nb = nbformat.read(path, as_version=4)
            touched = False
            for cell in nb.cells:
                new = rewrite(cell.source)
                if new != cell.source:
                    cell.source, touched = new, True
                for output in cell.get("outputs", []):
                    if "text" in output:
                        new = rewrite(output["text"])
                        if new != output["text"]:
                            output["text"], touched = new, True
                    for key, value in output.get("data", {}).items():
                        if isinstance(value, str) and key.startswith("text"):
                            new = rewrite(value)
                            if new != value:
                                output["data"][key], touched = new, True
            if touched:
                nbformat.write(nb, path)
                changed.append(name)
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(name)
    from translate import source_sha
    for catalog in catalogs:
        text = catalog.read_text(encoding="utf-8")
        before = yaml.safe_load(text)
        new_text = rewrite(text)
        after = yaml.safe_load(new_text)
        for part in ("comments",):
            for key, entry in (before.get(part) or {}).items():
                en_new = after[part][key]["en"]
                if en_new != entry["en"]:
                    new_text = new_text.replace(f"  {key}:\n", f"  {source_sha(en_new)}:\n", 1)
        for key, entry in (before.get("cells") or {}).items():
            en_new = after["cells"][key]["en"]
            if en_new != entry["en"] and "sha" in entry:
                new_text = new_text.replace(f"sha: {entry['sha']}", f"sha: {source_sha(en_new)}", 1)
        if new_text != text:
            catalog.write_text(new_text, encoding="utf-8")
            changed.append(str(catalog.relative_to(ROOT)))
    print("\n".join(changed))


if __name__ == "__main__":
    main()
