# SPDX-License-Identifier: Apache-2.0
"""Run every recipe as its own script, with course_lib made unimportable, and print each one's run time.

Usage: `python recipes/run_all.py [NAME ...] [--markdown FILE]`. Each recipe runs with this interpreter, from a
fresh temporary working directory, with a `sitecustomize` on PYTHONPATH that puts an import blocker first in
`sys.meta_path`: any `import course_lib` (also in msrun's worker processes, which inherit PYTHONPATH) raises
ImportError. The exit code is 1 if any recipe failed. tests/test_recipes.py uses the same functions.
Standard library only.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECIPES_DIR = Path(__file__).resolve().parent
NOT_RECIPES = {"run_all.py", "mutation_score.py"}

BLOCKER = '''\
import sys


class _BlockCourseLib:
    """Recipes must run without course_lib: importing it fails."""

    def find_spec(self, name, path=None, target=None):
        if name == "course_lib" or name.startswith("course_lib."):
            raise ImportError(f"recipes must not import course_lib (tried to import {name!r})")
        return None


sys.meta_path.insert(0, _BlockCourseLib())
'''


def recipe_paths(names=()):
    """All recipe scripts (or the named ones), sorted by name."""
    paths = sorted(p for p in RECIPES_DIR.glob("*.py") if p.name not in NOT_RECIPES)
    if names:
        wanted = {n if n.endswith(".py") else n + ".py" for n in names}
        unknown = wanted - {p.name for p in paths}
        if unknown:
            raise SystemExit(f"unknown recipe(s) {sorted(unknown)}; recipes: {[p.stem for p in paths]}")
        paths = [p for p in paths if p.name in wanted]
    return paths


def run_recipe(path, timeout=300, args=(), env_extra=None, python_flags=()):
    """Run one recipe without course_lib; return (returncode, seconds, stdout, stderr).
    args: the recipe's own arguments; env_extra: variables to add (e.g. a leftover MS_ROLE); python_flags: e.g. -O."""
    work = Path(tempfile.mkdtemp(prefix=f"recipe-{path.stem}-"))
    try:
        blocker_dir = work / "_blocker"
        blocker_dir.mkdir()
        (blocker_dir / "sitecustomize.py").write_text(BLOCKER)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocker_dir), env.get("PYTHONPATH", "")]))
        env.update(env_extra or {})
        run_dir = work / "cwd"
        run_dir.mkdir()
        start = time.perf_counter()
        try:
            command = [sys.executable, *python_flags, str(path), *args]
            done = subprocess.run(command, cwd=run_dir, env=env, capture_output=True,
                                  text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            code, stdout, stderr = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as error:
            code, stdout = -1, _text(error.stdout)
            stderr = f"{_text(error.stderr)}\nTIMEOUT: killed after {timeout} s"
        return code, time.perf_counter() - start, stdout, stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _text(data):
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def markdown_table(rows):
    """rows: [(name, seconds, ok)] -> a Markdown table."""
    lines = ["| recipe | run time (s) | result |", "|---|---:|---|"]
    lines += [f"| {name} | {seconds:.1f} | {'ok' if ok else 'FAILED'} |" for name, seconds, ok in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="recipe names (default: all)")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.markdown:  # check the output folder now, not after the whole run
        folder = Path(args.markdown).resolve().parent
        if not folder.is_dir():
            parser.error(f"--markdown {args.markdown}: folder {folder} does not exist. Fix: create it first")
        if not os.access(folder, os.W_OK):
            parser.error(f"--markdown {args.markdown}: folder {folder} is not writable")
        if Path(args.markdown).is_dir():
            parser.error(f"--markdown {args.markdown} is a folder; give a file name")
    rows = []
    for path in recipe_paths(args.names):
        code, seconds, stdout, stderr = run_recipe(path)
        ok = code == 0
        rows.append((path.stem, seconds, ok))
        last = stdout.strip().splitlines()[-1] if stdout.strip() else "(no output)"
        print(f"{'ok    ' if ok else 'FAILED'} {seconds:6.1f} s  {path.stem}: {last[:150]}", flush=True)
        if not ok:
            print(stdout[-1500:] + "\n" + stderr[-3000:], flush=True)
    table = markdown_table(rows)
    print("\n" + table)
    if args.markdown:
        temp = Path(f"{args.markdown}.tmp-{os.getpid()}")
        temp.write_text(table + "\n", encoding="utf-8")
        os.replace(temp, args.markdown)  # atomic: the old table or the new one, never half
    return 0 if all(ok for _, _, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
