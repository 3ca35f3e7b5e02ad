"""Print the notebooks `make check` must re-run: those changed against a git base (default ``main``).

Every notebook is printed when something they all depend on changed: course_lib, the data, the pins, the nbval
settings. Uncommitted and untracked files count as changed. Usage: python tools/changed_notebooks.py [BASE]
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A change under any of these can change every notebook's outputs.
SHARED = ("course_lib/", "data/", "course.py", "tools/course_cli.py",
          "requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt", "constraints.txt",
          "pyproject.toml",
          "nbval_sanitize.cfg", "Makefile")


def git(*args: str, root: Path = ROOT) -> list[str]:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {result.stderr.strip()}. "
                         f"Fix: run inside the course's git clone, with a branch or commit named {args[-1]!r}.")
    return [line for line in result.stdout.splitlines() if line]


def changed_notebooks(base: str = "main", root: Path = ROOT) -> list[str]:
    changed = (set(git("diff", "--name-only", base, root=root))
               | set(git("ls-files", "--others", "--exclude-standard", root=root)))
    notebooks = sorted(str(path.relative_to(root)) for path in (root / "notebooks").glob("*.ipynb"))
    if any(name.startswith(SHARED) for name in changed):
        return notebooks
    return [name for name in notebooks if name in changed]


if __name__ == "__main__":
    print(" ".join(changed_notebooks(*sys.argv[1:2])))
