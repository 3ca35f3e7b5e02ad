"""Render the executed notebooks and the docs into a static HTML site (``make site`` -> build/site/).

Every lesson page gets a navigation bar (index, previous, next, language; it wraps from 360 px up), the lesson's title
as page title, links to download the notebook (``notebooks/NAME.ipynb``) and to its source (the lesson's code as a
Python script, ``source/NAME.py``), and an in-page contents list. The index lists the lessons and has a search box
over the text of every page.

The site works opened from disk (``file://``, e.g. a USB stick) with no network: the search index is a script
(``search-index.js``, loaded by a <script> tag: browsers block fetch() of files under file://), and the pages load
nothing from a CDN (tools/site_template/: nbconvert's lab template without require.js, MathJax, mermaid or widget
scripts; the lessons use none of them). ``search.json`` is written too, for tools.

Two languages: the English pages at the top of the site, the Chinese edition (notebooks/zh/, made by `make zh`;
docs/WORKSHOP.zh-CN.md; the bilingual glossary) under build/site/zh/ with the same page names. Every page that has
a counterpart in the other language links to it ("中文" / "English"); both indexes list both editions.

Nothing from a lesson, a translation catalog or a markdown page can run script in a reader's browser: nbconvert's
own sanitising is switched on (``HTMLExporter(sanitize_html=True)``: markdown cells and HTML outputs pass its
``clean_html`` filter, JavaScript outputs are dropped), with :func:`sanitize` (bleach, an allow-list of the tags and
attributes that markdown makes, so headings and tables survive; nbconvert's default list would show them as text)
as that filter; the markdown pages pass :func:`sanitize` too. Page names in links are percent-encoded and
HTML-escaped (a file name with ``"`` or ``javascript:`` is just a name).
"""
import copy
import html
import json
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import quote

import bleach
import mistune
import nbformat
from bleach.css_sanitizer import CSSSanitizer
from nbconvert import HTMLExporter, PythonExporter

ROOT = Path(__file__).resolve().parent.parent
#: Markdown pages of the site: (source relative to the repository, page, title).
DOCS = (("docs/GLOSSARY.md", "glossary.html", "Glossary"), ("docs/WORKSHOP.md", "workshop.html", "Workshop"),
        ("benchmarks/results.md", "benchmarks.html", "Benchmarks"))
#: The Chinese pages (under zh/). The glossary is bilingual: the same source, in a Chinese frame. Pages without a
#: Chinese version (benchmarks) are linked in English, at the top of the site.
DOCS_ZH = (("docs/GLOSSARY.md", "glossary.html", "术语表"), ("docs/WORKSHOP.zh-CN.md", "workshop.html", "工作坊指南"))
ZH = "zh"  # the folder of the Chinese pages in the site
WORDS = {"en": {"index": "Course index", "other": "中文", "other_lang": "zh-CN", "download": "Download the notebook",
               "source": "Source (Python)", "contents": "Contents"},
         "zh": {"index": "课程目录", "other": "English", "other_lang": "en", "download": "下载笔记本",
               "source": "源代码（Python）", "contents": "目录"}}
TEMPLATES = Path(__file__).resolve().parent / "site_template"
STYLE = """<style>
.course-nav{position:sticky;top:0;z-index:100;background:#1f3b57;padding:8px 12px;font:15px sans-serif;
 display:flex;flex-wrap:wrap;align-items:center;gap:6px 16px;box-sizing:border-box;width:100%}
.course-nav a{color:#fff;text-decoration:none;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;
 max-width:100%;min-width:0}.course-nav a:hover{text-decoration:underline}
.course-nav a.course-lang{margin-left:auto;border:1px solid #fff;border-radius:4px;padding:0 8px;flex:none}
.course-page{max-width:980px;margin:24px auto;padding:0 12px;font:16px/1.5 sans-serif}
.course-tools{max-width:1100px;margin:12px auto 0;padding:0 12px;font:15px/1.5 sans-serif}
.course-tools a{margin-right:16px}.course-toc ul{margin:4px 0;columns:2 280px}
@media (max-width:600px){.course-nav{font-size:14px;gap:4px 10px}}
.course-page table{border-collapse:collapse}.course-page td,.course-page th{border:1px solid #ccc;padding:4px 8px}
#results li{margin:6px 0}
</style>"""


#: What markdown (mistune, nbconvert's markdown2html with pygments) produces; no script, no event handlers, no forms.
ALLOWED_TAGS = frozenset(bleach.ALLOWED_TAGS) | {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "span", "div", "img", "table", "thead",
    "tbody", "tfoot", "tr", "th", "td", "caption", "sup", "sub", "del", "ins", "s", "kbd", "details", "summary",
    "dl", "dt", "dd", "figure", "figcaption", "section", "small", "mark", "u"}
ALLOWED_ATTRIBUTES = {"*": ["class", "id", "lang", "title", "dir"], "a": ["href", "title", "hreflang", "name"],
                      "img": ["src", "alt", "title", "width", "height"], "th": ["style", "colspan", "rowspan"],
                      "td": ["style", "colspan", "rowspan"], "ol": ["start"], "code": ["class"]}
#: http(s), mailto and relative links; ``data:`` only for images (bleach checks every href/src against this list).
ALLOWED_PROTOCOLS = ["http", "https", "mailto"]
_CLEANER = bleach.Cleaner(tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, protocols=ALLOWED_PROTOCOLS,
                          css_sanitizer=CSSSanitizer(allowed_css_properties=["text-align"]), strip=True,
                          strip_comments=True)
_DATA_IMAGE = re.compile(r'<img\b[^>]*\bsrc="data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*"')


def sanitize(markup) -> str:
    """``markup`` without script: only the tags, attributes and URL schemes of ALLOWED_* are kept (bleach);
    a base64 PNG/JPEG/GIF/WebP image keeps its ``data:`` source (it cannot run script)."""
    markup = markup.decode() if isinstance(markup, bytes) else str(markup)
    images = {}

    def park(match):  # bleach drops data: URLs; keep the harmless image ones
        key = f"course-image-{len(images)}"
        images[key] = match.group(0)
        return f'<img src="{key}"'
    cleaned = _CLEANER.clean(_DATA_IMAGE.sub(park, markup))
    for key, original in images.items():
        cleaned = cleaned.replace(f'<img src="{key}"', original, 1)
    return cleaned


def href(page: str) -> str:
    """A page name as a safe relative link: percent-encoded (``:`` too, so never a scheme) and HTML-escaped."""
    return html.escape(quote(page, safe="/#"), quote=True)


def title_of(nb, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match.group(1).replace("`", "").strip()
    return fallback


def nav_bar(prev_page, next_page, lang: str = "en", other: str | None = None) -> str:
    """Index, previous, next; ``other`` is this page's counterpart in the other language (a link from here)."""
    words = WORDS[lang]
    links = [f'<a href="index.html">{words["index"]}</a>']
    if prev_page:
        links.append(f'<a href="{href(prev_page[0])}">&larr; {html.escape(prev_page[1])}</a>')
    if next_page:
        links.append(f'<a href="{href(next_page[0])}">{html.escape(next_page[1])} &rarr;</a>')
    if other:
        links.append(f'<a class="course-lang" href="{href(other)}" lang="{words["other_lang"]}" '
                     f'hreflang="{words["other_lang"]}">{words["other"]}</a>')
    return f'<nav class="course-nav">{"".join(links)}</nav>'


def _doc_link(text: str, source: str, page: str) -> str:
    return re.sub(r'href="(?:\.\./)*' + re.escape(source) + r'(#[^"]*)?"',
                  lambda match: f'href="{page}{match.group(1) or ""}"', text)


def link_pages(text: str, lang: str = "en", zh_pages=None) -> str:
    """Links between lessons and to the markdown pages point at the rendered pages, not at the source files.

    ``lang="zh"``: the page sits in zh/; lessons and the glossary/workshop link to their Chinese pages there,
    everything else to the shared English page one level up. ``zh_pages``: the lesson pages that exist in Chinese
    (a link to another lesson goes to its English page when it has none; None = all)."""
    up = "../" if lang == "zh" else ""
    if lang == "zh":
        workshop = "workshop.html" if (ROOT / "docs" / "WORKSHOP.zh-CN.md").is_file() else "../workshop.html"
        text = _doc_link(text, "docs/GLOSSARY.md", "glossary.html")  # bilingual: its zh page
        text = _doc_link(text, "docs/WORKSHOP.zh-CN.md", workshop)
        text = _doc_link(text, "docs/WORKSHOP.md", "../workshop.html")  # the English guide, as the link says
        text = _doc_link(text, "benchmarks/results.md", "../benchmarks.html")
        text = _doc_link(text, "README.zh-CN.md", "index.html")
        text = _doc_link(text, "README.md", "../index.html")
    else:
        for source, page, _ in DOCS:
            text = _doc_link(text, source, page)
        text = _doc_link(text, "docs/WORKSHOP.zh-CN.md", f"{ZH}/workshop.html")
        text = _doc_link(text, "README.zh-CN.md", f"{ZH}/index.html")
        text = _doc_link(text, "README.md", "index.html")
    # recipes/*.py are copied next to the pages (see build), so a lesson's link to a recipe works on the site too
    text = re.sub(r'href="(?:\.\./)*recipes/([\w.-]+\.py)"', rf'href="{up}recipes/\1"', text)
    if lang == "zh":
        return re.sub(r'href="(?:\.\./)*(?:notebooks/)?(?:zh/)?([\w.-]+)\.ipynb',
                      lambda m: 'href="' + ("" if zh_pages is None or f"{m.group(1)}.html" in zh_pages else "../")
                      + f'{m.group(1)}.html', text)
    text = re.sub(r'href="(?:\.\./)*notebooks/zh/([\w.-]+)\.ipynb', rf'href="{ZH}/\1.html', text)
    return re.sub(r'href="(?:\.\./)?(?:notebooks/)?([\w.-]+)\.ipynb', r'href="\1.html', text)


def search_script(entries: list) -> str:
    """The search index as a script (``window.COURSE_SEARCH_INDEX = [...]``): a <script src> loads it from file://.

    JSON with ``<``, ``>``, ``&`` and the two JavaScript line separators escaped, so no text can end the script."""
    data = json.dumps(entries, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        data = data.replace(char, escaped)
    return f"window.COURSE_SEARCH_INDEX = {data};\n"


def plain_text(markup: str) -> str:
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text))).strip()


def wrap(title: str, body: str, lang: str = "en", other: str | None = None) -> str:
    code = "zh-CN" if lang == "zh" else "en"
    return (f"<!DOCTYPE html><html lang='{code}'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
            f"{STYLE}</head><body>{nav_bar(None, None, lang, other)}<main class='course-page'>{body}</main>"
            f"</body></html>")


def contents(body: str, lang: str = "en") -> str:
    """The in-page contents list: a link to every h2/h3 heading of ``body`` that has an id (nbconvert gives one)."""
    items = []
    for level, anchor, inner in re.findall(r'<h([23])\b[^>]*\bid="([^"]+)"[^>]*>(.*?)</h\1>', body, re.S):
        text = plain_text(re.sub(r'<a class="anchor-link".*?</a>', "", inner, flags=re.S)).rstrip("¶ ")
        if text:
            indent = ' style="margin-left:1.2em"' if level == "3" else ""
            items.append(f'<li{indent}><a href="#{html.escape(anchor, quote=True)}">{html.escape(text)}</a></li>')
    if not items:
        return ""
    return (f'<details class="course-toc" open><summary>{WORDS[lang]["contents"]}</summary>'
            f'<ul>{"".join(items)}</ul></details>')


def page_tools(name: str, body: str, lang: str) -> str:
    """Download and source links and the contents list, shown under the nav bar of a lesson page."""
    words = WORDS[lang]
    return (f'<div class="course-tools"><p><a href="{href("notebooks/" + name + ".ipynb")}" download '
            f'class="course-download">{words["download"]} ({html.escape(name)}.ipynb)</a>'
            f'<a href="{href("source/" + name + ".py")}" class="course-source">{words["source"]}</a></p>'
            f'{contents(body, lang)}</div>')


def _lesson_page(exporter, nb, nav: str, lang: str, zh_pages=None, title: str = None, name: str = None) -> str:
    if title:
        nb = copy.deepcopy(nb)
        nb.metadata["title"] = title  # the lab template's <title> (else "Notebook")
    body, _ = exporter.from_notebook_node(nb)
    body = link_pages(body, lang, zh_pages).replace("<body", STYLE + "<body", 1)
    if lang == "zh":
        body = re.sub(r"<html[^>]*>", '<html lang="zh-CN">', body, count=1)
    extra = page_tools(name, body, lang) if name else ""
    return re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav + extra, body, count=1)


def _lesson_files(path: Path, folder: Path) -> None:
    """The notebook to download (as committed, with outputs) and its code as a script, beside the page."""
    (folder / "notebooks").mkdir(exist_ok=True)
    (folder / "source").mkdir(exist_ok=True)
    shutil.copy2(path, folder / "notebooks" / path.name)
    script, _ = PythonExporter().from_notebook_node(nbformat.read(path, as_version=4))
    (folder / "source" / f"{path.stem}.py").write_text(script, encoding="utf-8")


def _list(pages, others=None, other_word="") -> str:
    """<li> per page; ``others``: page -> its counterpart in the other language, linked after the title."""
    items = []
    for page, title in pages:
        extra = f' · <a href="{href(others[page])}">{other_word}</a>' if others and page in others else ""
        items.append(f'<li><a href="{href(page)}">{html.escape(title)}</a>{extra}</li>')
    return "".join(items)


def build(out_dir: Path = None, zh_dir: Path = None) -> Path:
    """Write the site into ``out_dir`` (default build/site/); ``zh_dir`` holds the zh notebooks (notebooks/zh/)."""
    out_dir = Path(out_dir or ROOT / "build" / "site")
    zh_dir = Path(zh_dir or ROOT / "notebooks" / "zh")
    staging = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / ZH).mkdir(parents=True)
    exporter = HTMLExporter(template_name="course", extra_template_basedirs=[str(TEMPLATES)], sanitize_html=True,
                            filters={"clean_html": sanitize})
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    zh_notebooks = [zh_dir / p.name for p in notebooks if (zh_dir / p.name).is_file()]
    pages = [(p.stem + ".html", title_of(nbformat.read(p, as_version=4), p.stem)) for p in notebooks]
    zh_pages = [(p.stem + ".html", title_of(nbformat.read(p, as_version=4), p.stem)) for p in zh_notebooks]
    has_zh = {page for page, _ in zh_pages}
    search_index, zh_search = [], []
    for i, path in enumerate(notebooks):
        nav = nav_bar(pages[i - 1] if i else None, pages[i + 1] if i + 1 < len(pages) else None, "en",
                      f"{ZH}/{pages[i][0]}" if pages[i][0] in has_zh else None)
        body = _lesson_page(exporter, nbformat.read(path, as_version=4), nav, "en", title=pages[i][1],
                            name=path.stem)
        (staging / pages[i][0]).write_text(body, encoding="utf-8")
        _lesson_files(path, staging)
        search_index.append({"page": quote(pages[i][0]), "title": pages[i][1], "text": plain_text(body)[:60000]})
    for i, path in enumerate(zh_notebooks):
        nav = nav_bar(zh_pages[i - 1] if i else None, zh_pages[i + 1] if i + 1 < len(zh_pages) else None, "zh",
                      f"../{zh_pages[i][0]}")
        body = _lesson_page(exporter, nbformat.read(path, as_version=4), nav, "zh", has_zh, title=zh_pages[i][1],
                            name=path.stem)
        (staging / ZH / zh_pages[i][0]).write_text(body, encoding="utf-8")
        _lesson_files(path, staging / ZH)
        zh_search.append({"page": quote(zh_pages[i][0]), "title": zh_pages[i][1], "text": plain_text(body)[:60000]})
    (staging / "recipes").mkdir()
    for recipe in sorted((ROOT / "recipes").glob("*.py")):
        shutil.copy2(recipe, staging / "recipes" / recipe.name)
    render = mistune.create_markdown(plugins=["table"])
    zh_docs = {page: (ROOT / name).is_file() for name, page, _ in DOCS_ZH}
    doc_pages, zh_doc_pages = [], []
    for name, page, title in DOCS:
        source = ROOT / name
        if source.is_file():
            markup = link_pages(sanitize(render(source.read_text(encoding="utf-8"))))
            other = f"{ZH}/{page}" if zh_docs.get(page) else None
            (staging / page).write_text(wrap(title, markup, "en", other), encoding="utf-8")
            doc_pages.append((page, title))
            search_index.append({"page": page, "title": title, "text": plain_text(markup)})
    for name, page, title in DOCS_ZH:
        source = ROOT / name
        if source.is_file():
            markup = link_pages(sanitize(render(source.read_text(encoding="utf-8"))), "zh", has_zh)
            (staging / ZH / page).write_text(wrap(title, markup, "zh", f"../{page}"), encoding="utf-8")
            zh_doc_pages.append((page, title))
            zh_search.append({"page": page, "title": title, "text": plain_text(markup)})
    zh_doc_pages += [(f"../{page}", f"{title}（英文）") for _, page, title in DOCS if not zh_docs.get(page)]
    (staging / "search.json").write_text(json.dumps(search_index))
    (staging / ZH / "search.json").write_text(json.dumps(zh_search, ensure_ascii=False), encoding="utf-8")
    (staging / "search-index.js").write_text(search_script(search_index), encoding="utf-8")
    (staging / ZH / "search-index.js").write_text(search_script(zh_search), encoding="utf-8")
    to_zh = {page: f"{ZH}/{page}" for page, _ in zh_pages}
    items = _list(pages, to_zh, '<span lang="zh-CN">中文</span>')
    docs = _list(doc_pages, {p: f"{ZH}/{p}" for p, _ in doc_pages if zh_docs.get(p)}, '<span lang="zh-CN">中文</span>')
    zh_items = _list(zh_pages, {page: f"../{page}" for page, _ in zh_pages}, '<span lang="en">English</span>')
    zh_more = _list(zh_doc_pages)
    zh_note = ("" if len(zh_pages) == len(pages) else
               f"<p>{len(zh_pages)} of {len(pages)} lessons are translated so far.</p>")
    index = f"""<h1>MindSpore, from training loop to inference</h1>
<p>The executed lessons of the course, as a static reference. Run them yourself with <code>make lab</code>.</p>
<p><input id="q" type="search" placeholder="Search the course…" size="40" aria-label="Search the course">
<ul id="results"></ul></p>
<h2>Lessons</h2><ul>{items}</ul><h2>More</h2><ul>{docs}</ul>
<h2 lang="zh-CN">中文版 · Chinese edition</h2>
<p><a href="{ZH}/index.html" lang="zh-CN">课程目录（中文）</a>: the same lessons, code and outputs, with the prose in
Chinese.</p>{zh_note}
<script src="search-index.js"></script>
<script>
const index = window.COURSE_SEARCH_INDEX || [];
document.getElementById('q').addEventListener('input', e => {{
  const q = e.target.value.trim().toLowerCase(), out = document.getElementById('results');
  out.innerHTML = '';
  if (q.length < 2) return;
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
    (staging / "index.html").write_text(wrap("MindSpore, from training loop to inference", index, "en",
                                             f"{ZH}/index.html"), encoding="utf-8")
    zh_index = (index.split("<h1>", 1)[0] + f"""<h1>MindSpore：从训练循环到推理</h1>
<p>本课程已执行的全部课程笔记本，供静态阅读。代码和输出与英文版完全相同，只有正文译为中文。
在本地运行：<code>make lab-zh</code>。</p>
<p><input id="q" type="search" placeholder="搜索课程…" size="40" aria-label="搜索课程">
<ul id="results"></ul></p>
<h2>课程</h2><ul>{zh_items}</ul>{"" if zh_pages else "<p>中文课程尚未生成（make zh）。</p>"}
<h2>更多</h2><ul>{zh_more}</ul>
<h2 lang="en">English edition</h2><p><a href="../index.html" lang="en">Course index (English)</a></p>
<script src="search-index.js"></script>""" + index.split('<script src="search-index.js"></script>', 1)[1])
    (staging / ZH / "index.html").write_text(wrap("MindSpore：从训练循环到推理", zh_index, "zh", "../index.html"),
                                             encoding="utf-8")
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)
    return out_dir


if __name__ == "__main__":
    out = build(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"site: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}/index.html")
