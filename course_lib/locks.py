"""Folder locks held by the operating system, and the clean-up of temporary files that only a dead writer left.

``FolderLock(folder)`` takes an exclusive lock that the OS releases when the process ends (``kill -9``
included). It does not depend on a file that anyone can delete:

- POSIX (Linux, macOS): ``fcntl.flock`` on the folder itself (an open file descriptor of the directory).
  Deleting the informational ``<name>`` file beside it changes nothing.
- Windows: ``msvcrt.locking`` on an open lock file in the folder. Windows refuses to delete a file that a
  process holds open, so the lock file cannot be removed while the lock is held.

A small text file ``<name>`` in the folder records the owner's pid, only to name it in the "busy" message.

Temporary files are named ``<stem>.tmp-p<pid>-<8 hex>.<ext>`` (see ``temp_name``): ``is_stale_temp`` proves a
leftover stale when the writer's pid is gone, or when the process that now has that pid started after the
file was last written (the pid was reused). Older names without a pid are stale only after ``LEGACY_TEMP_AGE``.
"""
import os
import re
import sys
import time
import uuid
from pathlib import Path

from course_lib.i18n import _

#: The checkout (paths.PROJECT_ROOT; paths imports this module, so it cannot be imported from here).
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _shown(folder) -> str:
    """``folder`` relative to the checkout, as ``paths.relative`` shows it (no machine-specific prefix)."""
    path = Path(folder).resolve()
    try:
        return str(path.relative_to(_PROJECT_ROOT))
    except ValueError:
        return path.name

__all__ = ["FolderBusy", "FolderLock", "temp_name", "is_stale_temp", "clean_stale_temp_files", "TEMP_MARK",
           "LEGACY_TEMP_AGE"]

TEMP_MARK = ".tmp-"
#: A temporary file in the old format (no writer pid in its name) is stale once it is this old (seconds).
LEGACY_TEMP_AGE = 3600.0
_PID_TEMP = re.compile(re.escape(TEMP_MARK) + r"p(\d+)-[0-9a-f]{8}\.")


class FolderBusy(RuntimeError):
    """Another live process holds the folder's lock."""


def _is_windows() -> bool:
    return os.name == "nt" or sys.platform == "win32"


class FolderLock:
    """An exclusive, OS-held lock on ``folder`` (created if missing).

    ``acquire()`` raises ``error`` (a ``FolderBusy`` subclass by default) with ``busy_message`` formatted with
    ``{folder}`` and ``{owner}`` when another process (or another ``FolderLock`` in this process) holds it.
    """

    def __init__(self, folder, name=".course.lock", busy_message=None, error=FolderBusy):
        self.folder = Path(folder)
        self.name = name
        self.busy_message = busy_message  # None: the default message, translated when it is shown
        self.error = error
        self._fd = None      # the locked descriptor (the folder on POSIX, the lock file on Windows)
        self._info_fd = None  # the owner file on POSIX
        self._file_locked = False  # POSIX fallback: the owner file is the locked one

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _owner(self) -> str:
        try:
            with open(self.folder / self.name, "rb") as handle:
                if _is_windows():
                    handle.seek(1)  # byte 0 is the locked one, which Windows does not let others read
                text = handle.read(64).decode("utf-8", errors="replace").strip("\0 \r\n\t")
        except OSError:
            text = ""
        return _("process {pid}").format(pid=text) if text.isdigit() else _("process unknown")

    def _busy(self):
        # A caller's message is looked up in the catalog when shown (callers mark their literal with _()).
        message = _(self.busy_message) if self.busy_message else _(
            "{folder} is in use by another process ({owner}). Fix: wait for it to finish, or stop it.")
        return self.error(message.format(folder=_shown(self.folder), owner=self._owner()))

    def acquire(self):
        if self._fd is not None:
            raise RuntimeError(_("{folder} is already locked by this FolderLock. Fix: call release() before "
                                 "acquiring it again.").format(folder=self.folder))
        self.folder.mkdir(parents=True, exist_ok=True)
        if _is_windows():
            self._acquire_windows()
        else:
            self._acquire_posix()
        return self

    def _acquire_posix(self):
        import fcntl

        fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another open file description holds it
            os.close(fd)
            raise self._busy() from None
        except OSError:
            # Some file systems (NFS maps flock to POSIX locks, which need a file open for writing) cannot lock
            # a folder: lock the owner file instead (still released by the OS when the process dies).
            os.close(fd)
            fd = os.open(self.folder / self.name, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise self._busy() from None
            self._fd = fd
            self._file_locked = True
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            return
        self._fd = fd
        try:  # the owner's pid, for the message only: the lock itself is on the folder. Never through a symlink
            # (a link planted there would make us truncate the file it points to).
            info = os.open(self.folder / self.name, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            os.ftruncate(info, 0)
            os.pwrite(info, str(os.getpid()).encode(), 0)
            self._info_fd = info
        except OSError:
            pass

    def _acquire_windows(self):
        import msvcrt

        path = self.folder / self.name
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            os.close(fd)
            raise self._busy() from None
        self._fd = fd
        try:  # byte 0 is locked; the pid is written after it (readers see it, the lock stays)
            os.lseek(fd, 1, os.SEEK_SET)
            os.write(fd, str(os.getpid()).encode())
        except OSError:
            pass

    def release(self):
        """Release the lock (the OS also does it when the process ends)."""
        if self._fd is None:
            return
        try:
            if _is_windows():
                import msvcrt

                try:
                    os.lseek(self._fd, 0, os.SEEK_SET)
                    msvcrt.locking(self._fd, msvcrt.LK_UNLCK, 1)
                except OSError:
                    pass
            else:
                if self._file_locked:  # the owner file itself was locked (file systems without folder locks)
                    os.ftruncate(self._fd, 0)
                    self._file_locked = False
                if self._info_fd is not None:
                    os.close(self._info_fd)
                    self._info_fd = None
                    (self.folder / self.name).unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False


# ------------------------------------------------------------------------------------------ temporary files
def temp_name(stem: str, suffix: str) -> str:
    """A hidden temporary name that carries this process's pid: ``.<stem>.tmp-p<pid>-<8 hex><suffix>``."""
    return f".{stem}{TEMP_MARK}p{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"


def _pid_started_after(pid: int, when: float):
    """True if the process ``pid`` is gone or started after ``when`` (so it cannot have written then)."""
    import psutil

    try:
        return psutil.Process(pid).create_time() > when + 1.0
    except psutil.NoSuchProcess:
        return True
    except (psutil.AccessDenied, OSError):
        return False


def is_stale_temp(path, now=None) -> bool:
    """Whether a temporary file is provably left behind by a writer that is gone (see the module docstring)."""
    path = Path(path)
    try:
        mtime = path.lstat().st_mtime
    except FileNotFoundError:
        return False
    match = _PID_TEMP.search(path.name)
    if match:
        pid = int(match.group(1))
        return pid != os.getpid() and _pid_started_after(pid, mtime)
    return (time.time() if now is None else now) - mtime > LEGACY_TEMP_AGE


def clean_stale_temp_files(folder, pattern) -> list:
    """Delete the files in ``folder`` whose names match ``pattern`` (a compiled regex) and that are stale.

    Returns the names removed. Files of live writers and every other file are left alone."""
    folder = Path(folder)
    removed = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for path in entries:
        if pattern.match(path.name) and path.is_file() and not path.is_symlink() and is_stale_temp(path):
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except PermissionError:
                try:
                    os.chmod(path, 0o600)
                    path.unlink()
                except OSError:
                    continue
            removed.append(path.name)
    return removed
