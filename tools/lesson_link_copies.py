"""Copies under notebooks/ of the files lessons link to, so that every "Glossary" and "Recipes to copy" link works
wherever the notebooks are opened.

JupyterLab serves only the folder it was started in: ``make lab`` serves notebooks/, the student edition serves
build/student/. A link from a lesson to ``../docs/GLOSSARY.md`` or ``../recipes/x.py`` leaves that folder and gives
"404". So lessons link to ``docs/GLOSSARY.md`` and ``recipes/x.py`` *inside* notebooks/ (the Chinese edition in
notebooks/zh/ to ``../docs/…``), and this tool keeps those copies equal to the originals:

    python tools/lesson_link_copies.py           # write notebooks/docs/GLOSSARY.md, notebooks/benchmarks/results.md
                                                 # and notebooks/recipes/*.py
    python tools/lesson_link_copies.py --check   # exit 1 naming every copy that is missing, stale or extra
    python tools/lesson_link_copies.py --relink 05_eval_indexes_miou ...
        # rewrite a lesson's ../docs/, ../benchmarks/, ../recipes/ links to the copies, in the English notebook and
        # in its zh catalog's entries (msgid and msgstr, so a current entry stays current)

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
        if recipe.name in linked_recipes(root):  # only what a lesson links to (not run_all.py, mutation_score.py)
            files[root / "notebooks" / RECIPES / recipe.name] = recipe.read_text(encoding="utf-8")
    return files


def linked_recipes(root: Path = ROOT) -> set[str]:
    """The recipe file names the English lessons link to (``recipes/x.py`` inside notebooks/)."""
    names = set()
    for notebook in (root / "notebooks").glob("*.ipynb"):
        names.update(re.findall(r"\]\(<?recipes/([\w.-]+\.py)", notebook.read_text(encoding="utf-8")))
    return names


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


_OLD_LINK = re.compile(r"(\]\(<?)\.\./((?:docs/GLOSSARY\.md|benchmarks/results\.md|recipes/[\w.-]+\.py)(?:#[^)\s>]*)?)")


def relink_text(text: str) -> str:
    """``](../docs/GLOSSARY.md)`` -> ``](docs/GLOSSARY.md)``; the same for benchmarks/results.md and recipes/*.py."""
    return _OLD_LINK.sub(r"\1\2", text)


def relink(stem: str, root: Path = ROOT) -> int:
    """Point a lesson's links at the copies: its English markdown cells and its zh catalog entries. Returns the
    number of cells changed. A catalog entry that translated its English cell before translates it after (both its
    msgid and its msgstr are relinked; a fuzzy entry's previous msgid too)."""
    import nbformat

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pofiles

    path = root / "notebooks" / f"{stem}.ipynb"
    if not path.is_file():
        raise SystemExit(f"No notebook notebooks/{stem}.ipynb. Fix: pass a stem such as 05_eval_indexes_miou.")
    nb = nbformat.read(path, as_version=4)
    changed = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown" and relink_text(cell.source) != cell.source:
            cell.source, changed = relink_text(cell.source), changed + 1
    if changed:
        tmp = path.with_name(path.name + ".tmp")
        nbformat.write(nb, tmp)
        os.replace(tmp, path)
    catalog_path = root / "i18n" / "zh" / f"{stem}.po"
    if catalog_path.is_file():
        catalog = pofiles.read(catalog_path, root)
        messages = [m for m in catalog if m.id]
        for message in messages:
            catalog.delete(message.id, message.context)
        for message in messages:
            if message.context != "comment":  # code comments hold no links
                message.id, message.string = relink_text(message.id), relink_text(message.string or "")
                message.previous_id = [relink_text(text) for text in message.previous_id]
            catalog[message.id] = message
        pofiles.write(catalog, catalog_path)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a copy is missing, stale or extra")
    parser.add_argument("--relink", nargs="+", metavar="STEM", help="point these lessons' links at the copies")
    args = parser.parse_args(argv)
    if args.relink:
        for stem in args.relink:
            print(f"{stem}: {relink(stem)} markdown cell(s) relinked")
        return 0
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
