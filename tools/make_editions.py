"""Build the student and instructor editions of the notebooks, and the student folder for a USB stick.

    python tools/make_editions.py student      -> build/student/        (for learners: see below; the Chinese
                                                  edition notebooks/zh/ -> build/student/zh/, same rules)
    python tools/make_editions.py student --keep-edits   (make lab-student: keeps the notebooks a learner changed)
    python tools/make_editions.py instructor   -> build/instructor/     (everything, as committed)
    python tools/make_editions.py bundle       -> build/course-student/ (the course without solutions/ or tests/,
                                                  its notebooks/ being the student edition; + wheelhouse/ if any)

The student edition differs from the committed notebooks in four ways:
- cells tagged ``solution`` are removed: exercise solutions (their comments explain the "why"), and answers to
  the recall questions (a markdown cell tagged ``solution`` right after the questions);
- outputs and execution counts are cleared;
- nbval's marker comments (``# NBVAL_CHECK_OUTPUT``, ``# NBVAL_IGNORE_OUTPUT``, …) are removed from the cell
  sources; a cell marked ``# NBVAL_RAISES_EXCEPTION`` gets Jupyter's ``raises-exception`` tag instead, so that
  "Run all" goes on past the error the lesson shows on purpose;
- nothing else changes: the cell before a solution (tagged ``exercise``) keeps the ``answer = ...`` placeholder
  and the ``check(...)`` cell after it stays. The "why" explanations live encoded in course_lib/exercise_bank;
  ``check`` shows them once an answer is correct (see course_lib/exercises.py).

The Chinese student edition (中文学员版) is made from notebooks/zh/ by the same rules, into the ``zh/`` folder of the
student edition (build/student/zh/; in the bundle notebooks/zh/), when notebooks/zh/ holds notebooks. A kernel
started in that folder prints the exercise checks in Chinese (course_lib.exercises.language). It has a manifest of
its own, so that ``--keep-edits`` keeps a learner's edited Chinese notebooks too.
"""
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
EDITIONS = ("student", "instructor", "bundle")
#: The Chinese edition: notebooks/zh/ -> <student edition>/zh/.
ZH = "zh"

#: A line that is only an nbval marker comment, e.g. "# NBVAL_CHECK_OUTPUT".
NBVAL_MARKER = re.compile(r"^[ \t]*#[ \t]*NBVAL_[A-Z_]+[ \t]*$")
#: The same comment at the end of a code line (nbval ignores it there, learners need not see it either).
NBVAL_TRAILING = re.compile(r"[ \t]+#[ \t]*NBVAL_[A-Z_]+[ \t]*$")
#: What the bundle leaves out: the instructor's material, the developer's tests, and machine-local folders.
BUNDLE_EXCLUDE = {"solutions", "tests", ".ci", "build", "outputs", "wheelhouse", ".git", ".venv"}


def tags(cell) -> set:
    return set(cell.get("metadata", {}).get("tags", []))


def strip_nbval_markers(cell) -> None:
    """Remove nbval marker lines from a code cell; turn NBVAL_RAISES_EXCEPTION into the raises-exception tag."""
    lines = cell.source.splitlines()
    if "NBVAL_" not in cell.source:
        return
    if any(NBVAL_MARKER.match(line) and "NBVAL_RAISES_EXCEPTION" in line for line in lines):
        cell.metadata["tags"] = sorted(tags(cell) | {"raises-exception"})
    lines = [NBVAL_TRAILING.sub("", line) for line in lines if not NBVAL_MARKER.match(line)]
    cell.source = "\n".join(lines).strip("\n")


def student_notebook(nb):
    """A copy of ``nb`` without solution cells, outputs or nbval markers."""
    nb = nbformat.from_dict(nb)
    nb.cells = [cell for cell in nb.cells if "solution" not in tags(cell)]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            strip_nbval_markers(cell)
    return nb


def build(edition: str, out_dir: Path = None, keep_edits: bool = False) -> Path:
    """Write the edition into ``out_dir`` (default build/<edition>/), replacing what was there.

    ``keep_edits=True`` (``make lab-student``) never destroys a learner's work: a notebook changed since the last
    build (or found without a record of it), and any file that is not one of the course's notebooks, is kept.
    """
    if edition not in EDITIONS:
        raise SystemExit(f"edition must be one of {EDITIONS}, got {edition!r}")
    if edition == "bundle":
        return build_bundle(out_dir)
    out_dir = Path(out_dir or ROOT / "build" / edition)
    staging = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    folders = [(ROOT / "notebooks", staging)]
    if edition == "student" and any((ROOT / "notebooks" / ZH).glob("*.ipynb")):
        folders.append((ROOT / "notebooks" / ZH, staging / ZH))  # the Chinese student edition, same rules
    for source, target in folders:
        target.mkdir(exist_ok=True)
        for path in sorted(source.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            nbformat.write(student_notebook(nb) if edition == "student" else nb, target / path.name)
        written = {p.name: _digest(p) for p in target.glob("*.ipynb")}
        old = out_dir / target.relative_to(staging)
        if keep_edits and old.is_dir():
            _keep_learner_files(old, target, skip={ZH} if target == staging and len(folders) > 1 else set())
        (target / MANIFEST).write_text(json.dumps(written, indent=1, sort_keys=True) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)
    return out_dir


#: What the last build wrote (file name -> SHA-256), so that a rebuild can tell a learner's edits from old copies.
MANIFEST = ".edition-manifest.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _keep_learner_files(old: Path, new: Path, skip: set = frozenset()) -> None:
    """Copy from ``old`` into ``new`` what a learner changed or added (``skip``: folders rebuilt on their own)."""
    try:
        built = json.loads((old / MANIFEST).read_text())
    except (OSError, ValueError):
        built = {}
    for path in sorted(old.iterdir()):
        if path.name == MANIFEST or path.name in skip:
            continue
        if path.name not in built and (new / path.name).exists() and _digest(path) == _digest(new / path.name):
            continue
        if path.name in built and built[path.name] == _digest(path):
            continue  # untouched since the last build: take the new version
        target = new / path.name
        if target.exists():
            shown = path.relative_to(old.parent) if old.name == ZH else path.name
            print(f"kept your edited {shown} (delete it and rebuild to get the new version)")
            target.unlink() if target.is_file() else shutil.rmtree(target)
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, target)


def course_files() -> list:
    """The repository's files as git sees them: tracked, plus new ones that .gitignore does not exclude."""
    try:
        listing = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                                 check=True, capture_output=True, text=True).stdout
        return sorted(name for name in listing.split("\0") if name and (ROOT / name).is_file())
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (e.g. an unpacked archive)
        return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                      and not {".git", ".venv", "build", "outputs", "wheelhouse"} & set(p.relative_to(ROOT).parts))


def build_bundle(out_dir: Path = None, wheelhouse: bool = True) -> Path:
    """The course as learners get it on a USB stick: no solutions/, no tests/, student notebooks in notebooks/.

    ``make lab`` inside it opens the student edition; ``make install PIP_OPTS=...`` works as in the repository.
    A ``wheelhouse/`` next to the Makefile is copied in too (``wheelhouse=False`` leaves it out).
    """
    out_dir = Path(out_dir or ROOT / "build" / "course-student")
    staging = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for relative in course_files():
        parts = Path(relative).parts
        if parts[0] in BUNDLE_EXCLUDE or parts[0] == "notebooks" or "__pycache__" in parts:
            continue
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, staging / relative)
    build("student", staging / "notebooks")
    if wheelhouse and (ROOT / "wheelhouse").is_dir():
        shutil.copytree(ROOT / "wheelhouse", staging / "wheelhouse")
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)
    return out_dir


if __name__ == "__main__":
    keep = "--keep-edits" in sys.argv
    for name in [arg for arg in sys.argv[1:] if arg != "--keep-edits"] or EDITIONS[:2]:
        print(f"{name} edition: {build(name, keep_edits=keep).relative_to(ROOT)}/")
