"""The course is used in JupyterLab, so test it there: `python course.py lab`'s server, driven by headless Chromium."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT = ROOT / "build" / "jupyterlab_00_environment.png"
ZH_LESSON = "00_environment.ipynb"  # the Chinese lesson the zh test opens (notebooks/zh/, made by `make zh`)
ZH_SCREENSHOT = ROOT / "build" / "jupyterlab_zh_00_environment.png"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]

if CHROMIUM is None:  # `make test` installs Debian's chromium first; only a machine where that failed gets here
    pytest.skip("Chromium is not installed (make test installs Debian's `chromium` package where it can: "
                "run `python course.py browser-deps` as root)", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_status(url) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310  (http://127.0.0.1, the lab under test)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0  # not listening (yet)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """`python course.py lab` serving a scratch copy of the notebooks (so autosave never touches the committed ones)."""
    import nbformat

    folder = tmp_path_factory.mktemp("lab")
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        nb = nbformat.read(notebook, as_version=4)
        for cell in nb.cells:  # a learner's fresh copy: only outputs produced in the browser count below
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nb, folder / notebook.name)
    if (ROOT / "notebooks" / "zh" / ZH_LESSON).is_file():  # the Chinese edition, one folder deeper, as committed
        (folder / "zh").mkdir()
        nbformat.write(nbformat.read(ROOT / "notebooks" / "zh" / ZH_LESSON, as_version=4), folder / "zh" / ZH_LESSON)
    port = free_port()
    log = open(folder / "lab.log", "w")
    server = subprocess.Popen(  # `python course.py lab`: it always sets a token of its own and prints it in the URL
        [sys.executable, str(ROOT / "course.py"), "lab", "--no-browser", f"--port={port}"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        # a workspace of its own: JupyterLab restores the tabs of the last session from ~/.jupyter/lab/workspaces,
        # and a notebook left open there by an earlier run sat as a hidden tab whose cells the selectors found first
        env={**os.environ, "LAB_DIR": str(folder),
             "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path_factory.mktemp("workspaces"))})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, token = time.time() + 120, None
        while token is None or http_status(f"{base}/api/status?token={token}") != 200:
            found = re.search(rf"{base}/lab\?token=(\w+)", (folder / "lab.log").read_text(errors="replace"))
            token = found.group(1) if found else None
            if server.poll() is not None or time.time() > deadline:
                raise RuntimeError("JupyterLab did not start:\n" + (folder / "lab.log").read_text()[-3000:])
            time.sleep(1)
        yield {"base": base, "token": token, "folder": folder}
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


@pytest.mark.slow
def test_server_listens_on_localhost_and_requires_the_token(lab):
    assert lab["base"].startswith("http://127.0.0.1:")
    assert http_status(f"{lab['base']}/api/contents") == 403
    assert http_status(f"{lab['base']}/api/contents?token=wrong") == 403
    assert http_status(f"{lab['base']}/api/contents?token={lab['token']}") == 200


#: True once the status bar shows the notebook's kernel as connected and idle ("Python 3 (ipykernel) | Idle").
KERNEL_IDLE = ("() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]"
               ".some(e => /\\|\\s*Idle\\b/.test(e.innerText))")


@pytest.mark.slow
def test_notebook_00_runs_its_first_cells_in_chromium(lab):
    from playwright.sync_api import sync_playwright

    url = f"{lab['base']}/lab/tree/00_environment.ipynb?token={lab['token']}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url, timeout=120_000)
            visible = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook this test opened, not a hidden tab
            page.wait_for_selector(f"{visible} .jp-Notebook .jp-Cell", timeout=120_000)
            # The kernel must be connected before the first Shift+Enter: the notebook's execution indicator already
            # says "idle" while the kernel is still starting, and a code cell run then was dropped (it kept "[ ]"
            # and the next cell failed with NameError). The status bar says "| Idle" only once the kernel answered.
            page.wait_for_function(KERNEL_IDLE, timeout=120_000)
            # Run the first four cells (markdown, imports, markdown, ms.run_check) as a learner would.
            page.click(f"{visible} .jp-Notebook .jp-Cell >> nth=0")
            page.keyboard.press("Escape")
            for _ in range(4):
                page.keyboard.press("Shift+Enter")
                page.wait_for_timeout(500)
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
            page.wait_for_function(
                "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
                ".some(e => e.innerText.includes('MindSpore has been installed on platform [CPU] successfully'))",
                timeout=180_000)
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            texts = [errors.nth(i).inner_text() for i in range(errors.count())]
            assert not [t for t in texts if "Traceback" in t or "Error" in t], texts
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()
    assert SCREENSHOT.stat().st_size > 10_000


#: For every CJK character of ``text``: is it drawn, in the font the element really uses, differently from the
#: box of a code point no font has (U+0378)? Without a CJK font Chromium draws that same box for every one of them.
GLYPHS_JS = """([selector, text]) => {
  const element = document.querySelector(selector);
  const style = getComputedStyle(element);
  const canvas = document.createElement('canvas'); canvas.width = 64; canvas.height = 64;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const draw = ch => { ctx.clearRect(0, 0, 64, 64); ctx.font = `32px ${style.fontFamily}`; ctx.fillText(ch, 8, 44);
                       return Array.from(ctx.getImageData(0, 0, 64, 64).data).join(','); };
  const box = draw('\\u0378');
  const chars = [...new Set([...text].filter(ch => /[\\u4e00-\\u9fff]/.test(ch)))].slice(0, 40);
  const drawn = chars.map(draw);
  return {font: style.fontFamily, chars: chars.join(''), boxes: chars.filter((ch, i) => drawn[i] === box).join(''),
          distinct: new Set(drawn).size};
}"""


@pytest.mark.slow
def test_a_chinese_lesson_renders_its_text_as_glyphs(lab):
    """The zh edition opens in JupyterLab and its Chinese prose is drawn with real glyphs, not empty boxes."""
    from playwright.sync_api import sync_playwright

    if not (lab["folder"] / "zh" / ZH_LESSON).is_file():
        pytest.fail(f"notebooks/zh/{ZH_LESSON} is missing: translate its cells (i18n/zh/), then `make zh`")
    url = f"{lab['base']}/lab/tree/zh/{ZH_LESSON}?token={lab['token']}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url, timeout=120_000)
            # only the visible notebook: the English lesson opened by the test above stays in the restored
            # workspace as a hidden tab, and its first markdown cell (with a few Chinese terms) came first
            selector = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-MarkdownOutput"
            page.wait_for_selector(selector, timeout=120_000)
            # JupyterLab renders cells one after another: wait until the first four hold enough Chinese to judge
            page.wait_for_function(
                f"() => new Set([...document.querySelectorAll('{selector}')].slice(0, 4).map(e => e.innerText)"
                ".join(' ').match(/[\\u4e00-\\u9fff]/g) || []).size >= 10", timeout=60_000)
            text = page.eval_on_selector_all(selector, "els => els.slice(0, 4).map(e => e.innerText).join(' ')")
            result = page.evaluate(GLYPHS_JS, [selector, text])
            ZH_SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(ZH_SCREENSHOT))
        finally:
            browser.close()
    assert len(result["chars"]) >= 10, f"too little Chinese text in the first cells of zh/{ZH_LESSON}: {result}"
    assert not result["boxes"], (
        f"Chinese characters drawn as empty boxes in font {result['font']!r}: {result['boxes']}. "
        "Install a CJK font: `make browser-deps` (Debian's fonts-noto-cjk)")
    assert result["distinct"] == len(result["chars"])
