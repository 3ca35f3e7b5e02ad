"""The Chinese edition (中文版): notebooks/zh/ is generated from the English notebooks plus a translation catalog.

Prose and code comments are translated. Code cells and their outputs are copied from the English notebook, only
the comments' text changes, so the two editions cannot disagree on code or results. Each markdown cell's translation
lives in ``i18n/zh/<notebook stem>.yaml``:

    cells:
      <cell id>:
        sha: <first 12 hex digits of the SHA-256 of the English cell source it translates>
        en: |
          <that English source, for the translator and the reviewer>
        zh: |
          <the Chinese text>

When an English cell changes, its ``sha`` no longer matches and ``check`` names the lesson and the cell. The entry
stays stale until the translator updates all three: ``extract`` puts the new English beside it as ``en_new`` (and its
hash as ``sha_new``) but keeps ``sha``, ``en`` and ``zh``; the translator rewrites ``zh``, moves ``en_new`` and
``sha_new`` into ``en`` and ``sha``. So pasting an old translation back (with its old ``sha``) never passes, and an
entry whose ``sha`` is not the hash of its own ``en`` is reported too.

Code comments are translated too; code tokens never change. The ``comments:`` mapping at the top of the catalog,
before ``cells:`` (kept apart so the two can be edited in parallel and merged), is keyed by the hash of the English
comment text (the text after ``#``, stripped):

    comments:
      <first 12 hex digits of the SHA-256 of the English comment text>:
        en: <the English comment text>
        zh: <the Chinese comment text, one line>

A changed English comment has a new hash, hence no entry: ``build`` fails naming the lesson, the cell and the comment.
Left as they are: comments without letters, ``# NBVAL_...`` markers, ``# noqa``, ``# type:``, ``# pragma``,
``# fmt:``, shebangs and encoding lines (see ``KEPT_COMMENT``).

Usage (from the repository root, or anywhere):
  python tools/translate.py build              write notebooks/zh/*.ipynb (fails on a missing or stale translation)
  python tools/translate.py build --keep-edits (make lab-zh) the same, but skip, with a warning, lessons whose
                                               translation is incomplete instead of failing
Neither ever overwrites a zh notebook a learner edited, ran or added cells to: each generated notebook records its
sources and the hash of its content (tools/generated.py); a changed one is kept and the new version is written
beside it as NAME.new.ipynb, with a message. A notebook without a record (generated before records existed) is the
course's only when git has it unchanged.
  python tools/translate.py check              exit 1 listing missing/stale translations and out-of-date zh notebooks
  python tools/translate.py extract STEM ...   add every untranslated cell and comment of notebooks/STEM.ipynb to its
                                               catalog with ``zh: null``, and the new English beside each stale
                                               cell (``en_new``); drops comments no longer in the notebook
  python tools/translate.py stats              translated / total markdown cells and code comments, per lesson
"""
from __future__ import annotations

import copy
import hashlib
import io
import re
import tokenize
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


def _read_catalog(stem: str) -> dict:
    path = catalog_path(stem)
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise TranslationError(f"{shown(path)}: expected a mapping with 'cells' and 'comments'. Fix: see "
                               f"tools/translate.py's docstring for the format.")
    for part in ("cells", "comments"):
        if not isinstance(data.get(part) or {}, dict):
            raise TranslationError(f"{shown(path)}: '{part}' must be a mapping of key -> entry, not "
                                   f"{type(data.get(part)).__name__}. Fix: see tools/translate.py's docstring.")
    return data


def load_catalog(stem: str) -> dict:
    """The ``cells:`` part of a catalog: cell id -> entry."""
    return {str(key): value for key, value in (_read_catalog(stem).get("cells") or {}).items()}


def load_comments(stem: str) -> dict:
    """The ``comments:`` part of a catalog: hash of the English comment text -> entry."""
    return {str(key): value for key, value in (_read_catalog(stem).get("comments") or {}).items()}


# Comments that are instructions to a tool, not prose: kept as they are.
KEPT_COMMENT = re.compile(r"^#(?:!|\s*(?:NBVAL_|noqa\b|type:|pragma\b|fmt:|-\*-|(?:vim?|coding)[:=]|isort:|pylint:))",
                          re.I)
# Cell magics whose body is Python: their comments are translated; any other cell magic's body is left alone.
PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun")
_COMMENT = re.compile(r"^(#+\s*)(.*?)(\s*)$", re.S)


def _token_lines(source: str) -> list[str]:
    """The lines of a code cell as the tokenizer sees them: IPython magics and shell lines become blank comments so
    that a stray quote in ``!pip install ...`` does not confuse it (their text is never translated)."""
    return [("#" if line.lstrip().startswith(("%", "!")) else line) for line in source.split("\n")]


def code_comments(source: str) -> list[tuple[int, int, str]]:
    """(line index, column, comment token) of every translatable ``#`` comment of a code cell's ``source``.
    Strings that contain ``#`` are strings, not comments (the tokenizer tells them apart). A cell run by a cell
    magic that is not Python (``%%bash``, ``%%writefile x.cpp``...) has none: its ``#`` may be code."""
    first = source.lstrip().split("\n", 1)[0]
    if first.startswith("%%") and first[2:].split(" ", 1)[0] not in PYTHON_CELL_MAGICS:
        return []
    lines = _token_lines(source)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError) as error:
        raise TranslationError(f"cannot find the comments of a code cell that starts {source[:40]!r}: {error}. "
                               f"Fix: make the cell valid Python.") from error
    found = []
    for token in tokens:
        if token.type != tokenize.COMMENT or KEPT_COMMENT.match(token.string):
            continue
        if source.split("\n")[token.start[0] - 1].lstrip().startswith(("%", "!")):
            continue
        if re.search(r"[^\W\d_]", comment_text(token.string)):
            found.append((token.start[0] - 1, token.start[1], token.string))
    return found


def comment_text(comment: str) -> str:
    """The text of a comment token: ``#   Load the data `` -> ``Load the data``."""
    return _COMMENT.match(comment).group(2)


def comment_problems(stem: str, nb, comments: dict) -> list[str]:
    """Every translatable comment of ``nb``'s code cells without a translation in ``comments``."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for line, _, token in code_comments(cell.source):
            text = comment_text(token)
            entry = comments.get(source_sha(text))
            where = f"{stem}, cell {index} (id {cell.get('id')!r}), line {line + 1}, comment {token!r}"
            if not isinstance(entry, dict) or not str(entry.get("zh") or "").strip():
                found.append(f"{where}: no translation (new or changed English comment). Fix: python "
                             f"tools/translate.py extract {stem}, then write its zh under 'comments:'.")
            elif entry.get("en") != text:
                found.append(f"{where}: its entry {source_sha(text)} records the English {entry.get('en')!r}, "
                             f"not {text!r}. Fix: set its en to the comment text.")
            elif "zh_old" in entry:
                found.append(f"{where}: the update is unfinished (zh_old is still there). Fix: check zh against the "
                             f"English, then delete zh_old.")
            elif "\n" in str(entry["zh"]).strip():
                found.append(f"{where}: the translation has more than one line. Fix: write it on one line.")
    return found


def translate_comments(source: str, comments: dict) -> str:
    """``source`` with each translatable comment's text replaced by its Chinese; everything else unchanged."""
    lines = source.split("\n")
    for line, column, token in code_comments(source):
        prefix = _COMMENT.match(token).group(1)
        zh = str(comments[source_sha(comment_text(token))]["zh"]).strip()
        lines[line] = lines[line][:column] + prefix + zh
    return "\n".join(lines)


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
                         f"{source_sha(cell.source)}). Fix: python tools/translate.py extract {stem}, update its zh "
                         f"to the new English (en_new), then move en_new and sha_new into en and sha.")
        elif entry.get("en") is not None and source_sha(entry["en"]) != entry.get("sha"):
            found.append(f"{where}: its sha {entry.get('sha')} is not the hash of its own en "
                         f"({source_sha(entry['en'])}): the entry was half updated. Fix: set en to the English it "
                         f"translates (the notebook cell's text).")
        elif "en_new" in entry or "sha_new" in entry or "zh_old" in entry:
            found.append(f"{where}: the update is unfinished (en_new, sha_new or zh_old is still there). Fix: check "
                         f"zh against the new English, then delete those keys.")
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


def translate(stem: str, nb, catalog: dict, comments: dict | None = None):
    """The zh notebook: a deep copy of ``nb`` whose markdown cells carry their Chinese text and whose code cells
    carry Chinese comments (``comments``; None: leave code cells as they are)."""
    found = problems(stem, nb, catalog) + (comment_problems(stem, nb, comments) if comments is not None else [])
    if found:
        raise TranslationError("\n".join(found))
    zh = copy.deepcopy(nb)
    for cell in zh.cells:
        if cell.cell_type == "markdown":
            cell.source = _relink(catalog[str(cell.get("id"))]["zh"].rstrip("\n"))
        elif cell.cell_type == "code" and comments is not None:
            cell.source = translate_comments(cell.source, comments)
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
            generated_text[path.name] = render(translate(path.stem, nb, load_catalog(path.stem),
                                                         load_comments(path.stem)))
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
        catalog, comments = load_catalog(path.stem), load_comments(path.stem)
        lesson_problems = problems(path.stem, nb, catalog) + comment_problems(path.stem, nb, comments)
        found += lesson_problems
        used = {source_sha(comment_text(token)) for cell in nb.cells if cell.cell_type == "code"
                for _, _, token in code_comments(cell.source)}
        found += [f"{shown(catalog_path(path.stem))}: comment entry {key} ({entry.get('en')!r}) is no longer in "
                  f"{path.name}. Fix: python tools/translate.py extract {path.stem} (drops it)"
                  for key, entry in comments.items() if key not in used and isinstance(entry, dict)]
        target = OUT / path.name
        if not lesson_problems and (not target.is_file()
                                    or not same_notebook(target, translate(path.stem, nb, catalog, comments))):
            found.append(f"{shown(target)} is not what `make zh` generates. Fix: make zh")
    stray = {p.name for p in OUT.glob("*.ipynb")} - {p.name for p in english_notebooks()}
    found += [f"{shown(OUT / name)} has no English notebook. Fix: delete it" for name in sorted(stray)]
    return found


def stats() -> list[tuple[str, int, int, int, int]]:
    """(lesson, current translations, markdown cells, translated comments, comments) for every English notebook."""
    rows = []
    for path in english_notebooks():
        nb = nbformat.read(path, as_version=4)
        catalog = load_catalog(path.stem)
        total = sum(cell.cell_type == "markdown" for cell in nb.cells)
        comments = sum(len(code_comments(cell.source)) for cell in nb.cells if cell.cell_type == "code")
        rows.append((path.stem, total - len(problems(path.stem, nb, catalog)), total,
                     comments - len(comment_problems(path.stem, nb, load_comments(path.stem))), comments))
    return rows


class _Literal(str):
    pass


yaml.SafeDumper.add_representer(_Literal, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|"))


# The layout of a catalog: its first line, then the comments, then the cells. Comments come first so that a new
# comments part merges cleanly with edits to the cells, the last of which ends the file.
COMMENTS_HEADER = ("# ---- Code comments (kept apart from 'cells:' below). Key: the first 12 hex digits of the SHA-256 "
                   "of the\n# ---- English comment text (after '#', stripped); a changed comment has no entry. See "
                   "tools/translate.py.\n")
CELLS_HEADER = "# ---- Markdown cells: cell id -> sha of the English, the English, the Chinese.\n"


def extract(stem: str) -> int:
    path = NOTEBOOKS / f"{stem}.ipynb"
    if not path.is_file():
        raise SystemExit(f"No notebook {shown(path)}. Fix: pass a stem such as 03_model_train_eval.")
    nb = nbformat.read(path, as_version=4)
    catalog, old_comments = load_catalog(stem), load_comments(stem)
    cells, comments, todo = {}, {}, 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            for _, _, token in code_comments(cell.source):
                text = comment_text(token)
                key = source_sha(text)
                if key in comments:
                    continue
                entry = dict(old_comments.get(key) or {})
                if not str(entry.get("zh") or "").strip():
                    entry = {"en": text, "zh": None}
                    todo += 1
                elif entry.get("en") != text:  # pasted from another comment: kept for the translator, not used
                    entry = {"en": text, "zh": None, "zh_old": entry["zh"]}
                    todo += 1
                comments[key] = {k: v for k, v in entry.items() if k in ("en", "zh", "zh_old")}
            continue
        if cell.cell_type != "markdown":
            continue
        key, sha = str(cell.get("id")), source_sha(cell.source)
        entry = dict(catalog.get(key) or {})
        if not (entry.get("zh") or "").strip():
            entry = dict(sha=sha, en=cell.source, zh=None)
            todo += 1
        elif entry.get("sha") != sha:
            # Stale: the entry keeps the hash and the English it translates; the translator moves these in.
            entry.update(en_new=cell.source, sha_new=sha)
            todo += 1
        else:
            entry.pop("en_new", None)
            entry.pop("sha_new", None)
        cells[key] = {k: (_Literal(v) if isinstance(v, str) and "\n" in v else v)
                      for k, v in entry.items() if k in ("sha", "en", "zh", "zh_old", "sha_new", "en_new")}
    target = catalog_path(stem)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = (COMMENTS_HEADER + yaml.safe_dump({"comments": comments}, allow_unicode=True, sort_keys=False, width=1000)
            + CELLS_HEADER + yaml.safe_dump({"cells": cells}, allow_unicode=True, sort_keys=False, width=1000))
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
        for stem, done, total, comments_done, comments in rows:
            print(f"{stem:<40} {done:>4} / {total:<4} cells, {comments_done:>4} / {comments:<4} comments translated")
        print(f"{'all lessons':<40} {sum(r[1] for r in rows):>4} / {sum(r[2] for r in rows):<4} cells, "
              f"{sum(r[3] for r in rows):>4} / {sum(r[4] for r in rows):<4} comments translated")
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
