"""Read, write and check gettext ``.po`` catalogs with Babel (the library behind pybabel and sphinx-intl).

Used by tools/translate.py (the notebooks' catalogs, i18n/zh/*.po) and usable on any .po file, such as
course_lib's message catalog: ``check_catalog(path, expected)`` lists every fuzzy, untranslated and missing entry.

Babel's ``read_po``/``write_po`` do the parsing and the formatting. This module adds what they lose:

* the previous msgid of a fuzzy entry (the ``#| msgid`` lines that msgmerge, Poedit and Lokalize write): read_po
  keeps it as a user comment and write_po re-wraps it as prose. ``read`` restores it as ``Message.previous_id``;
  ``write`` writes it line by line, as gettext does, so it survives any number of round trips.
* a duplicate entry (the same msgctxt and msgid twice, e.g. after a merge) is merged silently by read_po: ``read``
  refuses it, naming the entry.
"""
from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import PoFileError, denormalize, normalize, read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python tools/x.py` from a checkout without an installed course_lib
    sys.path.insert(0, str(ROOT))
from course_lib import locks  # noqa: E402

LOCALE = "zh_CN"
WIDTH = 0  # no wrapping: one .po line per line of text, so a diff shows the line that changed


class CatalogReadError(ValueError):
    """A .po file that cannot be read; the message names the file, the problem and the fix."""


def _shown(path: Path, root: Path | None = None) -> str:
    path = Path(path)
    if root is not None and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return str(path)


def _take_previous(text: str) -> tuple[str, dict]:
    """``text`` without its ``#|`` lines (read_po would keep them as user comments, and drop repeated ones), and
    the previous msgid each entry had: {(msgid, msgctxt): previous msgid}. Entries are separated by empty lines."""
    found, kept = {}, []
    previous, context, msgid, state = [], [], [], None

    def finish():
        if previous and msgid:
            found[(denormalize("\n".join(msgid)), denormalize("\n".join(context)) if context else None)] = \
                denormalize("\n".join(previous))

    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("#|"):
            body = stripped[2:].strip()
            if body.startswith("msgid "):
                previous, state = [body[len("msgid "):].strip()], "previous"
            elif body.startswith('"') and state == "previous":
                previous.append(body)
            else:
                state = None  # a previous msgctxt or msgid_plural: not used by the course
            continue
        if not stripped:
            finish()
            previous, context, msgid, state = [], [], [], None
        elif stripped.startswith("msgctxt "):
            context, state = [stripped[len("msgctxt "):]], "context"
        elif stripped.startswith("msgid "):
            msgid, state = [stripped[len("msgid "):]], "msgid"
        elif stripped.startswith('"') and state in ("context", "msgid"):
            (context if state == "context" else msgid).append(stripped)
        else:
            state = None
        kept.append(line)
    finish()
    return "".join(kept), found


def read(path: Path, root: Path | None = None) -> Catalog:
    """The catalog in ``path`` (``root``: messages name the file relative to it). Raises CatalogReadError for a
    file that is not a valid .po (a merge conflict left in it, a broken quote) or holds one entry twice."""
    path = Path(path)
    try:
        text, previous = _take_previous(path.read_bytes().decode("utf-8"))
        catalog = read_po(io.StringIO(text), locale=LOCALE, abort_invalid=True)
    except (PoFileError, ValueError, UnicodeDecodeError) as error:
        raise CatalogReadError(f"{_shown(path, root)} is not a valid .po file: {error}. Fix: repair it at the line "
                               f"named (a merge conflict left in it?), or restore it with git.") from error
    for (msgid, context), old in previous.items():
        message = catalog.get(msgid, context)
        if message is not None:
            message.previous_id = [old]
    seen, twice = set(), []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):  # entries are separated by empty lines
        key = tuple(re.findall(r'^(msgctxt|msgid)\s+(".*"(?:\n".*")*)', block, flags=re.M))
        if key and key[-1][0] == "msgid":
            if key in seen:
                twice.append(" ".join(f"{kind} {denormalize(value)[:60]!r}" for kind, value in key))
            seen.add(key)
    if twice:  # read_po merged them silently, keeping one msgstr
        raise CatalogReadError(f"{_shown(path, root)} holds {len(twice)} entr{'y' if len(twice) == 1 else 'ies'} "
                               f"twice: {'; '.join(twice)}. Fix: keep one of each (the one whose msgstr is right) "
                               f"and delete the other.")
    return catalog


def render(catalog: Catalog) -> bytes:
    """The .po text of ``catalog``: Babel's write_po, plus each fuzzy entry's previous msgid as ``#|`` lines. The
    same bytes as gettext's ``msgcat --no-wrap`` writes for that catalog."""
    out = io.BytesIO()
    write_po(out, catalog, width=WIDTH, include_previous=False)
    # Every entry is one block; blocks are separated by one empty line (no line of an entry is empty): the header,
    # then the entries in the catalog's order, then the obsolete ones.
    blocks = out.getvalue().decode("utf-8").split("\n\n")
    messages = [m for m in catalog if m.id]
    for index, message in enumerate(messages, start=1):
        if message.previous_id:
            previous = "".join(f"#| {'msgid ' if i == 0 else ''}{line}\n" for i, line in
                               enumerate(normalize(message.previous_id[0], width=WIDTH).split("\n")))
            at = re.search(r"^(msgctxt|msgid) ", blocks[index], flags=re.M).start()
            blocks[index] = blocks[index][:at] + previous + blocks[index][at:]
    return ("\n\n".join(blocks).rstrip("\n") + "\n").encode("utf-8")  # one newline at the end, as gettext writes


def write(catalog: Catalog, path: Path, expected: bytes | None = None) -> None:
    """Write ``catalog`` to ``path`` atomically (beside it, then ``os.replace``): never a half-written catalog.

    ``expected``: the bytes the file held when it was read; if someone saved it meanwhile (a translator's editor),
    nothing is written and CatalogReadError says so. A temporary file a killed writer left is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    locks.clean_stale_temp_files(path.parent, re.compile(re.escape(f".{path.stem}{locks.TEMP_MARK}")))
    temp = path.with_name(locks.temp_name(path.stem, path.suffix))
    try:
        temp.write_bytes(render(catalog))
        if expected is not None and (path.read_bytes() if path.exists() else None) != expected:
            raise CatalogReadError(f"{path} was changed while it was being updated (saved by an editor?). Nothing "
                                   f"was written. Fix: run the update again.")
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _named(message: Message) -> str:
    context = f"msgctxt {message.context!r}, " if message.context else ""
    text = message.id if isinstance(message.id, str) else message.id[0]
    return f"{context}msgid {text[:60]!r}{'...' if len(text) > 60 else ''}"


def check_catalog(po_path: Path, expected=None, *, root: Path | None = None, report=None) -> list[str]:
    """Every reason the catalog ``po_path`` is not ready for use, one line each, naming the file and the entry:

    * a fuzzy entry (its English changed; the translation is the old English's);
    * an untranslated entry (empty msgstr);
    * with ``expected`` (a Babel template Catalog, or (msgid, msgctxt) pairs, or msgids): an expected entry the
      catalog lacks (run the catalog's update command).

    Obsolete entries (``#~``) are allowed: ``report`` (e.g. ``print``) is told how many there are. An unreadable
    file is one problem line. ``root``: messages name the file relative to it.
    """
    shown = _shown(po_path, root)
    try:
        catalog = read(po_path, root)
    except FileNotFoundError:
        return [f"{shown} does not exist. Fix: run its update command (it creates the catalog)."]
    except CatalogReadError as error:
        return [str(error)]
    found = []
    for message in catalog:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, (list, tuple)) else [message.string]
        if message.fuzzy:
            found.append(f"{shown}: fuzzy entry ({_named(message)}): the English changed since it was translated "
                         f"(the old English is in its '#| msgid' lines). Fix: update its msgstr to the new msgid, "
                         f"then delete the '#, fuzzy' flag (in Poedit: untick 'Needs work').")
        elif not all((s or "").strip() for s in strings):
            found.append(f"{shown}: untranslated entry ({_named(message)}). Fix: write its msgstr.")
    if expected is not None:
        for item in expected:
            if isinstance(item, Message):
                msgid, context = item.id, item.context
                if not msgid:
                    continue
            elif isinstance(item, tuple):
                msgid, context = item
            else:
                msgid, context = item, None
            if catalog.get(msgid, context) is None:
                found.append(f"{shown}: missing entry ({_named(Message(msgid, context=context))}). Fix: run the "
                             f"catalog's update command (it adds the entry), then translate it.")
    if catalog.obsolete and report is not None:
        report(f"{shown}: {len(catalog.obsolete)} obsolete entr{'y' if len(catalog.obsolete) == 1 else 'ies'} (#~), "
               f"kept for reference; they are not used. Delete them when they are no longer useful.")
    return found
