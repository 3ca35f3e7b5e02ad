"""Every recipe in recipes/ runs as a plain script without course_lib and passes its own checks.

Each recipe runs with this interpreter from a fresh temporary working directory, with an import blocker
(``recipes/run_all.py``: a ``sitecustomize`` on PYTHONPATH) that makes ``import course_lib`` fail, also in msrun's
worker processes; under ``python -O`` (its checks are not ``assert`` statements) and with variables an earlier
msrun left exported (``MS_ROLE``, ...). Run times are recorded, not asserted (the machine may be shared): they are
printed at the end of the run and written to ``outputs/recipes/run_times.md``. Whether the checks catch real
mistakes: tests/test_recipe_mutations.py.
"""
import ast
import importlib.util
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

_spec = importlib.util.spec_from_file_location("recipes_run_all", ROOT / "recipes" / "run_all.py")
run_all = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_all)

RECIPES = run_all.recipe_paths()
EXTRA_IMPORTS = {"pytorch_resnet_to_mindspore.py": {"torch"}, "onnx_export.py": {"onnxruntime"}}  # the last optional
REQUIRED = {  # the techniques issues 15 and 27 list, by recipe file
    "custom_train_one_step_cell.py", "net_with_loss_multi.py", "functional_train_step.py", "miou_metric.py",
    "best_checkpoint_callback.py", "model_eval_custom_eval_network.py", "data_parallel_msrun.py",
    "export_mindir_graphcell.py", "pytorch_resnet_to_mindspore.py", "warmup_cosine_no_decay_bn_bias.py",
    "data_augmentation.py", "gradient_clipping.py", "distributed_evaluation.py", "finetune_frozen_layers.py",
    "gradient_accumulation.py", "weight_ema.py", "onnx_export.py",
}
# What an earlier `msrun` leaves in a shell that exported its variables: a recipe must not mistake itself for a worker.
LEFTOVER_MSRUN = {"MS_ROLE": "MS_WORKER", "MS_SCHED_HOST": "127.0.0.1", "MS_SCHED_PORT": "1", "MS_WORKER_NUM": "2",
                  "MS_NODE_ID": "0", "RANK_ID": "0", "RANK_SIZE": "2"}
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


def test_at_least_the_seventeen_listed_recipes_exist():
    names = {p.name for p in RECIPES}
    assert REQUIRED <= names, sorted(REQUIRED - names)
    assert len(names) >= 17


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
    allowed = {"mindspore", "numpy"} | EXTRA_IMPORTS.get(path.name, set())
    third_party = {name for name in _imports(tree) if name not in sys.stdlib_module_names}
    assert third_party <= allowed, f"imports beyond {sorted(allowed)}: {sorted(third_party - allowed)}"
    assert "course_lib" not in source
    assert re.search(r"^if __name__ == \"__main__\":", source, re.M)
    # Checks that `python -O` keeps: no assert statement; a check() that raises, or numpy's assert_* functions.
    asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    assert not asserts, f"assert statements (removed by python -O) on lines {asserts}"
    assert re.search(r"^def check\(condition, message\):\n(.*\n){1,3}\s+raise SystemExit", source, re.M)
    assert "argparse.ArgumentParser(" in source and "parse_args()" in source


def test_the_blocker_really_stops_course_lib(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("import numpy\nimport course_lib.train.losses\nprint('imported')\n")
    code, _, stdout, stderr = run_all.run_recipe(sneaky, timeout=120)
    assert code != 0 and "imported" not in stdout
    assert "recipes must not import course_lib (tried to import 'course_lib" in stderr


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_runs_without_course_lib_under_python_O_with_leftover_msrun_variables(path):
    code, seconds, stdout, stderr = run_all.run_recipe(path, timeout=600, python_flags=["-O"],
                                                       env_extra=LEFTOVER_MSRUN)  # a hang guard, not a speed check
    _TIMES[path.stem] = (seconds, code == 0)
    assert code == 0, f"{path.name} failed (exit {code}):\n{stdout[-2000:]}\n{stderr[-4000:]}"
    assert "course_lib" not in stderr and "IndexError" not in stderr
    assert stdout.strip(), "a recipe prints what it checked"
    if "MSRUN_VARIABLES" in path.read_text(encoding="utf-8"):  # the msrun recipes say they ignored the leftovers
        assert "note: ignoring MS_NODE_ID, MS_ROLE" in stdout


def _run_each(args):
    """Every recipe with these arguments, 2 at a time: {name: (code, stdout, stderr)}."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda p: run_all.run_recipe(p, timeout=300, args=args), RECIPES)
        return {p.name: (code, out, err) for p, (code, _, out, err) in zip(RECIPES, results)}


def test_help_prints_usage_and_runs_nothing():
    for name, (code, stdout, stderr) in _run_each(["--help"]).items():
        assert code == 0, (name, stderr[-2000:])
        assert stdout.startswith(f"usage: {name} [-h]"), (name, stdout[:300])
        assert "options:" in stdout and "-h, --help" in stdout, (name, stdout)
        assert "CHECK" not in stdout and "note:" not in stdout, (name, stdout)  # usage only: main() did not run


def test_unknown_arguments_are_refused():
    for name, (code, stdout, stderr) in _run_each(["--epochs", "50", "--lr", "0.5"]).items():
        assert code == 2, (name, code, stdout[-500:], stderr[-2000:])
        assert f"{name}: error: unrecognized arguments: --epochs 50 --lr 0.5" in stderr, (name, stderr[-500:])
        assert not stdout.strip(), (name, stdout)


@pytest.mark.parametrize("name", ["data_parallel_msrun.py", "custom_train_one_step_cell.py"])
def test_msrun_recipes_refuse_a_worker_flag_they_did_not_launch(name):
    code, _, stdout, stderr = run_all.run_recipe(run_all.RECIPES_DIR / name, timeout=300, env_extra=LEFTOVER_MSRUN,
                                                 args=["--recipe-worker-out", "somewhere"])
    assert code == 1 and "--recipe-worker-out is set by the script's own msrun launch" in stderr, stderr[-2000:]


def test_run_all_checks_the_markdown_folder_before_running_anything(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_all, "run_recipe", lambda *a, **k: pytest.fail("a recipe ran before the check"))
    missing = tmp_path / "no such folder" / "times.md"
    with pytest.raises(SystemExit) as stopped:
        run_all.main(["--markdown", str(missing), "miou_metric"])
    assert stopped.value.code == 2
    assert f"folder {missing.parent} does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_all.main(["--markdown", str(tmp_path), "miou_metric"])  # a folder, not a file
    assert "is a folder" in capsys.readouterr().err


def test_run_all_writes_the_table_atomically(tmp_path, monkeypatch):
    monkeypatch.setattr(run_all, "run_recipe", lambda path, **_: (0, 1.25, "done\n", ""))
    target = tmp_path / "times.md"
    target.write_text("old table\n")
    assert run_all.main(["--markdown", str(target), "miou_metric"]) == 0
    assert target.read_text() == "| recipe | run time (s) | result |\n|---|---:|---|\n| miou_metric | 1.2 | ok |\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["times.md"]
