"""Copies under notebooks/ of the files lessons link to, so that every "Glossary" and "Recipes to copy" link works
wherever the notebooks are opened.

JupyterLab serves only the folder it was started in: ``make lab`` serves notebooks/, the student edition serves
build/student/. A link from a lesson to ``../docs/GLOSSARY.md`` or ``../recipes/x.py`` leaves that folder and gives
"404". So lessons link to ``docs/GLOSSARY.md`` and ``recipes/x.py`` *inside* notebooks/ (the Chinese edition in
notebooks/zh/ to ``../docs/…``), and this tool keeps those copies equal to the originals:

    python tools/lesson_link_copies.py           # write notebooks/docs/GLOSSARY.md, notebooks/benchmarks/results.md
                                                 # and notebooks/recipes/*.py
    python tools/lesson_link_copies.py --check   # exit 1 naming every copy that is missing, stale or extra

The originals stay the one place to edit (docs/GLOSSARY.md, benchmarks/results.md, recipes/). The pages' own links
are rewritten for their new folder (``../notebooks/A2_x.ipynb`` -> ``../A2_x.ipynb``). tests/test_lesson_links.py
runs ``--check`` and follows every link of every edition. Plain copies, no symbolic links (Windows checkouts
and zip files lose them).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: markdown pages lessons link to: original -> copy, both relative to the repository
PAGES = (("docs/GLOSSARY.md", "notebooks/docs/GLOSSARY.md"),
         ("benchmarks/results.md", "notebooks/benchmarks/results.md"))
GLOSSARY = PAGES[0]
RECIPES = "recipes"
HEADER = ("<!-- A copy of {original} for links from the lessons (tools/lesson_link_copies.py writes it). "
          "Edit {original}, then run that tool. -->\n")


def page_copy(text: str, original: str = GLOSSARY[0]) -> str:
    """A page of a top-level folder (docs/, benchmarks/) as it reads from notebooks/<folder>/: links into
    notebooks/ lose their ``notebooks/``, other relative links get one more ``../``."""
    def fix(match):
        target = match.group(2)
        if re.match(r"^(?:[a-zA-Z][\w+.-]*:|#|/)", target):
            return match.group(0)
        if target.startswith("../notebooks/"):
            target = "../" + target[len("../notebooks/"):]
        elif target.startswith("../"):
            target = "../../" + target[len("../"):]
        else:
            target = f"../../{original.split('/')[0]}/" + target
        return match.group(1) + target + match.group(3)
    return HEADER.format(original=original) + re.sub(r"(\]\(<?)([^)\s>]+)(>?\))", fix, text)


def expected(root: Path = ROOT) -> dict[Path, str]:
    """Every copy (path under ``root``) and the text it must have."""
    files = {root / copy: page_copy((root / original).read_text(encoding="utf-8"), original)
             for original, copy in PAGES if (root / original).is_file()}
    for recipe in sorted((root / RECIPES).glob("*.py")):
        files[root / "notebooks" / RECIPES / recipe.name] = recipe.read_text(encoding="utf-8")
    return files


def problems(root: Path = ROOT) -> list[str]:
    want = expected(root)
    found = []
    for path, text in want.items():
        if not path.is_file():
            found.append(f"{path.relative_to(root)} is missing")
        elif path.read_text(encoding="utf-8") != text:
            found.append(f"{path.relative_to(root)} differs from its original")
    for path in sorted((root / "notebooks" / RECIPES).glob("*.py")):
        if path not in want:
            found.append(f"{path.relative_to(root)} has no original in {RECIPES}/")
    return found


def write(root: Path = ROOT) -> list[Path]:
    """Write every copy that differs (atomically) and remove copies whose original is gone; returns what changed."""
    changed = []
    want = expected(root)
    for path, text in want.items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
        changed.append(path)
    for path in sorted((root / "notebooks" / RECIPES).glob("*.py")):
        if path not in want:  # a copy of a recipe that was removed: it is ours, not the user's
            path.unlink()
            changed.append(path)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a copy is missing, stale or extra")
    args = parser.parse_args(argv)
    if args.check:
        found = problems()
        for line in found:
            print(f"{line}. Fix: python tools/lesson_link_copies.py", file=sys.stderr)
        return 1 if found else 0
    for path in write():
        print("wrote" if path.exists() else "removed", path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
