"""The static site in a real browser, opened from disk (file://) with the network off.

Debian's chromium, driven by Playwright (no browser download), runs with every host name unresolvable
(``--host-resolver-rules``) and, as root, inside a network namespace of its own (``unshare -n``); every request
the pages make is recorded and must be a file:// URL. Search, a followed hit, the page title, the download and
source links, a nav link, and the nav bar at 360 px and 1000 px are checked. Screenshots go to build/.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
        "--disable-background-networking", "--disable-component-update", "--host-resolver-rules=MAP * ~NOTFOUND"]
SHOTS = ROOT / "build"

if CHROMIUM is None:  # `make test` installs Debian's chromium first; only a machine where that failed gets here
    pytest.skip("Chromium is not installed (run `make browser-deps` as root)", allow_module_level=True)


def _no_network_chromium(tmp: Path) -> str:
    """Chromium itself, or (as root, where unshare works) a wrapper that starts it in an empty network namespace."""
    unshare = shutil.which("unshare")
    if hasattr(os, "geteuid") and os.geteuid() == 0 and unshare and \
            subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        wrapper = tmp / "chromium-offline"
        wrapper.write_text(f'#!/bin/sh\nexec "{unshare}" -n "{CHROMIUM}" "$@"\n')
        wrapper.chmod(0o755)
        return str(wrapper)
    return CHROMIUM


@pytest.fixture(scope="module")
def site(built_site):
    return built_site  # tests/conftest.py: built once per worker, in a folder with a space and Chinese characters


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_no_network_chromium(tmp_path_factory.mktemp("bin")),
                                    headless=True, args=ARGS)
        yield browser
        browser.close()


def term_in_one_lesson(site: Path) -> tuple[str, dict]:
    """A word that occurs in the text of exactly one English lesson page (and no other page), with that entry."""
    entries = json.loads((site / "search.json").read_text())
    texts = [entry["text"].lower() for entry in entries]
    for entry in entries:
        if not entry["page"].endswith(".html") or entry["page"] in ("glossary.html", "workshop.html"):
            continue
        for word in sorted(set(re.findall(r"[A-Za-z_]{12,}", entry["text"]))):
            if sum(word.lower() in text for text in texts) == 1:
                return word, entry
    raise AssertionError("no word occurs in exactly one page")


def open_page(browser, url: str, width: int = 1000):
    page = browser.new_page(viewport={"width": width, "height": 800})
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    return page, requests


def nav_boxes_inside(page, width: int) -> list:
    """Every nav link's bounding box; AssertionError naming any that leaves the viewport or is cut."""
    boxes = []
    for link in page.locator(".course-nav a").all():
        box = link.bounding_box()
        assert box and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, \
            (link.inner_text(), box, width)
        boxes.append(box)
    lang = page.locator(".course-nav a.course-lang")
    if lang.count():  # the language button is never shortened with an ellipsis
        assert lang.evaluate("a => a.scrollWidth <= a.clientWidth"), lang.inner_text()
    return boxes


@pytest.mark.slow
def test_search_finds_a_term_and_its_hit_opens_the_lesson_offline(site, browser):
    term, entry = term_in_one_lesson(site)
    page, requests = open_page(browser, (site / "index.html").as_uri())
    page.fill("#q", term)
    hits = page.locator("#results li a")
    assert hits.count() == 1, (term, hits.all_inner_texts())
    assert hits.first.inner_text() == entry["title"]
    hits.first.click()
    page.wait_for_load_state()
    assert page.url.endswith("/" + entry["page"])
    assert page.title() == entry["title"] != "Notebook"
    here = Path(unquote(urlparse(page.url).path)).parent
    download = page.locator("a.course-download")
    assert download.get_attribute("download") is not None
    notebook = here / unquote(download.get_attribute("href"))
    assert notebook.suffix == ".ipynb" and notebook.stem == Path(entry["page"]).stem and notebook.is_file()
    source = here / unquote(page.locator("a.course-source").get_attribute("href"))
    assert source.is_file() and "import" in source.read_text(encoding="utf-8")
    toc = page.locator(".course-toc a")
    assert toc.count() >= 2
    anchor = toc.first.get_attribute("href")
    assert page.locator(f'[id="{anchor[1:]}"]').count() == 1  # the contents list points at the page's headings
    next_link = page.locator(".course-nav a", has_text="→")
    expected = next_link.inner_text().rstrip(" →")
    next_link.click()
    page.wait_for_load_state()
    assert page.title() == expected
    page.screenshot(path=str(SHOTS / "site_lesson_1000.png"))
    assert requests and all(url.startswith("file://") for url in requests), \
        [url for url in requests if not url.startswith("file://")]


@pytest.mark.slow
def test_chinese_search_and_pages_work_offline(site, browser):
    entries = json.loads((site / "zh" / "search.json").read_text(encoding="utf-8"))
    lesson = next(entry for entry in entries if entry["page"].startswith("03_"))
    page, requests = open_page(browser, (site / "zh" / "index.html").as_uri())
    page.fill("#q", lesson["title"].split("—")[-1].strip())
    page.locator("#results li a", has_text=lesson["title"]).first.click()
    page.wait_for_load_state()
    assert page.title() == lesson["title"]
    assert page.locator("a.course-download").count() == 1
    assert all(url.startswith("file://") for url in requests)


@pytest.mark.slow
@pytest.mark.parametrize("width", [360, 1000])
def test_nav_bar_buttons_fit_from_360_px(site, browser, width):
    for name in ("index.html", "03_model_train_eval.html", "zh/03_model_train_eval.html", "workshop.html"):
        page, requests = open_page(browser, (site / name).as_uri(), width)
        boxes = nav_boxes_inside(page, width)
        assert len(boxes) >= (2 if name != "index.html" else 1)
        if name == "03_model_train_eval.html":
            page.screenshot(path=str(SHOTS / f"site_nav_{width}.png"))
        page.close()
        assert all(url.startswith("file://") for url in requests)
