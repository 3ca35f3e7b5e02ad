"""OS-held folder locks and the clean-up of temporary files of dead writers (course_lib.locks)."""
import os
import subprocess
import sys
import time
import types

import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib import locks
from course_lib.train.checkpoint import LOCK_NAME, CheckpointFolderBusy, CheckpointManager, save_checkpoint


def hold_in_child(code: str):
    """Start a Python child that runs ``code``, prints "ready" and then waits until its stdin closes."""
    code += "\nprint('ready', flush=True)\nimport sys\nsys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def finish(child):
    child.stdin.close()
    child.wait(timeout=60)


def test_deleting_the_lock_file_does_not_let_a_second_overwrite_run_in(tmp_path):
    child = hold_in_child("import course_lib.train.checkpoint as c\n"
                          f"m = c.CheckpointManager({str(tmp_path)!r}, 'lenet5')\n"
                          "m.__enter__()")
    try:
        lock_file = tmp_path / LOCK_NAME
        assert lock_file.read_text() == str(child.pid)
        lock_file.unlink()  # what a learner (or a clean-up script) may do
        with pytest.raises(CheckpointFolderBusy, match=r"is in use by another run.*Fix: wait for it to finish"):
            with CheckpointManager(tmp_path, "lenet5", overwrite=True):
                pass
        lock_file.write_text("99999999")  # a lock file replaced by hand changes nothing either
        with pytest.raises(CheckpointFolderBusy):
            with CheckpointManager(tmp_path, "lenet5", overwrite=True):
                pass
    finally:
        finish(child)
    with CheckpointManager(tmp_path, "lenet5", overwrite=True) as manager:  # free once the owner ended
        assert manager.locked
    assert not manager.locked


def test_the_lock_is_released_when_its_owner_is_killed_even_without_its_file(tmp_path):
    child = hold_in_child(f"from course_lib.locks import FolderLock\nFolderLock({str(tmp_path)!r}).acquire()")
    (tmp_path / ".course.lock").unlink()
    with pytest.raises(locks.FolderBusy, match=r"in use by another process \(process unknown\)"):
        locks.FolderLock(tmp_path).acquire()
    child.kill()
    child.wait(timeout=60)
    with locks.FolderLock(tmp_path) as lock:
        assert lock.held
        assert (tmp_path / ".course.lock").read_text() == str(os.getpid())


def test_two_locks_in_one_process_exclude_each_other(tmp_path):
    with locks.FolderLock(tmp_path):
        with pytest.raises(locks.FolderBusy, match=f"process {os.getpid()}"):
            locks.FolderLock(tmp_path).acquire()


def fake_msvcrt(held: dict):
    """A stand-in for Windows' msvcrt: byte-range locks kept in ``held`` (file identity -> owner fd)."""
    module = types.SimpleNamespace(LK_NBLCK=2, LK_UNLCK=0, calls=[])

    def locking(fd, mode, nbytes):
        module.calls.append((mode, os.lseek(fd, 0, os.SEEK_CUR), nbytes))
        key = os.fstat(fd).st_ino
        if mode == module.LK_NBLCK:
            if key in held and held[key] != fd:
                raise PermissionError(13, "Permission denied")  # what msvcrt raises for a held range
            held[key] = fd
        elif held.get(key) == fd:
            del held[key]

    module.locking = locking
    return module


def test_windows_uses_msvcrt_locking_on_an_open_lock_file(tmp_path, monkeypatch):
    held = {}
    msvcrt = fake_msvcrt(held)
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt)
    monkeypatch.setattr(sys, "platform", "win32")
    first = locks.FolderLock(tmp_path / "ckpt", ".course_checkpoints.lock").acquire()
    assert msvcrt.calls == [(msvcrt.LK_NBLCK, 0, 1)]  # byte 0 of the lock file, non-blocking
    assert (tmp_path / "ckpt" / ".course_checkpoints.lock").read_bytes()[1:] == str(os.getpid()).encode()
    with pytest.raises(locks.FolderBusy, match=f"process {os.getpid()}"):
        locks.FolderLock(tmp_path / "ckpt", ".course_checkpoints.lock").acquire()
    first.release()
    assert msvcrt.calls[-1][0] == msvcrt.LK_UNLCK and held == {}
    with CheckpointManager(tmp_path / "ckpt", "lenet5") as manager:  # the manager goes the same way
        assert manager.locked and len(held) == 1
    assert held == {}


# ------------------------------------------------------------------------------------------ temporary files
def ended_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_names_carry_the_writer_pid():
    name = locks.temp_name("lenet5-1_2", ".ckpt")
    assert name.startswith(f".lenet5-1_2.tmp-p{os.getpid()}-") and name.endswith(".ckpt")


def test_staleness_is_proved_by_a_gone_writer_a_reused_pid_or_age(tmp_path):
    gone = tmp_path / f".a.tmp-p{ended_pid()}-0badf00d.ckpt"
    mine = tmp_path / f".b.tmp-p{os.getpid()}-0badf00d.ckpt"
    parent = tmp_path / f".c.tmp-p{os.getppid()}-0badf00d.ckpt"  # a live process that existed before the file
    for path in (gone, mine, parent):
        path.write_bytes(b"x")
    assert locks.is_stale_temp(gone)
    assert not locks.is_stale_temp(mine) and not locks.is_stale_temp(parent)
    # the pid now belongs to a process started after the file was last written: the writer is gone
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        reused = tmp_path / f".d.tmp-p{sleeper.pid}-0badf00d.ckpt"
        reused.write_bytes(b"x")
        assert not locks.is_stale_temp(reused)  # written after the process started: it may be the writer
        an_hour_ago = time.time() - 3600
        os.utime(reused, (an_hour_ago, an_hour_ago))
        assert locks.is_stale_temp(reused)
    finally:
        sleeper.kill()
        sleeper.wait()
    legacy = tmp_path / ".e.tmp-0badf00d.ckpt"
    legacy.write_bytes(b"x")
    assert not locks.is_stale_temp(legacy)
    os.utime(legacy, (time.time() - 2 * locks.LEGACY_TEMP_AGE,) * 2)
    assert locks.is_stale_temp(legacy)


def test_a_plain_save_checkpoint_cleans_what_killed_saves_left_and_nothing_live(tmp_path):
    from mindspore import nn

    gone = ended_pid()
    stale = [f".net.tmp-p{gone}-0badf00d.ckpt", f".net.tmp-p{gone}-0badf00d.tmp"]
    live = [f".net.tmp-p{os.getppid()}-0badf00d.ckpt", ".other.tmp-0badf00d.ckpt", "user.tmp-p1-0badf00d.ckpt"]
    for name in stale + live:
        (tmp_path / name).write_bytes(b"x" * 1000)
    save_checkpoint(nn.Dense(2, 2), tmp_path / "net.ckpt")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(live + ["net.ckpt"])


def test_a_killed_save_leaves_a_temp_file_that_the_next_save_removes(tmp_path):
    # the child stops inside MindSpore's write (its temporary file exists) and is killed there
    code = (f"import os, signal, mindspore as ms, course_lib.train.checkpoint as c\nfrom mindspore import nn\n"
            "real = ms.save_checkpoint\n"
            "def stop(obj, name, **kw):\n    real(obj, name, **kw)\n    os.kill(os.getpid(), signal.SIGKILL)\n"
            f"ms.save_checkpoint = stop\nc.save_checkpoint(nn.Dense(2, 2), {str(tmp_path / 'net.ckpt')!r})")
    assert subprocess.run([sys.executable, "-c", code], timeout=300).returncode == -9
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".net.tmp-p")
    from mindspore import nn

    save_checkpoint(nn.Dense(2, 2), tmp_path / "other.ckpt")
    assert [p.name for p in tmp_path.iterdir()] == ["other.ckpt"]


def test_write_probes_of_killed_runs_are_cleaned_when_a_folder_is_checked(tmp_path):
    from course_lib.paths import check_output_folder

    stale = tmp_path / f".write-test.tmp-p{ended_pid()}-0badf00d.tmp"
    live = tmp_path / f".write-test.tmp-p{os.getppid()}-0badf00d.tmp"
    stale.write_bytes(b"\0" * 65536)
    live.write_bytes(b"\0")
    check_output_folder(tmp_path, "checkpoint_dir", "pass another folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]


def test_where_a_folder_cannot_be_locked_the_owner_file_is_locked_instead(tmp_path, monkeypatch):
    import errno
    import fcntl
    import stat

    real = fcntl.flock

    def nfs_like(fd, operation):  # NFS maps flock to POSIX locks, which a read-only folder descriptor cannot take
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Bad file descriptor")
        return real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", nfs_like)
    with locks.FolderLock(tmp_path) as lock:
        assert lock.held and (tmp_path / ".course.lock").read_text() == str(os.getpid())
        with pytest.raises(locks.FolderBusy, match=f"process {os.getpid()}"):
            locks.FolderLock(tmp_path).acquire()
    with locks.FolderLock(tmp_path):
        pass


def test_a_symlink_planted_as_the_lock_file_is_never_written_through(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("a learner's notes")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / LOCK_NAME).symlink_to(victim)
    with CheckpointManager(folder, "lenet5") as manager:
        assert manager.locked
        with pytest.raises(CheckpointFolderBusy):
            CheckpointManager(folder, "lenet5").__enter__()
    assert victim.read_text() == "a learner's notes"
