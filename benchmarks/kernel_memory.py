"""Peak memory and CPU time of each lesson's kernel, and the classroom sizing they imply.

    python benchmarks/kernel_memory.py                     # every notebook in notebooks/ (about 5 min on 2 cores)
    python benchmarks/kernel_memory.py --only 07 08        # some of them
    python benchmarks/kernel_memory.py --sizing-only       # re-write the sizing table from the saved results

Each notebook runs in a fresh ``python3`` kernel (nbclient), from a scratch copy, with a scratch
``COURSE_OUTPUT_DIR``. A sampler reads, every 0.2 s, the resident memory (RSS) of the kernel's whole process tree:
the kernel and everything it started (msrun, its scheduler and workers; data-pipeline workers). The sum of RSS
counts pages shared between processes more than once, so it errs on the high side, which is the right side for
sizing. CPU time is the user + system time of the tree, read at its largest.

Writes benchmarks/kernel_memory.json and benchmarks/kernel_memory.md, and the sizing table between the markers
``<!-- sizing:begin -->`` and ``<!-- sizing:end -->`` in docs/WORKSHOP.md: RAM, cores and disk for 30 and 100
learners, computed from these numbers (rules in ``sizing()``), never typed by hand.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "kernel_memory.json"
TABLE = ROOT / "benchmarks" / "kernel_memory.md"
WORKSHOP = ROOT / "docs" / "WORKSHOP.md"
BEGIN, END = "<!-- sizing:begin -->", "<!-- sizing:end -->"
GOAL_BYTES = 2**30
MiB = 2**20


class TreeSampler(threading.Thread):
    """Peak RSS (bytes) and CPU seconds of a process and all its descendants, sampled every ``interval`` s."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        import psutil

        self.psutil = psutil
        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak_rss = 0
        self.peak_kernel_rss = 0
        self.cpu_seconds: dict[int, float] = {}
        self.peak_processes = 1
        self._halt = threading.Event()

    def sample(self) -> None:
        try:
            processes = [self.root, *self.root.children(recursive=True)]
        except self.psutil.Error:
            return
        total = 0
        for process in processes:
            try:
                with process.oneshot():
                    rss = process.memory_info().rss
                    times = process.cpu_times()
            except self.psutil.Error:
                continue
            total += rss
            if process.pid == self.root.pid:
                self.peak_kernel_rss = max(self.peak_kernel_rss, rss)
            self.cpu_seconds[process.pid] = times.user + times.system + times.children_user + times.children_system
        self.peak_rss = max(self.peak_rss, total)
        self.peak_processes = max(self.peak_processes, len(processes))

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.sample()


def measure(path: Path, scratch: Path, timeout: int = 900) -> dict:
    import nbformat
    from nbclient import NotebookClient

    copy = scratch / path.name
    shutil.copyfile(path, copy)
    notebook = nbformat.read(copy, as_version=4)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(scratch)}})
    started = time.monotonic()
    status = "ok"
    with client.setup_kernel():
        sampler = TreeSampler(client.km.provisioner.process.pid)
        sampler.start()
        try:
            for index, cell in enumerate(notebook.cells):
                client.execute_cell(cell, index)
        except Exception as error:  # noqa: BLE001 - recorded, the run goes on with the next notebook
            status = f"error: {type(error).__name__}"
        finally:
            sampler.stop()
    return {"notebook": path.stem, "status": status, "seconds": round(time.monotonic() - started, 1),
            "peak_tree_mib": round(sampler.peak_rss / MiB), "peak_kernel_mib": round(sampler.peak_kernel_rss / MiB),
            "cpu_seconds": round(sum(sampler.cpu_seconds.values()), 1), "max_processes": sampler.peak_processes}


def main_lessons(records: list) -> list:
    """The lessons of the main path (00-09): what a workshop runs; appendices are optional reading."""
    return [r for r in records if r["notebook"][:1].isdigit()]


def memory_limit_gib(records: list) -> float:
    """The per-learner memory limit the measurements call for: the heaviest main lesson + 10 %, up to 0.5 GiB."""
    heaviest = max(r["peak_tree_mib"] for r in main_lessons(records)) / 1024
    return math.ceil(heaviest * 1.1 * 2) / 2


def sizing(records: list, learners: int, image_gb: float | None) -> dict:
    """RAM, cores and disk for ``learners`` working through the main lessons at the same time.

    - RAM: every learner may be on the heaviest main lesson at once: the per-learner limit
      (``memory_limit_gib``) times the learners, plus 2 GB for the hub, the proxy and the system.
    - cores: a lesson keeps its kernel busy for its CPU seconds out of the time a learner spends on it (reading
      minutes, tools/lesson_stats.py); the busiest main lesson's share, times 3 for bursts (a room runs the same
      cell at about the same time), times the learners, plus 2.
    - disk: per learner the outputs all lessons leave (measured, 0.5 GB at least), plus the image once (if
      measured) or 4 GB.
    """
    sys.path.insert(0, str(ROOT / "tools"))
    import lesson_stats

    reading = {s["notebook"]: s["reading_minutes"] for s in lesson_stats.all_stats()}
    lessons = main_lessons(records)
    limit = memory_limit_gib(records)
    ram = math.ceil(learners * limit + 2)
    busy = max(r["cpu_seconds"] / (reading.get(r["notebook"], 20) * 60) for r in lessons)
    cores = math.ceil(learners * busy * 3 + 2)
    outputs_gb = sum(r.get("outputs_mib", 0) for r in records) / 1024
    disk = math.ceil(learners * max(0.5, outputs_gb) + (image_gb or 4.0))
    return {"learners": learners, "ram_gb": ram, "cores": cores, "disk_gb": disk,
            "per_learner_memory_gb": limit, "busiest_cpu_share": round(busy, 3)}


def render(data: dict) -> tuple[str, str]:
    rows = ["| notebook | peak memory, kernel + children (MiB) | kernel alone (MiB) | CPU s | processes | "
            "≤ 1 GiB |", "|---|---|---|---|---|---|"]
    for r in data["records"]:
        ok = "yes" if r["peak_tree_mib"] * MiB <= GOAL_BYTES else "**no**"
        rows.append(f"| {r['notebook']} | {r['peak_tree_mib']} | {r['peak_kernel_mib']} | {r['cpu_seconds']} | "
                    f"{r['max_processes']} | {ok} |")
    header = (f"Measured {data['measured_utc']} on {data['cpu']}, {data['cores']} cores, Python "
              f"{data['python']} (`python benchmarks/kernel_memory.py`).\n\n")
    sizes = ["| learners | RAM | cores | disk | per learner |", "|---|---|---|---|---|"]
    for s in data["sizing"]:
        sizes.append(f"| {s['learners']} | {s['ram_gb']} GB | {s['cores']} | {s['disk_gb']} GB | "
                     f"{s['per_learner_memory_gb']} GB memory limit |")
    table = header + "\n".join(rows) + "\n"
    over = [r["notebook"] for r in data["records"] if r["peak_tree_mib"] * MiB > GOAL_BYTES]
    sizing_text = (header + "\n".join(sizes) + "\n\nRules (benchmarks/kernel_memory.py, `sizing()`): the memory limit "
                   "per "
                   "learner is the heaviest main lesson's peak + 10 %, rounded up to 0.5 GB; RAM = learners x that "
                   "limit + 2 GB; cores = learners x the busiest main lesson's CPU share of its reading time x 3 + 2; "
                   "disk = learners x their outputs (0.5 GB at least) + the image. Above 1 GB: "
                   f"{', '.join(over)} (their headers say why). Full table: benchmarks/kernel_memory.md.\n")
    return table, sizing_text


def write_sizing(text: str) -> None:
    page = WORKSHOP.read_text(encoding="utf-8")
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{WORKSHOP} has no {BEGIN} ... {END} markers. Fix: add them where the sizing table goes.")
    before, rest = page.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    WORKSHOP.write_text(f"{before}{BEGIN}\n{text}{END}{after}", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", help="notebook name prefixes, e.g. 07 08")
    parser.add_argument("--sizing-only", action="store_true")
    parser.add_argument("--image-gb", type=float, help="the course image's size (classroom/test_image.py prints it)")
    args = parser.parse_args(argv)
    if args.sizing_only:
        data = json.loads(RESULTS.read_text(encoding="utf-8"))
    else:
        paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
        if args.only:
            paths = [p for p in paths if p.name.startswith(tuple(args.only))]
            if not paths:
                parser.error(f"no notebook starts with {args.only}")
        previous = json.loads(RESULTS.read_text(encoding="utf-8"))["records"] if RESULTS.exists() else []
        records = {r["notebook"]: r for r in previous}
        scratch = Path(tempfile.mkdtemp(prefix="kernel-memory-"))
        os.environ["COURSE_OUTPUT_DIR"] = str(scratch / "outputs")
        try:
            for path in paths:
                before = _size(scratch / "outputs")
                record = measure(path, scratch)
                record["outputs_mib"] = round((_size(scratch / "outputs") - before) / MiB, 1)
                records[path.stem] = record
                print(f"{path.stem}: peak {record['peak_tree_mib']} MiB (kernel {record['peak_kernel_mib']}), "
                      f"{record['cpu_seconds']} CPU s, {record['status']}", flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        import psutil

        data = {"measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "cpu": platform.processor() or platform.machine(), "cores": psutil.cpu_count(),
                "python": platform.python_version(), "records": sorted(records.values(), key=lambda r: r["notebook"])}
    data["image_gb"] = args.image_gb or data.get("image_gb")
    data["sizing"] = [sizing(data["records"], n, data["image_gb"]) for n in (30, 100)]
    RESULTS.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    table, sizing_text = render(data)
    TABLE.write_text("# Kernel memory per notebook\n\n" + table + "\n## Sizing\n\n" + sizing_text, encoding="utf-8")
    write_sizing(sizing_text)
    print(sizing_text)
    return 0


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


if __name__ == "__main__":
    sys.exit(main())
