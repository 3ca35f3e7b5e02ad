"""One-shot: turn the YAML catalogs i18n/zh/*.yaml into the gettext catalogs i18n/zh/*.po, losslessly, and prove it.

    python tools/yaml_to_po.py [--old-rev REV] [--delete]

For every English notebook that has a YAML catalog: each markdown cell's YAML entry becomes an entry
msgctxt=<cell id>, msgid=<the cell's English>, msgstr=<its zh>; each comment entry one with msgctxt "comment". A
stale YAML entry (its sha is not the English's, or an en_new left by extract) becomes fuzzy with its old English as
the previous msgid; entries of cells or comments no longer in the notebook become obsolete (#~). Nothing is dropped
except zh_old notes (printed).

The proof: every zh notebook built from the .po catalogs (this tree's tools/translate.py) is byte for byte the one
the YAML catalogs build (tools/translate.py of ``--old-rev``, the last YAML version), except the generation record's
source path (.yaml -> .po). ``--delete`` then deletes the YAML catalogs. Kept out of the tree after the switch (git
history has it).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import yaml
from babel.messages.catalog import Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pofiles  # noqa: E402
import translate  # noqa: E402


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def msgstr(zh, msgid: str) -> str:
    """The Chinese as a msgstr: without the trailing newlines YAML's block style adds (build strips them anyway),
    ending with a newline only when the English does (what msgfmt --check expects)."""
    text = str(zh or "").rstrip("\n")
    return text + "\n" if text and msgid.endswith("\n") else text


def convert(stem: str, notes: list[str]):
    data = yaml.safe_load((translate.CATALOGS / f"{stem}.yaml").read_text(encoding="utf-8")) or {}
    cells, comments = data.get("cells") or {}, data.get("comments") or {}
    nb = nbformat.read(translate.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    catalog = translate.load_catalog(stem)  # a catalog converted before keeps its header (dates)
    for message in [m for m in catalog if m.id]:
        catalog.delete(message.id, message.context)
    catalog.obsolete = {}
    used_cells, used_comments = set(), set()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            key = str(cell.get("id"))
            entry = cells.get(key)
            if entry is None:
                continue
            used_cells.add(key)
            zh = msgstr(entry.get("zh"), cell.source)
            current = entry.get("sha") == sha(cell.source) and "en_new" not in entry and \
                (entry.get("en") is None or sha(entry["en"]) == entry.get("sha"))
            if current or not zh:
                catalog[cell.source] = Message(cell.source, zh, context=key)
            else:
                catalog[cell.source] = Message(cell.source, zh, context=key, flags=("fuzzy",),
                                               previous_id=entry.get("en") or "")
            if entry.get("zh_old"):
                notes.append(f"{stem}, cell {key}: zh_old not kept: {entry['zh_old']!r}")
        elif cell.cell_type == "code":
            for _, _, token in translate.code_comments(cell.source):
                text = translate.comment_text(token)
                if sha(text) in used_comments or sha(text) not in comments:
                    continue
                used_comments.add(sha(text))
                entry = comments[sha(text)]
                zh = str(entry.get("zh") or "").strip()
                if entry.get("en") == text or not zh:
                    catalog[text] = Message(text, zh, context=translate.COMMENT)
                else:
                    catalog[text] = Message(text, zh, context=translate.COMMENT, flags=("fuzzy",),
                                            previous_id=str(entry.get("en")))
                if entry.get("zh_old"):
                    notes.append(f"{stem}, comment {text!r}: zh_old not kept: {entry['zh_old']!r}")
    for key, entry in cells.items():
        if str(key) not in used_cells and entry.get("en") and entry.get("zh"):
            message = Message(entry["en"], msgstr(entry["zh"], entry["en"]), context=str(key))
            catalog.obsolete[(message.id, message.context)] = message
            notes.append(f"{stem}: cell entry {key} names no cell: kept obsolete")
    for key, entry in comments.items():
        if key not in used_comments and entry.get("en") and entry.get("zh"):
            message = Message(str(entry["en"]), str(entry["zh"]).strip(), context=translate.COMMENT)
            catalog.obsolete[(message.id, message.context)] = message
            notes.append(f"{stem}: comment entry {entry['en']!r} no longer used: kept obsolete")
    return catalog


def last_yaml_rev() -> str:
    """The newest commit whose tools/translate.py is the YAML version."""
    for rev in subprocess.run(["git", "log", "--format=%H", "--", "tools/translate.py"], cwd=translate.ROOT,
                              capture_output=True, text=True, check=True).stdout.split():
        source = subprocess.run(["git", "show", f"{rev}:tools/translate.py"], cwd=translate.ROOT,
                                capture_output=True, text=True).stdout
        if "import yaml" in source:
            return rev
    raise SystemExit("no commit has the YAML tools/translate.py. Fix: pass --old-rev.")


def old_translate(rev: str):
    """tools/translate.py as it was at ``rev`` (the YAML version), imported under another name."""
    source = subprocess.run(["git", "show", f"{rev}:tools/translate.py"], cwd=translate.ROOT, capture_output=True,
                            text=True, check=True).stdout
    if "yaml" not in source:
        raise SystemExit(f"tools/translate.py at {rev} is not the YAML version. Fix: pass --old-rev <a commit that "
                         f"has it>.")
    folder = Path(tempfile.mkdtemp())
    (folder / "translate_yaml.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("translate_yaml", folder / "translate_yaml.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-rev", help="a commit with the YAML tools/translate.py (default: the newest)")
    parser.add_argument("--delete", action="store_true", help="delete the YAML catalogs once the proof holds")
    options = parser.parse_args(argv)
    old = old_translate(options.old_rev or last_yaml_rev())
    notes, differ = [], []
    stems = [p.stem for p in translate.english_notebooks() if (translate.CATALOGS / f"{p.stem}.yaml").is_file()]
    for stem in stems:
        pofiles.write(convert(stem, notes), translate.catalog_path(stem))
    for stem in stems:
        nb = nbformat.read(translate.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        try:
            from_yaml = old.render(old.translate(stem, nb, old.load_catalog(stem), old.load_comments(stem)))
        except old.TranslationError as error:
            notes.append(f"{stem}: the YAML catalog does not build ({str(error)[:200]}); nothing to compare")
            continue
        from_po = translate.render(translate.translate(stem, nb, translate.load_catalog(stem)))
        if from_po != from_yaml.replace(f'"i18n/zh/{stem}.yaml"', f'"i18n/zh/{stem}.po"'):
            differ.append(stem)
    print("\n".join(notes))
    if differ:
        print(f"NOT lossless, the zh notebooks differ: {differ}", file=sys.stderr)
        return 1
    print(f"{len(stems)} catalogs converted; every zh notebook built from .po is byte-identical to the one built "
          f"from YAML (except the record's source path)")
    if options.delete:
        for stem in stems:
            (translate.CATALOGS / f"{stem}.yaml").unlink(missing_ok=True)
        print("YAML catalogs deleted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
