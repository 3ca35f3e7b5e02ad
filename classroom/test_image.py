"""Build the course's container image from a clean state and run a lesson inside it with nbval (a slow check:
about 10-15 minutes, most of it pip; not part of `make test`).

    python classroom/test_image.py [--rebuild-base] [--edition student|full] [--lesson 00_environment]

Steps: the base image from Debian packages (classroom/make_base_image.py) unless it exists; the image, built from
the files git tracks (plus new ones it does not ignore) with BASE=that image; then, inside the image: the user is
not root, the student image holds no solutions/ or tests/, the lesson passes nbval (pytest --nbval-lax) as the
learner, a learner's edited notebook survives a restart, and the lab refuses requests without its token and an
empty token. Prints the image size and the times.
"""
import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import podman  # noqa: E402

BASE = "localhost/course-base:bookworm"


def stage_context(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def ensure_base_image(rebuild: bool = False) -> None:
    if rebuild or podman.run("image", "exists", BASE, check=False).returncode != 0:
        subprocess.run([sys.executable, str(HERE / "make_base_image.py"), "--tag", BASE], check=True)


def build_image(tag: str, edition: str = "student") -> None:
    """Build classroom/Containerfile from this checkout's files on the Debian-made base (proxy CA passed in)."""
    ensure_base_image()
    with tempfile.TemporaryDirectory(prefix="course-image-") as context:
        stage_context(Path(context))
        certificates = []
        if Path("/etc/ssl/certs/ca-certificates.crt").is_file():  # this machine's CA bundle (a proxy's CA, if any)
            certificates = ["-v", "/etc/ssl/certs:/etc/ssl/host-certs:ro",
                            "--build-arg", "PIP_CERT=/etc/ssl/host-certs/ca-certificates.crt"]
        podman.run("build", "--network=host", *podman.ULIMITS, *certificates, "--build-arg", f"BASE={BASE}",
                   "--build-arg", f"EDITION={edition}", "-f", "classroom/Containerfile", "-t", tag, context)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url: str) -> int:
    try:
        # S310: an http:// URL of the container under test.
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def step(title: str):
    print(f"--- {title}", flush=True)
    return time.monotonic()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rebuild-base", action="store_true")
    parser.add_argument("--edition", choices=("student", "full"), default="student")
    parser.add_argument("--lesson", default="00_environment")
    parser.add_argument("--tag", default="localhost/mindspore-course:test")
    args = parser.parse_args(argv)
    times = {}
    t = step("base image from Debian packages")
    ensure_base_image(args.rebuild_base)
    times["base image"] = time.monotonic() - t
    t = step(f"image ({args.edition} edition)")
    build_image(args.tag, args.edition)
    times["image build"] = time.monotonic() - t
    size = int(json.loads(podman.run("image", "inspect", args.tag, capture=True).stdout)[0]["Size"])
    run = ["run", "--rm", *podman.ULIMITS, "--network=host"]
    volume = f"course-test-work-{int(time.time())}"
    try:
        t = step("inside the image")
        uid = podman.run(*run, args.tag, "id", "-u", capture=True).stdout.strip()
        assert uid != "0", "the image runs as root"
        listing = podman.run(*run, args.tag, "ls", "/opt/course", capture=True).stdout.split()
        if args.edition == "student":
            assert "solutions" not in listing and "tests" not in listing, listing
        sync = podman.run(*run, "-v", f"{volume}:/home/learner/work", args.tag, "python",
                          "/opt/course/classroom/start_lab.py", "--sync-only", capture=True).stdout
        print(sync.strip())
        t_lesson = step(f"nbval {args.lesson} as the learner")
        podman.run(*run, "-v", f"{volume}:/home/learner/work", args.tag, "python", "-m", "pytest", "-q",
                   "-p", "no:cacheprovider", "--nbval-lax", f"{args.lesson}.ipynb")
        times[f"nbval {args.lesson}"] = time.monotonic() - t_lesson
        # A learner's edit survives a restart of the container.
        podman.run(*run, "-v", f"{volume}:/home/learner/work", args.tag, "sh", "-c",
                   f"echo '# my note' >> {args.lesson}.ipynb")
        again = podman.run(*run, "-v", f"{volume}:/home/learner/work", args.tag, "python",
                           "/opt/course/classroom/start_lab.py", "--sync-only", capture=True).stdout
        assert f"kept your {args.lesson}.ipynb" in again, again
        # The lab: token required, empty token refused.
        port = free_port()
        name = f"course-lab-{port}"
        podman.run("run", "-d", "--rm", *podman.ULIMITS, "--name", name, "-p", f"127.0.0.1:{port}:8888",
                   "-e", "JUPYTER_TOKEN=test-token-123", args.tag, capture=True)
        try:
            for _ in range(120):
                try:
                    if http_status(f"http://127.0.0.1:{port}/api/status?token=test-token-123") == 200:
                        break
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
                time.sleep(1)
            assert http_status(f"http://127.0.0.1:{port}/api/status?token=test-token-123") == 200
            assert http_status(f"http://127.0.0.1:{port}/api/status") == 403
            assert http_status(f"http://127.0.0.1:{port}/api/contents?token=wrong") == 403
        finally:
            podman.run("stop", "-t", "2", name, check=False, capture=True)
        empty = podman.run(*run, "-e", "JUPYTER_TOKEN=", args.tag, check=False, capture=True)
        assert empty.returncode != 0 and "always uses authentication" in empty.stderr, empty.stderr
        times["checks inside"] = time.monotonic() - t
    finally:
        podman.run("volume", "rm", "-f", volume, check=False, capture=True)
    print(f"image {args.tag}: {size / 1e9:.2f} GB")
    for what, seconds in times.items():
        print(f"  {what}: {seconds:.0f} s")
    print("container image: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
