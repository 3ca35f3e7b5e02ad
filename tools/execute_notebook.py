"""Execute notebooks in place, as a learner would (top to bottom, fresh kernel), and tidy them for git.

Usage: .venv/bin/python tools/execute_notebook.py notebooks/03_model_train_eval.ipynb [...]
Prints the wall time of each notebook. Fails if a cell errors, if an output contains a machine-specific
path, or if the notebook grows past 2 MB.
"""
import json
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

MACHINE_PATH = re.compile(r"/(root|work|tmp|home)/")
MAX_BYTES = 2_000_000


def execute(path: Path, timeout: int = 900) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")}
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            for output in cell.outputs:
                if output.get("output_type") == "error":
                    raise SystemExit(f"{path}: a cell raised {output.get('ename')}")
    nbformat.write(nb, path)
    text = path.read_text()
    found = MACHINE_PATH.search(text)
    if found:
        line = text[max(0, found.start() - 120): found.end() + 60].replace("\\n", " ")
        raise SystemExit(f"{path}: contains a machine-specific path near: {line!r}")
    if path.stat().st_size > MAX_BYTES:
        raise SystemExit(f"{path}: {path.stat().st_size} bytes, larger than {MAX_BYTES} (lower plot dpi/size)")
    json.loads(text)
    return seconds


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        secs = execute(Path(arg).resolve())
        print(f"{arg}: executed in {secs:.1f} s")
