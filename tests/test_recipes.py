"""Every recipe in recipes/ runs as a plain script without course_lib and passes its own assertions.

Each recipe runs with this interpreter from a fresh temporary working directory, with an import blocker
(``recipes/run_all.py``: a ``sitecustomize`` on PYTHONPATH) that makes ``import course_lib`` fail, also in msrun's
worker processes. Run times are recorded, not asserted (the machine may be shared): they are printed at the end
of the run and written to ``outputs/recipes/run_times.md``.
"""
import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

_spec = importlib.util.spec_from_file_location("recipes_run_all", ROOT / "recipes" / "run_all.py")
run_all = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_all)

RECIPES = run_all.recipe_paths()
TORCH_RECIPES = {"pytorch_resnet_to_mindspore.py"}
REQUIRED = {  # the techniques issue 15 lists, by recipe file
    "custom_train_one_step_cell.py", "net_with_loss_multi.py", "functional_train_step.py", "miou_metric.py",
    "best_checkpoint_callback.py", "model_eval_custom_eval_network.py", "data_parallel_msrun.py",
    "export_mindir_graphcell.py", "pytorch_resnet_to_mindspore.py", "warmup_cosine_no_decay_bn_bias.py",
}
_TIMES = {}


@pytest.fixture(scope="module", autouse=True)
def run_time_table(request):
    """After the last test of this file, whatever the order the tests ran in, write the recipes' run times to
    outputs/recipes/run_times.md and show them in pytest's summary."""
    yield
    if not _TIMES:
        return
    table = run_all.markdown_table([(name, seconds, ok) for name, (seconds, ok) in sorted(_TIMES.items())])
    out = ROOT / "outputs" / "recipes"
    out.mkdir(parents=True, exist_ok=True)
    (out / "run_times.md").write_text(table + "\n")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("\nRecipe run times (this machine, this run):\n" + table)


def test_at_least_the_ten_listed_recipes_exist():
    names = {p.name for p in RECIPES}
    assert REQUIRED <= names, sorted(REQUIRED - names)
    assert len(names) >= 10


def _imports(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import in a standalone recipe"
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_header_docstring_and_imports(path):
    source = path.read_text(encoding="utf-8")
    assert source.splitlines()[0] == "# SPDX-License-Identifier: Apache-2.0"
    tree = ast.parse(source)
    doc = ast.get_docstring(tree)
    assert doc, "a recipe opens with a docstring"
    for field in ("What:", "When to use it:", "Tested with: MindSpore 2.10.0", "Lesson: notebooks/"):
        assert field in doc, f"docstring lacks {field!r}"
    lessons = re.findall(r"notebooks/(\w+\.ipynb)", doc)
    assert lessons and all((NOTEBOOKS / name).is_file() for name in lessons), lessons
    allowed = {"mindspore", "numpy"} | ({"torch"} if path.name in TORCH_RECIPES else set())
    third_party = {name for name in _imports(tree) if name not in sys.stdlib_module_names}
    assert third_party <= allowed, f"imports beyond {sorted(allowed)}: {sorted(third_party - allowed)}"
    assert "course_lib" not in source
    assert re.search(r"^if __name__ == \"__main__\":", source, re.M)
    assert "assert" in source  # checks its own result before printing it


def test_the_blocker_really_stops_course_lib(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("import numpy\nimport course_lib.cells\nprint('imported')\n")
    code, _, stdout, stderr = run_all.run_recipe(sneaky, timeout=120)
    assert code != 0 and "imported" not in stdout
    assert "recipes must not import course_lib (tried to import 'course_lib" in stderr


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_runs_without_course_lib(path):
    code, seconds, stdout, stderr = run_all.run_recipe(path, timeout=600)  # a hang guard, not a speed check
    _TIMES[path.stem] = (seconds, code == 0)
    assert code == 0, f"{path.name} failed (exit {code}):\n{stdout[-2000:]}\n{stderr[-4000:]}"
    assert "course_lib" not in stderr
    assert stdout.strip(), "a recipe prints what it checked"
