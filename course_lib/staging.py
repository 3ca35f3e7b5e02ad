"""Temporary folders that name their owner, so that the next run can clean up after a killed one.

A tool that builds something in a temporary folder (``course_lib.data.generate``, ``tools/make_editions.py``) creates
it with :func:`claim`: the folder's name carries the process id, and a small record inside it
(``.owner.json``) names the process id, the host and the process's start time. At its next start the tool calls
:func:`stale_folders`: a folder is stale only when its record proves that its owner is gone (same host, and no
process with that id and start time is running). Folders of a live process, of another host (a shared network
drive) or without a readable record are never called stale: they are left alone.
"""
from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path

from course_lib.i18n import _

OWNER = ".owner.json"
#: The temporary folders of course_lib.data.generate (beside its target folder).
DATAGEN_PREFIX = ".tmp-datagen-"


def _start_time(pid: int) -> float | None:
    try:
        import psutil  # here, not at the top: tools/clean.py runs without the course's packages
    except ImportError:
        return None
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
        return None


def claim(parent: Path, prefix: str) -> Path:
    """A new folder ``parent/<prefix><pid>-<random>`` holding this process's owner record."""
    parent = Path(parent)
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    record = {"pid": os.getpid(), "host": socket.gethostname(), "started": _start_time(os.getpid())}
    try:
        (folder / OWNER).write_text(json.dumps(record) + "\n", encoding="utf-8")
    except BaseException:
        (folder / OWNER).unlink(missing_ok=True)
        folder.rmdir()
        raise
    return folder


def owner_alive(folder: Path) -> bool:
    """False only when ``folder``'s record proves its owner has ended (same host, process gone or another one)."""
    try:
        record = json.loads((Path(folder) / OWNER).read_text(encoding="utf-8"))
        pid, host, started = int(record["pid"]), record["host"], record.get("started")
    except (OSError, ValueError, KeyError, TypeError):
        return True  # no proof: treat it as in use
    if record.get("abandoned") is True:
        return False
    if host != socket.gethostname():
        return True
    try:
        import psutil
    except ImportError:  # tools/clean.py run by a Python without the course's packages
        if os.name == "nt":
            return True  # no safe probe without psutil: left alone
        try:
            os.kill(pid, 0)  # signal 0 only checks that the process exists
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
    if not psutil.pid_exists(pid):
        return False
    now = _start_time(pid)
    return now is None or started is None or abs(now - float(started)) < 1.0


def stale_folders(parent: Path, prefix: str) -> list[Path]:
    """The folders ``parent/<prefix>*`` whose owner record proves them abandoned (see the module docstring)."""
    parent = Path(parent)
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.glob(f"{prefix}*") if p.is_dir() and (p / OWNER).is_file()
                  and not owner_alive(p))


def abandon(folder: Path) -> None:
    """Mark ``folder`` as no longer in use (its run failed or was interrupted): the next run recovers it."""
    try:
        path = Path(folder) / OWNER
        record = json.loads(path.read_text(encoding="utf-8"))
        record["abandoned"] = True
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    except (OSError, ValueError):
        pass


def release(folder: Path) -> None:
    """Remove the owner record, then the folder if it is empty (what is left in it is never deleted here)."""
    folder = Path(folder)
    (folder / OWNER).unlink(missing_ok=True)
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir():
            try:
                path.rmdir()
            except OSError:
                pass
    try:
        folder.rmdir()
    except OSError:
        pass


#: errno values of a full disk or an exceeded quota.
NO_SPACE = {28, 122}  # ENOSPC, EDQUOT (Linux); Windows maps ERROR_DISK_FULL to ENOSPC


def is_disk_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and (error.errno in NO_SPACE or getattr(error, "winerror", None) in (39, 112))


def megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


class DiskFullError(OSError):
    """A write failed because the disk is full; the message says what, where, how much is needed and the fix."""

    def __init__(self, what: str, where: Path, needed: int, fix: str):
        try:
            free = shutil_free(where)
        except OSError:
            free = None
        if free is None:
            message = _("Not enough disk space to write {what} in {where} (needs about {needed}). Fix: {fix}")
        else:
            message = _("Not enough disk space to write {what} in {where} (needs about {needed}, {free} free). "
                        "Fix: {fix}")
        super().__init__(28, message.format(what=what, where=where, needed=megabytes(needed),
                                            free=None if free is None else megabytes(free), fix=fix))

    def __str__(self) -> str:
        return self.strerror


def shutil_free(where: Path) -> int:
    import shutil

    where = Path(where)
    while not where.exists() and where != where.parent:
        where = where.parent
    return shutil.disk_usage(where).free
