"""The watchdog of one ``course_lib.parallel.launch.launch``: ends the job's processes when the launcher is gone.

Run by ``launch`` as ``python _watchdog.py <launch_id> <launcher pid> <launcher start time>`` in a session
of its own, with a pipe from the launcher on stdin, before msrun starts. When the launcher ends in any way
(``kill -9``, a restarted notebook kernel) the OS closes the pipe; the watchdog also polls the launcher's pid.
It then kills every process that carries ``COURSE_LAUNCH_ID=<launch_id>`` in its environment (msrun, its
scheduler and the workers, which msrun puts in sessions of their own), and exits. Only psutil is imported, so
it starts fast and needs nothing from the course's package.
"""
import os
import signal
import sys
import threading

import psutil

LAUNCH_ID_ENV = "COURSE_LAUNCH_ID"
POLL_SECONDS = 0.5


def launcher_alive(pid: int, started: float) -> bool:
    try:
        return abs(psutil.Process(pid).create_time() - started) < 1.0 and psutil.Process(pid).status() != \
            psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def job_processes(launch_id: str) -> list:
    found = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(LAUNCH_ID_ENV) == launch_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def end_job(launch_id: str) -> int:
    """Kill the job's processes (and their process groups on POSIX) until none is left; return how many."""
    ended = 0
    for _ in range(10):
        victims = job_processes(launch_id)
        if not victims:
            break
        if hasattr(os, "killpg"):
            groups = set()
            for victim in victims:
                try:
                    groups.add(os.getpgid(victim.pid))
                except OSError:
                    continue
            for group in groups - {os.getpgrp()}:
                try:
                    os.killpg(group, signal.SIGKILL)
                except OSError:
                    pass
        for victim in victims:
            try:
                victim.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(victims, timeout=5)
        ended += len(victims)
    return ended


def main(argv) -> int:
    launch_id, pid, started = argv[1], int(argv[2]), float(argv[3])
    closed = threading.Event()

    def wait_for_eof():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        closed.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    while not closed.wait(POLL_SECONDS):
        if not launcher_alive(pid, started):
            break
    end_job(launch_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
