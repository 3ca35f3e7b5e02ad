"""The Chinese edition (notebooks/zh/, tools/translate.py, the gettext catalogs i18n/zh/*.po) can never drift from
the English one.

- every English markdown cell and code comment has a current translation (one test per lesson, naming the cell);
- the committed notebooks/zh/ is exactly what `make zh` generates, and each catalog is exactly what `update` writes;
- code cells and outputs of every zh notebook are the English ones, except that their comments are in Chinese:
  each zh code cell parses to the same AST as the English one and every translatable comment is translated;
- the mechanism itself: an edited English cell or comment becomes a fuzzy entry (with its previous msgid, as
  msgmerge does) and fails build and check naming the lesson, the cell and the fix; a missing or empty translation,
  an old entry pasted back, a broken or duplicated catalog, an out-of-date or stray zh notebook are all reported;
  obsolete entries are allowed and reported; links are rewritten for the deeper folder;
- ``check_catalog`` checks any .po (course_lib's messages too): fuzzy, untranslated, missing entries.
"""
import ast
import copy
import io
import os
import sys
import tokenize
from pathlib import Path

import nbformat
import pytest
from babel.messages.catalog import Catalog, Message

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import pofiles  # noqa: E402
import translate  # noqa: E402

STEMS = [path.stem for path in translate.english_notebooks()]
SAMPLE = "03_model_train_eval"
COMMENT = translate.COMMENT


def english(stem):
    return nbformat.read(translate.NOTEBOOKS / f"{stem}.ipynb", as_version=4)


def comment_texts(nb) -> list[str]:
    """The distinct translatable comment texts of ``nb``, in order."""
    texts = [translate.comment_text(token) for cell in nb.cells if cell.cell_type == "code"
             for _, _, token in translate.code_comments(cell.source)]
    return list(dict.fromkeys(texts))


def full_catalog(nb, comments: bool = True) -> Catalog:
    """A complete, current catalog for ``nb`` (the "translation" marks the English text, for the tests only)."""
    catalog = translate.new_catalog(SAMPLE)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            catalog[cell.source] = Message(cell.source, "中文：" + cell.source, context=str(cell.id))
    for text in comment_texts(nb) if comments else []:
        catalog[text] = Message(text, "中文注释：" + text, context=COMMENT)
    return catalog


def save(catalog: Catalog, stem: str = SAMPLE) -> None:
    pofiles.write(catalog, translate.catalog_path(stem))


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
    found = translate.comment_problems(stem, english(stem), translate.load_catalog(stem))
    assert not found, f"{stem}: {len(found)} code comment(s) without a Chinese translation:\n" + "\n".join(found)


@pytest.mark.parametrize("stem", STEMS)
def test_each_catalog_is_what_update_writes(stem):
    """Every committed catalog is current, in update's order and Babel's format: running update changes nothing
    (so a translator's tool and a later update never fight over the layout)."""
    path = translate.catalog_path(stem)
    catalog = translate.load_catalog(stem)
    assert translate.merge(stem, english(stem), catalog) == 0
    assert pofiles.render(catalog) == path.read_bytes(), f"{translate.shown(path)}: run tools/translate.py update"
    assert not catalog.obsolete, f"{translate.shown(path)} keeps obsolete entries: delete them once translated"


@pytest.mark.parametrize("stem", STEMS)
def test_zh_code_comments_are_chinese_and_tool_comments_are_kept(stem):
    """Every translatable English comment is, in the zh notebook, its catalog translation at the same place; tool
    comments (NBVAL markers, noqa, ...) are the English ones, character for character."""
    en, zh = english(stem), nbformat.read(translate.OUT / f"{stem}.ipynb", as_version=4)
    catalog = translate.load_catalog(stem)
    translated = 0
    for index, (a, b) in enumerate(zip(en.cells, zh.cells)):
        if a.cell_type != "code":
            continue
        ours = {token for _, _, token in translate.code_comments(a.source)}
        pairs = list(zip(comment_tokens(a.source), comment_tokens(b.source), strict=True))
        for english_comment, chinese_comment in pairs:
            if english_comment in ours:
                text = translate.comment_text(english_comment)
                assert translate.comment_text(chinese_comment) == catalog.get(text, COMMENT).string.strip()
                translated += 1
            else:
                assert chinese_comment == english_comment, f"{stem}, cell {index}: {english_comment!r} changed"
    assert translated == sum(len(translate.code_comments(c.source)) for c in en.cells if c.cell_type == "code")


def test_the_glossary_terms_are_used_in_the_comments():
    """Terms the Chinese docs fix (docs/GLOSSARY.md): checkpoint stays checkpoint, shuffle is 混洗, sens 缩放系数."""
    everything = "\n".join(m.string for stem in STEMS for m in translate.load_catalog(stem) if m.context == COMMENT)
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
    assert zh.metadata["course_generated"]["from"] == [f"notebooks/{stem}.ipynb", f"i18n/zh/{stem}.po"]


def test_every_catalog_belongs_to_a_notebook_and_names_only_its_cells():
    assert sorted(p.stem for p in translate.CATALOGS.glob("*.po")) == STEMS
    assert not list(translate.CATALOGS.glob("*.yaml")), "one translation system: the YAML catalogs are gone"
    for stem in STEMS:
        unused = translate.unused_entries(stem, english(stem), translate.load_catalog(stem))
        assert not unused, "\n".join(unused)


# ------------------------------------------------------------------ the mechanism
def test_a_complete_catalog_translates_every_markdown_cell_and_nothing_else():
    nb = english(SAMPLE)
    catalog = full_catalog(nb, comments=False)
    assert translate.problems(SAMPLE, nb, catalog) == []
    zh = translate.translate(SAMPLE, nb, catalog, comments=False)
    for a, b in zip(nb.cells, zh.cells):
        if a.cell_type == "markdown":
            assert b.source.startswith("中文：")
        else:
            assert b == a  # code, outputs, execution counts and metadata copied
    assert nb.cells[0].source == english(SAMPLE).cells[0].source  # the English notebook is untouched


def test_two_cells_with_the_same_english_keep_their_own_translations():
    nb = english(SAMPLE)
    first, second = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"][1:3]
    nb.cells[second].source = nb.cells[first].source
    catalog = full_catalog(nb, comments=False)
    catalog.get(nb.cells[second].source, str(nb.cells[second].id)).string = "第二个单元的译文"
    zh = translate.translate(SAMPLE, nb, catalog, comments=False)
    assert zh.cells[first].source.startswith("中文：") and zh.cells[second].source == "第二个单元的译文"


def test_an_edited_english_cell_fails_the_check_naming_lesson_and_cell():
    nb = english(SAMPLE)
    catalog = full_catalog(nb)
    edited = copy.deepcopy(nb)
    index = next(i for i, c in enumerate(edited.cells) if c.cell_type == "markdown" and i > 0)
    edited.cells[index].source += "\n\nOne more English sentence."
    found = translate.problems(SAMPLE, edited, catalog)
    assert len(found) == 1
    assert SAMPLE in found[0] and f"cell {index} " in found[0] and repr(edited.cells[index].id) in found[0]
    assert "changed since it was translated" in found[0] and "Fix: python tools/translate.py update" in found[0]
    with pytest.raises(translate.TranslationError, match=SAMPLE):
        translate.translate(SAMPLE, edited, catalog)
    # update (merge) makes it fuzzy: the new English as msgid, the old Chinese kept, the old English as #| msgid
    assert translate.merge(SAMPLE, edited, catalog) == 1
    entry = catalog.get(edited.cells[index].source, str(edited.cells[index].id))
    assert entry.fuzzy and entry.previous_id == [nb.cells[index].source]
    assert entry.string == "中文：" + nb.cells[index].source
    twice = copy.deepcopy(edited)  # changed again before anyone translated: #| still shows the translated English
    twice.cells[index].source += " And another."
    assert translate.merge(SAMPLE, twice, catalog) == 1
    entry = catalog.get(twice.cells[index].source, str(edited.cells[index].id))
    assert entry.fuzzy and entry.previous_id == [nb.cells[index].source]
    assert translate.merge(SAMPLE, edited, catalog) == 1
    found = translate.problems(SAMPLE, edited, catalog)
    assert len(found) == 1 and "fuzzy" in found[0] and repr(edited.cells[index].id) in found[0]
    assert "delete the '#, fuzzy' flag" in found[0]


@pytest.mark.parametrize("how", ["absent", "empty", "blank"])
def test_a_missing_translation_is_reported(how):
    nb = english(SAMPLE)
    catalog = full_catalog(nb)
    cell = next(c for c in nb.cells if c.cell_type == "markdown")
    if how == "absent":
        catalog.delete(cell.source, str(cell.id))
    else:
        catalog.get(cell.source, str(cell.id)).string = "" if how == "empty" else "  \n"
    found = translate.problems(SAMPLE, nb, catalog)
    assert len(found) == 1 and SAMPLE in found[0] and repr(cell.id) in found[0] and "no translation" in found[0]


def _scratch(tmp_path, monkeypatch, nb, folder="笔记 本"):
    """A scratch course (under a path with a space and Chinese characters) with ``nb`` and a complete catalog."""
    notebooks = tmp_path / folder / "notebooks"
    notebooks.mkdir(parents=True)
    nbformat.write(nb, notebooks / f"{SAMPLE}.ipynb")
    monkeypatch.setattr(translate, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(translate, "CATALOGS", tmp_path / folder / "i18n" / "zh")
    monkeypatch.setattr(translate, "OUT", notebooks / "zh")
    save(full_catalog(nb))
    assert translate.check() == [f"{translate.shown(notebooks / 'zh' / (SAMPLE + '.ipynb'))} is not what `make zh` "
                                 f"generates. Fix: make zh"]
    return notebooks


def test_build_check_and_update_on_a_scratch_repository(tmp_path, monkeypatch):
    """End to end, on a copy: update writes the catalog; build writes the zh notebook; check notices drift of each
    kind; a changed English cell becomes fuzzy and fails build and check until the translator updates it."""
    notebooks, catalogs = tmp_path / "notebooks", tmp_path / "i18n" / "zh"
    notebooks.mkdir()
    nb = english(SAMPLE)
    nbformat.write(nb, notebooks / f"{SAMPLE}.ipynb")
    monkeypatch.setattr(translate, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(translate, "CATALOGS", catalogs)
    monkeypatch.setattr(translate, "OUT", notebooks / "zh")

    markdown = sum(c.cell_type == "markdown" for c in nb.cells)
    occurrences = sum(len(translate.code_comments(c.source)) for c in nb.cells if c.cell_type == "code")
    # every cell and every distinct comment is to translate (empty msgstr); check names each comment where it is
    assert translate.update(SAMPLE) == markdown + len(comment_texts(nb))
    assert len(translate.check()) == markdown + occurrences
    with pytest.raises(translate.TranslationError):
        translate.build()
    catalog = translate.load_catalog(SAMPLE)
    for message in catalog:  # the translator's work
        if message.id:
            message.string = ("中文注释：" if message.context == COMMENT else "中文：") + message.id
    save(catalog)
    assert translate.update(SAMPLE) == 0
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
    key = str(edited.cells[index].id)
    edited.cells[index].source = edited.cells[index].source.replace("—", "-", 1) + " (edited)"
    nbformat.write(edited, notebooks / f"{SAMPLE}.ipynb")
    found = translate.check()
    assert len(found) == 1 and SAMPLE in found[0] and repr(key) in found[0]
    assert translate.update(SAMPLE) == 1  # the changed cell goes back to the translator, fuzzy
    text = translate.catalog_path(SAMPLE).read_text(encoding="utf-8")
    block = next(b for b in text.split("\n\n") if f'msgctxt "{key}"' in b)
    assert block.startswith("#, fuzzy\n#| msgid ") and "(edited)" in block.split("msgid ", 2)[2]
    entry = translate.load_catalog(SAMPLE).get(edited.cells[index].source, key)
    assert entry.fuzzy and entry.previous_id == [nb.cells[index].source] and entry.string.startswith("中文：")
    assert translate.update(SAMPLE) == 1 and translate.catalog_path(SAMPLE).read_text(encoding="utf-8") == text
    found = translate.check()
    assert len(found) == 1 and "fuzzy" in found[0] and f"cell {index} " in found[0] and repr(key) in found[0]
    assert "Fix: update its msgstr" in found[0]
    with pytest.raises(translate.TranslationError, match=f"(?s){SAMPLE}, cell {index} .*fuzzy.*Fix: "):
        translate.build()
    assert zh_path.read_text(encoding="utf-8") != ""  # the failed build wrote nothing
    assert translate.main(["check"]) == 1 and translate.main(["build"]) == 1
    # the translator updates the Chinese and removes the flag (as Poedit's "Needs work" does)
    catalog = translate.load_catalog(SAMPLE)
    entry = catalog.get(edited.cells[index].source, key)
    entry.string, entry.previous_id = "中文：新的译文", []
    entry.flags.discard("fuzzy")
    save(catalog)
    assert translate.build() == [zh_path] and translate.check() == []
    assert nbformat.read(zh_path, as_version=4).cells[index].source == "中文：新的译文"


def test_an_old_entry_pasted_back_over_a_fuzzy_one_fails(tmp_path, monkeypatch):
    """Pasting the previous entry back (its old English and its translation, no fuzzy flag) does not pass: its
    msgid is not the cell's English. Two entries for one cell (a merge) are reported too."""
    nb = english(SAMPLE)
    notebooks = _scratch(tmp_path, monkeypatch, nb)
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and i > 0)
    key = str(nb.cells[index].id)
    edited = copy.deepcopy(nb)
    edited.cells[index].source += "\n\nA new English sentence."
    nbformat.write(edited, notebooks / f"{SAMPLE}.ipynb")
    assert translate.update(SAMPLE) == 1

    def with_entries(*entries):
        catalog = translate.load_catalog(SAMPLE)
        for message in [m for m in catalog if m.context == key]:
            catalog.delete(message.id, key)
        for message in entries:
            catalog[message.id] = message
        save(catalog)
        return [p for p in translate.check() if key in p]

    old = Message(nb.cells[index].source, "中文：" + nb.cells[index].source, context=key)
    pasted = with_entries(old)
    assert len(pasted) == 1 and "changed since it was translated" in pasted[0] and SAMPLE in pasted[0]
    with pytest.raises(translate.TranslationError, match=key):
        translate.build()
    new = Message(edited.cells[index].source, "中文：新的译文", context=key)
    both = with_entries(old, new)
    assert len(both) == 1 and "2 entries for this cell" in both[0]
    assert translate.update(SAMPLE) == 0  # update keeps the current one, the other becomes obsolete
    catalog = translate.load_catalog(SAMPLE)
    assert [m.string for m in catalog if m.context == key] == [new.string]
    assert [m.string for m in catalog.obsolete.values()] == [old.string]
    assert translate.build() == [notebooks / "zh" / f"{SAMPLE}.ipynb"] and translate.check() == []


def test_a_removed_cell_becomes_obsolete_allowed_and_reported_and_comes_back(tmp_path, monkeypatch):
    nb = english(SAMPLE)
    notebooks = _scratch(tmp_path, monkeypatch, nb)
    translate.build()
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and i > 0)
    removed = copy.deepcopy(nb)
    cell = removed.cells.pop(index)
    nbformat.write(removed, notebooks / f"{SAMPLE}.ipynb")
    assert any(repr(str(cell.id)) in p and "names no markdown cell" in p for p in translate.check())
    assert translate.update(SAMPLE) == 0
    assert f'#~ msgctxt "{cell.id}"' in translate.catalog_path(SAMPLE).read_text(encoding="utf-8")
    translate.build()
    notes = []
    assert translate.check(report=notes.append) == []  # obsolete entries are allowed...
    assert any("1 obsolete entry" in note and SAMPLE in note for note in notes)  # ...and reported
    nbformat.write(nb, notebooks / f"{SAMPLE}.ipynb")  # the cell comes back: its translation is used again
    assert translate.update(SAMPLE) == 0 and not translate.load_catalog(SAMPLE).obsolete
    translate.build()
    assert translate.check() == []


def test_an_edited_english_comment_fails_naming_it_and_update_offers_the_old_translation(tmp_path, monkeypatch):
    nb = english(SAMPLE)
    notebooks = _scratch(tmp_path, monkeypatch, nb)
    translate.build()
    assert translate.check() == []
    index, cell = next((i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and
                       translate.code_comments(c.source))
    line, column, token = translate.code_comments(cell.source)[0]
    old_text = translate.comment_text(token)
    new_text = old_text + " (edited)"
    edited = copy.deepcopy(nb)
    lines = edited.cells[index].source.split("\n")
    lines[line] = lines[line][:column] + "# " + new_text
    edited.cells[index].source = "\n".join(lines)
    nbformat.write(edited, notebooks / f"{SAMPLE}.ipynb")
    found = translate.check()
    named = [p for p in found if repr("# " + new_text) in p]
    assert len(named) == 1 and SAMPLE in named[0] and f"cell {index} " in named[0] and f"line {line + 1}," in named[0]
    assert "no translation" in named[0] and "Fix: python tools/translate.py update" in named[0]
    if old_text not in comment_texts(edited):  # the old comment's entry translates nothing now
        assert any(repr(old_text) in p and "no longer in" in p for p in found)
    with pytest.raises(translate.TranslationError, match="edited"):
        translate.build()
    assert translate.update(SAMPLE) == 1  # the closest old comment's translation is offered, fuzzy
    entry = translate.load_catalog(SAMPLE).get(new_text, COMMENT)
    assert entry.fuzzy and entry.string == "中文注释：" + old_text and entry.previous_id == [old_text]
    assert any("fuzzy" in p and repr("# " + new_text) in p for p in translate.check())
    catalog = translate.load_catalog(SAMPLE)
    entry = catalog.get(new_text, COMMENT)
    entry.string = "一条修改过的注释"
    entry.flags.discard("fuzzy")
    save(catalog)
    translate.build()
    assert translate.check() == []
    zh = nbformat.read(notebooks / "zh" / f"{SAMPLE}.ipynb", as_version=4)
    assert zh.cells[index].source.split("\n")[line] == lines[line][:column] + "# 一条修改过的注释"


def test_a_broken_or_duplicated_catalog_fails_naming_the_file(tmp_path, monkeypatch):
    nb = english(SAMPLE)
    _scratch(tmp_path, monkeypatch, nb)
    path = translate.catalog_path(SAMPLE)
    good = path.read_text(encoding="utf-8")
    first = next(b for b in good.split("\n\n")[1:])
    path.write_text(good + "\n" + first + "\n", encoding="utf-8")  # one entry twice, as a bad merge leaves it
    with pytest.raises(translate.TranslationError,
                       match=r"(?s)i18n/zh/03_model_train_eval.po holds 1 entry twice: msgctxt .*Fix"):
        translate.build()
    assert any("holds 1 entry twice" in p for p in translate.check())
    path.write_text(good.replace("msgstr", "<<<<<<< HEAD\nmsgstr", 1), encoding="utf-8")  # a merge conflict
    with pytest.raises(translate.TranslationError, match="is not a valid .po file.*Fix"):
        translate.build()


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
    catalog = Catalog()
    for text in found:
        catalog[text] = Message(text, "中文 " + text, context=COMMENT)
    zh = translate.translate_comments(source, catalog)
    assert "s = 'a # not a comment'  # 中文 a real comment\n" in zh and "#    中文 indented text\n" in zh
    for kept in ("#!/usr/bin/env python", "# -*- coding: utf-8 -*-", "# noqa: F401", "# NBVAL_IGNORE_OUTPUT",
                 "# type: list[int]", "# inside a string", "# ---", "# pragma: no cover"):
        assert kept in zh, kept
    assert same_code(source, zh)
    assert translate.code_comments("%%bash\necho hi  # a shell comment\n") == []
    assert translate.code_comments("%%time\nx = 1  # a Python comment\n")[0][2] == "# a Python comment"


def test_a_multi_line_comment_translation_is_refused():
    nb = english(SAMPLE)
    catalog = full_catalog(nb)
    catalog.get(comment_texts(nb)[0], COMMENT).string = "两行\n译文"
    found = translate.comment_problems(SAMPLE, nb, catalog)
    assert len(found) >= 1 and all("more than one line" in p for p in found)


# ------------------------------------------------------------------ any .po: check_catalog, round trips
def test_check_catalog_reports_fuzzy_untranslated_and_missing_entries_of_any_po(tmp_path):
    """What course_lib's message catalog uses: fuzzy, untranslated and expected-but-missing entries fail; obsolete
    ones are reported, not failed."""
    catalog = Catalog(locale="zh_CN", project="course_lib", fuzzy=False)
    catalog.add("lr must be > 0, got {lr!r}.", "lr 必须大于 0，当前为 {lr!r}。")
    catalog.add("batch_size must be a positive int.", "batch_size 必须是正整数。", flags=("fuzzy",),
                previous_id="batch_size must be positive.")
    catalog.add("epochs must be >= 1.", "")
    catalog.obsolete[("gone", None)] = Message("gone", "已删除")
    path = tmp_path / "课程 lib" / "course_lib.po"
    pofiles.write(catalog, path)
    notes = []
    found = translate.check_catalog(path, ["lr must be > 0, got {lr!r}.", "a new message"], report=notes.append)
    assert len(found) == 3 and all(str(path) in p and "Fix:" in p for p in found)
    assert "fuzzy" in found[0] and "batch_size must be a positive int." in found[0]
    assert "untranslated" in found[1] and "epochs" in found[1]
    assert "missing" in found[2] and "a new message" in found[2]
    assert len(notes) == 1 and "1 obsolete entry" in notes[0]
    assert translate.check_catalog(tmp_path / "none.po") != []
    # the same through translate.check, which includes such catalogs (tools/translate.py check passes course_lib's)
    assert [p for p in translate.check(extra=[(path, ["a new message"])]) if str(path) in p] == found[:2] + [
        found[2]]


def test_a_previous_msgid_survives_read_and_write(tmp_path):
    """Babel alone loses a multi-line '#| msgid' (read_po keeps it as comments and drops repeated lines, write_po
    re-wraps it); pofiles keeps it, byte for byte, over any number of round trips."""
    old = "# Title\n\n**Bold** \"quoted\" 动态图\n\n  indented\ttab\n\nlast line"
    catalog = Catalog(locale="zh_CN", fuzzy=False)
    catalog.add("# Title\n\nnew", "# 标题\n\n旧译文", context="abc", flags=("fuzzy",), previous_id=old)
    path = tmp_path / "x.po"
    pofiles.write(catalog, path)
    text = path.read_bytes()
    assert b'#| msgid ""\n#| "# Title\\n"\n#| "\\n"\n' in text
    again = pofiles.read(path)
    assert again.get("# Title\n\nnew", "abc").previous_id == [old] and again.get("# Title\n\nnew", "abc").fuzzy
    assert pofiles.render(again) == text
    headerless = tmp_path / "headerless.po"  # valid gettext too: no header entry
    headerless.write_text('msgid "a"\nmsgstr "甲"\n\nmsgctxt "x"\nmsgid "a"\nmsgstr "乙"\n', encoding="utf-8")
    assert [(m.id, m.context, m.string) for m in pofiles.read(headerless) if m.id] == [("a", None, "甲"),
                                                                                       ("a", "x", "乙")]


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
    save(full_catalog(nb))
    with pytest.raises(translate.TranslationError):
        translate.build()
    said = []
    assert translate.build(keep_edits=True, report=said.append) == [translate.OUT / f"{SAMPLE}.ipynb"]
    assert said[-1].endswith(f"incomplete: {STEMS[0]}")
    zh = nbformat.read(translate.OUT / f"{SAMPLE}.ipynb", as_version=4)
    code = next(c for c in zh.cells if c.cell_type == "code")
    code.source += "\nprint('my own line')"  # the learner's work
    nbformat.write(zh, translate.OUT / f"{SAMPLE}.ipynb")
    said.clear()
    translate.build(keep_edits=True, report=said.append)
    assert any(line.startswith("kept") for line in said)
    assert nbformat.read(translate.OUT / f"{SAMPLE}.ipynb", as_version=4) == zh


def test_a_catalog_with_windows_line_endings_reads_the_same(tmp_path):
    """A Windows checkout (git's autocrlf) turns the catalog's line ends into CRLF: nothing read changes."""
    path = translate.catalog_path(SAMPLE)
    crlf = tmp_path / path.name
    crlf.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert pofiles.render(pofiles.read(crlf)) == path.read_bytes()


def test_check_includes_course_libs_message_catalog(monkeypatch, tmp_path):
    """`tools/translate.py check` also checks course_lib's messages (tools/messages_catalog.py owns that catalog):
    its file, and the messages course_lib's code marks with _() as the entries it must have."""
    import messages_catalog

    found = translate.message_catalogs()
    assert [path for path, _ in found] == [messages_catalog.CATALOG]
    assert [m.id for m in found[0][1] if m.id] == [m.id for m in messages_catalog.extract() if m.id]
    monkeypatch.setattr(messages_catalog, "CATALOG", tmp_path / "none.po")
    assert translate.message_catalogs() == []


def test_course_libs_message_catalog_passes_the_same_check():
    """One translation system: course_lib's messages catalog is held to the lesson catalogs' rule (no fuzzy, no
    untranslated entry, every message course_lib's code marks with _() present)."""
    assert translate.message_catalogs(), "course_lib/locale/zh/LC_MESSAGES/course_lib.po is missing"
    found = [problem for path, expected in translate.message_catalogs()
             for problem in translate.check_catalog(path, expected, root=ROOT)]
    assert not found, "\n".join(found) + "\nFix: python tools/messages_catalog.py update, then translate them."


def test_update_never_overwrites_a_catalog_saved_meanwhile_and_cleans_a_killed_writers_temp(tmp_path, monkeypatch):
    nb = english(SAMPLE)
    _scratch(tmp_path, monkeypatch, nb)
    path = translate.catalog_path(SAMPLE)
    leftover = path.with_name(f".{SAMPLE}.tmp-p999999999-0123abcd.po")  # a writer killed before os.replace
    leftover.write_text("half a catalog", encoding="utf-8")
    live = path.with_name(f".{SAMPLE}.tmp-p{os.getpid()}-0123abcd.po")  # a writer still running
    live.write_text("being written", encoding="utf-8")
    assert translate.update(SAMPLE) == 0
    assert not leftover.exists() and live.exists()
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, live.name])
    live.unlink()

    saved = path.read_text(encoding="utf-8").replace("中文：", "译者刚保存：", 1)
    merge = translate.merge

    def editor_saves_meanwhile(*args):
        path.write_text(saved, encoding="utf-8")  # a translator's editor saves while update runs
        return merge(*args)

    monkeypatch.setattr(translate, "merge", editor_saves_meanwhile)
    with pytest.raises(translate.TranslationError, match="changed while it was being updated.*Fix: run the update"):
        translate.update(SAMPLE)
    assert path.read_text(encoding="utf-8") == saved  # the translator's save is kept
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left
