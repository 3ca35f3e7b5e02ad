"""course_lib's import graph: which module imports which, who imports each module, and the layering rule.

    python tools/import_graph.py            # table: module, lines, layer, imported by (course_lib / notebooks / ...)
    python tools/import_graph.py --check    # exit 1 on an import cycle or an upward import (tests/test_layout.py)

A module may import only modules of its own layer or a lower one (``LAYERS``); imports inside functions count too.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "course_lib"

#: Lowest first. A module's layer is that of its longest matching prefix.
LAYERS = [
    ("base", ["course_lib", "course_lib.validation", "course_lib.paths", "course_lib.locks", "course_lib.staging",
              "course_lib.i18n"]),
    ("models and data", ["course_lib.models", "course_lib.data"]),
    ("training", ["course_lib.train"]),
    ("inference, parallel, migration", ["course_lib.inference", "course_lib.parallel", "course_lib.migrate"]),
    ("run (scripts' library)", ["course_lib.run"]),
    ("notebooks' helpers, exercises, measuring", ["course_lib.lab", "course_lib.exercises", "course_lib.perf"]),
]

#: Who uses the code outside the package (folder -> file pattern).
AREAS = {"notebooks": ("notebooks", "[0-9A]*.ipynb"), "tests": ("tests", "*.py"), "scripts": ("scripts", "*.py"),
         "recipes": ("recipes", "*.py"), "benchmarks": ("benchmarks", "*.py"), "tools": ("tools", "*.py"),
         "solutions": ("solutions", "*.py"), "classroom": ("classroom", "*.py")}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """``{"course_lib.train.callbacks": path}`` for every module of the package (packages by their ``__init__``)."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve(name: str, known: dict) -> str | None:
    """The module ``name`` refers to: itself, or its longest known prefix (``course_lib.train.Trainer`` → train)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every dotted ``course_lib...`` name that ``tree`` imports (``from course_lib.x import y`` gives ``x.y``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            names.update(f"{stem}.{alias.name}" for alias in node.names)
            names.add(stem)
    return {name for name in names if name == PACKAGE or name.startswith(PACKAGE + ".")}


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """``{module: {modules it imports}}`` inside course_lib (a package's own ``__init__`` edge excluded)."""
    known = modules(root)
    edges = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = {_resolve(name, known) for name in imported_names(tree, module, path.name == "__init__.py")}
        targets = {t for t in targets if t and t != module and not module.startswith(t + ".")}
        # ``from course_lib.lab import plotting`` names the package too; keep only the deepest module named
        edges[module] = {t for t in targets if not any(other.startswith(t + ".") for other in targets)}
    return edges


def layer(module: str) -> int:
    best, best_len = 0, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """``"a -> b"`` for each import of a higher layer; a package's ``__init__`` may import its own modules."""
    bad = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            if target.startswith(module + "."):
                continue
            if layer(target) > layer(module):
                bad.append(f"{module} (layer {layer(module)}) -> {target} (layer {layer(target)})")
    return bad


def _area_files(root: Path, folder: str, pattern: str):
    base = root / folder
    if folder == "notebooks":
        return sorted(base.glob(pattern))
    return sorted(p for p in base.rglob(pattern) if ".ipynb_checkpoints" not in p.parts)


def _source(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        # IPython magics and shell lines are not Python
        return "\n".join(line for cell in code for line in cell.splitlines()
                         if not line.lstrip().startswith(("%", "!")))
    return path.read_text(encoding="utf-8")


def users(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """``{module: {area: number of files importing it}}`` for the areas outside the package, plus course_lib."""
    known = modules(root)
    counts = defaultdict(lambda: defaultdict(int))
    for targets in graph(root).values():
        for target in targets:
            counts[target]["course_lib"] += 1
    for area, (folder, pattern) in AREAS.items():
        for path in _area_files(root, folder, pattern):
            try:
                tree = ast.parse(_source(path))
            except SyntaxError:
                continue
            for target in {_resolve(n, known) for n in imported_names(tree, "", False)} - {None}:
                counts[target][area] += 1
    return counts


def table(root: Path = ROOT) -> str:
    known, counts = modules(root), users(root)
    columns = ["course_lib", *AREAS]
    lines = ["| module | lines | layer | " + " | ".join(columns) + " |", "|" + "---|" * (3 + len(columns))]
    for module, path in known.items():
        n = sum(1 for _ in path.open(encoding="utf-8"))
        row = [str(counts[module].get(c, 0) or "") for c in columns]
        lines.append(f"| {module.replace(PACKAGE + '.', '') if module != PACKAGE else PACKAGE} | {n} | "
                     f"{layer(module)} | " + " | ".join(row) + " |")
    edges = graph(root)
    outside = sum(sum(v for k, v in c.items() if k != "course_lib") for c in counts.values())
    lines.append("")
    lines.append(f"{len(known)} modules, {sum(len(t) for t in edges.values())} imports inside course_lib, "
                 f"{outside} (file, module) imports from outside it; cycles: {len(cycles(edges))}, "
                 f"upward imports: {len(upward_imports(edges))}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail on an import cycle or an upward import")
    options = parser.parse_args(argv)
    if options.check:
        edges = graph()
        problems = [f"cycle: {' <-> '.join(c)}" for c in cycles(edges)] + \
                   [f"upward import: {u}" for u in upward_imports(edges)]
        for problem in problems:
            print(problem)
        if problems:
            print("Fix: move the shared code down a layer (see LAYERS in tools/import_graph.py).")
            return 1
        print(f"course_lib: {len(edges)} modules, no cycle, no upward import")
        return 0
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
