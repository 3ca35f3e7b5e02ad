"""Which process of an msrun job this is, what the scheduler must do, and one log file per rank.

What MindSpore 2.10 does (``mindspore/parallel/cluster/process_entity/_api.py``, ``mindspore/communication/
management.py``): msrun starts, on the node whose address is ``--master_addr``, a *scheduler* process running the
same command as the workers, with ``MS_ROLE=MS_SCHED`` (and ``RANK_ID=0``, which msrun exports for it too), then
``--local_worker_num`` workers with ``MS_ROLE=MS_WORKER``. Every process gets ``MS_WORKER_NUM``, ``MS_SCHED_HOST``
and ``MS_SCHED_PORT``. The scheduler's only work is ``mindspore.communication.init()``: it always picks the
``mccl`` backend there, serves the cluster's meta server, and ends the process inside ``init()`` when the workers
are done (measured: no line after ``init()`` runs in it). So a script must not take locks, read data or write
checkpoints before it knows it is not the scheduler, and must not trust ``RANK_ID`` before ``init()``: the real
rank is ``get_rank()`` after it.

A multi-node job simulated on one machine (two msrun calls with ``--master_addr 127.0.0.1``) starts a scheduler
on *each* call, because 127.0.0.1 is an address of this machine; the second cannot bind the port and fails the
job. The scheduler of a node with ``--node_rank`` >= 1 therefore leaves at once: node 0's scheduler serves.
"""
import contextlib
import datetime
import os
import socket
import sys
from pathlib import Path

from course_lib.i18n import _

#: Environment variables msrun gives every process of a job, beside MS_ROLE.
CLUSTER_VARIABLES = ("MS_WORKER_NUM", "MS_SCHED_HOST", "MS_SCHED_PORT")
ROLES = {"MS_SCHED": "scheduler", "MS_WORKER": "worker"}
_MSRUN_MARKERS = ("mindspore.parallel.cluster.run",)
_UNSET = "unset MS_ROLE MS_WORKER_NUM MS_SCHED_HOST MS_SCHED_PORT (Windows: set MS_ROLE=)"


def role(environ=None) -> str:
    """"standalone" (no MS_ROLE), "scheduler" (MS_ROLE=MS_SCHED) or "worker" (MS_ROLE=MS_WORKER)."""
    environ = os.environ if environ is None else environ
    value = environ.get("MS_ROLE")
    if not value:
        return "standalone"
    if value not in ROLES:
        raise ValueError(_("MS_ROLE is {value!r}; the course's scripts run only as msrun's MS_SCHED or MS_WORKER. "
                           "Fix: {unset}, or launch with msrun.").format(value=value, unset=_UNSET))
    return ROLES[value]


def msrun_command(process=None):
    """The command line of the msrun process that started this one (parent or grandparent), or None."""
    try:
        import psutil

        process = process or psutil.Process()
        for ancestor in process.parents()[:3]:
            command = ancestor.cmdline()
            if any(marker in command for marker in _MSRUN_MARKERS) or any(
                    Path(part).name == "msrun" for part in command[:2]):
                return command
    except Exception:  # noqa: BLE001 - no permission to read the parent: treated as "not known"
        return None
    return None


def msrun_option(command, name: str):
    """The value of ``--name=value`` or ``--name value`` in an msrun command line, or None."""
    for i, part in enumerate(command or ()):
        if part.startswith(f"--{name}="):
            return part.split("=", 1)[1]
        if part == f"--{name}" and i + 1 < len(command):
            return command[i + 1]
    return None


def _scheduler_reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def check_environment(cfg, environ=None, launcher=None):
    """Refuse, before MindSpore is imported, a process whose msrun variables do not fit ``device_num``: a
    ``device_num > 1`` run without msrun, or an MS_ROLE left exported by an earlier msrun job (no scheduler)."""
    environ = os.environ if environ is None else environ
    kind = role(environ)
    if kind == "standalone":
        if cfg.device_num > 1:
            raise ValueError(_("device_num is {device_num}, but this process was not started by msrun. Fix: msrun "
                               "--worker_num={device_num} --local_worker_num={device_num} scripts/train.py ... "
                               "(msrun, not mpirun), or --device_num 1.").format(device_num=cfg.device_num))
        return kind
    missing = [name for name in CLUSTER_VARIABLES if not environ.get(name)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"  # Translators: {verb} is English "is"/"are"; leave it out
        raise ValueError(_("MS_ROLE is {ms_role}, but {missing} {verb} not set, so this process was not "
                           "started by msrun: MS_ROLE was probably left exported by an earlier msrun job or "
                           "notebook. Fix: {unset}, or launch with msrun.").format(
                               ms_role=environ['MS_ROLE'], missing=', '.join(missing), verb=verb, unset=_UNSET))
    workers = environ["MS_WORKER_NUM"]
    if not workers.isdigit() or int(workers) < 1:
        raise ValueError(_("MS_WORKER_NUM is {workers!r}, not a number of workers. Fix: {unset}, or launch with "
                           "msrun.").format(workers=workers, unset=_UNSET))
    launcher = msrun_command() if launcher is None else launcher
    if kind == "worker" and not launcher:
        host, port = environ["MS_SCHED_HOST"], environ["MS_SCHED_PORT"]
        if not port.isdigit() or not _scheduler_reachable(host, int(port)):
            raise ValueError(_("MS_ROLE is MS_WORKER, but no msrun started this process and no scheduler answers "
                               "at {host}:{port}: the msrun variables were probably left exported by an earlier "
                               "job. Fix: {unset}, or launch with msrun --worker_num=N ... scripts/train.py "
                               "--device_num N.").format(host=host, port=port, unset=_UNSET))
    if int(workers) != cfg.device_num:
        raise ValueError(_("msrun started {workers} workers (MS_WORKER_NUM={workers}), but device_num is "
                           "{device_num}. Fix: --device_num {workers} (one rank per worker), or msrun "
                           "--worker_num={device_num}.").format(workers=workers, device_num=cfg.device_num))
    return kind


def serve_as_scheduler(launcher=None) -> None:
    """The scheduler's work and nothing else: ``init()`` serves the cluster and ends this process when the workers
    are done. The scheduler msrun starts on a simulated extra node (``--node_rank`` >= 1) leaves at once."""
    launcher = msrun_command() if launcher is None else launcher
    node_rank = msrun_option(launcher, "node_rank")
    if node_rank is not None and node_rank.isdigit() and int(node_rank) >= 1:
        print(_("scheduler of node {node_rank}: msrun started it because --master_addr is an address of this "
                "machine (a multi-node job on one machine); node 0's scheduler serves the job, so this one "
                "exits.").format(node_rank=node_rank), flush=True)
        return
    print(_("scheduler: serving {workers} workers at "
            "{host}:{port} (no data, no checkpoints)").format(
                workers=os.environ.get('MS_WORKER_NUM'),
                host=os.environ.get('MS_SCHED_HOST'),
                port=os.environ.get('MS_SCHED_PORT')), flush=True)
    from mindspore.communication import init

    init()  # returns only if MindSpore changes how the scheduler ends


# ------------------------------------------------------------------------------------------ per-rank logs
class _RankStream:
    """A text stream that writes every line to ``stream`` (with ``prefix``) and to the rank's log file."""

    def __init__(self, stream, prefix: str, log):
        self._stream, self._prefix, self._log, self._line_start = stream, prefix, log, True

    def write(self, text):
        if not text:
            return 0
        pieces = []
        for piece in text.splitlines(keepends=True):
            if self._line_start:
                pieces.append(self._prefix)
            pieces.append(piece)
            self._line_start = piece.endswith(("\n", "\r"))
        shown = "".join(pieces)
        self._stream.write(shown)
        if not self._log.closed:
            self._log.write(shown)
        return len(text)

    def flush(self):
        self._stream.flush()
        if not self._log.closed:
            self._log.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def rank_prefix(rank: int, size: int) -> str:
    return f"[rank {rank}/{size}] "


def log_path(folder, rank: int) -> Path:
    return Path(folder) / "logs" / f"rank_{rank}.log"


@contextlib.contextmanager
def rank_logging(folder, rank: int, size: int, argv=()):
    """While active, stdout and stderr also go to ``<folder>/logs/rank_<rank>.log`` (appended, so a resumed run
    adds to it), and in a distributed run every line starts with ``[rank r/n]``."""
    path = log_path(folder, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = rank_prefix(rank, size) if size > 1 else ""
    with open(path, "a", encoding="utf-8") as log:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        log.write(f"=== {stamp}, process {os.getpid()}, rank {rank}/{size}: train.py {' '.join(argv)}\n")
        log.flush()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _RankStream(saved[0], prefix, log), _RankStream(saved[1], prefix, log)
        try:
            yield path
        except BaseException as error:
            log.write(f"=== stopped: {type(error).__name__}: {str(error).strip()}\n")
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = saved
