"""Resolve the course's pins for every supported (OS, CPU, Python) and write the table docs/PINS.md.

    python tools/pins_table.py            # resolve with uv (needs the package index), write docs/PINS.md
    python tools/pins_table.py --check    # only check that docs/PINS.md matches today's requirement files

For each platform and Python it runs `uv pip compile --no-build --python-platform P --python-version V` twice:
the default install (requirements.txt) and the full one (plus requirements-torch.txt and requirements-fast-conv.txt),
both with -c constraints.txt.
`--no-build` means every package must have a wheel for that platform: nothing is compiled on a learner's laptop.
A column passes when uv finds a solution and every package it picks is pinned in constraints.txt at that version
(markers evaluated for that platform and Python). Install uv first: `python -m pip install uv`.

The table records a hash of the requirement files; tests/test_pins_table.py fails when they change and the table
was not regenerated. The resolution needs the network, so it runs here, not in the unit tests.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ("requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt", "constraints.txt")
TABLE = ROOT / "docs" / "PINS.md"
HASH_LINE = re.compile(r"^<!-- inputs-sha256: ([0-9a-f]{64}) -->$", re.M)


@dataclass(frozen=True)
class Platform:
    label: str
    uv_platform: str
    markers: dict  # sys_platform, platform_machine, platform_system, os_name
    # The oldest macOS whose wheels we require (uv reads MACOSX_DEPLOYMENT_TARGET); None elsewhere.
    macos: str | None = None
    macos_torch: str | None = None


PLATFORMS = (
    Platform("Linux x86-64", "x86_64-manylinux_2_28",
             {"sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux", "os_name": "posix"}),
    Platform("Linux aarch64", "aarch64-manylinux_2_28",
             {"sys_platform": "linux", "platform_machine": "aarch64", "platform_system": "Linux",
              "os_name": "posix"}),
    # scikit-learn's arm64 wheels need macOS 12; torch 2.13's need macOS 14 (GitHub's macos-14 runner).
    Platform("macOS arm64", "aarch64-apple-darwin",
             {"sys_platform": "darwin", "platform_machine": "arm64", "platform_system": "Darwin", "os_name": "posix"},
             macos="12.0", macos_torch="14.0"),
    Platform("macOS x86-64", "x86_64-apple-darwin",
             {"sys_platform": "darwin", "platform_machine": "x86_64", "platform_system": "Darwin", "os_name": "posix"},
             macos="11.0", macos_torch="11.0"),
    Platform("Windows amd64", "x86_64-pc-windows-msvc",
             {"sys_platform": "win32", "platform_machine": "AMD64", "platform_system": "Windows", "os_name": "nt"}),
)
# 3.11.0 and 3.11.7 both: some packages (soupsieve 4) need 3.11.5 or newer, so 3.11.0-3.11.4 get other pins.
PYTHONS = ("3.10.0", "3.11.0", "3.11.7", "3.12.0")
REFERENCE = ("Linux x86-64", "3.11.7")  # where the committed notebook outputs were made
# The same files as tools/course_cli.py's requirement_files(); tests/test_pins_table.py checks that they agree.
INSTALLS = {"default": ("requirements.txt",),
            "full": ("requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt")}
# PyPI's Linux torch is the CUDA build; the course installs the CPU build (requirements-torch.txt says how), which
# has none of these. The index reachable here has only PyPI, so the table resolves PyPI's torch and sets them apart.
CUDA_ONLY = re.compile(r"^(nvidia-.*|triton|cuda-.*)$")


def inputs_hash(root: Path = ROOT) -> str:
    """sha256 over the requirement files (line endings normalized), in a fixed order."""
    digest = hashlib.sha256()
    for name in INPUTS:
        text = (root / name).read_text(encoding="utf-8").replace("\r\n", "\n")
        digest.update(f"{name}\n{len(text)}\n{text}".encode())
    return digest.hexdigest()


def marker_env(platform: Platform, python: str) -> dict:
    major_minor = ".".join(python.split(".")[:2])
    return {**platform.markers, "python_version": major_minor, "python_full_version": python,
            "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def read_requirements(path: Path) -> list[Requirement]:
    """Requirement lines of a pip requirements file (comments, blank lines and pip options left out)."""
    out = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line or line.startswith("-"):
            continue
        try:
            out.append(Requirement(line))
        except Exception as error:
            raise ValueError(f"{path.name}:{number}: {raw!r} is not a requirement ({error}). "
                             "Fix: write 'name==version' or 'name==version; marker'.") from None
    return out


def pins_for(path: Path, env: dict) -> dict[str, str]:
    """{canonical name: version} of the exact pins in `path` whose markers hold in `env`.

    Raises ValueError for a pin that is not exact (==) or a package pinned twice for the same environment.
    """
    pins: dict[str, str] = {}
    for req in read_requirements(path):
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            raise ValueError(f"{path.name}: {req} is not an exact pin. Fix: pin it as {req.name}==<version>.")
        name = canonicalize_name(req.name)
        if name in pins and pins[name] != specs[0].version:
            raise ValueError(f"{path.name}: {req.name} has two pins ({pins[name]} and {specs[0].version}) for "
                             f"{env['sys_platform']} {env['platform_machine']} Python {env['python_full_version']}. "
                             "Fix: make their markers exclude each other.")
        pins[name] = specs[0].version
    return pins


def parse_compiled(text: str) -> dict[str, str]:
    """{canonical name: version} from `uv pip compile --no-annotate --no-header` output."""
    out = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            name, sep, version = line.partition("==")
            if not sep:
                raise ValueError(f"uv printed {line!r}, not 'name==version'. Fix: update tools/pins_table.py.")
            out[canonicalize_name(name.split("[")[0])] = version.split(";")[0].strip()
    return out


@dataclass
class Cell:
    platform: str
    python: str
    install: str
    ok: bool = False
    packages: dict = field(default_factory=dict)
    cuda_only: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def check_against_constraints(cell: Cell, constraints: dict[str, str]) -> None:
    """Every package the resolver picked must be pinned in constraints.txt, at that version."""
    for name, version in sorted(cell.packages.items()):
        if CUDA_ONLY.match(name):
            cell.cuda_only.append(f"{name}=={version}")
        elif name not in constraints:
            cell.problems.append(f"{name}=={version} is not pinned in constraints.txt")
        elif constraints[name] != version:
            cell.problems.append(f"{name}: resolved {version}, constraints.txt pins {constraints[name]}")
    cell.ok = not cell.problems


def resolve(uv: str, platform: Platform, python: str, install: str) -> Cell:
    cell = Cell(platform.label, python, install)
    env = {**os.environ}
    macos = platform.macos_torch if install == "full" else platform.macos
    if macos:
        env["MACOSX_DEPLOYMENT_TARGET"] = macos
    files = [str(ROOT / name) for name in INSTALLS[install]]
    cmd = [uv, "pip", "compile", "--quiet", "--no-build", "--no-header", "--no-annotate", "--no-config",
           "--python-platform", platform.uv_platform, "--python-version", python, *files,
           "-c", str(ROOT / "constraints.txt")]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if result.returncode != 0:
        reason = [line.strip() for line in result.stderr.splitlines() if line.strip()]
        cell.problems.append(" ".join(reason)[-600:] or f"uv exited with {result.returncode}")
        return cell
    cell.packages = parse_compiled(result.stdout)
    check_against_constraints(cell, pins_for(ROOT / "constraints.txt", marker_env(platform, python)))
    return cell


def render(cells: list[Cell], digest: str, uv_version: str) -> str:
    by_key = {(c.platform, c.python, c.install): c for c in cells}
    ref_cell = by_key[(*REFERENCE, "full")]
    lines = [
        "# Pins on every supported platform and Python",
        "",
        "Written by `python tools/pins_table.py` (do not edit by hand); `tests/test_pins_table.py` fails when",
        "requirements.txt, requirements-torch.txt, requirements-fast-conv.txt or constraints.txt changed after this",
        "table was made.",
        f"Resolved with {uv_version} (`uv pip compile --no-build`: wheels only) against the package index.",
        "",
        f"<!-- inputs-sha256: {digest} -->",
        "",
        "## Does the install resolve?",
        "",
        "Each cell: default install (requirements.txt) / full install (plus requirements-torch.txt and",
        "requirements-fast-conv.txt), with the number of packages. Every package is a wheel and every version is",
        "the one pinned in constraints.txt.",
        "",
        "| Platform | " + " | ".join(f"Python {p}" for p in PYTHONS) + " |",
        "| --- | " + " | ".join("---" for _ in PYTHONS) + " |",
    ]
    for platform in PLATFORMS:
        row = []
        for python in PYTHONS:
            parts = []
            for install in INSTALLS:
                c = by_key[(platform.label, python, install)]
                parts.append(f"{'ok' if c.ok else 'FAIL'} {len(c.packages)}")
            row.append(" / ".join(parts))
        lines.append(f"| {platform.label} | " + " | ".join(row) + " |")
    lines += [
        "",
        "macOS: the default install needs macOS 12 or newer on arm64 (scikit-learn's wheels) and 11 on x86-64;",
        "torch 2.13 needs macOS 14 on arm64. Intel Macs get torch 2.2.2, its last release for them.",
        "Linux: manylinux_2_28 wheels (glibc 2.28 or newer: Debian 10, Ubuntu 20.04 and later).",
        "The private oneDNN of requirements-fast-conv.txt (onednn-cpu-gomp, onednn-devel-cpu-gomp) is in the full",
        "install on Linux x86-64 only; its markers leave it out everywhere else.",
    ]
    cuda = sorted({p for c in cells for p in c.cuda_only})
    if cuda:
        lines += ["",
                  f"PyPI's Linux torch brings {len(cuda)} CUDA packages (nvidia-*, triton). The CPU build that",
                  "requirements-torch.txt asks for has none of them. They are in the Linux counts of the full",
                  "install but not checked against constraints.txt, and not listed below."]
    lines += ["", "## Versions that differ from the reference",
              "",
              f"Reference: {REFERENCE[0]}, Python {REFERENCE[1]} (the committed notebook outputs were made there).",
              "'Elsewhere' lists every other version and where it is installed; '-' means not installed there.",
              ""]
    names = sorted({n for c in cells for n in c.packages if not CUDA_ONLY.match(n)})
    lines += ["| Package | Reference | Elsewhere |", "| --- | --- | --- |"]
    for name in names:
        ref = ref_cell.packages.get(name, "-")
        where: dict[str, list] = {}
        for platform in PLATFORMS:
            for python in PYTHONS:
                value = by_key[(platform.label, python, "full")].packages.get(name, "-")
                if value != ref:
                    where.setdefault(value, []).append((platform.label, python))
        if where:
            lines.append(f"| {name} | {ref} | " + "; ".join(f"{v} on {describe(cols)}" for v, cols in where.items())
                         + " |")
    failures = [c for c in cells if not c.ok]
    if failures:
        lines += ["", "## Failures", ""]
        for c in failures:
            lines.append(f"- {c.platform}, Python {c.python}, {c.install}: " + "; ".join(c.problems))
    return "\n".join(lines) + "\n"


def describe(columns: list) -> str:
    """'Python 3.10 (every platform), macOS x86-64 (every Python)' for a list of (platform, python) columns."""
    columns = set(columns)
    parts = []
    for python in PYTHONS:
        if all((p.label, python) in columns for p in PLATFORMS):
            parts.append(f"Python {python} (every platform)")
            columns -= {(p.label, python) for p in PLATFORMS}
    for platform in PLATFORMS:
        pythons = [py for py in PYTHONS if (platform.label, py) in columns]
        if pythons:
            parts.append(platform.label + (" (every Python)" if len(pythons) == len(PYTHONS)
                                           else " (Python " + ", ".join(pythons) + ")"))
    return ", ".join(parts)


def recorded_hash(table: Path = TABLE) -> str | None:
    if not table.exists():
        return None
    match = HASH_LINE.search(table.read_text(encoding="utf-8"))
    return match.group(1) if match else None


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def find_uv(given: str | None) -> str:
    candidates = [given] if given else [str(Path(sys.executable).parent / "uv"), "uv"]
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    raise SystemExit(f"uv not found (looked for {', '.join(candidates)}). "
                     "Fix: `python -m pip install uv`, or pass --uv /path/to/uv.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the table matches the input files")
    parser.add_argument("--uv", help="the uv executable (default: beside this Python, then PATH)")
    parser.add_argument("--jobs", type=int, default=4, help="resolutions run side by side (default: 4)")
    parser.add_argument("--out", type=Path, default=TABLE, help=f"where to write (default: {TABLE.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    digest = inputs_hash()
    if args.check:
        if recorded_hash(args.out) != digest:
            print(f"{args.out} is stale: the requirement files changed. Fix: python tools/pins_table.py",
                  file=sys.stderr)
            return 1
        print(f"{args.out} is current")
        return 0
    uv = find_uv(args.uv)
    uv_version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    jobs = [(platform, python, install) for platform in PLATFORMS for python in PYTHONS for install in INSTALLS]
    # uv spends its time waiting on the index: a few resolutions side by side finish sooner.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        cells = list(pool.map(lambda job: resolve(uv, *job), jobs))
    for cell in cells:
        status = "ok" if cell.ok else "FAIL: " + "; ".join(cell.problems)[:300]
        print(f"{cell.platform:14} {cell.python:7} {cell.install:8} {len(cell.packages):4} packages  {status}")
    write_atomic(args.out, render(cells, digest, uv_version))
    print(f"wrote {args.out}")
    return 0 if all(c.ok for c in cells) else 1


if __name__ == "__main__":
    sys.exit(main())
