"""The container's start command: bring the learner's work folder up to date without overwriting anything, then
run JupyterLab with token authentication.

- Every notebook and file of the course's edition (/opt/course/edition) is copied into the work folder (the volume,
  /home/learner/work) only where that path does not exist yet: a learner's edited notebook is never replaced. A
  newer course version therefore adds new lessons but leaves the learner's copies alone (the message says which).
- `--singleuser ARGS...` (classroom/hub): after that, run jupyterhub-singleuser, which the hub authenticates.
- `--sync-only`: only bring the work folder up to date.
- The token is $JUPYTER_TOKEN, else a random one; it is printed with the URL. An empty token is refused: the lab
  never runs without authentication. It is passed on the command line, so no Jupyter config file can switch it off.
"""
import os
import secrets
import shutil
import sys
from pathlib import Path

EDITION = Path(os.environ.get("COURSE_EDITION_DIR", "/opt/course/edition"))
WORK = Path(os.environ.get("COURSE_WORK_DIR", "/home/learner/work"))
PORT = os.environ.get("COURSE_LAB_PORT", "8888")


def sync_edition(edition: Path, work: Path) -> tuple[list, list]:
    """Copy what is missing from ``edition`` into ``work``; return (copied, kept) relative paths."""
    copied, kept = [], []
    for source in sorted(p for p in edition.rglob("*") if p.is_file()):
        relative = source.relative_to(edition)
        target = work / relative
        if target.exists():
            if target.read_bytes() != source.read_bytes():
                kept.append(str(relative))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.copying")
        shutil.copy2(source, tmp)
        os.replace(tmp, target)
        copied.append(str(relative))
    return copied, kept


def lab_command(token: str, work: Path, port: str) -> list:
    if not token.strip():
        raise SystemExit("JUPYTER_TOKEN is set but empty. The course's lab always uses authentication. Fix: unset "
                         "JUPYTER_TOKEN (a random token is made and printed) or set it to a long random string.")
    return [sys.executable, "-m", "jupyterlab", "--ip=0.0.0.0", f"--port={port}", "--no-browser",
            f"--ServerApp.root_dir={work}", f"--IdentityProvider.token={token}",
            "--ServerApp.allow_remote_access=True"]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if os.geteuid() == 0:
        raise SystemExit("The course's lab does not run as root. Fix: run the image as its user 'learner' "
                         "(the default; remove --user root).")
    WORK.mkdir(parents=True, exist_ok=True)
    copied, kept = sync_edition(EDITION, WORK)
    print(f"course files copied into {WORK}: {len(copied)}; your own versions kept: {len(kept)}")
    for name in kept[:20]:
        print(f"  kept your {name} (the course's newer copy is in {EDITION / name})")
    if "--sync-only" in argv:
        return 0
    if argv[:1] == ["--singleuser"]:  # started by the course's JupyterHub: the hub authenticates (OAuth)
        command = [os.path.join(os.path.dirname(sys.executable), "jupyterhub-singleuser"), *argv[1:]]
        os.execv(command[0], command)  # noqa: S606  (an argument list, no shell: this process becomes the server)
    token = os.environ.get("JUPYTER_TOKEN")
    token = secrets.token_hex(24) if token is None else token
    command = lab_command(token, WORK, PORT)
    print(f"Open http://127.0.0.1:{PORT}/lab?token={token} (the host port you published with -p)", flush=True)
    os.execv(command[0], command)  # noqa: S606  (an argument list, no shell: this process becomes the lab)
    return 0


if __name__ == "__main__":
    sys.exit(main())
