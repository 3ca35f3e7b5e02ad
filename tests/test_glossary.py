"""Every Chinese term a lesson uses is in docs/GLOSSARY.md, the course's single list of terms."""
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = (ROOT / "docs" / "GLOSSARY.md").read_text(encoding="utf-8")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))  # the English edition; notebooks/zh is all Chinese
# a term: two Chinese characters or more (a single character is a quoted word, such as 第 or 个)
CHINESE = re.compile(r"[\u4e00-\u9fff][\u4e00-\u9fff·/ A-Za-z]*[\u4e00-\u9fff]")


GLOSSARY_TERMS = re.sub(r"\s+", "", GLOSSARY)


def chinese_terms(text: str) -> set:
    """Chinese terms of the prose; quoted code (fenced blocks, `inline`) keeps its source's comments."""
    prose = re.sub(r"`[^`]*`", " ", re.sub(r"```.*?```", " ", text, flags=re.S))
    return {re.sub(r"\s+", "", term) for term in CHINESE.findall(prose)}


def test_the_term_finder_reads_terms_beside_english():
    text = "graph mode (图模式) and 动态图 / PyNative, sink (数据下沉)."
    assert chinese_terms(text) == {"图模式", "动态图", "数据下沉"}
    assert chinese_terms("```python\n# 如果是CPU上运行的话\n```  `x = 1  # 第`") == set()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chinese_term_of_a_lesson_is_in_the_glossary(notebook):
    nb = nbformat.read(notebook, as_version=4)
    used = set().union(*(chinese_terms(c.source) for c in nb.cells if c.cell_type == "markdown"))
    missing = sorted(term for term in used if term not in GLOSSARY_TERMS)
    assert not missing, (f"{notebook.stem} uses Chinese terms that docs/GLOSSARY.md lacks: {missing}. "
                         "Fix: add a row (中文 | English | what it means here | lesson).")
