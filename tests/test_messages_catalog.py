"""course_lib's one message catalog: extraction, fuzzy entries after an English change, the check, and a Chinese
learner reading course_lib's messages in Chinese."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import messages_catalog  # noqa: E402
import pofiles  # noqa: E402

from course_lib import i18n  # noqa: E402


def _package(folder: Path, message: str) -> Path:
    package = folder / "course_lib"
    package.mkdir(parents=True, exist_ok=True)
    code = f"from course_lib.i18n import _\n\n\ndef f(x):\n    return _({message!r}).format(x=x)\n"
    (package / "m.py").write_text(code)
    return package


def _translate(path: Path, table: dict) -> None:
    catalog = pofiles.read(path)
    for message in catalog:
        if message.id in table:
            message.string, message.flags = table[message.id], set()
            message.previous_id = []
    pofiles.write(catalog, path)


def test_update_check_and_a_changed_message_becomes_fuzzy(tmp_path):
    po = tmp_path / "course_lib.po"
    package = _package(tmp_path, "lr must be > 0, got {x!r}. Fix: use 0.01.")
    messages_catalog.update(po, package)
    assert any("untranslated" in p for p in messages_catalog.problems(po, package))
    _translate(po, {"lr must be > 0, got {x!r}. Fix: use 0.01.": "lr 必须大于 0，实际为 {x!r}。修正：使用 0.01。"})
    assert messages_catalog.problems(po, package) == []
    package = _package(tmp_path, "lr must be > 0, got {x!r}. Fix: use e.g. 0.01.")  # the English changed
    messages_catalog.update(po, package)
    found = messages_catalog.problems(po, package)
    assert len(found) == 1 and "fuzzy" in found[0], found
    text = po.read_text(encoding="utf-8")
    assert "#, fuzzy" in text and '#| msgid "lr must be > 0, got {x!r}. Fix: use 0.01."' in text
    assert "lr 必须大于 0" in text  # the old Chinese is kept for the translator


def test_the_shipped_catalog_is_complete_and_current():
    assert messages_catalog.problems() == []
    assert sum(1 for m in messages_catalog.extract() if m.id) > 200


@pytest.fixture
def chinese():
    i18n.set_language("zh")
    yield
    i18n.set_language(None)


def test_a_chinese_learner_reads_course_libs_messages_in_chinese(chinese):
    catalog = pofiles.read(messages_catalog.CATALOG)
    entry = next(m for m in catalog if m.id and m.string and "{" not in m.id and not m.fuzzy)
    assert i18n._(entry.id) == entry.string
    i18n.set_language("en")
    assert i18n._(entry.id) == entry.id
    assert i18n._("a message nobody translated") == "a message nobody translated"
