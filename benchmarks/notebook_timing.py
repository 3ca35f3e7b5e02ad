"""Wall time of each lesson executed headless, the way nbval runs it: a fresh ``python3`` kernel per notebook,
every cell top to bottom, kernel start-up included.

The notebooks are copied to a scratch folder first (``notebooks/`` is never touched) and the lessons write their
outputs into a scratch ``COURSE_OUTPUT_DIR``, so a timing run neither reuses nor disturbs ``outputs/``: each
lesson runs as on a fresh clone, in course order.
"""
import os
import shutil
import tempfile
import time
from pathlib import Path

#: Per-notebook limit; a lesson that needs longer is reported as a timeout (its target is 120 s).
DEFAULT_TIMEOUT = 600


def find_notebooks(folder) -> list:
    """The lessons in ``folder`` (``*.ipynb``, sorted, checkpoints excluded); ValueError if there are none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"notebook folder {folder} does not exist. Fix: pass --notebook-dir notebooks.")
    paths = sorted(p for p in folder.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not paths:
        raise ValueError(f"no *.ipynb files in {folder}. Fix: pass the folder that holds the lessons.")
    return paths


def _first_error_line(error) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "Exception" in line:
            return line.strip()[:200]
    return (lines[-1].strip() if lines else type(error).__name__)[:200]


def time_notebooks(paths, timeout=DEFAULT_TIMEOUT, progress=print) -> list:
    """Execute each notebook in ``paths`` (in order) from a scratch copy; return one record per notebook.

    Record: ``{"notebook", "seconds", "status", "cells"}`` with status ``"ok"``, ``"timeout"`` or
    ``"error: <first line>"``; seconds run from kernel start to the end of the last cell (or the failure).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    records = []
    scratch = Path(tempfile.mkdtemp(prefix="bench-notebooks-"))
    saved = os.environ.get("COURSE_OUTPUT_DIR")
    os.environ["COURSE_OUTPUT_DIR"] = str(scratch / "outputs")  # the kernels inherit it
    try:
        for path in paths:
            path = Path(path)
            copy = scratch / path.name
            shutil.copyfile(path, copy)
            notebook = nbformat.read(copy, as_version=4)
            code_cells = sum(cell.cell_type == "code" for cell in notebook.cells)
            client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                    resources={"metadata": {"path": str(scratch)}})
            status = "ok"
            start = time.perf_counter()
            try:
                client.execute()
            except CellTimeoutError:
                status = "timeout"
            except (CellExecutionError, DeadKernelError, RuntimeError) as error:
                status = "error: " + _first_error_line(error)
            seconds = time.perf_counter() - start
            records.append({"notebook": path.name, "seconds": seconds, "status": status, "cells": code_cells})
            if progress:
                progress(f"  {path.name}: {seconds:.1f} s ({status})")
    finally:
        if saved is None:
            os.environ.pop("COURSE_OUTPUT_DIR", None)
        else:
            os.environ["COURSE_OUTPUT_DIR"] = saved
        shutil.rmtree(scratch, ignore_errors=True)
    return records
