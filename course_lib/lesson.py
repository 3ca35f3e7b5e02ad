"""Small tools for lesson cells: show a real error without a traceback, time a block of code."""
import contextlib
import re
import time

_PATH_PREFIX = re.compile(r"(/[^\s'\"]*?/)(site-packages|dist-packages)/")
# Any absolute path with at least two components (a clone may live anywhere: /home, /check, /builds, ...).
_HOME_PATH = re.compile(r"(?<![\w.~:/])/[\w.+@-]+/[^\s'\"]*")


def scrub_paths(text: str) -> str:
    """Drop machine-specific prefixes from ``text`` (site-packages paths keep the package part)."""
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
