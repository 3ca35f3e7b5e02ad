"""Where the course's files live, resolved from the package (never from the working directory)."""
import os
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
