"""Small tools for lesson cells: show a real error without a traceback (MindData's too), show the installed
source of a function, time a block of code."""
import contextlib
import inspect
import subprocess
import sys
import time
from pathlib import Path

from course_lib.data.stats import pipeline_error_message
from course_lib.i18n import _
from course_lib.paths import scrub_paths


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
        raise TypeError(_("show_source: no Python source for {obj!r} ({error}). Fix: pass a function, class or "
                          "method defined in a .py file (not a builtin or a C++ operator).").format(
                              obj=obj, error=error)) from None
    if any(not isinstance(needle, str) for needle in needles):
        raise TypeError(_("show_source: needles must be non-empty strings, got {needles!r}.").format(needles=needles))
    if any(not needle for needle in needles):
        raise ValueError(_("show_source: needles must be non-empty strings, got {needles!r}.").format(needles=needles))
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
        return _("GPU plugin: none on {system}. MindSpore's wheels for {system} are CPU-only (no GPU or Ascend "
                 "plugin), and ldd, which lists a library's missing dependencies, is a Linux tool.").format(
                     system=system)
    plugins = sorted(Path(plugin_dir).glob("libmindspore_gpu.so.*"))
    if not plugins:
        return _("GPU plugin: none in {folder} (this wheel is CPU-only).").format(folder=scrub_paths(str(plugin_dir)))
    listing = subprocess.run(["ldd", str(plugins[-1])], capture_output=True, text=True, check=False).stdout
    missing = sorted(line.split()[0] for line in listing.splitlines() if "not found" in line)
    return _("GPU plugin needs, not found: {missing}").format(missing=missing)


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
        raise AssertionError(_("The block was expected to raise an error but finished without one."))


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


@contextlib.contextmanager
def show_pipeline_error(*expected: type, max_lines: int = 3):
    """Like ``course_lib.lab.lesson.show_error`` for MindData: run a block that must fail and print the part of the
    error that explains it (see ``pipeline_error_message``). Raises ``AssertionError`` if nothing failed.
    """
    expected = expected or (RuntimeError, ValueError)
    try:
        yield
    except expected as error:
        print(pipeline_error_message(error, max_lines=max_lines))
    else:
        raise AssertionError(_("The block was expected to raise an error but finished without one."))
