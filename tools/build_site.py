"""Render the executed notebooks and the docs into a static HTML site (``make site`` -> build/site/).

Every lesson page gets a navigation bar (index, previous, next); the index lists the lessons and has a search
box over the text of every page (a small JSON index, searched in the browser; no server needed).
"""
import html
import json
import re
import shutil
import sys
from pathlib import Path

import mistune
import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
#: Markdown pages of the site: (source relative to the repository, page, title).
DOCS = (("docs/GLOSSARY.md", "glossary.html", "Glossary"), ("docs/WORKSHOP.md", "workshop.html", "Workshop"),
        ("benchmarks/results.md", "benchmarks.html", "Benchmarks"))
STYLE = """<style>
.course-nav{position:sticky;top:0;z-index:100;background:#1f3b57;padding:8px 16px;font:15px sans-serif}
.course-nav a{color:#fff;margin-right:18px;text-decoration:none}.course-nav a:hover{text-decoration:underline}
.course-page{max-width:980px;margin:24px auto;font:16px/1.5 sans-serif}
.course-page table{border-collapse:collapse}.course-page td,.course-page th{border:1px solid #ccc;padding:4px 8px}
#results li{margin:6px 0}
</style>"""


def title_of(nb, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match.group(1).replace("`", "").strip()
    return fallback


def nav_bar(prev_page, next_page) -> str:
    links = ['<a href="index.html">Course index</a>']
    if prev_page:
        links.append(f'<a href="{prev_page[0]}">&larr; {html.escape(prev_page[1])}</a>')
    if next_page:
        links.append(f'<a href="{next_page[0]}">{html.escape(next_page[1])} &rarr;</a>')
    return f'<nav class="course-nav">{"".join(links)}</nav>'


def link_pages(text: str) -> str:
    """Links between lessons and to the markdown pages point at the rendered pages, not at the source files."""
    for source, page, _ in DOCS:
        text = re.sub(r'href="(?:\.\./)*' + re.escape(source) + '"', f'href="{page}"', text)
    return re.sub(r'href="(?:\.\./)?(?:notebooks/)?([\w.-]+)\.ipynb', r'href="\1.html', text)


def plain_text(markup: str) -> str:
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text))).strip()


def wrap(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>{STYLE}"
            f"</head><body>{nav_bar(None, None)}<main class='course-page'>{body}</main></body></html>")


def build(out_dir: Path = None) -> Path:
    out_dir = Path(out_dir or ROOT / "build" / "site")
    staging = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    exporter = HTMLExporter(template_name="lab")
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    pages = [(p.stem + ".html", title_of(nbformat.read(p, as_version=4), p.stem)) for p in notebooks]
    search_index = []
    for i, path in enumerate(notebooks):
        body, _ = exporter.from_notebook_node(nbformat.read(path, as_version=4))
        nav = nav_bar(pages[i - 1] if i else None, pages[i + 1] if i + 1 < len(pages) else None)
        body = link_pages(body).replace("<body", STYLE + "<body", 1)
        body = re.sub(r"(<body[^>]*>)", r"\1" + nav.replace("\\", "\\\\"), body, count=1)
        (staging / pages[i][0]).write_text(body)
        search_index.append({"page": pages[i][0], "title": pages[i][1], "text": plain_text(body)[:60000]})
    render = mistune.create_markdown(plugins=["table"])
    doc_pages = []
    for name, page, title in DOCS:
        source = ROOT / name
        if source.is_file():
            markup = link_pages(render(source.read_text()))
            (staging / page).write_text(wrap(title, markup))
            doc_pages.append((page, title))
            search_index.append({"page": page, "title": title, "text": plain_text(markup)})
    (staging / "search.json").write_text(json.dumps(search_index))
    items = "".join(f'<li><a href="{page}">{html.escape(title)}</a></li>' for page, title in pages)
    docs = "".join(f'<li><a href="{page}">{html.escape(title)}</a></li>' for page, title in doc_pages)
    index = f"""<h1>MindSpore, from training loop to inference</h1>
<p>The executed lessons of the course, as a static reference. Run them yourself with <code>make lab</code>.</p>
<p><input id="q" type="search" placeholder="Search the course…" size="40" aria-label="Search the course">
<ul id="results"></ul></p>
<h2>Lessons</h2><ul>{items}</ul><h2>More</h2><ul>{docs}</ul>
<script>
let index = null;
fetch('search.json').then(r => r.json()).then(d => index = d);
document.getElementById('q').addEventListener('input', e => {{
  const q = e.target.value.trim().toLowerCase(), out = document.getElementById('results');
  out.innerHTML = '';
  if (!index || q.length < 2) return;
  for (const p of index) {{
    const at = p.text.toLowerCase().indexOf(q);
    if (at < 0) continue;
    const li = document.createElement('li'), a = document.createElement('a');
    a.href = p.page; a.textContent = p.title; li.appendChild(a);
    li.appendChild(document.createTextNode(' — …' + p.text.slice(Math.max(0, at - 60), at + 80) + '…'));
    out.appendChild(li);
  }}
}});
</script>"""
    (staging / "index.html").write_text(wrap("MindSpore, from training loop to inference", index))
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)
    return out_dir


if __name__ == "__main__":
    out = build(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"site: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}/index.html")
