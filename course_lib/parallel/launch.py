"""Data-parallel training (数据并行) on one machine: launch workers with MindSpore's ``msrun`` and read their reports.

``launch(script, args)`` runs ``msrun --worker_num=N --local_worker_num=N --master_addr=127.0.0.1 ...`` so that
every worker is started by the *same* Python interpreter as the caller, bounds the run with a timeout, and on
failure or timeout kills every process of the job (msrun, its scheduler, the workers and their children) before
raising an error that quotes the failing worker's log. The worker's side (its reports, what it trained on, its role) is
``course_lib.parallel.worker``.

What msrun 2.10 does (read in ``mindspore/parallel/cluster/process_entity/_api.py``, measured here): it starts a
scheduler process and N workers, each running ``python <script> <args>`` with ``python`` looked up on ``PATH``;
workers get ``MS_ROLE=MS_WORKER``, ``MS_WORKER_NUM``, ``RANK_ID``, ``MS_SCHED_HOST``/``MS_SCHED_PORT`` and are put
in sessions of their own (``os.setsid``), so killing msrun's process group alone leaves them running.
"""
import dataclasses
import json
import math
import numbers
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from course_lib.i18n import _
from course_lib.locks import FolderBusy, FolderLock, clean_stale_temp_files
from course_lib.parallel.worker import MSRUN_MODULE, MSRUN_VARIABLES, REPORT_MARKER, parse_worker_report
from course_lib.validation import check_int, check_real

__all__ = [
    "LaunchResult", "LogDirBusy", "DistributedLaunchError", "DistributedTimeoutError", "launch", "find_free_port",
    "find_launch_processes", "log_tail", "LAUNCH_ID_ENV", "LOOPBACK", "MAX_WORKERS",
]

#: Environment variable carrying a per-launch id into every process of the job (used to find leftovers).
LAUNCH_ID_ENV = "COURSE_LAUNCH_ID"
#: The only address the course's jobs use: everything stays on this machine.
LOOPBACK = "127.0.0.1"
#: Upper bound for ``worker_num`` on one machine (msrun's own default is 8 per node).
MAX_WORKERS = 16
#: Line msrun 2.10 logs as soon as a worker exits with a non-zero code. msrun then still waits up to ~30 s for
#: the scheduler to notice the lost node (measured); ``launch`` ends the job right away instead.
_WORKER_FAILED = re.compile(r"Worker process (\d+) exit with exception")
_FAIL_GRACE_SECONDS = 2.0
_LOG_NOISE_PREFIXES = ("[INFO]", "[WARNING]", "[DEBUG]")


# ------------------------------------------------------------------------------------------------ errors
class DistributedLaunchError(RuntimeError):
    """A distributed job failed; ``.result`` holds the ``LaunchResult`` (logs of every rank) for inspection."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class DistributedTimeoutError(DistributedLaunchError):
    """A distributed job ran longer than its timeout and was killed (all its processes)."""


# ------------------------------------------------------------------------------------------------ result
@dataclasses.dataclass
class LaunchResult:
    """What a finished (or killed) msrun job left behind.

    ``returncode``: msrun's exit code (``None`` if it was killed on timeout); ``seconds``: wall time from start to
    the end of clean-up; ``logs``: rank -> text of ``worker_<rank>.log``; ``launcher_output``: msrun's own output;
    ``scheduler_log``: text of ``scheduler.log``; ``log_dir``; ``command``; ``master_port``; ``launch_id``.
    """
    returncode: int | None
    seconds: float
    logs: dict
    launcher_output: str
    scheduler_log: str
    log_dir: Path
    command: list
    master_port: int
    launch_id: str
    timed_out: bool = False

    @property
    def reports(self) -> dict:
        """rank -> ``parse_worker_report`` of that rank's log."""
        return {rank: parse_worker_report(text) for rank, text in sorted(self.logs.items())}

    def tail(self, rank: int, lines: int = 20) -> str:
        """The last ``lines`` meaningful lines of one rank's log (MindSpore INFO/WARNING lines left out)."""
        if rank not in self.logs:
            raise ValueError(_("rank must be one of {ranks}, got {rank!r}.").format(ranks=sorted(self.logs), rank=rank))
        return log_tail(self.logs[rank], lines)


# ------------------------------------------------------------------------------------------- validation
def _check_script(script) -> Path:
    if not isinstance(script, (str, os.PathLike)):
        raise TypeError(_("script must be the path (str or Path) of a Python file, got {script!r}. Fix: e.g. "
                          "course_lib.paths.PROJECT_ROOT / 'scripts' / 'distributed_worker.py'.").format(script=script))
    path = Path(script).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(_("Worker script {path} does not exist. Fix: pass the path of the script every "
                                  "worker should run, e.g. scripts/distributed_worker.py in the repository.").format(
                                      path=path))
    if path.suffix != ".py":
        raise ValueError(_("script must be a .py file (msrun starts it as `python <script>`), got "
                           "{file!r}.").format(file=path.name))
    return path


def _check_args(args) -> list:
    if isinstance(args, (str, bytes)) or not isinstance(args, (list, tuple)):
        raise TypeError(_("args must be a list of command-line arguments, got {args!r}. Fix: split them, e.g. "
                          "['--epochs', '1'] instead of '--epochs 1'.").format(args=args))
    checked = []
    for item in args:
        if isinstance(item, bool) or not isinstance(item, (str, os.PathLike, numbers.Real)):
            raise TypeError(_("every item of args must be a str, a number or a Path, got {item!r} ({item_type}). "
                              "Fix: e.g. ['--steps', 5, '--out', some_path].").format(
                                  item=item, item_type=type(item).__name__))
        checked.append(os.fspath(item) if isinstance(item, os.PathLike) else str(item))
    return checked


# ------------------------------------------------------------------------------------------------ ports
def find_free_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that nothing listens on right now (the OS picks it), for msrun's scheduler."""
    if host != LOOPBACK:
        raise ValueError(_("host must be {loopback!r}: the course's jobs stay on this machine, got {host!r}.").format(
            loopback=LOOPBACK, host=host))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return True
    return False


# ------------------------------------------------------------------------------------ msrun's environment
#: What msrun 2.10 exports to its scheduler and workers (``mindspore/parallel/cluster/process_entity/_api.py``).
# ----------------------------------------------------------------------------------------- interpreter
def _interpreter_dir(log_dir: Path) -> Path:
    """A folder whose ``python`` is this process's interpreter, to put first on the workers' PATH.

    msrun runs ``python <script>`` from PATH (``_generate_cmd_args_list``), not ``sys.executable``. A virtualenv's
    bin folder already holds such a ``python``; otherwise a two-line shim that execs ``sys.executable`` is written.
    """
    folder = Path(sys.executable).parent
    candidate = folder / "python"
    try:
        if candidate.exists() and os.path.samefile(candidate, sys.executable):
            return folder
    except OSError:
        pass
    shim_dir = log_dir / ".interpreter"
    shim_dir.mkdir(parents=True, exist_ok=True)
    shim = shim_dir / "python"
    temp = shim_dir / f".python.{uuid.uuid4().hex[:8]}"
    temp.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    temp.chmod(0o755)
    os.replace(temp, shim)
    return shim_dir


# --------------------------------------------------------------------------------------------- processes
def find_launch_processes(launch_id: str) -> list:
    """Running processes that carry ``COURSE_LAUNCH_ID=<launch_id>`` in their environment (one launch's job)."""
    if not isinstance(launch_id, str):
        raise TypeError(_("launch_id must be a non-empty str, got {launch_id!r} ({launch_id_type}).").format(
            launch_id=launch_id, launch_id_type=type(launch_id).__name__))
    if not launch_id:
        raise ValueError(_("launch_id must be a non-empty str, got {launch_id!r}.").format(launch_id=launch_id))
    needle = launch_id
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(LAUNCH_ID_ENV) == needle and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def _kill_job(proc: subprocess.Popen, launch_id: str) -> None:
    """SIGKILL msrun's process group, every worker's own group and anything else tagged with this launch."""
    try:
        victims = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        victims = []
    victims += find_launch_processes(launch_id)
    own_group = os.getpgrp()
    groups = {proc.pid}  # start_new_session=True: msrun leads its own group (with the scheduler)
    for victim in victims:
        try:
            groups.add(os.getpgid(victim.pid))
        except ProcessLookupError:
            continue
    for group in groups - {own_group}:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for victim in victims:
        try:
            victim.kill()
        except psutil.NoSuchProcess:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass
    psutil.wait_procs([v for v in victims if v.pid != proc.pid], timeout=5)


# ------------------------------------------------------------------------------------------------- logs
def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _collect_logs(log_dir: Path, worker_num: int) -> dict:
    return {rank: _read(log_dir / f"worker_{rank}.log") for rank in range(worker_num)}


def log_tail(text: str, lines: int = 20) -> str:
    """The last ``lines`` lines of a worker log without MindSpore's INFO/WARNING lines; starts at the last
    Python traceback if there is one, so the error and its location are both kept."""
    kept = [line.rstrip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith(_LOG_NOISE_PREFIXES)]
    starts = [i for i, line in enumerate(kept) if line.startswith("Traceback (most recent call last)")]
    if starts and len(kept) - starts[-1] <= 3 * lines:
        kept = kept[starts[-1]:]
        if len(kept) > lines:
            kept = kept[:2] + ["  ..."] + kept[-(lines - 3):]
        return "\n".join(kept)
    return "\n".join(kept[-lines:])


def _failed_ranks(logs: dict, launcher_output: str, worker_pids: dict) -> list:
    """Ranks that failed: the one msrun saw exit first (by pid), then any whose log holds a Python traceback."""
    ranks = [worker_pids[int(pid)] for pid in _WORKER_FAILED.findall(launcher_output) if int(pid) in worker_pids]
    ranks += [rank for rank, text in sorted(logs.items()) if "Traceback (most recent call last)" in text]
    return list(dict.fromkeys(ranks))


def _note_worker_pids(msrun_pid: int, worker_pids: dict) -> None:
    """pid -> rank of msrun's worker children (msrun exports RANK_ID and MS_ROLE=MS_WORKER to each)."""
    try:
        children = psutil.Process(msrun_pid).children()
    except psutil.NoSuchProcess:
        return
    for child in children:
        if child.pid in worker_pids:
            continue
        try:
            environ = child.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
        if environ.get("MS_ROLE") == "MS_WORKER" and environ.get("RANK_ID", "").isdigit():
            worker_pids[child.pid] = int(environ["RANK_ID"])


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty log)"


# ----------------------------------------------------------------------------------------------- launch
#: Inside ``log_dir``: the names of the files and folders the last ``launch`` there created (JSON list).
LAUNCH_MANIFEST = ".course_launch_files.json"


def _is_launch_output(name: str) -> bool:
    """Names msrun and MindSpore write into a log folder (worker logs, scheduler log, per-rank caches)."""
    return (re.fullmatch(r"worker_\d+\.log|rank_\d+", name) is not None
            or name in ("scheduler.log", "msrun.log", ".interpreter"))


def _prepare_log_dir(log_dir: Path) -> set:
    """Remove what the previous ``launch`` into ``log_dir`` created (and only that); refuse foreign logs.

    Returns the names present before this launch, so that ``_record_launch_files`` can list the new ones.
    """
    manifest = log_dir / LAUNCH_MANIFEST
    clean_stale_temp_files(log_dir, re.compile(r"^\." + re.escape(LAUNCH_MANIFEST) + r"\.tmp-p\d+-[0-9a-f]{8}$"))
    previous = []
    if manifest.is_file():
        try:
            previous = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            previous = []
    if isinstance(previous, dict):  # {"files": [...], "launch_id": ..., "launcher_pid": ...}
        old_id = previous.get("launch_id")
        if isinstance(old_id, str) and re.fullmatch(r"[0-9a-f]{32}", old_id):
            # We hold log_dir's lock, so the launcher of that job is gone: whatever still carries its id is an
            # orphan (a launcher killed before its watchdog could act). It would keep writing into these logs.
            _end_orphans(old_id)
        previous = previous.get("files", [])
    for name in previous if isinstance(previous, list) else ():
        # only plain names of launch outputs: a hand-edited manifest cannot point outside the folder
        if not isinstance(name, str) or "/" in name or os.sep in name or not _is_launch_output(name):
            continue
        old = log_dir / name
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        elif old.exists() or old.is_symlink():
            old.unlink(missing_ok=True)
    manifest.unlink(missing_ok=True)
    foreign = sorted(path.name for path in log_dir.iterdir() if _is_launch_output(path.name))
    if foreign:
        shown = ", ".join(foreign[:6]) + (f" … ({len(foreign)} in all)" if len(foreign) > 6 else "")
        raise ValueError(_("log_dir {log_dir} already holds {shown}, which no course launch there created; msrun "
                           "would overwrite or mix with them, and launch never deletes files it did not write. "
                           "Fix: pass an empty or new folder as log_dir (or log_dir=None for a temporary one), or "
                           "move those files away.").format(log_dir=log_dir, shown=shown))
    return set(os.listdir(log_dir))


def _record_launch_files(log_dir: Path, before: set, worker_num: int, launch_id: str) -> None:
    """Record in ``LAUNCH_MANIFEST`` what this launch created and its launch id (called before msrun starts,
    with the names it will write, so that even a killed notebook kernel leaves a manifest; and again at the
    end). Written atomically: a reader never sees half a manifest."""
    expected = {"msrun.log", "scheduler.log", *(f"worker_{rank}.log" for rank in range(worker_num)),
                *(f"rank_{rank}" for rank in range(worker_num))}
    try:
        created = sorted(name for name in (set(os.listdir(log_dir)) | expected) - before
                         if _is_launch_output(name))
        temp = log_dir / f".{LAUNCH_MANIFEST}.tmp-p{os.getpid()}-{uuid.uuid4().hex[:8]}"
        temp.write_text(json.dumps({"files": created, "launch_id": launch_id, "launcher_pid": os.getpid()}),
                        encoding="utf-8")
        os.replace(temp, log_dir / LAUNCH_MANIFEST)
    except OSError:
        pass


def _end_orphans(launch_id: str) -> list:
    """Kill the processes of an earlier launch (found by its id in their environment); return their pids."""
    from course_lib.parallel._watchdog import end_job

    orphans = [proc.pid for proc in find_launch_processes(launch_id)]
    if orphans:
        end_job(launch_id)
        print(_("launch: ended {n_orphans} leftover process(es) of an earlier launch into this log_dir whose "
                "launcher was killed (pids {pids}).").format(
                    n_orphans=len(orphans), pids=', '.join(map(str, orphans))), flush=True)
    return orphans


class LogDirBusy(FolderBusy):
    """Another live ``launch`` uses this ``log_dir``."""


_LOG_DIR_LOCK = ".course_launch.lock"
_WATCHDOG = Path(__file__).resolve().parent / "_watchdog.py"


def _start_watchdog(launch_id: str) -> subprocess.Popen:
    """The process that ends this job if this process dies (see course_lib/parallel/_watchdog.py)."""
    env = {key: value for key, value in os.environ.items() if key != LAUNCH_ID_ENV}
    started = psutil.Process().create_time()
    kwargs = {"start_new_session": True} if os.name != "nt" else {
        "creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    return subprocess.Popen([sys.executable, str(_WATCHDOG), launch_id, str(os.getpid()), repr(started)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            **kwargs)


def _stop_watchdog(watchdog: subprocess.Popen) -> None:
    try:
        watchdog.stdin.close()  # EOF: the watchdog sweeps once more (nothing is left) and exits
    except OSError:
        pass
    try:
        watchdog.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - it only scans the process table
        watchdog.kill()
        watchdog.wait()


def _msrun_log_dir(log_dir: Path) -> str:
    """The --log_dir to give msrun, which starts in ``log_dir``: ".", so that no path with spaces or
    non-ASCII characters is handed to MindSpore at all."""
    return "."


def launch(script, args=(), worker_num: int = 2, timeout: float = 300, log_dir=None, master_port=None,
           echo: bool = False, env=None) -> LaunchResult:
    """Run ``script`` on ``worker_num`` processes of this machine with msrun; return a ``LaunchResult``.

    Workers start with this process's interpreter, talk over ``127.0.0.1:<master_port>`` (a free port if None)
    and write ``worker_<rank>.log`` into ``log_dir`` (a new temporary folder if None). What an earlier ``launch``
    wrote there is removed first, and nothing else: logs that no launch recorded are refused, never deleted.
    ``echo`` prints the workers' own lines as they arrive, prefixed ``[rank r]``. ``env`` adds
    environment variables for the workers. If a worker fails the job is ended at once and
    ``DistributedLaunchError`` quotes that worker's log; after ``timeout`` seconds every process of the job is
    killed and ``DistributedTimeoutError`` is raised. No process of the job outlives this call.

    One job at a time per ``log_dir``: the folder is locked by the OS for the whole job (``course_lib.locks``),
    so a second launch there gets ``LogDirBusy`` instead of deleting or mixing the first one's logs. If the
    process that called ``launch`` is killed (a restarted notebook kernel), a watchdog process started before
    msrun ends msrun, its scheduler and the workers; the next launch into the same ``log_dir`` also ends any
    process still carrying the launch id recorded there. msrun runs inside ``log_dir`` with ``--log_dir=.``, so
    a folder path with spaces or Chinese characters works.
    """
    script = _check_script(script)
    args = _check_args(args)
    worker_num = check_int("worker_num", worker_num, 1, MAX_WORKERS, fix=_(
        "pass how many processes to start, e.g. 2 (at most {max_workers} on one machine)").format(
        max_workers=MAX_WORKERS))
    timeout = check_real("timeout", timeout, 0, low_open=True,
                         fix=_("e.g. timeout=300 (seconds; the job is killed after that long)"))
    if master_port is None:
        master_port = find_free_port()
    else:
        master_port = check_int("master_port", master_port, 1024, 65535,
                                fix=_("pass a free TCP port above 1023, or None to let launch pick one"))
        if _port_in_use(master_port):
            raise ValueError(_("master_port {master_port} is already in use on {loopback}. Fix: pass "
                               "master_port=None to pick a free port.").format(
                                   master_port=master_port, loopback=LOOPBACK))
    if not isinstance(echo, bool):
        raise TypeError(_("echo must be True or False, got {echo!r}.").format(echo=echo))
    if env is not None and (not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise TypeError(_("env must be a dict of str -> str, got {env!r}. Fix: e.g. env={{'GLOG_v': '2'}}.").format(
            env=env))
    if log_dir is None:
        log_dir = Path(tempfile.mkdtemp(prefix="course-msrun-"))
    elif not isinstance(log_dir, (str, os.PathLike)):
        raise TypeError(_("log_dir must be a folder path (str or Path) or None, got {log_dir!r}.").format(
            log_dir=log_dir))
    log_dir = Path(log_dir).expanduser().resolve()
    if log_dir.exists() and not log_dir.is_dir():
        raise ValueError(_("log_dir {log_dir} is a file; pass a folder (it is created if missing).").format(
            log_dir=log_dir))
    log_dir.mkdir(parents=True, exist_ok=True)
    lock = FolderLock(log_dir, _LOG_DIR_LOCK, error=LogDirBusy, busy_message=_(
        "log_dir {folder} is in use by another launch ({owner}); two jobs in one folder would delete or mix "
        "each other's logs. Fix: wait for that job to finish, or pass another log_dir (log_dir=None makes a new "
        "temporary one)."))
    lock.acquire()
    try:
        return _launch_locked(script, args, worker_num, timeout, log_dir, master_port, echo, env)
    finally:
        lock.release()


def _launch_locked(script, args, worker_num, timeout, log_dir, master_port, echo, env) -> LaunchResult:
    before = _prepare_log_dir(log_dir)
    launch_id = uuid.uuid4().hex
    _record_launch_files(log_dir, before, worker_num, launch_id)
    # An earlier msrun's variables left in this process's environment would reach msrun, which reads RANK_ID,
    # RANK_SIZE and MS_SIMULATION_LEVEL itself: the new job gets only what msrun sets (and what env= asks for).
    child_env = {key: value for key, value in os.environ.items() if key not in MSRUN_VARIABLES}
    child_env.update(env or {})
    child_env["PATH"] = os.pathsep.join(
        [str(_interpreter_dir(log_dir)), *filter(None, child_env.get("PATH", "").split(os.pathsep))])
    child_env[LAUNCH_ID_ENV] = launch_id
    child_env["PYTHONUNBUFFERED"] = "1"
    child_env.setdefault("GLOG_v", "3")
    command = [sys.executable, "-m", MSRUN_MODULE, f"--worker_num={worker_num}",
               f"--local_worker_num={worker_num}", f"--master_addr={LOOPBACK}", f"--master_port={master_port}",
               # msrun documents --tail_worker_log as -1 (all) or rank ids. -2 is not documented: msrun reads any
               # value but -1 as a list of ranks (enable_tail_worker_log in mindspore/parallel/cluster/
               # process_entity/_api.py), so -2 names no rank and no worker log is copied into msrun.log, which
               # launch() scans for worker failures; the workers' own logs are read instead.
               "--join=True", "--tail_worker_log=-2", f"--log_dir={_msrun_log_dir(log_dir)}",
               f"--cluster_time_out={max(1, int(math.ceil(timeout)))}",
               str(script), *args]
    launcher_log = log_dir / "msrun.log"
    start = time.perf_counter()
    watchdog = _start_watchdog(launch_id)
    try:
        with open(launcher_log, "w", encoding="utf-8") as launcher_out:
            proc = subprocess.Popen(command, cwd=log_dir, env=child_env, stdout=launcher_out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        _stop_watchdog(watchdog)
        raise
    offsets = dict.fromkeys(range(worker_num), 0)
    worker_pids = {}
    timed_out = False
    failure_seen_at = None
    try:
        while proc.poll() is None:
            now = time.perf_counter()
            if now - start > timeout:
                timed_out = True
                break
            if len(worker_pids) < worker_num:
                _note_worker_pids(proc.pid, worker_pids)
            if failure_seen_at is None and _WORKER_FAILED.search(_read(launcher_log)):
                failure_seen_at = now
            if failure_seen_at is not None and now - failure_seen_at > _FAIL_GRACE_SECONDS:
                break
            if echo:
                _echo_new_lines(log_dir, offsets)
            time.sleep(0.2)
    finally:
        # Always: kill what is still running (timeout, failure, or Ctrl+C in a notebook) and any leftover.
        _kill_job(proc, launch_id)
        _stop_watchdog(watchdog)
        _record_launch_files(log_dir, before, worker_num, launch_id)
    if echo:
        _echo_new_lines(log_dir, offsets)
    seconds = time.perf_counter() - start
    result = LaunchResult(returncode=None if timed_out else proc.returncode, seconds=seconds,
                          logs=_collect_logs(log_dir, worker_num), launcher_output=_read(launcher_log),
                          scheduler_log=_read(log_dir / "scheduler.log"), log_dir=log_dir, command=command,
                          master_port=master_port, launch_id=launch_id, timed_out=timed_out)
    if timed_out:
        tails = "\n".join(f"  worker_{rank}.log:\n{_indent(result.tail(rank, 6))}" for rank in result.logs)
        raise DistributedTimeoutError(
            _("Distributed job timed out: {script_name} on {worker_num} workers ran longer than {timeout:g} s and "
              "was killed with all its processes ({seconds:.1f} s in all). Last lines of each "
              "worker:\n{tails}\nLogs: {log_dir}. Fix: raise timeout=, or make the run smaller (fewer steps/epochs); "
              "a worker stuck in init() or a collective usually means another rank died or never started.").format(
                  script_name=script.name, worker_num=worker_num, timeout=timeout, seconds=seconds, tails=tails,
                  log_dir=log_dir), result)
    if failure_seen_at is not None or result.returncode != 0:
        if not any(text.strip() for text in result.logs.values()):  # msrun failed before any worker wrote
            raise DistributedLaunchError(
                _("Distributed job failed before any worker started: msrun exited with code {code} "
                  "after {seconds:.1f} s. Its output:\n{output}\nLogs: {log_dir}. Fix the error "
                  "above and launch again.").format(
                      code=result.returncode, seconds=seconds,
                      output=_indent(log_tail(result.launcher_output)), log_dir=log_dir), result)
        failed = _failed_ranks(result.logs, result.launcher_output, worker_pids) or sorted(result.logs)
        rank = failed[0]
        raise DistributedLaunchError(
            _("Distributed job failed: rank {rank} of {worker_num} exited with an error after {seconds:.1f} s (the "
              "other workers were stopped). Last lines of worker_{rank}.log:\n{tail}\nLogs: "
              "{log_dir}. Fix the error above and launch again.").format(
                  rank=rank, worker_num=worker_num, seconds=seconds,
                  tail=_indent(result.tail(rank)), log_dir=log_dir), result)
    return result


def _echo_new_lines(log_dir: Path, offsets: dict) -> None:
    for rank, offset in offsets.items():
        path = log_dir / f"worker_{rank}.log"
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
        except FileNotFoundError:
            continue
        complete = chunk.rfind(b"\n") + 1
        offsets[rank] = offset + complete
        for line in chunk[:complete].decode(errors="replace").splitlines():
            if line.strip() and not line.lstrip().startswith(_LOG_NOISE_PREFIXES) and REPORT_MARKER not in line:
                print(f"[rank {rank}] {line}", flush=True)
