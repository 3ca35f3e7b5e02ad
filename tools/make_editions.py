"""Build the student and instructor editions of the notebooks.

    python tools/make_editions.py student      -> build/student/    (outputs cleared, solution cells removed)
    python tools/make_editions.py instructor   -> build/instructor/ (everything, as committed)

A cell tagged ``solution`` holds an exercise's solution; the cell before it (tagged ``exercise``) keeps the
``answer = ...`` placeholder that the learner fills in, and the ``check(...)`` cell after it stays in both.
"""
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
EDITIONS = ("student", "instructor")


def tags(cell) -> set:
    return set(cell.get("metadata", {}).get("tags", []))


def student_notebook(nb):
    """A copy of ``nb`` without solution cells and without outputs."""
    nb = nbformat.from_dict(nb)
    nb.cells = [cell for cell in nb.cells if "solution" not in tags(cell)]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def build(edition: str, out_dir: Path = None) -> Path:
    if edition not in EDITIONS:
        raise SystemExit(f"edition must be one of {EDITIONS}, got {edition!r}")
    out_dir = Path(out_dir or ROOT / "build" / edition)
    staging = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nbformat.write(student_notebook(nb) if edition == "student" else nb, staging / path.name)
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)
    return out_dir


if __name__ == "__main__":
    for name in sys.argv[1:] or EDITIONS:
        print(f"{name} edition: {build(name).relative_to(ROOT)}/")
