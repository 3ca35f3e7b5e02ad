"""course_lib's layout: packages by audience, no import cycle, no upward import, each package says who it is for."""
import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import import_graph  # noqa: E402

PACKAGES = ["data", "train", "parallel", "migrate", "run", "lab", "exercises", "perf", "models"]


def test_no_cycle_and_no_upward_import():
    edges = import_graph.graph()
    assert len(edges) > 40
    assert import_graph.cycles(edges) == []
    assert import_graph.upward_imports(edges) == []


def test_the_check_catches_an_upward_import_and_a_cycle(tmp_path):
    package = tmp_path / "course_lib"
    (package / "train").mkdir(parents=True)
    (package / "lab").mkdir()
    (package / "__init__.py").write_text("")
    (package / "paths.py").write_text("from course_lib.lab import plotting\n")  # layer 0 -> layer 5
    (package / "train" / "__init__.py").write_text("")
    (package / "train" / "a.py").write_text("import course_lib.train.b\n")
    # a cycle, through an import inside a function
    (package / "train" / "b.py").write_text("def f():\n    from course_lib.train import a\n")
    (package / "lab" / "__init__.py").write_text("")
    (package / "lab" / "plotting.py").write_text("from course_lib.train.a import x\n")
    edges = import_graph.graph(tmp_path)
    assert import_graph.cycles(edges) == [["course_lib.train.a", "course_lib.train.b"]]
    assert import_graph.upward_imports(edges) == ["course_lib.paths (layer 0) -> course_lib.lab.plotting (layer 5)"]


def test_every_module_has_a_known_layer():
    unknown = [m for m in import_graph.modules() if m != "course_lib" and import_graph.layer(m) == 0
               and m not in {"course_lib." + n for n in ("validation", "paths", "locks", "staging", "i18n")}]
    assert unknown == [], "Fix: give each new module a layer in tools/import_graph.py LAYERS"


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_says_who_it_is_for(package):
    docstring = ast.get_docstring(ast.parse((ROOT / "course_lib" / package / "__init__.py").read_text("utf-8")))
    assert docstring and len(docstring.split()) >= 8, f"course_lib/{package}/__init__.py needs a docstring"
    assert any(word in docstring for word in ("For learners", "For engineers", "Notebook plumbing", "For scripts",
                                               "for learners", "scripts")), docstring


def test_no_flat_module_left_from_the_old_layout():
    old = ["data.py", "datagen.py", "pipeline_stats.py", "trainer.py", "callbacks.py", "checkpoint.py",
           "distributed.py", "migration.py", "config.py", "env.py", "lesson.py", "plotting.py", "exercises.py",
           "progress.py", "timing.py", "cells.py"]
    assert [name for name in old if (ROOT / "course_lib" / name).exists()] == []
