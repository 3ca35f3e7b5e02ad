"""course_lib's message catalog (gettext .po): the Chinese text of every ``_("...")`` message in course_lib.

    python tools/messages_catalog.py update   # add new messages (untranslated), mark changed ones fuzzy
    python tools/messages_catalog.py check    # fail on a missing, untranslated or fuzzy entry (CI runs this)
    python tools/messages_catalog.py stats    # translated / total

Messages are found by Babel's extractor (the keywords ``_`` and ``N_``, gettext's no-op marker for a text translated
later, when shown), as ``pybabel extract -k _ -k N_`` finds them. A changed English message keeps its old Chinese as a
fuzzy entry (``#, fuzzy`` and ``#| msgid "old text"``), as gettext's msgmerge does; a translator
(Poedit, Lokalize, Weblate or a text editor) updates the Chinese and removes the flag.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pofiles  # noqa: E402  (tools/pofiles.py: .po files read and written as gettext's own tools do)

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_lib"
CATALOG = PACKAGE / "locale" / "zh" / "LC_MESSAGES" / "course_lib.po"
METHODS = [("**.py", "python")]
KEYWORDS = {"_": None, "N_": None}  # N_: marked where written, translated when shown


class CatalogError(Exception):
    """The catalog does not match course_lib's messages; the message lists every problem."""


def extract(package: Path = PACKAGE) -> Catalog:
    """Every ``_("...")`` literal in ``package`` (and, for the real package, in ``scripts/``, which speak to the
    learner through course_lib) as a template catalog; locations relative to the repository."""
    template = Catalog(project="course_lib", domain="course_lib")
    folders = [package] + ([ROOT / "scripts"] if package == PACKAGE else [])
    for folder in folders:
        for filename, lineno, message, comments, context in extract_from_dir(
                str(folder), METHODS, keywords=KEYWORDS, comment_tags=("Translators:",), strip_comment_tags=True):
            path = Path(folder.name) / filename
            template.add(message, None, [(path.as_posix(), lineno)], auto_comments=comments, context=context)
    return template


def load(path: Path = CATALOG) -> Catalog:
    if not path.exists():
        return Catalog(locale="zh_CN", project="course_lib", domain="course_lib")
    return pofiles.read(path, root=ROOT)


def save(catalog: Catalog, path: Path = CATALOG, expected: bytes | None = None) -> None:
    """Write ``catalog`` atomically, keeping each fuzzy entry's previous English (``#|``) as gettext does."""
    pofiles.write(catalog, path, expected=expected)


def update(path: Path = CATALOG, package: Path = PACKAGE) -> Catalog:
    """Merge the messages found in course_lib into the catalog (Babel's ``Catalog.update``, fuzzy matching on)."""
    before = path.read_bytes() if path.exists() else None
    catalog = load(path)
    template = extract(package)
    template.creation_date = catalog.creation_date  # no date churn: the catalog changes only when a message does
    catalog.update(template, no_fuzzy_matching=False, update_header_comment=False, keep_user_comments=True)
    save(catalog, path, expected=before)
    return catalog


def problems(path: Path = CATALOG, package: Path = PACKAGE) -> list[str]:
    """Every reason the catalog is not ready: a message course_lib uses but the catalog lacks, an untranslated or a
    fuzzy entry (``pofiles.check_catalog``). Obsolete entries (messages no longer used) are not problems."""
    return pofiles.check_catalog(path, extract(package), root=ROOT)


def check(path: Path = CATALOG) -> None:
    found = problems(path)
    if found:
        raise CatalogError("\n".join(found) + f"\n{len(found)} problem(s). Fix: python tools/messages_catalog.py "
                           "update, translate the new or fuzzy entries (and remove the fuzzy flag), check again.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("update", "check", "stats"))
    options = parser.parse_args(argv)
    if options.command == "update":
        catalog = update()
        print(f"{CATALOG.relative_to(ROOT)}: {sum(1 for m in catalog if m.id)} messages")
        found = problems()
        print(f"{len(found)} to translate (untranslated or fuzzy)")
        return 0
    if options.command == "stats":
        template, catalog = extract(), load()
        total = sum(1 for m in template if m.id)
        done = sum(1 for m in template if m.id and (e := catalog.get(m.id)) is not None and e.string and not e.fuzzy)
        print(f"course_lib messages: {done}/{total} translated")
        return 0
    try:
        check()
    except CatalogError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"{CATALOG.relative_to(ROOT)}: every course_lib message has its Chinese text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
