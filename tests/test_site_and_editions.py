"""`make site` and `make student` / `make instructor` build what a learner and an instructor need."""
import html.parser
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402
import make_editions  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def test_site_has_every_lesson_and_all_local_links_resolve(tmp_path):
    site = build_site.build(tmp_path / "site")
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
    broken = []
    for page in site.glob("*.html"):
        parser = Links()
        parser.feed(page.read_text())
        for href in parser.hrefs:
            url = urlparse(href)
            if url.scheme or href.startswith("#") or not url.path:
                continue
            if not (site / url.path).is_file():
                broken.append(f"{page.name} -> {href}")
    assert not broken, broken


def test_lesson_pages_link_to_their_neighbours(tmp_path):
    site = build_site.build(tmp_path / "site")
    second = (site / f"{NOTEBOOKS[1].stem}.html").read_text()
    assert f'href="{NOTEBOOKS[0].stem}.html"' in second and f'href="{NOTEBOOKS[2].stem}.html"' in second


def test_student_edition_has_no_solutions_and_no_outputs(tmp_path):
    student = make_editions.build("student", tmp_path / "student")
    instructor = make_editions.build("instructor", tmp_path / "instructor")
    assert sorted(p.name for p in student.glob("*.ipynb")) == [n.name for n in NOTEBOOKS]
    solutions_seen = 0
    for notebook in NOTEBOOKS:
        full = nbformat.read(instructor / notebook.name, as_version=4)
        light = nbformat.read(student / notebook.name, as_version=4)
        solution_sources = [c.source for c in full.cells if "solution" in c.metadata.get("tags", [])]
        solutions_seen += len(solution_sources)
        lesson_lines = {line.strip() for c in full.cells if "solution" not in c.metadata.get("tags", [])
                        for line in c.source.splitlines()}
        student_lines = {line.strip() for c in light.cells for line in c.source.splitlines()}
        for source in solution_sources:
            # a solution line may repeat code the lesson already showed; any other line must be gone
            own = {line.strip() for line in source.splitlines() if len(line.strip()) > 12
                   and not line.lstrip().startswith("#")} - lesson_lines
            assert not own & student_lines, (notebook.name, own & student_lines)
        assert all(not c.get("outputs") for c in light.cells if c.cell_type == "code")
        assert not any("solution" in c.metadata.get("tags", []) for c in light.cells)
        assert len(light.cells) == len(full.cells) - len(solution_sources)
    assert solutions_seen >= len(NOTEBOOKS) * 2, "every lesson should have at least two solved exercises"


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
