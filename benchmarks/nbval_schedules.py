"""How should `make test` run nbval on 2 cores? Time the two schedules side by side (issue "newcomer platforms").

    .venv/bin/python benchmarks/nbval_schedules.py [--rounds N] [--workers 2]

- serial: one pytest session over notebooks/*.ipynb, then a second one over copies of them in a temporary
  folder (the copies meet the first run's leftovers and a different working folder);
- grouped: one pytest session over both sets on pytest-xdist workers; the plugin tools/nbval_groups.py sends
  both copies of a lesson to one worker, back to back in the same order as the serial schedule, while different
  lessons overlap. (The copies' folder is inside the repository, under build/: pytest 9 gives a file outside
  the rootdir a node id without its path, so the scheduler could not tell the copies apart.)

The schedules alternate (serial, grouped, serial, …) so that a busy spell of the machine hits both. Each run
must pass; the script prints the wall times and the ratio, and writes them to
benchmarks/nbval_schedules.md. Adopt the grouped schedule only if it is faster in every round.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NBVAL = ["--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=900",
         "--nbval-sanitize-with=nbval_sanitize.cfg"]
RESULTS = ROOT / "benchmarks" / "nbval_schedules.md"


def _pytest(args: list[str], env_extra: dict | None = None) -> float:
    env = dict(os.environ, **(env_extra or {}))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(args[:6])} … failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    print("   ", done.stdout.strip().splitlines()[-1], flush=True)
    return seconds


def serial(copies: Path) -> float:
    first = _pytest([*NBVAL, *map(str, NOTEBOOKS)])
    return first + _pytest([*NBVAL, *sorted(map(str, copies.glob("*.ipynb")))])


def grouped(copies: Path, workers: int) -> float:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tools"), os.environ.get("PYTHONPATH")]))}
    return _pytest(["-p", "nbval_groups", "-n", str(workers), *NBVAL,
                    *map(str, NOTEBOOKS), *sorted(map(str, copies.glob("*.ipynb")))], env)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--schedules", nargs="+", choices=("serial", "grouped"), default=["serial", "grouped"],
                        help="which schedules to time (default: both, alternating)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.workers < 1:
        parser.error(f"--rounds and --workers must be ≥ 1, got {args.rounds} and {args.workers}")
    times: dict[str, list[float]] = {"serial": [], "grouped": []}
    for round_ in range(1, args.rounds + 1):
        for name in args.schedules:
            (ROOT / "build").mkdir(exist_ok=True)
            copies = Path(tempfile.mkdtemp(prefix="nbval-second-run.", dir=ROOT / "build"))
            try:
                for notebook in NOTEBOOKS:
                    shutil.copy(notebook, copies)
                print(f"round {round_}: {name} …", flush=True)
                seconds = serial(copies) if name == "serial" else grouped(copies, args.workers)
            finally:
                shutil.rmtree(copies, ignore_errors=True)
            times[name].append(seconds)
            print(f"round {round_}: {name} {seconds:.0f} s", flush=True)
    if len(args.schedules) < 2:
        print(f"{args.schedules[0]}: " + ", ".join(f"{t:.0f} s" for t in times[args.schedules[0]]))
        return 0
    ratios = [s / g for s, g in zip(times["serial"], times["grouped"])]
    verdict = ("adopt the grouped schedule" if all(r > 1 for r in ratios)
               else "keep the serial schedule (the grouped one was not faster in every round)")
    from course_lib.perf.timing import cpu_kind  # here: its import must not set course defaults for the runs above

    lines = [f"# nbval schedules for `make test` ({cpu_kind()}, {os.cpu_count()} cores)", "",
             f"{len(NOTEBOOKS)} notebooks, each run twice (second copy from a temporary folder); "
             f"`benchmarks/nbval_schedules.py --rounds {args.rounds} --workers {args.workers}`.", "",
             "| round | serial (s) | grouped, " f"{args.workers} workers (s) | serial / grouped |",
             "|---|---|---|---|"]
    lines += [f"| {i} | {s:.0f} | {g:.0f} | {r:.2f}× |"
              for i, (s, g, r) in enumerate(zip(times["serial"], times["grouped"], ratios), 1)]
    lines += ["", f"Median ratio {statistics.median(ratios):.2f}×: {verdict}.", ""]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
