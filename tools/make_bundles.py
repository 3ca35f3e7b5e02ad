"""One archive per learner platform: the student edition, a wheelhouse for that platform, the pre-flight check and
a README for learners of that platform.

    python tools/make_bundles.py --platform linux-x86_64 --platform windows-amd64 [--python 3.11] [--with-torch]
    python tools/make_bundles.py --all                  # the five platforms below
    python tools/make_bundles.py --check build/bundles/course-student-macos-arm64-py3.11.zip

Each archive (``build/bundles/course-student-<platform>-py<version>.zip`` or ``.tar.gz``) holds one folder:
the course without solutions/ or tests/, its notebooks/ being the student edition (tools/make_editions.py), a
``wheelhouse/`` made by ``pip download --platform ... --python-version ... --only-binary=:all:`` from
requirements.txt (+ requirements-torch.txt with ``--with-torch``) and constraints.txt, and a README.md written for
that platform (plain ``python -m venv`` + ``pip install --no-index --find-links wheelhouse``).

pip evaluates environment markers for the machine it runs on, not for ``--platform``/``--python-version``. So the
pins are evaluated here with ``packaging.markers`` for the target, and written marker-free for pip; then the
wheelhouse is checked for the target (:func:`check_wheels`): every pinned package has a wheel of the pinned
version that the target can install, and every dependency of every wheel (their ``Requires-Dist``, markers
evaluated for the target) has one too. A missing one (e.g. ``pywinpty``, which Jupyter needs only on Windows and
pip skips on Linux) is downloaded with ``--no-deps`` at its pinned version, and the check runs again.
"""
from __future__ import annotations

import argparse
import email.parser
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.tags import compatible_tags, cpython_tags, mac_platforms
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.10", "3.11", "3.12")
DEFAULT_PYTHON = "3.11"
#: A bundle serves every patch release of its Python: a pin may change within one (constraints.txt has
#: ``soupsieve==2.10; python_full_version < "3.11.5"``), so the pins are evaluated, downloaded and checked for the
#: first patch release and for a newest one (``.99``); the wheelhouse holds both versions where they differ.
PATCHES = ("0", "99")
#: Built by pip when a learner installs course_lib itself (pyproject.toml's build-system); pinned in constraints.txt.
BUILD_REQUIREMENTS = ("setuptools",)
PREFLIGHT = "tools/preflight.py"


def _manylinux(arch: str) -> list[str]:
    """manylinux_2_28 and every older tag (glibc 2.28: Debian 10, Ubuntu 20.04 and later)."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(28, 16, -1)]
    return tags + [f"manylinux2014_{arch}"] + ([f"manylinux2010_{arch}", f"manylinux1_{arch}"]
                                               if arch == "x86_64" else [])


@dataclass(frozen=True)
class Platform:
    name: str
    label: str
    pip_platforms: tuple
    markers: dict
    archive: str  # "zip" or "tar.gz"
    os: str  # "linux", "macos", "windows": which commands the README shows


PLATFORMS = {p.name: p for p in (
    Platform("linux-x86_64", "Linux x86-64", tuple(_manylinux("x86_64")),
             {"sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux", "os_name": "posix"},
             "tar.gz", "linux"),
    Platform("linux-aarch64", "Linux aarch64 (ARM64)", tuple(_manylinux("aarch64")),
             {"sys_platform": "linux", "platform_machine": "aarch64", "platform_system": "Linux",
              "os_name": "posix"}, "tar.gz", "linux"),
    Platform("macos-arm64", "macOS on Apple silicon (arm64, macOS 12 or newer)",
             tuple(mac_platforms((12, 0), "arm64")),
             {"sys_platform": "darwin", "platform_machine": "arm64", "platform_system": "Darwin", "os_name": "posix"},
             "zip", "macos"),
    Platform("macos-x86_64", "macOS on Intel (x86-64, macOS 11 or newer)", tuple(mac_platforms((11, 0), "x86_64")),
             {"sys_platform": "darwin", "platform_machine": "x86_64", "platform_system": "Darwin",
              "os_name": "posix"}, "zip", "macos"),
    Platform("windows-amd64", "Windows (64-bit, x86-64)", ("win_amd64",),
             {"sys_platform": "win32", "platform_machine": "AMD64", "platform_system": "Windows", "os_name": "nt"},
             "zip", "windows"),
)}


def platform_of(name: str) -> Platform:
    if name not in PLATFORMS:
        raise SystemExit(f"unknown platform {name!r}. Fix: use one of {', '.join(PLATFORMS)}.")
    return PLATFORMS[name]


def check_python(python: str) -> str:
    if python not in PYTHONS:
        raise SystemExit(f"unsupported Python {python!r}. Fix: use one of {', '.join(PYTHONS)}.")
    return python


def marker_env(platform: Platform, python: str, patch: str = "0") -> dict:
    return {**platform.markers, "python_version": python, "python_full_version": f"{python}.{patch}",
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def wheel_tags(platform: Platform, python: str) -> set:
    """Every wheel tag a CPython ``python`` on ``platform`` installs (packaging.tags, as pip computes them)."""
    version = tuple(int(part) for part in python.split("."))
    platforms = list(platform.pip_platforms)
    return {str(tag) for tag in (*cpython_tags(version, platforms=platforms),
                                 *compatible_tags(version, f"cp{version[0]}{version[1]}", platforms))}


def read_pins(path: Path, env: dict) -> dict:
    """``name -> Requirement`` of the lines of a requirements/constraints file whose markers hold in ``env``."""
    pins = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        try:
            requirement = Requirement(line)
        except ValueError as error:
            raise SystemExit(f"{path}:{number}: cannot read {line!r} ({error}). "
                             "Fix: write NAME==VERSION[; marker].") from None
        if requirement.marker is None or requirement.marker.evaluate(env):
            pins[canonicalize_name(requirement.name)] = requirement
    return pins


def _pinned_version(requirement: Requirement) -> str | None:
    specs = list(requirement.specifier)
    return specs[0].version if len(specs) == 1 and specs[0].operator == "==" else None


# ------------------------------------------------------------------------------------------- the check
@dataclass
class Wheel:
    filename: str
    name: str
    version: str
    tags: frozenset
    requires: tuple  # Requires-Dist lines


def wheel_info(filename: str, metadata: str | None) -> Wheel:
    name, version, _, tags = parse_wheel_filename(filename)
    requires = ()
    if metadata is not None:
        requires = tuple(email.parser.Parser().parsestr(metadata, headersonly=True).get_all("Requires-Dist") or ())
    return Wheel(filename, canonicalize_name(name), str(version), frozenset(str(t) for t in tags), requires)


def _metadata_of(wheel_bytes: bytes) -> str | None:
    with zipfile.ZipFile(io.BytesIO(wheel_bytes)) as wheel:
        for member in wheel.namelist():
            if re.fullmatch(r"[^/]+\.dist-info/METADATA", member):
                return wheel.read(member).decode("utf-8", "replace")
    return None


def wheels_in_folder(folder: Path) -> list[Wheel]:
    return [wheel_info(path.name, _metadata_of(path.read_bytes())) for path in sorted(Path(folder).glob("*.whl"))]


def wheels_in_archive(archive: Path) -> list[Wheel]:
    """The wheels of an archive's ``wheelhouse/`` folder, with their metadata read from inside the archive."""
    archive, found = Path(archive), []
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            for member in bundle.namelist():
                if "/wheelhouse/" in member and member.endswith(".whl"):
                    found.append(wheel_info(member.rsplit("/", 1)[1], _metadata_of(bundle.read(member))))
    elif archive.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive, "r:gz") as bundle:
            for member in bundle:
                if member.isfile() and "/wheelhouse/" in member.name and member.name.endswith(".whl"):
                    data = bundle.extractfile(member).read()
                    found.append(wheel_info(member.name.rsplit("/", 1)[1], _metadata_of(data)))
    else:
        raise SystemExit(f"{archive}: not a .zip or .tar.gz bundle. Fix: pass an archive made by make_bundles.py.")
    return found


def check_wheels(wheels: list[Wheel], platform: Platform, python: str, requirement_files: list[Path],
                 constraints: Path) -> list[str]:
    """What the target cannot install from ``wheels`` (empty = everything is there), for every patch release.

    Starting from the pinned requirements (markers evaluated for the target), every package needs a wheel whose
    tags the target accepts, at the version constraints.txt pins; and so does every dependency its metadata
    names (markers, extras included, evaluated for the target)."""
    problems = {}
    for patch in PATCHES:  # one line per problem, naming the first patch release that has it
        for problem in _check_wheels(wheels, platform, python, requirement_files, constraints, patch):
            problems.setdefault(problem.split(" (")[0], problem)
    return list(problems.values())


def _check_wheels(wheels, platform, python, requirement_files, constraints, patch) -> list[str]:
    env, accepted = marker_env(platform, python, patch), wheel_tags(platform, python)
    pins = read_pins(constraints, env)
    usable = {}
    problems = []
    for wheel in wheels:
        if not wheel.tags & accepted:
            problems.append(f"{wheel.filename}: not installable on {platform.name} with Python {python}")
        else:
            usable.setdefault(wheel.name, []).append(wheel)
    todo = []
    for path in requirement_files:
        todo += [(requirement, "") for requirement in read_pins(path, env).values()]
    todo += [(Requirement(name), "") for name in BUILD_REQUIREMENTS]
    seen = set()
    while todo:
        requirement, extra = todo.pop()
        name = canonicalize_name(requirement.name)
        if requirement.marker is not None and not requirement.marker.evaluate({**env, "extra": extra}):
            continue
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        wanted = _pinned_version(pins[name]) if name in pins else None
        candidates = [w for w in usable.get(name, []) if requirement.specifier.contains(w.version, prereleases=True)
                      and (wanted is None or w.version == wanted)]
        if not candidates:
            need = f"=={wanted}" if wanted else str(requirement.specifier)
            problems.append(f"missing: {name}{need} (no wheel for {platform.name}, Python {python}.{patch})")
            continue
        for line in candidates[0].requires:
            dependency = Requirement(line)
            for wanted_extra in ("", *requirement.extras):
                todo.append((dependency, wanted_extra))
    return problems


def check_archive(archive: Path, platform: Platform, python: str, with_torch: bool = False) -> list[str]:
    """:func:`check_wheels` on the wheelhouse inside an archive, against the pins the archive carries."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        names = ["requirements.txt", "constraints.txt"] + (["requirements-torch.txt"] if with_torch else [])
        for name in names:
            (tmp / name).write_text(_read_member(archive, name), encoding="utf-8")
        return check_wheels(wheels_in_archive(archive), platform, python,
                            [tmp / n for n in names if n != "constraints.txt"], tmp / "constraints.txt")


def _read_member(archive: Path, name: str) -> str:
    archive = Path(archive)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            member = next((m for m in bundle.namelist() if m.count("/") == 1 and m.endswith("/" + name)), None)
            if member:
                return bundle.read(member).decode("utf-8")
    else:
        with tarfile.open(archive, "r:gz") as bundle:
            member = next((m for m in bundle.getmembers() if m.name.count("/") == 1 and
                           m.name.endswith("/" + name)), None)
            if member:
                return bundle.extractfile(member).read().decode("utf-8")
    raise SystemExit(f"{archive}: has no top-level {name}. Fix: rebuild it with tools/make_bundles.py.")


# ------------------------------------------------------------------------------------------- building
def _marker_free(pins: dict) -> str:
    return "".join(f"{requirement.name}{requirement.specifier}\n" for requirement in pins.values())


def _pip(*args: str, report=print) -> None:
    command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
               *args]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        tail = "\n".join(line for line in result.stderr.splitlines() if not line.startswith("WARNING: Location"))
        raise SystemExit(f"pip download failed ({' '.join(args[-6:])}):\n{tail[-3000:]}\n"
                         "Fix: check the pins and that the package index is reachable.")


def download(platform: Platform, python: str, dest: Path, with_torch: bool = False, report=print) -> Path:
    """Fill ``dest`` with the wheels ``platform`` needs (kept between runs: pip skips files already there)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    files = [ROOT / "requirements.txt"] + ([ROOT / "requirements-torch.txt"] if with_torch else [])
    for patch in PATCHES:
        _download(platform, python, patch, dest, files, report)
    problems = check_wheels(wheels_in_folder(dest), platform, python, files, ROOT / "constraints.txt")
    if problems:
        raise SystemExit(f"{platform.name}: the wheelhouse is incomplete:\n  " + "\n  ".join(problems))
    return dest


def _download(platform: Platform, python: str, patch: str, dest: Path, files: list, report) -> None:
    env = marker_env(platform, python, patch)
    target = ["--python-version", f"{python}.{patch}", "--implementation", "cp",
              "--abi", f"cp{python.replace('.', '')}", "--abi", "abi3", "--abi", "none"]
    for tag in platform.pip_platforms:
        target += ["--platform", tag]
    pins = read_pins(ROOT / "constraints.txt", env)
    with tempfile.TemporaryDirectory() as tmp:
        requirements, constraints = Path(tmp) / "requirements.txt", Path(tmp) / "constraints.txt"
        wanted = {}
        for path in files:
            wanted.update(read_pins(path, env))
        for name in BUILD_REQUIREMENTS:
            wanted.setdefault(name, pins.get(name, Requirement(name)))
        requirements.write_text(_marker_free(wanted), encoding="utf-8")
        constraints.write_text(_marker_free(pins), encoding="utf-8")
        report(f"{platform.name}, Python {python}.{patch}: pip download ({len(wanted)} requirements) -> {dest}")
        _pip("-d", str(dest), *target, "-r", str(requirements), "-c", str(constraints), report=report)
        for _ in range(5):  # pip skips dependencies whose markers fail on *this* machine: fetch them one by one
            missing = sorted({line.split()[1] for line in _check_wheels(
                wheels_in_folder(dest), platform, python, files, ROOT / "constraints.txt", patch)
                if line.startswith("missing: ")})
            if not missing:
                return
            report(f"{platform.name}: adding {', '.join(missing)} (needed there, skipped by pip here)")
            _pip("-d", str(dest), *target, "--no-deps", *missing, report=report)


def learner_readme(platform: Platform, python: str, folder: str, with_torch: bool = False) -> str:
    """The README.md of a bundle: install from the bundled wheels, check, open the lab; for that OS only."""
    if platform.os == "windows":
        py, venv_py, shell = f"py -{python}", r".venv\Scripts\python", "PowerShell or Command Prompt"
        get_python = f"Install Python {python} from python.org (tick \"Add python.exe to PATH\")."
        unpack = f"Right-click the .zip file, choose \"Extract All\", and open the folder `{folder}`."
    else:
        py, venv_py, shell = f"python{python}", ".venv/bin/python", "a terminal"
        get_python = (f"Install Python {python} from python.org, or with Homebrew: `brew install python@{python}`."
                      if platform.os == "macos" else
                      f"Install Python {python} with its venv module (Debian/Ubuntu: `sudo apt install "
                      f"python{python} python{python}-venv`, or `pyenv install {python}`).")
        unpack = (f"Double-click the .zip file and open the folder `{folder}` in {shell}." if platform.os == "macos"
                  else f"`tar -xzf {folder}.tar.gz && cd {folder}`")
    torch = " -r requirements-torch.txt" if with_torch else ""
    # The pre-flight check (engineer frontdoor's tools/preflight.py); until it is in the course, MindSpore's own.
    preflight = (f"{venv_py} {PREFLIGHT}" if (ROOT / PREFLIGHT).is_file() else
                 f"{venv_py} -c \"import mindspore; mindspore.set_device('CPU'); mindspore.run_check()\"")
    return f"""# MindSpore, from training loop to inference: your course folder

This folder is for **{platform.label}** with **Python {python}**. It holds the lessons (`notebooks/`, in
Chinese in `notebooks/zh/`), the course library (`course_lib/`), the data (`data/`) and every package the
course needs (`wheelhouse/`). You need no internet connection.

## 1. Get Python {python}

{get_python}

## 2. Unpack the folder

{unpack}

## 3. Install (once, about 5 minutes, offline)

Type these commands in {shell}, inside the folder:

```
{py} -m venv .venv
{venv_py} -m pip install --no-index --find-links wheelhouse -r requirements.txt{torch} -c constraints.txt
{venv_py} -m pip install --no-index --find-links wheelhouse --no-deps -e .
```

`--no-index --find-links wheelhouse` means: install only from the files in `wheelhouse/`, never from the
internet. If pip says a package is missing, you have the bundle for another computer: ask your instructor.

## 4. Check your set-up

```
{preflight}
```

It checks Python, MindSpore, disk, memory and a short training step. Each line says PASS or FAIL; a FAIL
line says what to do. Tell your instructor if one still fails.

## 5. Open the lessons

```
{venv_py} -m jupyterlab notebooks
```

JupyterLab opens in your browser. Start with `00_environment.ipynb`. Each lesson ends with exercises:
`check("00.1", answer)` tells you if your answer is right, or gives a hint.
The Chinese lessons are in `notebooks/zh/`.

Your work stays in this folder. Save often (Ctrl+S, or Cmd+S on a Mac).
"""


def write_platform_bundle(folder: Path, platform: Platform, python: str, wheelhouse: Path,
                          with_torch: bool = False) -> None:
    """The bundle's files in ``folder``: student course, wheelhouse, README for the platform."""
    sys.path.insert(0, str(ROOT / "tools"))
    import make_editions
    make_editions.write_bundle(folder, wheelhouse=False)
    for instructor_only in ("docs/facilitator",):
        shutil.rmtree(folder / instructor_only, ignore_errors=True)
    (folder / "README.zh-CN.md").unlink(missing_ok=True)  # describes the developer's repository (make test, ...)
    shutil.copytree(wheelhouse, folder / "wheelhouse")
    (folder / "README.md").write_text(learner_readme(platform, python, folder.name, with_torch), encoding="utf-8")


def archive_name(platform: Platform, python: str) -> str:
    return f"course-student-{platform.name}-py{python}"


def make_archive(folder: Path, archive: Path) -> Path:
    """``folder`` packed into ``archive`` (zip or tar.gz by its name), written beside and moved in."""
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(folder.rglob("*")):
                if path.is_file():  # wheels are zip files already: stored, not compressed again
                    out.write(path, Path(folder.name, path.relative_to(folder)).as_posix(),
                              zipfile.ZIP_STORED if path.suffix == ".whl" else zipfile.ZIP_DEFLATED)
    else:
        with tarfile.open(partial, "w:gz", compresslevel=6) as out:
            out.add(folder, arcname=folder.name)
    os.replace(partial, archive)
    return archive


def build(platform_names: list, python: str = DEFAULT_PYTHON, with_torch: bool = False, out_dir: Path = None,
          cache: Path = None, report=print) -> list[Path]:
    python = check_python(python)
    platforms = [platform_of(name) for name in platform_names]
    out_dir = Path(out_dir or ROOT / "build" / "bundles")
    cache = Path(cache or ROOT / "build" / "wheelhouses")
    out_dir.mkdir(parents=True, exist_ok=True)
    archives = []
    for platform in platforms:
        suffix = "-torch" if with_torch else ""
        wheels = download(platform, python, cache / f"{platform.name}-py{python}{suffix}", with_torch, report)
        name = archive_name(platform, python)
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            folder = Path(tmp) / name
            folder.mkdir()
            write_platform_bundle(folder, platform, python, wheels, with_torch)
            archive = make_archive(folder, out_dir / f"{name}.{platform.archive}")
        problems = check_archive(archive, platform, python, with_torch)
        if problems:
            raise SystemExit(f"{archive}: " + "\n  ".join(problems))
        report(f"{archive}: {archive.stat().st_size / 2**20:.0f} MiB, every pinned wheel present")
        archives.append(archive)
    return archives


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", action="append", default=[], help=f"one of {', '.join(PLATFORMS)}")
    parser.add_argument("--all", action="store_true", help="every platform")
    parser.add_argument("--python", default=DEFAULT_PYTHON, help=f"{', '.join(PYTHONS)} (default {DEFAULT_PYTHON})")
    parser.add_argument("--with-torch", action="store_true", help="add requirements-torch.txt (large)")
    parser.add_argument("--out", type=Path, help="default build/bundles/")
    parser.add_argument("--check", type=Path, metavar="ARCHIVE", help="only check an archive's wheelhouse")
    args = parser.parse_args(argv)
    if args.check:
        match = re.search(r"course-student-(.+)-py(3\.\d+)\.(zip|tar\.gz)$", args.check.name)
        if not match:
            raise SystemExit(f"{args.check}: not a bundle name. Fix: pass course-student-PLATFORM-pyX.Y.zip/.tar.gz.")
        problems = check_archive(args.check, platform_of(match[1]), check_python(match[2]), args.with_torch)
        print("\n".join(problems) or f"{args.check.name}: every pinned package has a wheel")
        return 1 if problems else 0
    names = list(PLATFORMS) if args.all else args.platform
    if not names:
        parser.error(f"name the platforms in the room: --platform NAME (repeat) or --all; NAME in {list(PLATFORMS)}")
    build(names, args.python, args.with_torch, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
