"""tools/nbval_groups.py: both copies of a notebook run on one xdist worker, first copy first."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbval_groups  # noqa: E402


def test_scope_is_the_file_name_whatever_the_folder():
    assert nbval_groups.scope_of("notebooks/03_a.ipynb::Cell 4") == "03_a.ipynb"
    assert nbval_groups.scope_of("build/second/03_a.ipynb::Cell 0") == "03_a.ipynb"
    assert nbval_groups.scope_of("03_a.ipynb") == "03_a.ipynb"


def _logging_notebook(path: Path, log: Path) -> None:
    code = ("import os, pathlib\n"
            f"with open({str(log)!r}, 'a') as f:\n"
            "    f.write(f\"{pathlib.Path.cwd().name} {os.environ['PYTEST_XDIST_WORKER']}\\n\")\n")
    cell = {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}
    path.write_text(json.dumps({"cells": [cell, dict(cell)], "metadata": {"kernelspec": {"name": "python3"}},
                                "nbformat": 4, "nbformat_minor": 5}))


@pytest.mark.slow
def test_both_copies_of_each_notebook_run_on_one_worker_in_order(tmp_path):
    logs = {}
    for name in ("one", "two", "three"):
        logs[name] = tmp_path / f"{name}.log"
        for folder in ("first", "second"):
            (tmp_path / folder).mkdir(exist_ok=True)
            _logging_notebook(tmp_path / folder / f"{name}.ipynb", logs[name])
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tools"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "nbval_groups",
                           "-n", "2", "--nbval-lax", "--nbval-current-env",
                           *[f"first/{n}.ipynb" for n in logs], *[f"second/{n}.ipynb" for n in logs]],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    workers = set()
    for name, log in logs.items():
        lines = [line.split() for line in log.read_text().splitlines()]
        # two cells per copy: the first copy's cells, then the second copy's, all on one worker
        assert [folder for folder, _ in lines] == ["first", "first", "second", "second"], (name, lines)
        assert len({worker for _, worker in lines}) == 1, (name, lines)
        workers |= {worker for _, worker in lines}
    assert len(workers) == 2, "the lessons were not spread over both workers"


def test_the_schedule_benchmark_refuses_bad_arguments(capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import nbval_schedules

    for argv in (["--rounds", "0"], ["--workers", "0"], ["--schedules", "parallel"]):
        try:
            nbval_schedules.main(argv)
        except SystemExit as exit_:
            assert exit_.code == 2, argv
        else:
            raise AssertionError(f"{argv} was accepted")
    assert "--rounds and --workers must be ≥ 1, got 0 and 2" in capsys.readouterr().err
