"""Where the course's files live, resolved from the package (never from the working directory)."""
import os
import re
import sys
import tempfile
import uuid
from pathlib import Path

from course_lib.i18n import _
from course_lib.validation import check_str

#: The repository root (course_lib is installed editable, so the package sits inside the checkout).
PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: Embedded data sets; override with COURSE_DATA_DIR (e.g. for a non-editable install).
DATA_DIR = Path(os.environ.get("COURSE_DATA_DIR", PROJECT_ROOT / "data"))

#: Everything a lesson writes (checkpoints, MindRecord files, exported models); never committed.
OUTPUT_DIR = Path(os.environ.get("COURSE_OUTPUT_DIR", PROJECT_ROOT / "outputs"))


def fallback_output_dir() -> Path:
    """Where lessons write when the checkout is read-only and COURSE_OUTPUT_DIR is not set: the user's own cache
    folder for the course (``platformdirs``: ~/.cache on Linux, ~/Library/Caches on macOS,
    %LOCALAPPDATA% on Windows), used when the checkout's outputs/ cannot be written."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("mindspore-course", appauthor=False)) / "outputs"


_warned_fallback = set()


def _writable(folder: Path) -> OSError | None:
    """None when ``folder`` exists (created if needed) and a file can be written in it, else the error."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as error:
        return error
    return None


def lesson_dir(name: str) -> Path:
    """Return (and create) the output folder of one lesson, e.g. ``lesson_dir("03")`` -> outputs/03.

    In a read-only checkout (e.g. a course copied to a write-protected USB stick) the lesson writes into the
    user's cache folder instead (:func:`fallback_output_dir`), and says so once. A COURSE_OUTPUT_DIR that cannot
    be written, or a cache folder that cannot be written either, raises PermissionError naming the folder and
    the fix."""
    check_str("name", name, _("pass the lesson's number as text, e.g. lesson_dir('03')"))
    if "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(_("lesson name must be a plain folder name such as '03', got {name!r}. Fix: pass the "
                           "lesson's number, e.g. lesson_dir('03').").format(name=name))
    path = OUTPUT_DIR / name
    error = _writable(path)
    if error is None:
        return path
    reason = error.strerror or str(error)
    if os.environ.get("COURSE_OUTPUT_DIR"):
        raise PermissionError(_("The lesson's output folder {path} cannot be written ({reason}); it comes from "
                                "COURSE_OUTPUT_DIR. Fix: set COURSE_OUTPUT_DIR to a folder you can write to.").format(
            path=path, reason=reason)) from None
    fallback = fallback_output_dir() / name
    second = _writable(fallback)
    if second is not None:
        raise PermissionError(
            _("The lesson's output folder {path} cannot be written ({reason}), nor the fallback {fallback} "
              "({second}). Fix: set COURSE_OUTPUT_DIR to a folder you can write to, e.g. "
              "`export COURSE_OUTPUT_DIR=$HOME/course-outputs` before starting JupyterLab.").format(
            path=path, reason=reason, fallback=fallback, second=second.strerror or second)) from None
    if OUTPUT_DIR not in _warned_fallback:
        _warned_fallback.add(OUTPUT_DIR)
        print(_("Note: {folder} cannot be written ({reason}: a read-only copy of the course?). The lessons "
                "write into {fallback} instead. Set COURSE_OUTPUT_DIR to choose another folder.").format(
            folder=OUTPUT_DIR, reason=reason, fallback=fallback.parent), file=sys.stderr)
    return fallback


def relative(path) -> str:
    """Show ``path`` relative to the project root, so printed paths carry no machine-specific prefix."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(PROJECT_ROOT))
    except ValueError:
        return path.name


#: Folders MindSpore itself writes into when these environment variables ask it to: (what, folder variable,
#: the variable that switches the writing on, the values that switch it on).
MINDSPORE_OUTPUT_VARIABLES = (
    ("MindSpore's log folder", "GLOG_log_dir", "GLOG_logtostderr", ("0",)),
    ("MindSpore's compile cache", "MS_COMPILER_CACHE_PATH", "MS_COMPILER_CACHE_ENABLE", ("1",)),
    ("MindSpore's saved graphs", "MS_DEV_SAVE_GRAPHS_PATH", "MS_DEV_SAVE_GRAPHS", ("1", "2", "3")),
)


def mindspore_output_folders(environ=None) -> list:
    """``[(what, folder, fix)]`` for every folder the environment makes MindSpore write into."""
    environ = os.environ if environ is None else environ
    found = []
    for what, folder_key, switch_key, on in MINDSPORE_OUTPUT_VARIABLES:
        if environ.get(switch_key) in on and environ.get(folder_key):
            found.append((f"{what} ({folder_key})", Path(environ[folder_key]),
                          f"set {folder_key} to a folder you can write to, or unset {switch_key}"))
    return found


_PROBE = re.compile(r"^\.write-test\.tmp-(p\d+-)?[0-9a-f]{8}\.tmp$")


def check_output_folder(folder, what, fix, file_fix=None) -> Path:
    """Create ``folder`` and prove it is writable now (64 KiB written and synced), before any long work starts:
    a file in its place, a read-only or full disk fail here with the folder and the fix named."""
    folder = Path(folder).expanduser()
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(_("{what} {folder} is a file, not a folder. Fix: {fix}.").format(
            what=what, folder=relative(folder), fix=(file_fix or fix).rstrip(".")))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        from course_lib.locks import clean_stale_temp_files

        clean_stale_temp_files(folder, _PROBE)  # probes of killed runs (only those whose process is gone)
        probe = folder / f".write-test.tmp-p{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
        try:
            with open(probe, "wb") as handle:
                handle.write(b"\0" * 65536)
                handle.flush()
                os.fsync(handle.fileno())
        finally:
            if probe.exists():
                probe.unlink()
    except OSError as error:
        raise PermissionError(_("{what} {folder} is not writable: {reason}. Fix: {fix}.").format(
            what=what, folder=relative(folder), reason=error.strerror or error, fix=fix.rstrip("."))) from None
    return folder


_PATH_PREFIX = re.compile(r"(/[^\s'\"]*?/)(site-packages|dist-packages)/")
# Any absolute path with at least two components (a clone may live anywhere: /home, /check, /builds, ...).
_HOME_PATH = re.compile(r"(?<![\w.~:/])/[\w.+@-]+/[^\s'\"]*")


_PLAIN_PATH = re.compile(r"[\w.+@/-]*")


def _odd_roots() -> list:
    """(root, stand-in) for this machine's site-packages and course folders whose paths the regexes below cannot
    read (a space or a non-ASCII character: "/home/Li Wei/课程"); longest first."""
    import site
    import sysconfig

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
