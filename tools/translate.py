"""The Chinese edition (中文版): notebooks/zh/ is generated from the English notebooks plus a translation catalog.

Only prose is translated. Code cells and their outputs are copied from the English notebook, so the two editions
cannot disagree on code or results. Each markdown cell's translation lives in ``i18n/zh/<notebook stem>.yaml``:

    cells:
      <cell id>:
        sha: <first 12 hex digits of the SHA-256 of the English cell source it translates>
        en: |
          <that English source, for the translator and the reviewer>
        zh: |
          <the Chinese text>

When an English cell changes, its ``sha`` no longer matches and ``check`` names the lesson and the cell.

Usage (from the repository root, or anywhere):
  python tools/translate.py build              write notebooks/zh/*.ipynb (fails on a missing or stale translation)
  python tools/translate.py build --keep-edits (make lab-zh) the same, but skip, with a warning, lessons whose
                                               translation is incomplete instead of failing
Neither ever overwrites a zh notebook a learner edited, ran or added cells to: each generated notebook records its
sources and the hash of its content (tools/generated.py); a changed one is kept and the new version is written
beside it as NAME.new.ipynb, with a message. A notebook without a record (generated before records existed) is the
course's only when git has it unchanged.
  python tools/translate.py check              exit 1 listing missing/stale translations and out-of-date zh notebooks
  python tools/translate.py extract STEM ...   add every untranslated or stale cell of notebooks/STEM.ipynb to its
                                               catalog with ``zh: null`` and the new English text (keeps the rest)
  python tools/translate.py stats              translated / total markdown cells, per lesson and in all
"""
from __future__ import annotations

import copy
import hashlib
import re
import sys
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402
from generated import staging  # noqa: E402

ROOT = generated.ROOT
NOTEBOOKS = ROOT / "notebooks"
CATALOGS = ROOT / "i18n" / "zh"
OUT = NOTEBOOKS / "zh"
LANGUAGE = "zh-CN"


class TranslationError(Exception):
    """A missing or stale translation; the message lists every problem found."""


def source_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (messages name files as a learner types them)."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def english_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def catalog_path(stem: str) -> Path:
    return CATALOGS / f"{stem}.yaml"


def load_catalog(stem: str) -> dict:
    path = catalog_path(stem)
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    cells = data.get("cells") or {}
    if not isinstance(cells, dict):
        raise TranslationError(f"{shown(path)}: 'cells' must be a mapping of cell id -> entry.")
    return {str(key): value for key, value in cells.items()}


def problems(stem: str, nb, catalog: dict) -> list[str]:
    """Every markdown cell of ``nb`` without a current translation in ``catalog``, named by lesson and cell."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        where = f"{stem}, cell {index} (id {cell.get('id')!r}, starts {cell.source[:40]!r})"
        entry = catalog.get(str(cell.get("id")))
        if not entry or not (entry.get("zh") or "").strip():
            found.append(f"{where}: no translation. Fix: python tools/translate.py extract {stem}, then write its zh.")
        elif entry.get("sha") != source_sha(cell.source):
            found.append(f"{where}: the English text changed since it was translated (sha {entry.get('sha')} != "
                         f"{source_sha(cell.source)}). Fix: python tools/translate.py extract {stem}, then update "
                         f"its zh to the new English.")
    return found


def _relink(text: str) -> str:
    """Links of an English lesson are relative to notebooks/; the zh notebook sits one folder deeper. Sibling
    notebooks stay relative (they exist in zh too); everything else gets one more ``../``. Covers inline links and
    images (with or without a title), reference definitions (``[x]: target``) and HTML ``src``/``href``."""
    def fix(match):
        target = match.group(2)
        if re.match(r"^(?:[a-zA-Z][\w+.-]*:|#|/)", target) or re.match(r"^[\w.-]+\.ipynb(?:#.*)?$", target):
            return match.group(0)
        return f"{match.group(1)}../{target}{match.group(3)}"
    text = re.sub(r"(\]\(<?)([^)\s>]+)(>?(?:\s+\"[^\"]*\")?\))", fix, text)
    text = re.sub(r"(^[ ]{0,3}\[[^\]\n]+\]:[ \t]*<?)([^\s>]+)(>?)", fix, text, flags=re.M)
    return re.sub(r'((?:src|href)=")([^"]+)(")', fix, text)


def translate(stem: str, nb, catalog: dict):
    """The zh notebook: a deep copy of ``nb`` whose markdown cells carry their Chinese text."""
    found = problems(stem, nb, catalog)
    if found:
        raise TranslationError("\n".join(found))
    zh = copy.deepcopy(nb)
    for cell in zh.cells:
        if cell.cell_type == "markdown":
            cell.source = _relink(catalog[str(cell.get("id"))]["zh"].rstrip("\n"))
    zh.metadata["language"] = LANGUAGE
    return generated.stamp(zh, [NOTEBOOKS / f"{stem}.ipynb", catalog_path(stem)], "tools/translate.py build")


def render(nb) -> str:
    return nbformat.writes(nb) + "\n"


def build(out: Path | None = None, keep_edits: bool = False, report=print) -> list[Path]:
    """Write every zh notebook, never over a learner's (see the module docstring). ``keep_edits`` (make lab-zh):
    skip the lessons whose translation is incomplete instead of failing (``report`` tells which). Returns the
    notebooks that now hold what the catalogs generate."""
    out = Path(out or OUT)
    errors, generated_text = [], {}
    for path in english_notebooks():
        nb = nbformat.read(path, as_version=4)
        try:
            generated_text[path.name] = render(translate(path.stem, nb, load_catalog(path.stem)))
        except TranslationError as error:
            errors.append(str(error))
    if errors and not keep_edits:
        raise TranslationError("\n".join(errors))

    def produce(folder: Path) -> None:
        for name, text in generated_text.items():
            (folder / name).write_text(text, encoding="utf-8")

    written = generated.rebuild(out, produce, what="the Chinese edition", manifest=False,
                                legacy=generated.git_unmodified, report=report,
                                needed=sum(len(t.encode("utf-8")) for t in generated_text.values()))
    if errors:
        incomplete = sorted({line.split(",")[0] for error in errors for line in error.splitlines()})
        report(f"not (re)built, their translation is incomplete: {', '.join(incomplete)}")
    return sorted(written)


def same_notebook(target: Path, zh) -> bool:
    """True when ``target`` holds what ``zh`` is: the same cells and metadata (the generation record aside, so a
    notebook written before records existed still counts as current)."""
    try:
        on_disk = nbformat.read(target, as_version=4)
    except Exception:
        return False
    meta = {k: v for k, v in on_disk.metadata.items() if k != generated.RECORD}
    return (generated.content_sha(on_disk) == generated.content_sha(zh)
            and meta == {k: v for k, v in zh.metadata.items() if k != generated.RECORD})


def check() -> list[str]:
    found = []
    for path in english_notebooks():
        nb = nbformat.read(path, as_version=4)
        catalog = load_catalog(path.stem)
        lesson_problems = problems(path.stem, nb, catalog)
        found += lesson_problems
        target = OUT / path.name
        if not lesson_problems and (not target.is_file()
                                    or not same_notebook(target, translate(path.stem, nb, catalog))):
            found.append(f"{shown(target)} is not what `make zh` generates. Fix: make zh")
    stray = {p.name for p in OUT.glob("*.ipynb")} - {p.name for p in english_notebooks()}
    found += [f"{shown(OUT / name)} has no English notebook. Fix: delete it" for name in sorted(stray)]
    return found


def stats() -> list[tuple[str, int, int]]:
    """(lesson, current translations, markdown cells) for every English notebook."""
    rows = []
    for path in english_notebooks():
        nb = nbformat.read(path, as_version=4)
        catalog = load_catalog(path.stem)
        total = sum(cell.cell_type == "markdown" for cell in nb.cells)
        rows.append((path.stem, total - len(problems(path.stem, nb, catalog)), total))
    return rows


class _Literal(str):
    pass


yaml.SafeDumper.add_representer(_Literal, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|"))


def extract(stem: str) -> int:
    path = NOTEBOOKS / f"{stem}.ipynb"
    if not path.is_file():
        raise SystemExit(f"No notebook {shown(path)}. Fix: pass a stem such as 03_model_train_eval.")
    nb = nbformat.read(path, as_version=4)
    catalog = load_catalog(stem)
    cells, todo = {}, 0
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        key, sha = str(cell.get("id")), source_sha(cell.source)
        entry = dict(catalog.get(key) or {})
        if entry.get("sha") != sha or not (entry.get("zh") or "").strip():
            if entry.get("zh") and entry.get("sha") != sha:
                entry["zh_old"] = entry["zh"]  # the translation of the previous English text, to update
            entry.update(sha=sha, en=cell.source, zh=entry.get("zh") if entry.get("sha") == sha else None)
            todo += 1
        cells[key] = {k: (_Literal(v) if isinstance(v, str) and "\n" in v else v)
                      for k, v in entry.items() if k in ("sha", "en", "zh", "zh_old")}
    target = catalog_path(stem)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump({"cells": cells}, allow_unicode=True, sort_keys=False, width=1000)
    tmp = target.with_suffix(".yaml.tmp")
    tmp.write_text(f"# {stem}: Chinese translation of the markdown cells (see tools/translate.py)\n{text}",
                   encoding="utf-8")
    tmp.replace(target)
    return todo


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("build", "check", "extract", "stats"):
        print(__doc__)
        return 2
    if argv[0] == "build":
        try:
            written = build(keep_edits="--keep-edits" in argv[1:])
        except (TranslationError, staging.DiskFullError, generated.RebuildRunning) as error:
            print(error, file=sys.stderr)
            return 1
        print(f"{len(written)} notebooks in {shown(OUT)}/ are what the catalogs generate")
        return 0
    if argv[0] == "stats":
        rows = stats()
        for stem, done, total in rows:
            print(f"{stem:<40} {done:>4} / {total:<4} translated")
        print(f"{'all lessons':<40} {sum(r[1] for r in rows):>4} / {sum(r[2] for r in rows):<4} translated")
        return 0
    if argv[0] == "check":
        found = check()
        print("\n".join(found) if found else "the Chinese edition is complete and current")
        return 1 if found else 0
    for stem in argv[1:]:
        print(f"{stem}: {extract(stem)} cell(s) to translate in {shown(catalog_path(stem))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
