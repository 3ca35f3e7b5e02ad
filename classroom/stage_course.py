"""Copy what the container image needs from a checkout into the image's course folder (classroom/Containerfile).

    python classroom/stage_course.py SRC DEST --edition student|full

student: the library, data, docs, recipes, scripts and the student edition of the notebooks (solution cells and
outputs removed, tools/make_editions.py), into DEST/edition/; no solutions/, tests/ or executed notebooks.
full: the whole checkout (but .git, .venv, build/, outputs/), with DEST/edition/ = the executed notebooks.
"""
import argparse
import shutil
import subprocess
import sys
from pathlib import Path

SHARED = ["course_lib", "data", "docs", "recipes", "scripts", "classroom", "pyproject.toml", "README.md",
          "README.zh-CN.md", "LICENSE", "NOTICE", "requirements.txt", "requirements-torch.txt",
          "requirements-fast-conv.txt", "constraints.txt"]
NEVER = {".git", ".venv", "build", "outputs", "wheelhouse", "progress", "__pycache__", ".pytest_cache"}


def _copy(src: Path, dest: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*NEVER), dirs_exist_ok=True)
    elif src.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--edition", choices=("student", "full"), default="student")
    args = parser.parse_args(argv)
    src, dest = args.src.resolve(), args.dest
    if dest.exists() and any(dest.iterdir()):
        parser.error(f"{dest} is not empty: stage into a fresh folder")
    if args.edition == "full":
        for item in src.iterdir():
            if item.name not in NEVER:
                _copy(item, dest / item.name)
        _copy(src / "notebooks", dest / "edition")
    else:
        for name in SHARED:
            _copy(src / name, dest / name)
        # The student edition straight into the image's folder (tools/make_editions.py, never into build/).
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import make_editions; "
                "make_editions.build('student', __import__('pathlib').Path(sys.argv[2]))")
        subprocess.run([sys.executable, "-c", code, str(src / "tools"), str(dest / "edition")], check=True, cwd=src)
        if not (dest / "edition" / "00_environment.ipynb").is_file():
            raise SystemExit(f"stage_course: the student edition has no 00_environment.ipynb in {dest / 'edition'}")
        for leftover in ("solutions", "tests"):
            if (dest / leftover).exists():
                raise SystemExit(f"stage_course: the student image must not contain {leftover}/")
    print(f"staged the {args.edition} edition in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
