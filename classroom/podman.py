"""How this project calls podman, in one place (classroom/make_base_image.py, test_image.py, test_hub.py).

Rootful podman in a sandbox like the course's CI machine needs runc, the cgroupfs manager, and rlimits no higher
than the sandbox allows (without `nproc` lowered, runc fails with "error setting rlimit type 6"). Override with
COURSE_PODMAN (a command line, split on spaces) where plain `podman` works.
"""
import os
import shutil
import subprocess

ULIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"]


def podman() -> list:
    if os.environ.get("COURSE_PODMAN"):
        return os.environ["COURSE_PODMAN"].split()
    if not shutil.which("podman"):
        raise SystemExit("podman is not installed. Fix: 'sudo apt-get install podman runc' (Debian/Ubuntu), or use "
                         "docker: COURSE_PODMAN=docker.")
    command = ["podman"]
    if shutil.which("runc"):
        command += ["--runtime", "runc"]
    return command + ["--cgroup-manager=cgroupfs"]


def run(*args, check=True, capture=False, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*podman(), *args], check=check, text=True,
                          capture_output=capture, **kwargs)
