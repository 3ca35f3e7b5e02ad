"""What is committed under notebooks/ is what a learner opens: executed in order, clean, small, portable.

tools/execute_notebook.py checks a notebook when it writes one; this test checks what is actually committed
(a notebook saved from JupyterLab, or edited by hand, goes through here too).
"""
import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))
NOTEBOOKS = [path for path in NOTEBOOKS if ".ipynb_checkpoints" not in path.parts]
MAX_BYTES = 2_000_000
# Absolute paths of a particular machine or clone (home folders, CI work folders, temporary folders, venvs).
MACHINE_PATH = re.compile(r"(?<![\w.])/(root|work|tmp|home|Users|check|builds|srv|opt/ci|var/folders)/|"
                          r"[A-Za-z]:\\\\Users\\\\|site-packages/")


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _code_cells(notebook):
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code" and _source(cell).strip()]


def _imported_roots(code: str) -> list[str]:
    """Top-level package names in the order a code cell imports them (magics and shell lines left out)."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()]
    roots = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            roots += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.append((node.lineno, node.module.split(".")[0]))
    return [root for _, root in sorted(roots)]


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 10


@pytest.fixture(params=NOTEBOOKS, ids=[str(path.relative_to(ROOT)) for path in NOTEBOOKS])
def notebook(request):
    path = request.param
    return path, json.loads(path.read_text(encoding="utf-8"))


def test_execution_counts_run_1_to_n_in_order(notebook):
    path, nb = notebook
    counts = [cell.get("execution_count") for cell in _code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts} — re-execute it top to bottom after a kernel restart "
        f"(tools/execute_notebook.py {path.relative_to(ROOT)})")


def test_no_error_outputs(notebook):
    path, nb = notebook
    errors = [(index, output.get("ename")) for index, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
              for output in cell.get("outputs", []) if output.get("output_type") == "error"]
    assert not errors, f"{path.name}: cells with an error output (cell index, exception): {errors}"


def test_no_machine_specific_paths(notebook):
    path, _ = notebook
    text = path.read_text(encoding="utf-8")
    found = MACHINE_PATH.search(text)
    assert not found, f"{path.name}: machine-specific path near {text[max(0, found.start() - 80):found.end() + 40]!r}"


def test_no_execution_timing_metadata(notebook):
    path, nb = notebook
    timed = [index for index, cell in enumerate(nb["cells"]) if "execution" in cell.get("metadata", {})]
    assert not timed, (f"{path.name}: cells {timed} carry 'execution' timing metadata "
                       "(tools/execute_notebook.py drops it)")


def test_small_enough(notebook):
    path, _ = notebook
    assert path.stat().st_size <= MAX_BYTES, f"{path.name}: {path.stat().st_size} bytes > {MAX_BYTES}"


def test_first_code_cell_imports_course_lib_before_mindspore(notebook):
    path, nb = notebook
    first = _code_cells(nb)[0]
    roots = _imported_roots(_source(first))
    assert "course_lib" in roots, f"{path.name}: the first code cell must `import course_lib` (environment defaults)"
    if "mindspore" in roots:
        assert roots.index("course_lib") < roots.index("mindspore"), (
            f"{path.name}: the first code cell imports mindspore before course_lib; course_lib must come first")


def test_nbval_markers_are_whole_comment_lines(notebook):
    """nbval reads a marker only from a line of its own (``# NBVAL_CHECK_OUTPUT``); one at the end of a code line
    is silently ignored, and the output it was meant to check goes unchecked."""
    path, nb = notebook
    stray = [(index, line.strip()) for index, cell in enumerate(_code_cells(nb))
             for line in _source(cell).splitlines() if "NBVAL_" in line and not line.strip().startswith("# NBVAL_")]
    assert not stray, f"{path.name}: NBVAL markers that nbval ignores (code cell index, line): {stray}"
