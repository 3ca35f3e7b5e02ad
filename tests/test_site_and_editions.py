"""`make site` and `make student` / `make instructor` build what a learner and an instructor need."""
import html.parser
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402
import make_editions  # noqa: E402

from course_lib.exercises import registered  # noqa: E402
from course_lib.i18n import set_language  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NOTEBOOKS_ZH = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))  # the Chinese edition (tools/translate.py)


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


@pytest.mark.slow
def test_site_has_every_lesson_and_all_local_links_resolve(built_site):
    site = built_site
    for notebook in NOTEBOOKS:
        assert (site / f"{notebook.stem}.html").is_file()
    index = (site / "index.html").read_text()
    assert all(f'href="{n.stem}.html"' in index for n in NOTEBOOKS)
    for page in ("glossary.html", "workshop.html", "benchmarks.html"):       # docs/*.md and benchmarks/results.md
        assert f'href="{page}"' in index and (site / page).is_file()
    assert 'href="benchmarks.html"' in (site / "workshop.html").read_text()   # repository links become page links
    assert 'type="search"' in index
    titles = {entry["page"] for entry in json.loads((site / "search.json").read_text())}
    assert {f"{n.stem}.html" for n in NOTEBOOKS} <= titles
    assert links_are_local_and_resolve(site)


def links_are_local_and_resolve(site):
    """True, or AssertionError naming every broken link of every page (zh/ pages included)."""
    broken = []
    for page in site.rglob("*.html"):
        parser = Links()
        parser.feed(page.read_text())
        for href in parser.hrefs:
            url = urlparse(href)
            if url.scheme or href.startswith("#") or not url.path:
                continue
            if not (page.parent / url.path).is_file():
                broken.append(f"{page.relative_to(site)} -> {href}")
    assert not broken, broken
    return True


@pytest.mark.slow
def test_site_has_both_languages_with_a_switch_on_every_page(tmp_path):
    """zh pages (here from a scratch zh edition of three lessons) under zh/, each linked to its English twin."""
    import translate
    from babel.messages.catalog import Message

    zh_dir = tmp_path / "zh_notebooks"
    zh_dir.mkdir()
    for path in NOTEBOOKS[:3]:
        nb = nbformat.read(path, as_version=4)
        catalog = translate.new_catalog(path.stem)
        for c in nb.cells:
            if c.cell_type == "markdown":
                catalog[c.source] = Message(c.source, "中文：" + c.source, context=str(c.id))
        (zh_dir / path.name).write_text(translate.render(translate.translate(path.stem, nb, catalog, comments=False)))
    site = build_site.build(tmp_path / "site", zh_dir=zh_dir)
    english_index, zh_index = (site / "index.html").read_text(), (site / "zh" / "index.html").read_text()
    assert 'href="zh/index.html"' in english_index and 'href="../index.html"' in zh_index
    assert "<html lang='zh-CN'>" in zh_index
    for notebook in NOTEBOOKS[:3]:
        en_page, zh_page = site / f"{notebook.stem}.html", site / "zh" / f"{notebook.stem}.html"
        assert f'class="course-lang" href="zh/{notebook.stem}.html"' in en_page.read_text()
        text = zh_page.read_text()
        assert f'class="course-lang" href="../{notebook.stem}.html"' in text and '<html lang="zh-CN">' in text
        assert "中文：" in text and f'href="zh/{notebook.stem}.html"' in english_index
        assert f'href="{notebook.stem}.html"' in zh_index and f'href="../{notebook.stem}.html"' in zh_index
    for notebook in NOTEBOOKS[3:]:  # no zh notebook: no zh page, no switch to a page that does not exist
        assert not (site / "zh" / f"{notebook.stem}.html").exists()
        assert 'class="course-lang"' not in (site / f"{notebook.stem}.html").read_text()
    assert 'href="glossary.html"' in (site / "zh" / f"{NOTEBOOKS[0].stem}.html").read_text()  # zh glossary page
    assert 'class="course-lang" href="../glossary.html"' in (site / "zh" / "glossary.html").read_text()
    assert 'class="course-lang" href="zh/glossary.html"' in (site / "glossary.html").read_text()
    if (ROOT / "docs" / "WORKSHOP.zh-CN.md").is_file():
        assert 'class="course-lang" href="zh/workshop.html"' in (site / "workshop.html").read_text()
        assert 'href="workshop.html"' in zh_index
    assert 'href="../benchmarks.html"' in zh_index  # no Chinese version: the English page
    zh_search = json.loads((site / "zh" / "search.json").read_text(encoding="utf-8"))
    assert {f"{n.stem}.html" for n in NOTEBOOKS[:3]} <= {entry["page"] for entry in zh_search}
    assert links_are_local_and_resolve(site)


class Executable(html.parser.HTMLParser):
    """Collects what a browser would run: script elements mentioning alert, on* handlers, javascript: URLs."""

    def __init__(self):
        super().__init__()
        self.bad, self.in_script = [], False

    def handle_starttag(self, tag, attrs):
        self.in_script = tag == "script"
        for key, value in attrs:
            if key.lower().startswith("on"):
                self.bad.append(f"<{tag} {key}=...>")
            if key in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith(
                    ("javascript:", "vbscript:", "data:text")):
                self.bad.append(f"<{tag} {key}={value!r}>")

    def handle_endtag(self, tag):
        self.in_script = False

    def handle_data(self, data):
        if self.in_script and "alert" in data:
            self.bad.append(f"<script>{data.strip()[:40]}")


HOSTILE = ('<script>alert("md")</script>\n\n<img src="x.png" onerror="alert(1)">\n\n'
           '<a href="javascript:alert(2)">click</a> [link](javascript:alert(3)) <b onmouseover="alert(4)">b</b>\n\n'
           '| a | b |\n|:--|--:|\n| 1 | 2 |')


def test_site_runs_no_script_from_lessons_catalogs_or_file_names(tmp_path, monkeypatch):
    """A lesson or a contributed translation with raw HTML, and a notebook name with quotes, run no script."""
    root = tmp_path / "repo"
    (root / "notebooks" / "zh").mkdir(parents=True)
    (root / "recipes").mkdir()
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    nb.cells = nb.cells[:3] + [
        nbformat.v4.new_markdown_cell("# Hostile lesson\n\n" + HOSTILE),
        nbformat.v4.new_code_cell("x", outputs=[
            nbformat.v4.new_output("display_data", data={
                "text/html": '<b>ok</b><script>alert("out")</script><img src=y onerror=alert(5)>'}),
            nbformat.v4.new_output("display_data", data={"application/javascript": "alert('js output')"})])]
    hostile_name = 'A0_x" onmouseover="alert(6)'
    nbformat.write(nb, root / "notebooks" / f"{hostile_name}.ipynb")
    nbformat.write(nb, root / "notebooks" / "javascript:alert(7).ipynb")
    zh = nbformat.from_dict(nb)
    zh.cells[3].source = "# 恶意译文\n\n" + HOSTILE  # as a catalog's zh text would put it there
    nbformat.write(zh, root / "notebooks" / "zh" / f"{hostile_name}.ipynb")
    (root / "docs").mkdir()
    (root / "docs" / "GLOSSARY.md").write_text("# Glossary\n\n" + HOSTILE, encoding="utf-8")
    monkeypatch.setattr(build_site, "ROOT", root)
    site = build_site.build(tmp_path / "site")
    pages = {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in site.rglob("*.html")}
    assert len(pages) >= 6
    for name, text in pages.items():
        found = Executable()
        found.feed(text)
        assert not found.bad, (name, found.bad)  # no script, handler or javascript: URL of theirs survives
    lesson = pages[f"{hostile_name}.html"]
    assert "<table>" in lesson and "<th" in lesson and "<b>ok</b>" in lesson  # the look is kept
    index = pages["index.html"]
    assert 'href="A0_x%22%20onmouseover%3D%22alert%286%29.html"' in index
    assert 'href="javascript%3Aalert%287%29.html"' in index
    assert "<table>" in pages["glossary.html"] and "<script>alert" not in pages["glossary.html"]
    search = json.loads((site / "search.json").read_text())
    assert all(":" not in entry["page"] and '"' not in entry["page"] for entry in search)


@pytest.mark.slow
def test_lesson_pages_link_to_their_neighbours(built_site):
    site = built_site
    second = (site / f"{NOTEBOOKS[1].stem}.html").read_text()
    assert f'href="{NOTEBOOKS[0].stem}.html"' in second and f'href="{NOTEBOOKS[2].stem}.html"' in second


def test_student_edition_has_no_solutions_and_no_outputs(tmp_path):
    student = make_editions.build("student", tmp_path / "student")
    instructor = make_editions.build("instructor", tmp_path / "instructor")
    assert sorted(p.name for p in student.glob("*.ipynb")) == [n.name for n in NOTEBOOKS]
    solutions_seen = 0
    for notebook in NOTEBOOKS:
        solutions_seen += _check_student_copy(nbformat.read(instructor / notebook.name, as_version=4),
                                              nbformat.read(student / notebook.name, as_version=4), notebook.name)
    main_lessons = [n for n in NOTEBOOKS if n.name[0].isdigit()]
    assert solutions_seen >= len(main_lessons) * 2, "every lesson should have at least two solved exercises"


def _check_student_copy(full, light, name) -> int:
    """``light`` is ``full`` without solution cells, outputs, nbval markers or "why" texts; returns #solutions."""
    solution_sources = [c.source for c in full.cells if "solution" in c.metadata.get("tags", [])]
    lesson_lines = {line.strip() for c in full.cells if "solution" not in c.metadata.get("tags", [])
                    for line in c.source.splitlines()}
    student_lines = {line.strip() for c in light.cells for line in c.source.splitlines()}
    for source in solution_sources:
        # a solution line may repeat code the lesson already showed; any other line must be gone
        own = {line.strip() for line in source.splitlines() if len(line.strip()) > 12
               and not line.lstrip().startswith("#")} - lesson_lines
        assert not own & student_lines, (name, own & student_lines)
    assert all(not c.get("outputs") and c.execution_count is None for c in light.cells if c.cell_type == "code")
    assert not any("solution" in c.metadata.get("tags", []) for c in light.cells)
    assert len(light.cells) == len(full.cells) - len(solution_sources)
    text = "\n".join(c.source for c in light.cells)
    assert "NBVAL" not in text, f"{name}: nbval markers are for the test suite, not for learners"
    assert not SOLUTIONS_IMPORT.search(text), f"{name} imports solutions/"
    for exercise_id, task in registered().items():  # the "why" answers appear only after a correct check
        assert not task.why or task.explanation()[:40] not in text, (name, exercise_id)
        if task.why:
            set_language("zh")
            try:
                chinese = task.explanation()  # from the message catalog
            finally:
                set_language(None)
            assert chinese[:20] not in text, (name, exercise_id)
    return len(solution_sources)


SOLUTIONS_IMPORT = re.compile(r"^\s*(from|import)\s+solutions\b", re.M)


def test_chinese_student_edition_has_no_solutions_and_no_outputs(tmp_path):
    """build/student/zh/: notebooks/zh/ by the same rules (the zh notebooks have the English code and outputs)."""
    assert NOTEBOOKS_ZH, "notebooks/zh/ holds the Chinese edition"
    student = make_editions.build("student", tmp_path / "student")
    assert sorted(p.name for p in (student / "zh").glob("*.ipynb")) == [n.name for n in NOTEBOOKS_ZH]
    manifest = json.loads((student / make_editions.MANIFEST).read_text())["files"]
    assert {f"zh/{n.name}" for n in NOTEBOOKS_ZH} <= manifest.keys()
    solutions_seen = 0
    for notebook in NOTEBOOKS_ZH:
        full = nbformat.read(notebook, as_version=4)
        assert any(c.get("outputs") for c in full.cells if c.cell_type == "code"), notebook.name  # rendered
        solutions_seen += _check_student_copy(full, nbformat.read(student / "zh" / notebook.name, as_version=4),
                                              f"zh/{notebook.name}")
    assert solutions_seen >= 2 * sum(n.name[0].isdigit() for n in NOTEBOOKS_ZH)
    instructor = make_editions.build("instructor", tmp_path / "instructor")
    assert not (instructor / "zh").exists()  # the instructor opens notebooks/zh/ itself (make lab-zh)


def test_student_edition_keeps_code_and_turns_nbval_markers_into_jupyter_tags():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(1)  # NBVAL_CHECK_OUTPUT"),
        nbformat.v4.new_code_cell("  #NBVAL_RAISES_EXCEPTION\n1 / 0", metadata={"tags": ["demo"]}),
        nbformat.v4.new_code_cell("# Solution\nanswer = 1", metadata={"tags": ["solution"]}),
        nbformat.v4.new_markdown_cell("# NBVAL_SKIP in markdown is prose"),
    ])
    cells = make_editions.student_notebook(nb).cells
    assert [c.source for c in cells] == ["print(1)", "1 / 0",
                                         "# NBVAL_SKIP in markdown is prose"]
    assert cells[1].metadata["tags"] == ["demo", "raises-exception"]


def test_rebuilding_the_student_edition_keeps_the_learners_work(tmp_path, capsys):
    """`make lab-student` and `make student` alike (tests/test_editions_safety.py has the hidden cases)."""
    out = make_editions.build("student", tmp_path / "student")
    first, second = NOTEBOOKS[0].name, NOTEBOOKS[1].name
    fresh = (out / second).read_text()
    (out / first).write_text((out / first).read_text().replace("answer_00_1 = ...", "answer_00_1 = 42"))
    (out / "my_notes.txt").write_text("mine")
    (out / second).write_text("stale copy of an older build, never edited")
    manifest = json.loads((out / make_editions.MANIFEST).read_text())
    manifest["files"][second].append(make_editions.generated.file_sha(out / second))  # an older build wrote it
    (out / make_editions.MANIFEST).write_text(json.dumps(manifest))
    for keep_edits in (True, False):
        out = make_editions.build("student", out, keep_edits=keep_edits)
        assert "answer_00_1 = 42" in (out / first).read_text() and (out / "my_notes.txt").read_text() == "mine"
        assert (out / second).read_text() == fresh  # untouched since its build: replaced by the new version
        assert f"kept your changed {out / first}" in capsys.readouterr().out


def test_rebuilding_keeps_the_learners_work_in_the_chinese_student_edition_too(tmp_path, capsys):
    out = make_editions.build("student", tmp_path / "student")
    first, second = NOTEBOOKS_ZH[0].name, NOTEBOOKS_ZH[1].name
    fresh = (out / "zh" / second).read_text()
    (out / "zh" / first).write_text((out / "zh" / first).read_text().replace("answer_00_1 = ...", "answer_00_1 = 7"))
    (out / "zh" / "笔记.txt").write_text("我的")
    for keep_edits in (True, False):
        out = make_editions.build("student", out, keep_edits=keep_edits)
        assert "answer_00_1 = 7" in (out / "zh" / first).read_text()
        assert (out / "zh" / "笔记.txt").read_text() == "我的" and (out / "zh" / second).read_text() == fresh
        assert f"kept your changed {out / 'zh' / first}" in capsys.readouterr().out


def test_student_bundle_has_no_solutions_and_opens_the_student_edition(tmp_path):
    bundle = make_editions.build_bundle(tmp_path / "course-student", wheelhouse=False)
    assert not (bundle / "solutions").exists() and not (bundle / "tests").exists()
    for needed in ("course.py", "tools/course_cli.py", "Makefile", "pyproject.toml", "requirements.txt",
                   "constraints.txt", "course_lib/exercises/engine.py",
                   "data", "docs/GLOSSARY.md"):
        assert (bundle / needed).exists(), needed
    assert sorted(p.name for p in (bundle / "notebooks").glob("*.ipynb")) == [n.name for n in NOTEBOOKS]
    assert sorted(p.name for p in (bundle / "notebooks" / "zh").glob("*.ipynb")) == [n.name for n in NOTEBOOKS_ZH]
    for notebook in (bundle / "notebooks").rglob("*.ipynb"):
        nb = nbformat.read(notebook, as_version=4)
        assert not any("solution" in c.metadata.get("tags", []) or c.get("outputs") for c in nb.cells)
    for path in bundle.rglob("*"):
        if path.suffix in (".py", ".ipynb", ".sh"):
            assert not SOLUTIONS_IMPORT.search(path.read_text()), path
    assert 'include = ["course_lib*"]' in (bundle / "pyproject.toml").read_text()  # installs without solutions/


@pytest.mark.slow
def test_student_edition_runs_and_asks_for_answers(tmp_path):
    """The student copy of lesson 00 runs from top to bottom; its checks ask for the missing answers."""
    student = make_editions.build("student", tmp_path / "student")
    out = tmp_path / "executed.ipynb"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=600", "--output", str(out), str(student / NOTEBOOKS[0].name)],
                   check=True, capture_output=True, timeout=900)
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "not answered yet" in text


@pytest.mark.slow
def test_chinese_student_edition_runs_and_asks_for_answers_in_chinese(tmp_path):
    """The zh student copy of lesson 00 runs in build/student/zh/: its checks speak Chinese (no COURSE_LANG)."""
    student = make_editions.build("student", tmp_path / "student")
    out = tmp_path / "executed.ipynb"
    env = {k: v for k, v in os.environ.items() if k != "COURSE_LANG"}
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=600", "--output", str(out),
                    str(student / "zh" / NOTEBOOKS_ZH[0].name)],
                   check=True, capture_output=True, timeout=900, env=env)
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "尚未作答" in text and "not answered yet" not in text
