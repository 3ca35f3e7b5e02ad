"""Build the student and instructor editions of the notebooks, and the student folder for a USB stick.

    python tools/make_editions.py student      -> build/student/        (for learners: see below; the Chinese
                                                  edition notebooks/zh/ -> build/student/zh/, same rules)
    python tools/make_editions.py student --keep-edits  -> my-work/student/  (make lab-student: the folder
                                                  learners work in; files of theirs left in build/student/ by
                                                  an older version move there)
    python tools/make_editions.py instructor   -> build/instructor/     (everything, as committed)
    python tools/make_editions.py bundle       -> build/course-student/ (the course without solutions/ or tests/,
                                                  its notebooks/ being the student edition; + wheelhouse/ if any)

No build ever overwrites or deletes a learner's work (tools/generated.py): every notebook records what it was
generated from and the hash of its content, so a notebook the learner edited or ran is kept and the course's new
version is written beside it (``NAME.new.ipynb``, with a message); files of the learner's own are never touched;
a build is written beside the folder first and moved in file by file, and an interrupted one is recovered.
my-work/ is in .gitignore and `make clean` never touches it (build/ and outputs/ are disposable).

The student edition differs from the committed notebooks in four ways:
- cells tagged ``solution`` are removed: exercise solutions (their comments explain the "why"), and answers to
  the recall questions (a markdown cell tagged ``solution`` right after the questions);
- outputs and execution counts are cleared;
- nbval's marker comments (``# NBVAL_CHECK_OUTPUT``, ``# NBVAL_IGNORE_OUTPUT``, …) are removed from the cell
  sources; a cell marked ``# NBVAL_RAISES_EXCEPTION`` gets Jupyter's ``raises-exception`` tag instead, so that
  "Run all" goes on past the error the lesson shows on purpose;
- nothing else changes: the cell before a solution (tagged ``exercise``) keeps the ``answer = ...`` placeholder
  and the ``check(...)`` cell after it stays. The "why" explanations live encoded in course_lib/exercises;
  ``check`` shows them once an answer is correct (see course_lib/exercises/engine.py).

The Chinese student edition (中文学员版) is made from notebooks/zh/ by the same rules, into the ``zh/`` folder of the
student edition (build/student/zh/; in the bundle notebooks/zh/), when notebooks/zh/ holds notebooks. A kernel
started in that folder prints the exercise checks in Chinese (course_lib.i18n.language).
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402
from generated import staging  # noqa: E402

ROOT = generated.ROOT
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


#: The folder learners work in (make lab-student): not under build/ or outputs/, which are disposable.
STUDENT_WORK = ROOT / "my-work" / "student"
#: Where `make lab-student` kept the learner's notebooks before; their files move to STUDENT_WORK.
OLD_STUDENT_WORK = ROOT / "build" / "student"
TOOL = "tools/make_editions.py"


def edition_folders(edition: str) -> list:
    """(source folder, folder inside the edition) of every set of notebooks the edition holds."""
    folders = [(ROOT / "notebooks", ".")]
    if edition == "student" and any((ROOT / "notebooks" / ZH).glob("*.ipynb")):
        folders.append((ROOT / "notebooks" / ZH, ZH))  # the Chinese student edition, same rules
    return folders


#: Folders inside notebooks/ that the lessons link to (tools/lesson_link_copies.py writes them).
LINKED_FOLDERS = ("docs", "recipes", "benchmarks")


def write_edition(edition: str, folder: Path) -> None:
    """Write the edition's notebooks, each with its generation record (tools/generated.py), into ``folder``."""
    for source, inside in edition_folders(edition):
        target = folder / inside
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted(source.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            nb = student_notebook(nb) if edition == "student" else nbformat.from_dict(nb)
            generated.stamp(nb, [path], f"{TOOL} {edition}")
            (target / path.name).write_text(generated.render(nb), encoding="utf-8")
    # What the lessons link to inside notebooks/ (the glossary, recipes, benchmark results: copies kept equal to
    # their originals by tools/lesson_link_copies.py), so that the links work in the edition too.
    for linked in LINKED_FOLDERS:
        if (ROOT / "notebooks" / linked).is_dir():
            shutil.copytree(ROOT / "notebooks" / linked, folder / linked, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))


def _source_bytes(edition: str) -> int:
    return sum(p.stat().st_size for source, _ in edition_folders(edition) for p in source.glob("*.ipynb"))


def build(edition: str, out_dir: Path = None, keep_edits: bool = False, report=print) -> Path:
    """Write the edition into ``out_dir`` without ever overwriting a learner's file (tools/generated.py).

    Default folder: build/<edition>/; ``keep_edits=True`` (``make lab-student``) means the learner's working
    folder my-work/student/ (a learner's files still in build/student/ move there). In every folder, a notebook
    the learner changed or ran is kept (the new version is written beside it, ``NAME.new.ipynb``) and files that
    are not the course's are never touched.
    """
    if edition not in EDITIONS:
        raise SystemExit(f"edition must be one of {EDITIONS}, got {edition!r}")
    if edition == "bundle":
        return build_bundle(out_dir, report=report)
    if out_dir is None:
        out_dir = STUDENT_WORK if keep_edits and edition == "student" else ROOT / "build" / edition
    out_dir = Path(out_dir)
    adopt = [out_dir.with_name(out_dir.name + ".tmp")]  # the temp folder of an older, interrupted rebuild
    if edition == "student" and out_dir.resolve() == STUDENT_WORK.resolve():
        adopt += [OLD_STUDENT_WORK, OLD_STUDENT_WORK.with_name(OLD_STUDENT_WORK.name + ".tmp")]
    generated.rebuild(out_dir, lambda folder: write_edition(edition, folder), what=f"the {edition} edition",
                      report=report, needed=_source_bytes(edition), adopt=tuple(adopt))
    return out_dir


#: What the last build wrote (file name -> SHA-256), so that a rebuild can tell a learner's edits from old copies.
MANIFEST = generated.MANIFEST


def course_files() -> list:
    """The repository's files as git sees them: tracked, plus new ones that .gitignore does not exclude."""
    try:
        listing = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                                 check=True, capture_output=True, text=True).stdout
        return sorted(name for name in listing.split("\0") if name and (ROOT / name).is_file())
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (e.g. an unpacked archive)
        return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                      and not {".git", ".venv", "build", "outputs", "wheelhouse"} & set(p.relative_to(ROOT).parts))


def write_bundle(folder: Path, wheelhouse: bool = True) -> None:
    """The course as learners get it on a USB stick, written into ``folder`` (a per-OS bundle can call this and
    add its own files, e.g. that OS's wheelhouse)."""
    for relative in course_files():
        parts = Path(relative).parts
        if parts[0] in BUNDLE_EXCLUDE or parts[0] == "notebooks" or "__pycache__" in parts:
            continue
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, folder / relative)
    write_edition("student", folder / "notebooks")
    if wheelhouse and (ROOT / "wheelhouse").is_dir():
        shutil.copytree(ROOT / "wheelhouse", folder / "wheelhouse")


def build_bundle(out_dir: Path = None, wheelhouse: bool = True, report=print) -> Path:
    """The course as learners get it on a USB stick: no solutions/, no tests/, student notebooks in notebooks/.

    ``make lab`` inside it opens the student edition; ``make install PIP_OPTS=...`` works as in the repository.
    A ``wheelhouse/`` next to the Makefile is copied in too (``wheelhouse=False`` leaves it out). Files changed
    or added in an existing bundle folder are kept, like in any generated folder (tools/generated.py).
    """
    out_dir = Path(out_dir or ROOT / "build" / "course-student")
    needed = sum((ROOT / r).stat().st_size for r in course_files())
    generated.rebuild(out_dir, lambda folder: write_bundle(folder, wheelhouse), what="the student bundle",
                      report=report, needed=needed, adopt=(out_dir.with_name(out_dir.name + ".tmp"),))
    return out_dir


def main(argv: list) -> int:
    keep = "--keep-edits" in argv
    names = [arg for arg in argv if arg != "--keep-edits"] or list(EDITIONS[:2])
    for name in names:
        try:
            out = build(name, keep_edits=keep)
        except (staging.DiskFullError, generated.RebuildRunning) as error:
            print(error, file=sys.stderr)
            return 1
        print(f"{name} edition: {generated.shown(out)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
