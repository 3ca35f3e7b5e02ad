"""Measure the download and installed size of the default and the full install, from the package index.

    python tools/install_size.py                       # Linux x86-64, CPython 3.11 (run it with Python 3.11)
    python tools/install_size.py --torch-find-links DIR  # DIR holds torch's CPU wheel (when PyTorch's CPU index
                                                         # cannot be reached)

For each install it asks pip what it would install for the target platform (`pip install --dry-run --report
--only-binary=:all: --platform ... --target ...`: nothing is installed), then asks the index for each wheel's
size (an HTTP HEAD request) and reads the wheel's zip directory with two small range requests to add up the size
of its unpacked files. Nothing is downloaded in full. pip runs without this machine's configuration
(PIP_CONFIG_FILE=os.devnull; PIP_FIND_LINKS, PIP_CONSTRAINT and PIP_INDEX_URL unset), so a local cache or a
machine-wide constraint cannot change the numbers. Environment markers are evaluated with the running Python, so
run this with a Python of the target version.

The installs measured:
- default: requirements.txt (what a learner gets);
- full, CPU torch: plus requirements-torch.txt with the CPU build and requirements-fast-conv.txt (the private
  oneDNN of appendix A8, Linux x86-64 only) — the course's documented full install;
- full, PyPI torch: the same with torch from PyPI alone (Linux: the CUDA build with nvidia-* and triton).

"Installed" is the sum of the unpacked wheel files; a real venv adds pip itself and .pyc files compiled at
install time (compare with `du` of a real venv: README's "Install size" does).
"""
from __future__ import annotations

import argparse
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A Linux with glibc 2.35 (Ubuntu 22.04): pip does not widen --platform to older manylinux tags by itself.
LINUX_X86_64 = tuple(f"manylinux_2_{minor}_x86_64" for minor in range(35, 4, -1)) + (
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
MB = 1_000_000
TIMEOUT = 120


def ssl_context() -> ssl.SSLContext:
    cafile = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    return ssl.create_default_context(cafile=cafile) if cafile else ssl.create_default_context()


def pip_report(files: list[str], platforms: tuple[str, ...], extra_pip_args: list[str]) -> list[dict]:
    """pip's --dry-run --report of installing `files` (with -c constraints.txt) for the target platform."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    abi = f"cp{sys.version_info.major}{sys.version_info.minor}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PIP_FIND_LINKS", "PIP_CONSTRAINT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX")}
    env["PIP_CONFIG_FILE"] = os.devnull
    with tempfile.TemporaryDirectory(prefix="install-size-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
               "--disable-pip-version-check", "--report", str(report), "--only-binary=:all:",
               "--python-version", python, "--implementation", "cp", "--abi", abi,
               "--target", str(Path(tmp) / "target")]
        for platform in platforms:
            cmd += ["--platform", platform]
        for name in files:
            cmd += ["-r", str(ROOT / name)]
        cmd += ["-c", str(ROOT / "constraints.txt"), *extra_pip_args]
        result = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise SystemExit(f"pip could not resolve {' + '.join(files)}:\n{result.stderr[-3000:]}")
        return json.loads(report.read_text())["install"]


class RangeFile:
    """A read-only, seekable view of a remote file that fetches only the byte ranges zipfile reads."""

    def __init__(self, url: str, size: int, context: ssl.SSLContext):
        self.url, self.size, self.context, self.pos = url, size, context, 0
        self.cache: dict[tuple[int, int], bytes] = {}

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, n=-1):
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        # S310 (urllib with a URL from a variable): an https:// file URL from pip's report.
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"})  # noqa: S310
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=self.context) as response:  # noqa: S310
            if response.status != 206:
                raise RuntimeError(f"{self.url} ignored the range request (HTTP {response.status}); "
                                   "Fix: measure from an index that serves byte ranges.")
            data = response.read()
        self.pos += len(data)
        return data


def remote_size(url: str, context: ssl.SSLContext) -> int:
    # S310 (urllib with a URL from a variable): an https:// file URL from pip's report.
    request = urllib.request.Request(url, method="HEAD")  # noqa: S310
    with urllib.request.urlopen(request, timeout=TIMEOUT, context=context) as response:  # noqa: S310
        length = response.headers.get("Content-Length")
    if length is None:
        raise RuntimeError(f"The index gave no size for {url}. Fix: use an index that sends Content-Length.")
    return int(length)


def unpacked_size(fileobj) -> int:
    with zipfile.ZipFile(fileobj) as wheel:
        return sum(info.file_size for info in wheel.infolist())


def wheel_sizes(url: str, context: ssl.SSLContext) -> tuple[int, int]:
    """(download bytes, unpacked bytes) of one wheel, local (file://) or remote."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        path = Path(urllib.request.url2pathname(parsed.path))
        with path.open("rb") as handle:
            return path.stat().st_size, unpacked_size(handle)
    size = remote_size(url, context)
    return size, unpacked_size(RangeFile(url, size, context))


def measure(items: list[dict], context: ssl.SSLContext) -> dict:
    rows = []
    for item in items:
        url = item["download_info"]["url"]
        download, unpacked = wheel_sizes(url, context)
        rows.append({"name": item["metadata"]["name"], "version": item["metadata"]["version"],
                     "file": url.rsplit("/", 1)[-1], "download": download, "unpacked": unpacked})
    rows.sort(key=lambda r: -r["download"])
    return {"packages": len(rows), "download": sum(r["download"] for r in rows),
            "unpacked": sum(r["unpacked"] for r in rows), "rows": rows}


def markdown(results: dict) -> str:
    lines = ["| Install | Packages | Download | Installed (unpacked wheels) | Largest |",
             "| --- | --- | --- | --- | --- |"]
    for label, r in results.items():
        largest = ", ".join(f"{row['name']} {row['download'] / MB:,.0f} MB" for row in r["rows"][:3])
        lines.append(f"| {label} | {r['packages']} | {r['download'] / MB:,.0f} MB | {r['unpacked'] / MB:,.0f} MB "
                     f"| {largest} |")
    return "\n".join(lines)


FULL = ["requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-find-links", metavar="DIR",
                        help=f"a folder with torch's CPU wheel, used instead of {CPU_INDEX} (unreachable here)")
    parser.add_argument("--json", type=Path, help="also write every wheel's numbers to this JSON file")
    args = parser.parse_args(argv)
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        print("note: markers are evaluated for this machine, not Linux x86-64; run this on Linux x86-64",
              file=sys.stderr)
    context = ssl_context()
    cpu = ["--find-links", args.torch_find_links] if args.torch_find_links else ["--extra-index-url", CPU_INDEX]
    installs = {
        "default (requirements.txt)": (["requirements.txt"], []),
        "full, CPU torch (+ requirements-torch.txt, -fast-conv.txt)": (FULL, cpu),
        "full, PyPI torch (CUDA build on Linux)": (FULL, []),
    }
    results = {}
    for label, (files, extra) in installs.items():
        results[label] = measure(pip_report(files, LINUX_X86_64, extra), context)
        print(f"{label}: {results[label]['packages']} packages, {results[label]['download'] / MB:,.0f} MB download, "
              f"{results[label]['unpacked'] / MB:,.0f} MB unpacked", file=sys.stderr)
    cpu_torch = next(r for r in results[next(iter(list(results)[1:]))]["rows"] if r["name"] == "torch")
    if "cpu" not in cpu_torch["version"]:
        raise SystemExit(f"The 'CPU torch' install took {cpu_torch['file']}, not a CPU build. "
                         "Fix: pass --torch-find-links with a folder that holds torch's +cpu wheel.")
    if args.json:
        tmp = args.json.with_name(args.json.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1) + "\n")
        os.replace(tmp, args.json)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    print(f"Linux x86-64, CPython {python}, {MB:,} bytes per MB:\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
