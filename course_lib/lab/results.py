"""A lesson's measured run time, read from benchmarks/results.json (``python course.py bench-notebooks`` writes it):
lesson headers quote it, so prose never carries a typed-in timing that the machine contradicts."""
import json
import math
from pathlib import Path

from course_lib.i18n import _
from course_lib.paths import PROJECT_ROOT

__all__ = ["BENCHMARK_RESULTS", "run_seconds", "run_time"]

#: Where `make bench-notebooks` writes every lesson's measured run time (the one source lessons quote).
BENCHMARK_RESULTS = PROJECT_ROOT / "benchmarks" / "results.json"


def _notebook_records(results) -> list:
    """Every ``{"notebook": ..., "seconds": ...}`` record in results.json, wherever the run nested it."""
    found = []
    if isinstance(results, dict):
        records = results.get("records")
        if isinstance(records, list) and all(isinstance(r, dict) and "notebook" in r for r in records):
            cpu = results.get("cpu") or ""
            found += [dict(r, cpu=r.get("cpu", cpu)) for r in records]
        for key, value in results.items():
            if key != "records":
                found += _notebook_records(value)
    elif isinstance(results, list):
        for value in results:
            found += _notebook_records(value)
    return found


def _check_notebook(notebook) -> None:
    if not isinstance(notebook, str):
        raise TypeError(_("notebook must be a notebook's file stem such as '03_model_train_eval', got "
                          "{notebook!r}.").format(notebook=notebook))
    if not notebook or "/" in notebook:
        raise ValueError(_("notebook must be a notebook's file stem such as '03_model_train_eval', got "
                           "{notebook!r}.").format(notebook=notebook))


def run_seconds(notebook: str, results_path=None) -> float | None:
    """A lesson's run time in seconds as `make bench-notebooks` last measured it (benchmarks/results.json), or None."""
    _check_notebook(notebook)
    record = _last_record(notebook.removesuffix(".ipynb"), results_path)
    return None if record is None else float(record["seconds"])


def _last_record(stem: str, results_path=None):
    path = Path(results_path) if results_path is not None else BENCHMARK_RESULTS
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for record in reversed(_notebook_records(results)):
        if str(record.get("notebook", "")).removesuffix(".ipynb") == stem and record.get("status", "ok") == "ok":
            return record
    return None


def run_time(notebook: str, results_path=None) -> str:
    """One line for a lesson's header: its run time as `make bench-notebooks` last measured it.

    ``notebook`` is the file's stem, e.g. ``"03_model_train_eval"``. The number comes from
    benchmarks/results.json, so prose never carries a typed-in timing that the machine contradicts.
    """
    _check_notebook(notebook)
    stem = notebook.removesuffix(".ipynb")
    record = _last_record(stem, results_path)
    if record is None:
        return _("Run time of {stem}: not measured yet (run `make bench-notebooks`).").format(stem=stem)
    where = _(" on {cpu}").format(cpu=record["cpu"]) if record.get("cpu") else ""
    return _("Run time of {stem}: about {seconds} s{where} (measured by `make bench-notebooks`; yours may "
             "differ).").format(stem=stem, seconds=math.ceil(float(record["seconds"])), where=where)
