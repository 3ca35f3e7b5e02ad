"""A translation keeps its English cell's markup: the same bold, italics, code spans and links once rendered.

CommonMark does not close ``**bold**`` between Chinese punctuation and a Chinese character (``**前置知识：**第``
shows the asterisks), so a translation can look right in the catalog and render wrong; rendering both finds it.
"""
import re
import sys
from pathlib import Path

import mistune
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import pofiles  # noqa: E402
import translate  # noqa: E402

CATALOGS = sorted((ROOT / "i18n" / "zh").glob("*.po"))
RENDER = mistune.create_markdown(plugins=["table"])
# Code spans and list items may differ on purpose (a translator may quote one more name, or join a line that
# CommonMark read as a nested item); emphasis, links, headings and tables may not.
TAGS = ("strong", "em", "a", "h1", "h2", "h3", "table")


def markup(text: str) -> dict:
    html = RENDER(text)
    return {tag: len(re.findall(rf"<{tag}[ >]", html)) for tag in TAGS}


def test_markup_counts_a_bold_that_does_not_close():
    assert markup("**前置知识**：第 1 课")["strong"] == 1
    assert markup("**前置知识：**第 1 课")["strong"] == 0


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: p.stem)
def test_each_translation_renders_with_the_markup_of_its_english_cell(catalog):
    cells = [m for m in pofiles.read(catalog) if m.id and m.context != translate.COMMENT and m.string]
    differ = {m.context: (markup(m.id), markup(m.string)) for m in cells if markup(m.id) != markup(m.string)}
    assert not differ, "\n".join(
        f"{catalog.stem}, cell {cell_id}: English {en} vs Chinese {zh}" for cell_id, (en, zh) in differ.items())
