"""Every relative link of a lesson works where learners open it (issue: dead "Glossary" and "Recipes" links).

JupyterLab serves only its root folder, so a link must resolve to a file *inside* that root:
- ``make lab`` serves notebooks/: the English lessons and, as their copies, docs/GLOSSARY.md and recipes/
  (tools/lesson_link_copies.py keeps notebooks/docs/ and notebooks/recipes/ equal to the originals);
- the Chinese lessons in notebooks/zh/ link one level up (``../docs/GLOSSARY.md``), inside notebooks/;
- the student edition (build/student/, its zh/ inside) must carry the same copies;
- the static site rewrites the links to its pages (tools/build_site.link_pages).
"""
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402
import lesson_link_copies  # noqa: E402
import make_editions  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
ENGLISH = sorted(NOTEBOOKS.glob("*.ipynb"))
CHINESE = sorted((NOTEBOOKS / "zh").glob("*.ipynb"))
_LINK = re.compile(r"\]\(<?([^)\s>]+)")
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][\w+.-]*:|#|/)")


def relative_links(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [target for cell in nb.cells if cell.cell_type == "markdown"
            for target in _LINK.findall(cell.source) if not _EXTERNAL.match(target)]


def dead_links(path: Path, root: Path) -> list[str]:
    """Links of ``path`` that leave ``root`` (JupyterLab's folder) or name no file."""
    dead = []
    for target in relative_links(path):
        resolved = (path.parent / target.split("#")[0]).resolve()
        if not resolved.is_relative_to(root.resolve()):
            dead.append(f"{target} (outside {root.name}/, the folder JupyterLab serves)")
        elif not resolved.is_file():
            dead.append(f"{target} (no such file)")
    return dead


FIX = ("Fix: link to docs/GLOSSARY.md, benchmarks/results.md or recipes/<name>.py (copies inside notebooks/, kept by "
       "tools/lesson_link_copies.py), not to ../docs, ../benchmarks or ../recipes.")


def test_the_copies_under_notebooks_equal_their_originals():
    assert lesson_link_copies.problems() == [], "Fix: python tools/lesson_link_copies.py"


def test_a_stale_copy_is_found_and_rewritten(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "recipes").mkdir()
    (tmp_path / "docs" / "GLOSSARY.md").write_text("see [A2](../notebooks/A2_x.ipynb) and [r](../README.md)\n")
    (tmp_path / "recipes" / "one.py").write_text("print(1)\n")
    (tmp_path / "recipes" / "run_all.py").write_text("print(0)\n")  # no lesson links it: no copy
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "00_x.ipynb").write_text('{"cells": [{"source": "[one](recipes/one.py)"}]}')
    assert sorted(lesson_link_copies.problems(tmp_path)) == ["notebooks/docs/GLOSSARY.md is missing",
                                                             "notebooks/recipes/one.py is missing"]
    lesson_link_copies.write(tmp_path)
    copy = (tmp_path / "notebooks" / "docs" / "GLOSSARY.md").read_text()
    assert "[A2](../A2_x.ipynb)" in copy and "[r](../../README.md)" in copy
    (tmp_path / "notebooks" / "recipes" / "one.py").write_text("print(2)\n")
    (tmp_path / "notebooks" / "recipes" / "gone.py").write_text("")
    assert lesson_link_copies.problems(tmp_path) == ["notebooks/recipes/one.py differs from its original",
                                                     "notebooks/recipes/gone.py has no original in recipes/"]
    assert not (tmp_path / "notebooks" / "recipes" / "run_all.py").exists()
    lesson_link_copies.write(tmp_path)
    assert lesson_link_copies.problems(tmp_path) == []
    assert not (tmp_path / "notebooks" / "recipes" / "gone.py").exists()


@pytest.mark.parametrize("notebook", ENGLISH, ids=lambda p: p.stem)
def test_links_work_in_jupyterlab_opened_on_notebooks(notebook):
    assert not dead_links(notebook, NOTEBOOKS), f"{notebook.name}: {dead_links(notebook, NOTEBOOKS)}. {FIX}"


@pytest.mark.parametrize("notebook", CHINESE, ids=lambda p: p.stem)
def test_links_of_the_chinese_edition_work_inside_notebooks(notebook):
    assert not dead_links(notebook, NOTEBOOKS), f"zh/{notebook.name}: {dead_links(notebook, NOTEBOOKS)}. {FIX}"


def test_the_check_finds_a_link_out_of_the_jupyter_root(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("[Glossary](../docs/GLOSSARY.md) [ok](docs/GLOSSARY.md) "
                                              "[web](https://example.org) [gone](recipes/none.py)")]
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "GLOSSARY.md").write_text("x")
    lesson = tmp_path / "00_x.ipynb"
    nbformat.write(nb, lesson)
    assert dead_links(lesson, tmp_path) == [f"../docs/GLOSSARY.md (outside {tmp_path.name}/, the folder "
                                            "JupyterLab serves)", "recipes/none.py (no such file)"]


def test_links_work_in_the_student_edition(tmp_path):
    edition = make_editions.build("student", tmp_path / "student")
    dead = {f"{path.relative_to(edition)}": dead_links(path, edition)
            for path in sorted(edition.rglob("*.ipynb")) if dead_links(path, edition)}
    assert not dead, dead


def _site_pages(lang: str) -> set[str]:
    """The pages and files tools/build_site.py writes, as seen from a page of ``lang``."""
    lessons = {f"{p.stem}.html" for p in ENGLISH}
    recipes = {f"recipes/{p.name}" for p in (ROOT / "recipes").glob("*.py")}
    english = lessons | recipes | {page for _, page, _ in build_site.DOCS} | {"index.html"}
    if lang == "en":
        return english | {f"{build_site.ZH}/{p.stem}.html" for p in CHINESE} | {f"{build_site.ZH}/index.html"}
    return ({f"{p.stem}.html" for p in CHINESE} | {page for _, page, _ in build_site.DOCS_ZH} | {"index.html"}
            | {f"../{page}" for page in english})


@pytest.mark.parametrize("lang, notebooks", [("en", ENGLISH), ("zh", CHINESE)])
def test_links_work_on_the_static_site(lang, notebooks):
    pages, dead = _site_pages(lang), []
    for notebook in notebooks:
        for target in relative_links(notebook):
            html = build_site.link_pages(f'<a href="{target}">x</a>', lang)
            page = re.search(r'href="([^"#]*)', html).group(1)
            if page not in pages:
                dead.append(f"{notebook.stem}: {target} -> {page}")
    assert not dead, dead


def test_relink_points_a_lesson_and_its_catalog_at_the_copies_and_keeps_the_translation_current(tmp_path):
    import pofiles
    import translate
    from babel.messages.catalog import Message

    (tmp_path / "notebooks").mkdir()
    english = "See the [glossary](../docs/GLOSSARY.md#x) and [`r.py`](../recipes/r.py); [site](https://x.org/../docs)."
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(english), nbformat.v4.new_code_cell("x = '../docs/GLOSSARY.md'")]
    nb.cells[0]["id"] = "abc"
    nbformat.write(nb, tmp_path / "notebooks" / "05_x.ipynb")
    catalog = translate.new_catalog("05_x")
    catalog[english] = Message(english, "见[术语表](../docs/GLOSSARY.md#x)和[`r.py`](../recipes/r.py)。", context="abc")
    path = tmp_path / "i18n" / "zh" / "05_x.po"
    pofiles.write(catalog, path)
    header = path.read_text(encoding="utf-8").split("\n\n")[0]
    assert lesson_link_copies.relink("05_x", tmp_path) == 1
    cells = nbformat.read(tmp_path / "notebooks" / "05_x.ipynb", as_version=4).cells
    assert cells[0].source == ("See the [glossary](docs/GLOSSARY.md#x) and [`r.py`](recipes/r.py); "
                               "[site](https://x.org/../docs).")
    assert cells[1].source == "x = '../docs/GLOSSARY.md'"  # code is not touched
    catalog = pofiles.read(path)
    assert translate.problems("05_x", nbformat.read(tmp_path / "notebooks" / "05_x.ipynb", as_version=4),
                              catalog) == []  # still current
    assert catalog.get(cells[0].source, "abc").string == "见[术语表](docs/GLOSSARY.md#x)和[`r.py`](recipes/r.py)。"
    assert path.read_text(encoding="utf-8").startswith(header)  # the header is kept
