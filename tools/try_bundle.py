"""Install a learner bundle as a learner would, offline, and run lesson 00 from it.

    python tools/try_bundle.py build/bundles/course-student-linux-x86_64-py3.11.tar.gz \
        --python ~/.pyenv/versions/3.11.7/bin/python

Unpacks the archive into a new temporary folder (its path has a space and Chinese characters), creates a venv with
the given Python, installs with ``pip install --no-index --find-links wheelhouse`` exactly as the bundle's README
says, imports mindspore, then runs the bundle's ``notebooks/00_environment.ipynb`` with ``pytest --nbval-lax``.
``--no-index`` keeps pip off the network; as root on Linux, ``--offline`` (the default there) runs every step in a
network namespace with only loopback up (``unshare -n``), so nothing can reach the network at all.
Only for the machine it runs on: a Linux bundle on Linux, and so on.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path


def _offline_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if sys.platform.startswith("linux") and unshare and os.geteuid() == 0:
        return [unshare, "-n", "--", "sh", "-c", 'ip link set lo up 2>/dev/null; exec "$@"', "offline"]
    return []


def run(command: list, cwd: Path, offline: list, log) -> None:
    log(f"$ {' '.join(str(c) for c in command)}")
    result = subprocess.run([*offline, *map(str, command)], cwd=cwd, capture_output=True, text=True)
    out = (result.stdout + result.stderr).strip().splitlines()
    for line in out[-12:]:
        log(f"  {line}")
    if result.returncode:
        raise SystemExit(f"failed (exit {result.returncode}): {' '.join(map(str, command))}")


def unpack(archive: Path, into: Path) -> Path:
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            # S202: the bundle tools/make_bundles.py just built; no filter= before 3.11.4.
            bundle.extractall(into)  # noqa: S202
    else:
        with tarfile.open(archive, "r:gz") as bundle:
            bundle.extractall(into, filter="data")
    (folder,) = [p for p in into.iterdir() if p.is_dir()]
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path)
    parser.add_argument("--python", default=sys.executable, help="the Python to create the venv with")
    parser.add_argument("--keep", action="store_true", help="keep the unpacked folder")
    parser.add_argument("--online", action="store_true", help="no network namespace (pip still uses --no-index)")
    args = parser.parse_args(argv)
    offline = [] if args.online else _offline_prefix()
    log = print
    log(f"network: {'none (unshare -n, loopback only)' if offline else 'not isolated; pip uses --no-index'}")
    tmp = Path(tempfile.mkdtemp(prefix="bundle try 课程 "))
    try:
        folder = unpack(args.archive, tmp)
        log(f"unpacked {args.archive.name} into {folder}")
        venv_python = folder / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        run([args.python, "-m", "venv", ".venv"], folder, offline, log)
        pip = [venv_python, "-m", "pip", "install", "--disable-pip-version-check", "--no-index",
               "--find-links", "wheelhouse"]
        run([*pip, "-r", "requirements.txt", "-c", "constraints.txt"], folder, offline, log)
        run([*pip, "--no-deps", "-e", "."], folder, offline, log)
        run([venv_python, "-c", "import course_lib, mindspore; print('mindspore', mindspore.__version__)"],
            folder, offline, log)
        run([venv_python, "-m", "pytest", "-p", "no:cacheprovider", "--nbval-lax", "-q",
             "notebooks/00_environment.ipynb"], folder, offline, log)
        log("bundle ok: installed offline from its wheelhouse and ran lesson 00")
        return 0
    finally:
        if args.keep:
            log(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
