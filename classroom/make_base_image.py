"""Build a base image for classroom/Containerfile from Debian packages alone (no container registry needed).

    python classroom/make_base_image.py [--tag localhost/course-base:bookworm] [--mirror URL]

debootstrap (Debian's package) makes a minimal Debian 12 root with python3 (3.11), python3-venv, ca-certificates
and passwd (useradd); podman imports it as an image. Needs root, debootstrap and podman. Where a registry is
reachable, the Containerfile's default base (the official Python image) needs none of this.
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import podman  # noqa: E402

PACKAGES = "python3,python3-venv,python3-pip,ca-certificates,passwd"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default="localhost/course-base:bookworm")
    parser.add_argument("--suite", default="bookworm")
    parser.add_argument("--mirror", default="http://deb.debian.org/debian")
    args = parser.parse_args(argv)
    if not shutil.which("debootstrap"):
        raise SystemExit("debootstrap is not installed. Fix: 'apt-get install debootstrap' (as root).")
    with tempfile.TemporaryDirectory(prefix="course-base-") as tmp:
        root = Path(tmp) / "rootfs"
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={PACKAGES}", args.suite, str(root),
                        args.mirror], check=True, stdout=subprocess.DEVNULL)
        for cache in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):
            cache.unlink()
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        podman.run("import", "-", args.tag, stdin=tar.stdout, capture=True)
        if tar.wait() != 0:
            raise SystemExit("make_base_image: tar of the debootstrap root failed")
    print(f"base image {args.tag} built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
