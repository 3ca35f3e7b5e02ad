"""The Chinese edition (中文版): notebooks/zh/ is generated from the English notebooks plus a gettext catalog each.

Prose and code comments are translated. Code cells and their outputs are copied from the English notebook, only
the comments' text changes, so the two editions cannot disagree on code or results. Each notebook's translation is
the gettext catalog ``i18n/zh/<notebook stem>.po`` (read and written with Babel; Poedit, Lokalize and Weblate open
it too, see docs/TRANSLATING.md). One entry per markdown cell and one per distinct code comment:

    msgctxt "<cell id>"                    msgctxt "comment"
    msgid "<the English cell source>"      msgid "<the English comment text: after '#', stripped>"
    msgstr "<the Chinese text>"            msgstr "<the Chinese comment text, one line>"

The msgctxt keeps two cells with the same English apart (and a comment apart from a cell). An entry translates its
cell only while its msgid is the cell's current English, it is not ``#, fuzzy`` and its msgstr is not empty.

When the English changes, ``update`` does what gettext's msgmerge does: the entry gets the new English as its
msgid, keeps the old Chinese, is flagged ``#, fuzzy`` and records the English it translated as ``#| msgid``. A
new comment (or a cell with a new id) gets, the same way, the translation of the most similar old one that is no
longer in the notebook (``FUZZY_CUTOFF``). ``build`` and ``check`` fail
on every fuzzy, untranslated or missing entry, naming the lesson, the cell and the fix; the translator updates the
msgstr and removes the fuzzy flag. An entry whose cell or comment is gone becomes obsolete (``#~``, kept for
reference): allowed, and reported by ``check``.

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
  python tools/translate.py check              exit 1 listing missing, fuzzy and unused entries and out-of-date zh
                                               notebooks; also checks course_lib's message catalog when it exists
  python tools/translate.py update STEM ...    merge notebooks/STEM.ipynb into its catalog: new cells and comments
                                               untranslated, changed ones fuzzy, gone ones obsolete (no STEM: all)
  python tools/translate.py extract STEM ...   the same as update
  python tools/translate.py stats              translated / total markdown cells and code comments, per lesson
"""
from __future__ import annotations

import copy
import difflib
import io
import re
import sys
import tokenize
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog, Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402
import pofiles  # noqa: E402
from generated import staging  # noqa: E402
from pofiles import check_catalog  # noqa: E402  (the check of any .po, e.g. course_lib's messages)

ROOT = generated.ROOT
NOTEBOOKS = ROOT / "notebooks"
CATALOGS = ROOT / "i18n" / "zh"
OUT = NOTEBOOKS / "zh"
LANGUAGE = "zh-CN"
COMMENT = "comment"  # the msgctxt of every code comment entry
HEADER = ("Chinese translation of notebooks/{stem}.ipynb (the course's zh edition).\n"
          "msgctxt: the cell id of a markdown cell, or \"comment\" for a code comment.\n"
          "After an English change: python tools/translate.py update {stem}; see docs/TRANSLATING.md.")
FUZZY_CUTOFF = 0.6  # how alike a new and an old English text must be to offer the old translation (as fuzzy)


class TranslationError(Exception):
    """A missing or stale translation; the message lists every problem found."""


def shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (messages name files as a learner types them)."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def english_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def catalog_path(stem: str) -> Path:
    return CATALOGS / f"{stem}.po"


def new_catalog(stem: str) -> Catalog:
    """An empty catalog for ``stem`` with the course's header."""
    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    return Catalog(locale=pofiles.LOCALE, project="MindSpore course", version=stem, fuzzy=False,
                   header_comment="\n".join(f"# {line}" for line in HEADER.format(stem=stem).splitlines()),
                   msgid_bugs_address="the course's issue tracker", last_translator="the course's translators",
                   language_team="zh_CN", creation_date=now, revision_date=now)


def load_catalog(stem: str) -> Catalog:
    """The catalog of ``stem`` (empty when there is none yet). Raises TranslationError for an unreadable one."""
    path = catalog_path(stem)
    if not path.is_file():
        return new_catalog(stem)
    try:
        return pofiles.read(path, ROOT)
    except pofiles.CatalogReadError as error:
        raise TranslationError(str(error)) from None


def cell_entries(catalog: Catalog) -> dict[str, list[Message]]:
    """The entries of markdown cells, by msgctxt (the cell id): normally one each."""
    found: dict[str, list[Message]] = {}
    for message in catalog:
        if message.id and message.context != COMMENT:
            found.setdefault(str(message.context), []).append(message)
    return found


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


def comment_problems(stem: str, nb, catalog: Catalog) -> list[str]:
    """Every translatable comment of ``nb``'s code cells without a current translation in ``catalog``."""
    found, po = [], shown(catalog_path(stem))
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for line, _, token in code_comments(cell.source):
            text = comment_text(token)
            message = catalog.get(text, COMMENT)
            where = f"{stem}, cell {index} (id {cell.get('id')!r}), line {line + 1}, comment {token!r}"
            if message is None:
                found.append(f"{where}: no translation (new or changed English comment). Fix: python "
                             f"tools/translate.py update {stem}, then translate its entry (msgctxt \"comment\") "
                             f"in {po}.")
            elif message.fuzzy:
                found.append(f"{where}: fuzzy: the English comment changed since it was translated (the old "
                             f"English is in its '#| msgid' lines in {po}). Fix: update its msgstr to the new "
                             f"comment, then delete the '#, fuzzy' flag.")
            elif not (message.string or "").strip():
                found.append(f"{where}: no translation (empty msgstr in {po}). Fix: translate it.")
            elif "\n" in message.string.strip():
                found.append(f"{where}: the translation has more than one line. Fix: write it on one line in {po}.")
    return found


def translate_comments(source: str, catalog: Catalog) -> str:
    """``source`` with each translatable comment's text replaced by its Chinese; everything else unchanged."""
    lines = source.split("\n")
    for line, column, token in code_comments(source):
        prefix = _COMMENT.match(token).group(1)
        zh = catalog.get(comment_text(token), COMMENT).string.strip()
        lines[line] = lines[line][:column] + prefix + zh
    return "\n".join(lines)


def problems(stem: str, nb, catalog: Catalog) -> list[str]:
    """Every markdown cell of ``nb`` without a current translation in ``catalog``, named by lesson and cell."""
    found, po, entries = [], shown(catalog_path(stem)), cell_entries(catalog)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        key = str(cell.get("id"))
        where = f"{stem}, cell {index} (id {key!r}, starts {cell.source[:40]!r})"
        if key == COMMENT:
            found.append(f"{where}: a cell id may not be {COMMENT!r} (the msgctxt of code comments). Fix: give the "
                         f"cell another id in notebooks/{stem}.ipynb.")
            continue
        mine = entries.get(key, [])
        if len(mine) > 1:
            found.append(f"{where}: {po} has {len(mine)} entries for this cell (msgctxt {key!r}). Fix: python "
                         f"tools/translate.py update {stem} (keeps the one whose msgid is the cell's English, makes "
                         f"the others obsolete), or delete the extra ones by hand.")
            continue
        if not mine or (mine[0].id == cell.source and not (mine[0].string or "").strip()):
            found.append(f"{where}: no translation. Fix: python tools/translate.py update {stem}, then translate "
                         f"the entry msgctxt {key!r} in {po}.")
        elif mine[0].id != cell.source:
            found.append(f"{where}: the English text changed since it was translated (the entry's msgid is not the "
                         f"cell's text). Fix: python tools/translate.py update {stem} (marks it fuzzy), update its "
                         f"msgstr in {po} to the new English, then delete the '#, fuzzy' flag.")
        elif mine[0].fuzzy:
            found.append(f"{where}: fuzzy: the English text changed since it was translated (the old English is in "
                         f"its '#| msgid' lines in {po}). Fix: update its msgstr to the new msgid, then delete the "
                         f"'#, fuzzy' flag (in Poedit: untick 'Needs work').")
    return found


def unused_entries(stem: str, nb, catalog: Catalog) -> list[str]:
    """The active entries of ``catalog`` that translate nothing of ``nb``: a cell or a comment no longer there."""
    cells = {str(c.get("id")) for c in nb.cells if c.cell_type == "markdown"}
    texts = {comment_text(token) for c in nb.cells if c.cell_type == "code" for _, _, token in code_comments(c.source)}
    po, found = shown(catalog_path(stem)), []
    for message in catalog:
        if not message.id:
            continue
        if message.context == COMMENT and message.id not in texts:
            found.append(f"{po}: the comment entry {message.id!r} is no longer in {stem}.ipynb. Fix: python "
                         f"tools/translate.py update {stem} (keeps it as obsolete, #~)")
        elif message.context != COMMENT and message.context not in cells:
            found.append(f"{po}: the entry msgctxt {message.context!r} (starts {message.id[:40]!r}) names no "
                         f"markdown cell of {stem}.ipynb. Fix: python tools/translate.py update {stem} (keeps it as "
                         f"obsolete, #~)")
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


def translate(stem: str, nb, catalog: Catalog, comments: bool = True):
    """The zh notebook: a deep copy of ``nb`` whose markdown cells carry their Chinese text and whose code cells
    carry Chinese comments (``comments=False``: leave code cells as they are)."""
    found = problems(stem, nb, catalog) + (comment_problems(stem, nb, catalog) if comments else [])
    if found:
        raise TranslationError("\n".join(found))
    zh = copy.deepcopy(nb)
    for cell in zh.cells:
        if cell.cell_type == "markdown":
            cell.source = _relink(catalog.get(cell.source, str(cell.get("id"))).string.rstrip("\n"))
        elif cell.cell_type == "code" and comments:
            cell.source = translate_comments(cell.source, catalog)
    zh.metadata["language"] = LANGUAGE
    return generated.stamp(zh, [NOTEBOOKS / f"{stem}.ipynb", catalog_path(stem)], "tools/translate.py build")


def render(nb) -> str:
    return nbformat.writes(nb) + "\n"


def build(out: Path | None = None, keep_edits: bool = False, report=print) -> list[Path]:
    """Write every zh notebook, never over a learner's (see the module docstring). ``keep_edits`` (make lab-zh):
    skip the lessons whose translation is incomplete instead of failing (``report`` tells which). Returns the
    notebooks that now hold what the catalogs generate."""
    out = Path(out or OUT)
    errors, generated_text = {}, {}
    for path in english_notebooks():
        nb = nbformat.read(path, as_version=4)
        try:
            generated_text[path.name] = render(translate(path.stem, nb, load_catalog(path.stem)))
        except TranslationError as error:
            errors[path.stem] = str(error)
    if errors and not keep_edits:
        raise TranslationError("\n".join(errors.values()))

    def produce(folder: Path) -> None:
        for name, text in generated_text.items():
            (folder / name).write_text(text, encoding="utf-8")

    written = generated.rebuild(out, produce, what="the Chinese edition", manifest=False,
                                legacy=generated.git_unmodified, report=report,
                                needed=sum(len(t.encode("utf-8")) for t in generated_text.values()))
    if errors:
        report(f"not (re)built, their translation is incomplete: {', '.join(sorted(errors))}")
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


def message_catalogs() -> list[tuple[Path, Catalog]]:
    """The other catalogs ``check`` includes: course_lib's messages (tools/messages_catalog.py), when it exists,
    with the messages course_lib's code uses (a message the catalog lacks is a problem)."""
    try:
        import messages_catalog
    except ImportError:
        return []
    if not messages_catalog.CATALOG.is_file():
        return []
    return [(messages_catalog.CATALOG, messages_catalog.extract())]


def check(extra=(), report=None) -> list[str]:
    """Every problem of the zh edition: missing, stale, fuzzy or unused entries, out-of-date or stray zh notebooks;
    and of each ``(po_path, expected)`` in ``extra`` (see ``check_catalog``). Obsolete entries are allowed:
    ``report`` is told about them."""
    found = []
    for path in english_notebooks():
        nb = nbformat.read(path, as_version=4)
        try:
            catalog = load_catalog(path.stem)
        except TranslationError as error:
            found.append(str(error))
            continue
        lesson_problems = problems(path.stem, nb, catalog) + comment_problems(path.stem, nb, catalog)
        found += lesson_problems + unused_entries(path.stem, nb, catalog)
        if catalog.obsolete and report is not None:
            report(f"{shown(catalog_path(path.stem))}: {len(catalog.obsolete)} obsolete entr"
                   f"{'y' if len(catalog.obsolete) == 1 else 'ies'} (#~), kept for reference (not used).")
        target = OUT / path.name
        if not lesson_problems and (not target.is_file()
                                    or not same_notebook(target, translate(path.stem, nb, catalog))):
            found.append(f"{shown(target)} is not what `make zh` generates. Fix: make zh")
    stray = {p.name for p in OUT.glob("*.ipynb")} - {p.name for p in english_notebooks()}
    found += [f"{shown(OUT / name)} has no English notebook. Fix: delete it" for name in sorted(stray)]
    stray = {p.stem for p in CATALOGS.glob("*.po")} - {p.stem for p in english_notebooks()}
    found += [f"{shown(catalog_path(stem))} has no English notebook. Fix: delete it (git keeps its history)"
              for stem in sorted(stray)]
    for po_path, expected in extra:
        found += check_catalog(po_path, expected, root=ROOT, report=report)
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
                     comments - len(comment_problems(path.stem, nb, catalog)), comments))
    return rows


# ------------------------------------------------------------------------------------------- update
def _needs_work(message: Message) -> bool:
    return message.fuzzy or not (message.string or "").strip()


def _carried(new_id: str, context: str, old: Message) -> Message:
    """A new entry for ``new_id`` that offers ``old``'s translation, flagged fuzzy, as msgmerge does: its previous
    msgid is the English the translation was written for (``old``'s own previous one when it was fuzzy already)."""
    if not (old.string or "").strip():
        return Message(new_id, "", context=context, user_comments=old.user_comments)
    previous = old.previous_id[0] if old.fuzzy and old.previous_id else old.id
    return Message(new_id, old.string, context=context, flags=("fuzzy",), previous_id=previous,
                   user_comments=old.user_comments)


def _key(msgid: str, context: str | None):
    """How Babel keys an entry (``Catalog.obsolete`` too): the msgid, with its msgctxt when it has one."""
    return msgid if context is None else (msgid, context)


def _closest(text: str, pool: list[Message]) -> Message | None:
    """The entry of ``pool`` whose msgid is most like ``text`` (None below FUZZY_CUTOFF)."""
    match = difflib.get_close_matches(text, [m.id for m in pool], n=1, cutoff=FUZZY_CUTOFF)
    return next(m for m in pool if m.id == match[0]) if match else None


def merge(stem: str, nb, catalog: Catalog) -> int:
    """Bring ``catalog`` up to date with ``nb`` in place, as msgmerge would; returns how many entries need a
    translator (untranslated or fuzzy). Entries follow the notebook's order (each comment where it first appears).
    A cell's entry is found by its cell id; a comment's by its text; an old entry offered to a changed cell or
    comment is flagged fuzzy with its previous msgid; entries nothing uses become obsolete (#~), and an obsolete
    entry whose English comes back is used again."""
    by_cell, by_comment = cell_entries(catalog), {m.id: m for m in catalog if m.id and m.context == COMMENT}
    obsolete = dict(catalog.obsolete)
    used, plan = set(), []  # plan: (kind, key, text) in notebook order
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            plan.append(("cell", str(cell.get("id")), cell.source))
        elif cell.cell_type == "code":
            for _, _, token in code_comments(cell.source):
                text = comment_text(token)
                if ("comment", COMMENT, text) not in plan:
                    plan.append(("comment", COMMENT, text))
    result: list[Message | None] = []
    for kind, key, text in plan:
        mine = by_cell.get(key, []) if kind == "cell" else [by_comment[text]] if text in by_comment else []
        exact = next((m for m in mine if m.id == text), None)
        if exact is not None:
            if not exact.fuzzy:
                exact.previous_id = []
            message = exact
            used.add(id(exact))
        elif mine:  # the cell's English changed: offer the translation it had
            base = next((m for m in mine if (m.string or "").strip()), mine[0])
            message = _carried(text, key, base)
            used.add(id(base))
        elif _key(text, key) in obsolete:  # its English came back
            message = obsolete.pop(_key(text, key))
        else:
            message = None  # new: matched below against what nothing else uses
        result.append(message)
    pool = {"cell": [m for ms in by_cell.values() for m in ms if id(m) not in used],
            "comment": [m for m in by_comment.values() if id(m) not in used]}
    for index, (kind, key, text) in enumerate(plan):
        if result[index] is None:
            old = _closest(text, [m for m in pool[kind] if (m.string or "").strip()])
            if old is not None:
                pool[kind].remove(old)
                result[index] = _carried(text, key, old)
            else:
                result[index] = Message(text, "", context=key)
    for message in [m for m in catalog if m.id]:
        catalog.delete(message.id, message.context)
    for message in result:
        catalog[message.id] = message
    for message in pool["cell"] + pool["comment"]:
        if (message.string or "").strip():
            message.flags.discard("fuzzy")
            message.previous_id = []
            obsolete[_key(message.id, message.context)] = message
    catalog.obsolete = {key: m for key, m in obsolete.items() if catalog.get(m.id, m.context) is None}
    return sum(_needs_work(m) for m in result)


def update(stem: str) -> int:
    """Merge notebooks/STEM.ipynb into its catalog (creating it) and write it; returns how many entries need a
    translator. Never loses a translation: a changed cell keeps its old one (fuzzy), a gone one is kept obsolete."""
    path = NOTEBOOKS / f"{stem}.ipynb"
    if not path.is_file():
        raise SystemExit(f"No notebook {shown(path)}. Fix: pass a stem such as 03_model_train_eval.")
    before = catalog_path(stem).read_bytes() if catalog_path(stem).is_file() else None
    catalog = load_catalog(stem)
    todo = merge(stem, nbformat.read(path, as_version=4), catalog)
    try:
        pofiles.write(catalog, catalog_path(stem), expected=before)
    except pofiles.CatalogReadError as error:
        raise TranslationError(str(error)) from None
    return todo



def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("build", "check", "extract", "update", "stats"):
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
        extra = message_catalogs()
        found = check(extra=extra, report=lambda note: print(f"note: {note}"))
        also = "".join(f" and {shown(po_path)}" for po_path, _ in extra)
        print("\n".join(found) if found else f"the Chinese edition{also}: complete and current")
        return 1 if found else 0
    try:
        for stem in argv[1:] or [path.stem for path in english_notebooks()]:
            print(f"{stem}: {update(stem)} entr(ies) to translate in {shown(catalog_path(stem))}")
    except TranslationError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
