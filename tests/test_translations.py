"""The Chinese edition (notebooks/zh/, tools/translate.py) can never drift from the English one.

- every English markdown cell has a current translation (one test per lesson, naming the lesson and the cell);
- the committed notebooks/zh/ is exactly what `make zh` generates;
- code cells and outputs of every zh notebook are the English ones, except that their comments are in Chinese:
  each zh code cell parses to the same AST as the English one and every translatable comment is translated;
- the mechanism itself: an edited English cell or comment, a missing or empty translation, an old translation pasted
  back over a stale entry, an out-of-date or stray zh notebook are all reported, and links are rewritten for the
  deeper folder.
"""
import ast
import copy
import io
import sys
import tokenize
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


def full_comments(nb) -> dict:
    """A complete ``comments:`` part for ``nb`` (the "translation" marks the English text, for the tests only)."""
    return {translate.source_sha(translate.comment_text(token)):
            {"en": translate.comment_text(token), "zh": "中文注释：" + translate.comment_text(token)}
            for cell in nb.cells if cell.cell_type == "code" for _, _, token in translate.code_comments(cell.source)}


def full(nb) -> dict:
    return {"cells": full_catalog(nb), "comments": full_comments(nb)}


def python(source: str) -> str:
    """A code cell as plain Python (IPython magics and shell lines turned into calls), for ``ast``."""
    from IPython.core.inputtransformer2 import TransformerManager
    return TransformerManager().transform_cell(source)


def same_code(en: str, zh: str) -> bool:
    """The two cells have the same code: the same AST, and the same tokens once comments are left out (the AST alone
    would not see a changed line break or an edited ``# NBVAL_...`` marker, which is a kept comment)."""
    def tokens(source):
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(python(source)).readline)
                if t.type != tokenize.COMMENT or translate.KEPT_COMMENT.match(t.string)]
    return ast.dump(ast.parse(python(en))) == ast.dump(ast.parse(python(zh))) and tokens(en) == tokens(zh)


def comment_tokens(source: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(python(source)).readline)
            if t.type == tokenize.COMMENT]


# ------------------------------------------------------------------ the real edition: complete and current
@pytest.mark.parametrize("stem", STEMS)
def test_every_markdown_cell_has_a_current_translation(stem):
    found = translate.problems(stem, english(stem), translate.load_catalog(stem))
    assert not found, f"{stem}: {len(found)} markdown cell(s) without a current Chinese translation:\n" + \
        "\n".join(found)


@pytest.mark.parametrize("stem", STEMS)
def test_every_code_comment_has_a_translation(stem):
    found = translate.comment_problems(stem, english(stem), translate.load_comments(stem))
    assert not found, f"{stem}: {len(found)} code comment(s) without a Chinese translation:\n" + "\n".join(found)


@pytest.mark.parametrize("stem", STEMS)
def test_zh_code_comments_are_chinese_and_tool_comments_are_kept(stem):
    """Every translatable English comment is, in the zh notebook, its catalog translation at the same place; tool
    comments (NBVAL markers, noqa, ...) are the English ones, character for character."""
    en, zh = english(stem), nbformat.read(translate.OUT / f"{stem}.ipynb", as_version=4)
    comments = translate.load_comments(stem)
    translated = 0
    for index, (a, b) in enumerate(zip(en.cells, zh.cells)):
        if a.cell_type != "code":
            continue
        ours = {token for _, _, token in translate.code_comments(a.source)}
        pairs = list(zip(comment_tokens(a.source), comment_tokens(b.source), strict=True))
        for english_comment, chinese_comment in pairs:
            if english_comment in ours:
                text = translate.comment_text(english_comment)
                assert translate.comment_text(chinese_comment) == comments[translate.source_sha(text)]["zh"].strip()
                translated += 1
            else:
                assert chinese_comment == english_comment, f"{stem}, cell {index}: {english_comment!r} changed"
    assert translated == sum(len(translate.code_comments(c.source)) for c in en.cells if c.cell_type == "code")


def test_the_glossary_terms_are_used_in_the_comments():
    """Terms the Chinese docs fix (docs/GLOSSARY.md): checkpoint stays checkpoint, shuffle is 混洗, sens 缩放系数."""
    everything = "\n".join(str(entry.get("zh")) for stem in STEMS for entry in translate.load_comments(stem).values())
    for wrong in ("检查点", "打乱", "灵敏度", "学习率调度"):
        assert wrong not in everything, wrong
    assert "checkpoint" in everything and "混洗" in everything


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
            where = f"{stem}, cell {index} (id {a.get('id')!r})"
            assert (b.get("outputs"), b.get("execution_count"), b.metadata) == \
                (a.get("outputs"), a.get("execution_count"), a.metadata), f"{where}: outputs differ. Fix: make zh"
            assert same_code(a.source, b.source), f"{where}: the code (comments aside) differs. Fix: make zh"
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
    occurrences = sum(len(translate.code_comments(c.source)) for c in nb.cells if c.cell_type == "code")
    # every cell and every distinct comment is to translate, with zh: null; check names each comment where it is
    assert translate.extract(SAMPLE) == markdown + len(full_comments(nb))
    assert len(translate.check()) == markdown + occurrences
    with pytest.raises(translate.TranslationError):
        translate.build()
    catalogs.joinpath(f"{SAMPLE}.yaml").write_text(
        translate.yaml.safe_dump(full(nb), allow_unicode=True), encoding="utf-8")
    assert translate.extract(SAMPLE) == 0
    assert translate.build() == [notebooks / "zh" / f"{SAMPLE}.ipynb"]
    assert translate.check() == []
    assert translate.stats() == [(SAMPLE, markdown, markdown, occurrences, occurrences)]

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
    assert translate.extract(SAMPLE) == 1  # the stale cell goes back to the translator, the new English beside it
    entry = translate.load_catalog(SAMPLE)[str(edited.cells[index].id)]
    assert entry["en_new"].endswith("(edited)") and entry["sha_new"] == translate.source_sha(edited.cells[index].source)
    assert entry["sha"] == translate.source_sha(nb.cells[index].source) and entry["zh"].startswith("中文：")
    assert len(translate.check()) == 1  # still stale: extract never marks an entry current
    with pytest.raises(translate.TranslationError, match="changed since it was translated"):
        translate.build()


def _scratch(tmp_path, monkeypatch, nb):
    notebooks = tmp_path / "笔记 本" / "notebooks"
    notebooks.mkdir(parents=True)
    nbformat.write(nb, notebooks / f"{SAMPLE}.ipynb")
    monkeypatch.setattr(translate, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(translate, "CATALOGS", tmp_path / "笔记 本" / "i18n" / "zh")
    monkeypatch.setattr(translate, "OUT", notebooks / "zh")
    translate.CATALOGS.mkdir(parents=True)
    translate.catalog_path(SAMPLE).write_text(translate.yaml.safe_dump(full(nb), allow_unicode=True), encoding="utf-8")
    assert translate.check() == [f"{translate.shown(notebooks / 'zh' / (SAMPLE + '.ipynb'))} is not what `make zh` "
                                 f"generates. Fix: make zh"]
    return notebooks


def test_pasting_an_old_translation_back_over_a_stale_entry_fails(tmp_path, monkeypatch):
    """The old drift path: after extract, pasting the previous translation back (its text and its old sha) made the
    check pass. Now a stale entry stays stale until its sha, en and zh are all the new English's."""
    nb = english(SAMPLE)
    notebooks = _scratch(tmp_path, monkeypatch, nb)
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and i > 0)
    key = str(nb.cells[index].id)
    old_entry = dict(translate.load_catalog(SAMPLE)[key])
    edited = copy.deepcopy(nb)
    edited.cells[index].source += "\n\nA new English sentence."
    nbformat.write(edited, notebooks / f"{SAMPLE}.ipynb")
    new_sha = translate.source_sha(edited.cells[index].source)
    translate.extract(SAMPLE)

    def with_entry(entry):
        data = translate.yaml.safe_load(translate.catalog_path(SAMPLE).read_text(encoding="utf-8"))
        data["cells"][key] = entry
        translate.catalog_path(SAMPLE).write_text(translate.yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        return [p for p in translate.check() if key in p]

    pasted = with_entry(dict(old_entry))  # the old text and its old sha, pasted back
    assert len(pasted) == 1 and "changed since it was translated" in pasted[0] and SAMPLE in pasted[0]
    with pytest.raises(translate.TranslationError, match=key):
        translate.build()
    # only the sha bumped: the entry's en still is the old English, so it is half updated
    assert "not the hash of its own en" in with_entry(dict(old_entry, sha=new_sha))[0]
    # sha and en updated but extract's en_new left behind: unfinished
    assert "unfinished" in with_entry(dict(old_entry, sha=new_sha, en=edited.cells[index].source,
                                           en_new=edited.cells[index].source))[0]
    # done: the sha and en of the current English, and the translator's zh
    assert with_entry(dict(sha=new_sha, en=edited.cells[index].source, zh="中文：新的译文")) == []
    assert translate.build() == [notebooks / "zh" / f"{SAMPLE}.ipynb"]


def test_an_edited_english_comment_fails_naming_it_and_its_old_entry_pasted_back_too(tmp_path, monkeypatch):
    nb = english(SAMPLE)
    notebooks = _scratch(tmp_path, monkeypatch, nb)
    translate.build()
    assert translate.check() == []
    index, cell = next((i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and
                       translate.code_comments(c.source))
    line, column, token = translate.code_comments(cell.source)[0]
    edited = copy.deepcopy(nb)
    lines = edited.cells[index].source.split("\n")
    lines[line] = lines[line][:column] + "# an edited English comment"
    edited.cells[index].source = "\n".join(lines)
    nbformat.write(edited, notebooks / f"{SAMPLE}.ipynb")
    found = translate.check()
    named = [p for p in found if "'# an edited English comment'" in p]
    assert len(named) == 1 and SAMPLE in named[0] and f"cell {index} " in named[0] and f"line {line + 1}," in named[0]
    assert "no translation" in named[0]
    with pytest.raises(translate.TranslationError, match="an edited English comment"):
        translate.build()
    # the old comment's entry (its hash, English and Chinese) is still in the catalog: it does not translate the new
    # comment, and check reports it as unused (unless the old comment is used elsewhere in the lesson)
    data = translate.yaml.safe_load(translate.catalog_path(SAMPLE).read_text(encoding="utf-8"))
    assert translate.source_sha(translate.comment_text(token)) in data["comments"]
    # the old entry pasted under the new comment's key: its en is not the new comment, so it fails too
    new_key = translate.source_sha("an edited English comment")
    data["comments"][new_key] = dict(data["comments"][translate.source_sha(translate.comment_text(token))])
    translate.catalog_path(SAMPLE).write_text(translate.yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert any("records the English" in p and new_key in p for p in translate.check())
    assert translate.extract(SAMPLE) == 1  # extract puts the new comment back to the translator, zh: null
    entry = translate.load_comments(SAMPLE)[new_key]
    assert entry["en"] == "an edited English comment" and entry["zh"] is None and entry["zh_old"]
    data = translate.yaml.safe_load(translate.catalog_path(SAMPLE).read_text(encoding="utf-8"))
    data["comments"][new_key]["zh"] = "一条修改过的注释"
    translate.catalog_path(SAMPLE).write_text(translate.yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert any("unfinished" in p and "an edited English comment" in p for p in translate.check())
    del data["comments"][new_key]["zh_old"]
    translate.catalog_path(SAMPLE).write_text(translate.yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    translate.build()
    assert translate.check() == []
    zh = nbformat.read(notebooks / "zh" / f"{SAMPLE}.ipynb", as_version=4)
    assert zh.cells[index].source.split("\n")[line] == lines[line][:column] + "# 一条修改过的注释"


def test_only_prose_comments_are_translated_and_code_is_untouched():
    source = (
        "#!/usr/bin/env python\n"
        "# -*- coding: utf-8 -*-\n"
        "import os  # noqa: F401\n"
        "# NBVAL_IGNORE_OUTPUT\n"
        "x = []  # type: list[int]\n"
        "s = 'a # not a comment'  # a real comment\n"
        "t = \"\"\"\n# inside a string\n\"\"\"\n"
        "#    indented text   \n"
        "y = 1  # ---\n"
        "# pragma: no cover\n")
    found = [translate.comment_text(token) for _, _, token in translate.code_comments(source)]
    assert found == ["a real comment", "indented text"]
    comments = {translate.source_sha(t): {"en": t, "zh": "中文 " + t} for t in found}
    zh = translate.translate_comments(source, comments)
    assert "s = 'a # not a comment'  # 中文 a real comment\n" in zh and "#    中文 indented text\n" in zh
    for kept in ("#!/usr/bin/env python", "# -*- coding: utf-8 -*-", "# noqa: F401", "# NBVAL_IGNORE_OUTPUT",
                 "# type: list[int]", "# inside a string", "# ---", "# pragma: no cover"):
        assert kept in zh, kept
    assert same_code(source, zh)
    assert translate.code_comments("%%bash\necho hi  # a shell comment\n") == []
    assert translate.code_comments("%%time\nx = 1  # a Python comment\n")[0][2] == "# a Python comment"


def test_a_multi_line_comment_translation_is_refused():
    nb = english(SAMPLE)
    comments = full_comments(nb)
    key = next(iter(comments))
    comments[key]["zh"] = "两行\n译文"
    found = translate.comment_problems(SAMPLE, nb, comments)
    assert len(found) >= 1 and all("more than one line" in p for p in found)


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
    assert "(../docs/WORKSHOP.md)" in workshop_zh.read_text(encoding="utf-8").splitlines()[2]
    workshop = ROOT / "docs" / "WORKSHOP.md"
    assert "(../docs/WORKSHOP.zh-CN.md)" in workshop.read_text(encoding="utf-8").splitlines()[2]  # and back
    for stem in STEMS:  # the lesson table points at every zh notebook
        assert f"(notebooks/zh/{stem}.ipynb)" in readme_zh.read_text(encoding="utf-8"), stem
    broken = []
    for doc in (readme_zh, workshop_zh, workshop):
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
        translate.yaml.safe_dump(full(nb), allow_unicode=True), encoding="utf-8")
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
