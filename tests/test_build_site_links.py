"""tools/build_site.link_pages: repository links in a lesson become links that work on the site."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import build_site  # noqa: E402


def test_glossary_anchor_recipe_and_lesson_links_are_rewritten():
    text = ('<a href="../docs/GLOSSARY.md#graph-mode">x</a> <a href="../docs/GLOSSARY.md">g</a> '
            '<a href="../recipes/functional_train_step.py">r</a> <a href="06_functional_training.ipynb">n</a> '
            '<a href="https://www.mindspore.cn/docs/en/master/index.html">d</a>')
    assert build_site.link_pages(text) == (
        '<a href="glossary.html#graph-mode">x</a> <a href="glossary.html">g</a> '
        '<a href="recipes/functional_train_step.py">r</a> <a href="06_functional_training.html">n</a> '
        '<a href="https://www.mindspore.cn/docs/en/master/index.html">d</a>')


@pytest.mark.slow
def test_the_site_carries_every_recipe(built_site):
    site = built_site
    recipes = sorted(p.name for p in (build_site.ROOT / "recipes").glob("*.py"))
    assert recipes and sorted(p.name for p in (site / "recipes").glob("*.py")) == recipes


def test_zh_pages_link_to_zh_lessons_docs_and_shared_english_pages():
    text = ('<a href="../../docs/GLOSSARY.md#graph-mode">x</a> <a href="../../recipes/miou_metric.py">r</a> '
            '<a href="06_functional_training.ipynb#1">n</a> <a href="07_migrate_resnet_from_pytorch.ipynb">m</a> '
            '<a href="../../benchmarks/results.md">b</a> <a href="../../README.zh-CN.md">readme</a> '
            '<a href="../notebooks/zh/06_functional_training.ipynb">w</a>')
    assert build_site.link_pages(text, "zh", {"06_functional_training.html"}) == (
        '<a href="glossary.html#graph-mode">x</a> <a href="../recipes/miou_metric.py">r</a> '
        '<a href="06_functional_training.html#1">n</a> <a href="../07_migrate_resnet_from_pytorch.html">m</a> '
        '<a href="../benchmarks.html">b</a> <a href="index.html">readme</a> '
        '<a href="06_functional_training.html">w</a>')
    english = build_site.link_pages('<a href="README.zh-CN.md">zh</a> <a href="notebooks/zh/03_x.ipynb">z</a>')
    assert english == '<a href="zh/index.html">zh</a> <a href="zh/03_x.html">z</a>'
