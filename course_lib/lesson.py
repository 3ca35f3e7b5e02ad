"""Small tools for lesson cells: show a real error without a traceback, time a block of code."""
import contextlib
import inspect
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

_PATH_PREFIX = re.compile(r"(/[^\s'\"]*?/)(site-packages|dist-packages)/")
# Any absolute path with at least two components (a clone may live anywhere: /home, /check, /builds, ...).
_HOME_PATH = re.compile(r"(?<![\w.~:/])/[\w.+@-]+/[^\s'\"]*")


_PLAIN_PATH = re.compile(r"[\w.+@/-]*")


def _odd_roots() -> list:
    """(root, stand-in) for this machine's site-packages and course folders whose paths the regexes below cannot
    read (a space or a non-ASCII character: "/home/Li Wei/课程"); longest first."""
    import site
    import sysconfig

    from course_lib.paths import PROJECT_ROOT

    packages = {*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots = [(p.rstrip("/") + "/", "") for p in packages]  # a package path keeps its package part
    roots.append((str(PROJECT_ROOT).rstrip("/") + "/", "/course/"))
    return sorted(((r, s) for r, s in roots if not _PLAIN_PATH.fullmatch(r) or not r.isascii()),
                  key=lambda pair: -len(pair[0]))


def scrub_paths(text: str) -> str:
    """Drop machine-specific prefixes from ``text`` (site-packages paths keep the package part), also where the
    clone's path has spaces or Chinese characters."""
    for root, stand_in in _odd_roots():
        text = text.replace(root, stand_in)
    text = _PATH_PREFIX.sub("", text)
    return _HOME_PATH.sub(lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def error_summary(error: BaseException, max_lines: int = 4) -> str:
    """``"TypeName: first lines of the message"`` with MindSpore's C++ stack and local paths removed."""
    message = str(error)
    lines = []
    for line in message.splitlines():
        if "C++ Call Stack" in line or "The Traceback of Net Construct" in line:
            break
        stripped = line.strip()
        # MindSpore frames its messages with "-----" rules and "- Section:" headings; keep only the text.
        if not stripped or set(stripped) <= {"-"} or (stripped.startswith("- ") and stripped.endswith(":")):
            continue
        lines.append(scrub_paths(line.rstrip()))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["…"]
    return f"{type(error).__name__}: " + "\n    ".join(lines)


def _source_label(path: str) -> str:
    """``mindspore/nn/wrap/cell_wrapper.py`` or ``course_lib/models/resnet.py``: the path from the package root."""
    parts = Path(path).parts
    for package in ("mindspore", "course_lib"):
        if package in parts:
            index = len(parts) - 1 - parts[::-1].index(package)
            return "/".join(parts[index:])
    return Path(path).name


def show_source(obj, *needles: str) -> None:
    """Print ``obj``'s source (a function, class or method): all of it, or only the lines holding one of ``needles``.

    The installed code is the reference, d2l-style: a lesson prints the library's own source instead of keeping a
    second copy. Each line carries its line number in the file, and the header names the file from its package root.
    """
    obj = inspect.unwrap(obj)  # some MindSpore functions carry a decorator
    try:
        lines, first = inspect.getsourcelines(obj)
        source_file = inspect.getsourcefile(obj)
    except (TypeError, OSError) as error:
        raise TypeError(f"show_source: no Python source for {obj!r} ({error}). Fix: pass a function, class or method "
                        "defined in a .py file (not a builtin or a C++ operator).") from None
    if any(not isinstance(needle, str) or not needle for needle in needles):
        raise TypeError(f"show_source: needles must be non-empty strings, got {needles!r}.")
    print(f"{_source_label(source_file)} ({obj.__qualname__})")
    for number, line in enumerate(lines, start=first):
        if not needles or any(needle in line for needle in needles):
            print(f"{number:5d} | {line.rstrip()}")


def gpu_plugin_needs(plugin_dir) -> str:
    """One line for lesson 00: the CUDA libraries MindSpore's GPU plugin needs and this machine lacks.

    Linux: ``ldd`` on the newest ``libmindspore_gpu.so.*`` lists them ("not found"). macOS and Windows: MindSpore
    publishes CPU-only wheels there (no GPU or Ascend plugin), and ``ldd`` is a Linux tool, so the line says that
    instead of failing.
    """
    if not sys.platform.startswith("linux"):
        system = {"darwin": "macOS", "win32": "Windows"}.get(sys.platform, sys.platform)
        return (f"GPU plugin: none on {system}. MindSpore's wheels for {system} are CPU-only (no GPU or Ascend "
                f"plugin), and ldd, which lists a library's missing dependencies, is a Linux tool.")
    plugins = sorted(Path(plugin_dir).glob("libmindspore_gpu.so.*"))
    if not plugins:
        return f"GPU plugin: none in {scrub_paths(str(plugin_dir))} (this wheel is CPU-only)."
    listing = subprocess.run(["ldd", str(plugins[-1])], capture_output=True, text=True, check=False).stdout
    missing = sorted(line.split()[0] for line in listing.splitlines() if "not found" in line)
    return f"GPU plugin needs, not found: {missing}"


@contextlib.contextmanager
def show_error(*expected: type, max_lines: int = 4):
    """Run a block that is *meant* to fail and print the error it raised, without a traceback.

    ``expected`` restricts which exception types are caught (default: any ``Exception``); a block that
    does not fail raises ``AssertionError``, so a lesson never claims an error that did not happen.
    """
    expected = expected or (Exception,)
    try:
        yield
    except expected as error:  # noqa: PERF203 - the point is to catch it
        print(error_summary(error, max_lines=max_lines))
    else:
        raise AssertionError("The block was expected to raise an error but finished without one.")


class Timer:
    """``with Timer() as t: ...`` then ``t.seconds``; also prints ``label: 1.23 s`` if a label is given."""

    def __init__(self, label: str | None = None):
        self.label = label
        self.seconds = float("nan")

    def __enter__(self):
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._start
        if self.label is not None and exc[0] is None:
            print(f"{self.label}: {self.seconds:.2f} s")
        return False


#: Where `make bench-notebooks` writes every lesson's measured run time (the one source lessons quote).
BENCHMARK_RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results.json"


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


def run_seconds(notebook: str, results_path=None) -> float | None:
    """A lesson's run time in seconds as `make bench-notebooks` last measured it (benchmarks/results.json), or None."""
    if not isinstance(notebook, str) or not notebook or "/" in notebook:
        raise ValueError(f"notebook must be a notebook's file stem such as '03_model_train_eval', got {notebook!r}.")
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
    if not isinstance(notebook, str) or not notebook or "/" in notebook:
        raise ValueError(f"notebook must be a notebook's file stem such as '03_model_train_eval', got {notebook!r}.")
    stem = notebook.removesuffix(".ipynb")
    record = _last_record(stem, results_path)
    if record is None:
        return f"Run time of {stem}: not measured yet (run `make bench-notebooks`)."
    where = f" on {record['cpu']}" if record.get("cpu") else ""
    return (f"Run time of {stem}: about {math.ceil(float(record['seconds']))} s{where} "
            f"(measured by `make bench-notebooks`; yours may differ).")
