"""Where the course's files live, resolved from the package (never from the working directory)."""
import os
import re
import uuid
from pathlib import Path

#: The repository root (course_lib is installed editable, so the package sits inside the checkout).
PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: Embedded data sets; override with COURSE_DATA_DIR (e.g. for a non-editable install).
DATA_DIR = Path(os.environ.get("COURSE_DATA_DIR", PROJECT_ROOT / "data"))

#: Everything a lesson writes (checkpoints, MindRecord files, exported models); never committed.
OUTPUT_DIR = Path(os.environ.get("COURSE_OUTPUT_DIR", PROJECT_ROOT / "outputs"))


def lesson_dir(name: str) -> Path:
    """Return (and create) the output folder of one lesson, e.g. ``lesson_dir("03")`` -> outputs/03."""
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ValueError(f"lesson name must be a plain folder name such as '03', got {name!r}.")
    path = OUTPUT_DIR / name
    path.mkdir(parents=True, exist_ok=True)
    return path


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
        raise NotADirectoryError(f"{what} {relative(folder)} is a file, not a folder. Fix: {file_fix or fix}.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        from .locks import clean_stale_temp_files

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
        raise PermissionError(f"{what} {relative(folder)} is not writable: {error.strerror or error}. "
                              f"Fix: {fix}.") from None
    return folder
