"""Dead code: vulture over the course's code, with the notebooks' code read as usage.

    python tools/dead_code.py      # print every unexplained hit and every stale whitelist entry; exit 1 if any

What counts:
- scanned: ``SCANNED`` (course_lib, scripts, tools, benchmarks, recipes, classroom), at ``MIN_CONFIDENCE``;
- usage only (their own unused names are not reported): the code cells of ``notebooks/*.ipynb`` (the English
  edition; the Chinese one has the same code), ``solutions/`` and ``course.py``;
- not usage: ``tests/``. Code that only tests call is dead: delete it with its tests;
- functions registered with ``@exercise`` are called through ``course_lib.exercises.check("NN.k", ...)``;
- a name in a course_lib ``__all__`` that only tests use is dead too (vulture counts ``__all__`` as a use);
- ``tools/vulture_whitelist.py``: the names that are alive although nothing in the tree calls them (framework
  hooks, config traitlets, learner API, ...), each with its reason. An entry nothing reports any more is stale.

tests/test_dead_code.py runs this. Needs vulture (``pip install vulture==2.16``).
"""
from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("course_lib", "scripts", "tools", "benchmarks", "recipes", "classroom")
USAGE = ("solutions", "course.py")
WHITELIST = Path("tools") / "vulture_whitelist.py"
MIN_CONFIDENCE = 60
#: Decorators whose functions are called through a registry, not by name.
IGNORE_DECORATORS = ("@exercise",)
VULTURE_PIN = "vulture==2.16"
_HIT = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<message>.+?) \((?P<confidence>\d+)% confidence\)$")


def require_vulture() -> None:
    if importlib.util.find_spec("vulture") is None:
        raise RuntimeError(f"vulture is not installed in {sys.executable}, so dead code cannot be checked. "
                           f"Fix: {sys.executable} -m pip install {VULTURE_PIN}")


def notebook_code(root: Path) -> str:
    """The code cells of ``root/notebooks/*.ipynb`` as one Python source (IPython magics turned into calls)."""
    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    parts = []
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type != "code":
                continue
            source = transform(cell.source)
            try:
                ast.parse(source)
            except SyntaxError as error:
                raise ValueError(f"{path.name}, code cell {index}: not Python after IPython's transforms ({error}), "
                                 "so vulture cannot read what it uses. Fix: make the cell valid Python.") from None
            parts.append(f"# {path.name}, cell {index}\n{source}\n")
    return "\n".join(parts)


def _run(root: Path, paths: list, whitelist: bool) -> list:
    command = [sys.executable, "-m", "vulture", *paths, "--min-confidence", str(MIN_CONFIDENCE),
               "--ignore-decorators", ",".join(IGNORE_DECORATORS)]
    if not whitelist:  # the whitelist lives in tools/, which is scanned
        command += ["--exclude", WHITELIST.name]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode not in (0, 3):  # 3: dead code found; 1: a file vulture could not parse; 2: bad arguments
        raise RuntimeError(f"vulture failed (exit {result.returncode}): {result.stderr.strip() or result.stdout}")
    return [line for line in result.stdout.splitlines() if line.strip()]


def check(root: Path = ROOT) -> tuple[list, list]:
    """``(hits, stale)``: vulture's reports on the scanned code that the whitelist does not explain, and the
    whitelist entries that vulture no longer reports."""
    require_vulture()
    root = Path(root)
    scanned = [name for name in SCANNED if (root / name).exists()]
    with tempfile.TemporaryDirectory(prefix="dead-code-") as usage_dir:
        notebooks = Path(usage_dir) / "notebook_code.py"
        notebooks.write_text(notebook_code(root), encoding="utf-8")
        paths = [*scanned, *(name for name in USAGE if (root / name).exists()), str(notebooks)]

        def reported(lines):
            found = []
            for line in lines:
                match = _HIT.match(line)
                if match is None:
                    raise RuntimeError(f"vulture printed a line this tool cannot read: {line!r}")
                if Path(match["path"]).parts[0] in scanned:
                    found.append(line)
            return found

        hits = reported(_run(root, paths, whitelist=True))
        unexplained = {re.search(r"'([^']+)'", line).group(1) for line in reported(_run(root, paths, whitelist=False))}
        exported = exported_but_unused(root, paths)
    whitelisted = whitelist_names(root / WHITELIST)
    hits += [f"{where}: exported in __all__ but no code besides tests uses '{name}'" for name, where in exported.items()
             if name not in whitelisted]
    stale = sorted(set(whitelisted) - unexplained - set(exported))
    return hits, stale


def exported_but_unused(root: Path, paths: list) -> dict:
    """``{name: "file:line"}`` for the names in course_lib's ``__all__`` lists that no code under ``paths`` uses
    (vulture counts the ``__all__`` string itself as a use, so it misses a public function only tests call)."""
    sources = []
    for entry in paths:
        path = root / entry
        sources += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    used, exported = set(), {}
    for path in sources:
        if path.name == WHITELIST.name:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.name.rsplit(".", 1)[-1])
        if path.is_relative_to(root / "course_lib"):
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                    for item in node.value.elts:
                        exported[item.value] = f"{path.relative_to(root).as_posix()}:{item.lineno}"
    return {name: where for name, where in exported.items() if name not in used}


def whitelist_names(path: Path) -> dict:
    """``{name: comment}`` for each ``_.name  # comment`` line of the whitelist."""
    names = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        match = re.match(r"^_\.(\w+)\s*(?:#\s*(.*))?$", line)
        if match:
            names[match[1]] = (match[2] or "").strip()
    return names


def main() -> int:
    hits, stale = check()
    for line in hits:
        print(line)
    for name in stale:
        print(f"{WHITELIST}: {name!r} is whitelisted, but vulture no longer reports it. Fix: remove its line.")
    if hits:
        print(f"{len(hits)} unused name(s). Fix: delete the dead code (and the tests that only exercise it); if "
              f"something vulture cannot see uses it, add '_.NAME  # why it is alive' to {WHITELIST}.")
    return 1 if hits or stale else 0


if __name__ == "__main__":
    sys.exit(main())
