"""The Chinese edition (notebooks/zh/, tools/translate.py) can never drift from the English one.

- every English markdown cell has a current translation (one test per lesson, naming the lesson and the cell);
- the committed notebooks/zh/ is exactly what `make zh` generates;
- code cells and outputs of every zh notebook are the English ones;
- the mechanism itself: an edited English cell, a missing or empty translation, an out-of-date or stray zh notebook
  are all reported, and links are rewritten for the deeper folder.
"""
import copy
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import translate  # noqa: E402

STEMS = [path.stem for path in translate.english_notebooks()]
SAMPLE = "03_model_train_eval"


def english(stem):
    return nbformat.read(translate.NOTEBOOKS / f"{stem}.ipynb", as_version=4)


def full_catalog(nb) -> dict:
    """A complete, current catalog for ``nb`` (the "translation" marks the English text, for the tests only)."""
    return {str(cell.id): {"sha": translate.source_sha(cell.source), "en": cell.source, "zh": "中文：" + cell.source}
            for cell in nb.cells if cell.cell_type == "markdown"}


# ------------------------------------------------------------------ the real edition: complete and current
@pytest.mark.parametrize("stem", STEMS)
def test_every_markdown_cell_has_a_current_translation(stem):
    found = translate.problems(stem, english(stem), translate.load_catalog(stem))
    assert not found, f"{stem}: {len(found)} markdown cell(s) without a current Chinese translation:\n" + \
        "\n".join(found)


def test_committed_zh_edition_is_what_make_zh_generates():
    found = translate.check()
    assert not found, "notebooks/zh/ is not what `make zh` generates:\n" + "\n".join(found)


@pytest.mark.parametrize("stem", STEMS)
def test_zh_notebook_has_the_english_code_and_outputs(stem):
    path = translate.OUT / f"{stem}.ipynb"
    assert path.is_file(), f"{translate.shown(path)} is missing. Fix: translate its cells, then make zh"
    en, zh = english(stem), nbformat.read(path, as_version=4)
    assert [(c.cell_type, c.get("id")) for c in zh.cells] == [(c.cell_type, c.get("id")) for c in en.cells], \
        f"{stem}: the zh notebook's cells are not the English cells. Fix: make zh"
    for index, (a, b) in enumerate(zip(en.cells, zh.cells)):
        if a.cell_type == "code":
            assert (b.source, b.get("outputs"), b.get("execution_count"), b.metadata) == \
                (a.source, a.get("outputs"), a.get("execution_count"), a.metadata), \
                f"{stem}, cell {index} (id {a.get('id')!r}): code or outputs differ from English. Fix: make zh"
    assert zh.metadata.get("language") == translate.LANGUAGE
    assert zh.metadata.get("kernelspec") == en.metadata.get("kernelspec")


def test_every_catalog_belongs_to_a_notebook_and_names_only_its_cells():
    for path in sorted(translate.CATALOGS.glob("*.yaml")):
        assert path.stem in STEMS, f"{translate.shown(path)} has no English notebook"
        ids = {str(c.get("id")) for c in english(path.stem).cells if c.cell_type == "markdown"}
        unknown = set(translate.load_catalog(path.stem)) - ids
        assert not unknown, f"{translate.shown(path)}: entries for cells that no longer exist: {sorted(unknown)}"


# ------------------------------------------------------------------ the mechanism
def test_a_complete_catalog_translates_every_markdown_cell_and_nothing_else():
    nb = english(SAMPLE)
    catalog = full_catalog(nb)
    assert translate.problems(SAMPLE, nb, catalog) == []
    zh = translate.translate(SAMPLE, nb, catalog)
    for a, b in zip(nb.cells, zh.cells):
        if a.cell_type == "markdown":
            assert b.source.startswith("中文：")
        else:
            assert b == a
    assert nb.cells[0].source == english(SAMPLE).cells[0].source  # the English notebook is untouched


def test_an_edited_english_cell_fails_the_check_naming_lesson_and_cell():
    nb = english(SAMPLE)
    catalog = full_catalog(nb)
    edited = copy.deepcopy(nb)
    index = next(i for i, c in enumerate(edited.cells) if c.cell_type == "markdown" and i > 0)
    edited.cells[index].source += "\n\nOne more English sentence."
    found = translate.problems(SAMPLE, edited, catalog)
    assert len(found) == 1
    assert SAMPLE in found[0] and f"cell {index} " in found[0] and repr(edited.cells[index].id) in found[0]
    assert "changed since it was translated" in found[0]
    with pytest.raises(translate.TranslationError, match=SAMPLE):
        translate.translate(SAMPLE, edited, catalog)


@pytest.mark.parametrize("how", ["absent", "null", "blank"])
def test_a_missing_translation_is_reported(how):
    nb = english(SAMPLE)
    catalog = full_catalog(nb)
    cell = next(c for c in nb.cells if c.cell_type == "markdown")
    if how == "absent":
        del catalog[str(cell.id)]
    else:
        catalog[str(cell.id)]["zh"] = None if how == "null" else "  \n"
    found = translate.problems(SAMPLE, nb, catalog)
    assert len(found) == 1 and SAMPLE in found[0] and repr(cell.id) in found[0] and "no translation" in found[0]


def test_build_check_and_extract_on_a_scratch_repository(tmp_path, monkeypatch):
    """End to end, on a copy: build writes the zh notebook; check notices drift of each kind."""
    notebooks, catalogs = tmp_path / "notebooks", tmp_path / "i18n" / "zh"
    notebooks.mkdir()
    nb = english(SAMPLE)
    nbformat.write(nb, notebooks / f"{SAMPLE}.ipynb")
    monkeypatch.setattr(translate, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(translate, "CATALOGS", catalogs)
    monkeypatch.setattr(translate, "OUT", notebooks / "zh")

    markdown = sum(c.cell_type == "markdown" for c in nb.cells)
    assert translate.extract(SAMPLE) == markdown  # every cell is to translate, with zh: null
    assert len(translate.check()) == markdown
    with pytest.raises(translate.TranslationError):
        translate.build()
    catalogs.joinpath(f"{SAMPLE}.yaml").write_text(
        translate.yaml.safe_dump({"cells": full_catalog(nb)}, allow_unicode=True), encoding="utf-8")
    assert translate.extract(SAMPLE) == 0
    assert translate.build() == [notebooks / "zh" / f"{SAMPLE}.ipynb"]
    assert translate.check() == []
    assert translate.stats() == [(SAMPLE, markdown, markdown)]

    zh_path = notebooks / "zh" / f"{SAMPLE}.ipynb"
    zh_path.write_text(zh_path.read_text(encoding="utf-8").replace("中文：", "中文:", 1), encoding="utf-8")
    assert [p for p in translate.check() if "is not what `make zh` generates" in p] != []
    edited_by_hand = zh_path.read_text(encoding="utf-8")
    said = []
    translate.build(report=said.append)  # a hand-edited zh notebook is someone's work: kept, and said so
    assert zh_path.read_text(encoding="utf-8") == edited_by_hand and said[0].startswith("kept your changed")
    assert [p for p in translate.check() if "is not what `make zh` generates" in p] != []
    zh_path.unlink()  # delete it to get the generated one
    translate.build()
    assert translate.check() == []
    (notebooks / "zh" / "99_gone.ipynb").write_text("{}")
    assert any("99_gone.ipynb has no English notebook" in p for p in translate.check())
    (notebooks / "zh" / "99_gone.ipynb").unlink()

    edited = english(SAMPLE)
    index = next(i for i, c in enumerate(edited.cells) if c.cell_type == "markdown")
    edited.cells[index].source = edited.cells[index].source.replace("—", "-", 1) + " (edited)"
    nbformat.write(edited, notebooks / f"{SAMPLE}.ipynb")
    found = translate.check()
    assert len(found) == 1 and SAMPLE in found[0] and repr(edited.cells[index].id) in found[0]
    assert translate.extract(SAMPLE) == 1  # the stale cell goes back to the translator, the old zh kept beside it
    entry = translate.load_catalog(SAMPLE)[str(edited.cells[index].id)]
    assert entry["zh"] is None and entry["zh_old"].startswith("中文：") and entry["en"].endswith("(edited)")


# ------------------------------------------------------------------ links in the deeper folder
def test_relink_adds_one_level_except_for_siblings_urls_and_anchors():
    text = ("[glossary](../docs/GLOSSARY.md#graph-mode) [next](04_train_one_step_and_sink.ipynb) "
            "[sec](05_eval_indexes_miou.ipynb#2.-How) [recipe](../recipes/miou_metric.py) "
            "[doc](https://www.mindspore.cn/docs/zh-CN/master/index.html) [here](#section) [abs](/tmp/x) "
            "![fig](../docs/fig.png \"a title\") [mail](mailto:a@b.c) <img src=\"../docs/fig.png\"> "
            "<a href=\"https://x.org\">x</a> ![att](attachment:plot.png)\n[ref]: ../README.zh-CN.md\n")
    assert translate._relink(text) == (
        "[glossary](../../docs/GLOSSARY.md#graph-mode) [next](04_train_one_step_and_sink.ipynb) "
        "[sec](05_eval_indexes_miou.ipynb#2.-How) [recipe](../../recipes/miou_metric.py) "
        "[doc](https://www.mindspore.cn/docs/zh-CN/master/index.html) [here](#section) [abs](/tmp/x) "
        "![fig](../../docs/fig.png \"a title\") [mail](mailto:a@b.c) <img src=\"../../docs/fig.png\"> "
        "<a href=\"https://x.org\">x</a> ![att](attachment:plot.png)\n[ref]: ../../README.zh-CN.md\n")


def test_every_relative_link_of_the_zh_edition_resolves():
    """Links of the committed zh notebooks (after _relink) point at files that exist."""
    import re
    broken = []
    for path in sorted(translate.OUT.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for target in re.findall(r"\]\(<?([^)\s>]+)", cell.source):
                if re.match(r"^(?:[a-zA-Z][\w+.-]*:|#|/)", target):
                    continue
                if not (path.parent / target.split("#")[0]).exists():
                    broken.append(f"{path.name}: {target}")
    assert not broken, broken


# ------------------------------------------------------------------ the rest of the course in Chinese
def local_links(markdown_file: Path) -> list[str]:
    import re
    text = markdown_file.read_text(encoding="utf-8")
    return [t for t in re.findall(r"\]\(<?([^)\s>]+)", text) if not re.match(r"^(?:[a-zA-Z][\w+.-]*:|#)", t)]


def test_chinese_readme_and_workshop_exist_link_each_other_and_every_link_resolves():
    readme, readme_zh, workshop_zh = ROOT / "README.md", ROOT / "README.zh-CN.md", ROOT / "docs" / "WORKSHOP.zh-CN.md"
    assert "README.zh-CN.md" in readme.read_text(encoding="utf-8").splitlines()[2]  # at the top
    assert "(README.md)" in readme_zh.read_text(encoding="utf-8").splitlines()[2]
    assert "docs/WORKSHOP.zh-CN.md" in readme_zh.read_text(encoding="utf-8")
    assert "WORKSHOP.md" in workshop_zh.read_text(encoding="utf-8").splitlines()[2]
    for stem in STEMS:  # the lesson table points at every zh notebook
        assert f"(notebooks/zh/{stem}.ipynb)" in readme_zh.read_text(encoding="utf-8"), stem
    broken = []
    for doc in (readme_zh, workshop_zh):
        for target in local_links(doc):
            if "notebooks/zh/" in target and target.endswith(".ipynb"):
                exists = (ROOT / "notebooks" / Path(target).name).is_file()  # generated by make zh
            else:
                exists = (doc.parent / target.split("#")[0]).exists()
            if not exists:
                broken.append(f"{doc.name}: {target}")
    assert not broken, broken


def test_make_zh_and_lab_zh():
    import subprocess
    import sys

    def dry_run(command):  # `python course.py --dry-run X` prints the commands `python course.py X` runs
        return subprocess.run([sys.executable, str(ROOT / "course.py"), "--dry-run", command], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout
    zh = dry_run("zh")
    assert "tools/translate.py build" in zh
    lab = dry_run("lab-zh")
    lines = lab.splitlines()
    build = next(i for i, line in enumerate(lines) if "translate.py build --keep-edits" in line)
    opens = next(i for i, line in enumerate(lines) if "jupyter lab" in line)
    # notebooks/ is served and the lab opens in zh/, so the lessons' ../docs links stay inside the root
    assert build < opens and "--notebook-dir=notebooks " in lines[opens] and "--ip=127.0.0.1" in lines[opens]
    assert "--LabApp.default_url=/lab/tree/zh" in lines[opens]
    assert "COURSE_LANG=zh" in lines[opens]
    assert "fonts-noto-cjk" in dry_run("browser-deps")


def test_keep_edits_keeps_a_learners_zh_notebook(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    nb = english(SAMPLE)
    nbformat.write(nb, notebooks / f"{SAMPLE}.ipynb")
    nbformat.write(english(STEMS[0]), notebooks / f"{STEMS[0]}.ipynb")  # no catalog: incomplete
    monkeypatch.setattr(translate, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(translate, "CATALOGS", tmp_path / "catalogs")
    monkeypatch.setattr(translate, "OUT", notebooks / "zh")
    translate.CATALOGS.mkdir()
    (translate.CATALOGS / f"{SAMPLE}.yaml").write_text(
        translate.yaml.safe_dump({"cells": full_catalog(nb)}, allow_unicode=True), encoding="utf-8")
    with pytest.raises(translate.TranslationError):
        translate.build()
    said = []
    assert translate.build(keep_edits=True, report=said.append) == [translate.OUT / f"{SAMPLE}.ipynb"]
    assert STEMS[0] in said[-1]
    zh = nbformat.read(translate.OUT / f"{SAMPLE}.ipynb", as_version=4)
    code = next(c for c in zh.cells if c.cell_type == "code")
    code.source += "\nprint('my own line')"  # the learner's work
    nbformat.write(zh, translate.OUT / f"{SAMPLE}.ipynb")
    said.clear()
    translate.build(keep_edits=True, report=said.append)
    assert any(line.startswith("kept") for line in said)
    assert nbformat.read(translate.OUT / f"{SAMPLE}.ipynb", as_version=4) == zh
