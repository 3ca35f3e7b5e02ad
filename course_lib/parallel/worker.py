"""The worker's side of data-parallel training (数据并行): what a script started by msrun uses.

``msrun_role()`` tells whether this process is an msrun worker (and not a shell with an earlier msrun's variables
left exported). Workers print one-line JSON reports (``print_report``) that the launcher reads back
(``parse_worker_report``, ``course_lib.parallel.launch``); ``ShardRecorder`` and ``parameter_checksum`` make what a
rank trained on and what it ended with comparable across ranks.
"""
import hashlib
import json
import os
import re
import socket
from collections import Counter

import numpy as np
import psutil

from course_lib.i18n import _

__all__ = ["print_report", "parse_worker_report", "ShardRecorder", "image_fingerprint", "dataset_fingerprints",
           "parameter_checksum", "REPORT_MARKER", "MSRUN_MODULE", "MSRUN_VARIABLES", "LeftoverMsrunEnvironment",
           "msrun_role", "msrun_variables"]

#: Workers print ``@@report {json}`` lines; ``parse_worker_report`` collects them.
REPORT_MARKER = "@@report "
#: msrun's entry point, run as ``python -m`` with the caller's interpreter (same as the ``msrun`` console script).
MSRUN_MODULE = "mindspore.parallel.cluster.run"


#: msrun itself also reads RANK_ID, RANK_SIZE and MS_SIMULATION_LEVEL from its own environment.
MSRUN_VARIABLES = ("MS_ROLE", "MS_WORKER_NUM", "MS_SCHED_HOST", "MS_SCHED_PORT", "MS_TOPO_TIMEOUT", "MS_NODE_ID",
                   "RANK_ID", "RANK_SIZE", "DEVICE_ID", "MS_SIMULATION_LEVEL")
_MSRUN_ROLES = ("MS_WORKER", "MS_SCHED")


class LeftoverMsrunEnvironment(RuntimeError):
    """msrun's variables (MS_ROLE, ...) are set, but this process was not started by a running msrun job."""


def _started_by_msrun(pid=None, depth: int = 4) -> bool:
    """Whether msrun (``msrun`` or ``python -m mindspore.parallel.cluster.run``) is among the ancestors."""
    try:
        proc = psutil.Process(pid)
        for _ in range(depth):
            proc = proc.parent()
            if proc is None:
                return False
            cmdline = " ".join(proc.cmdline())
            if MSRUN_MODULE in cmdline or re.search(r"(^|[/\\ ])msrun(\.exe)?( |$)", cmdline):
                return True
    except (psutil.Error, OSError):
        return False
    return False


def _scheduler_reachable(host: str, port: str, timeout: float = 1.0) -> bool:
    try:
        port = int(port)
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def msrun_variables(environ=None) -> dict:
    """The msrun variables (``MSRUN_VARIABLES``) set in ``environ`` (default: this process's environment)."""
    environ = os.environ if environ is None else environ
    return {key: environ[key] for key in MSRUN_VARIABLES if key in environ}


def msrun_role(environ=None, on_leftover: str = "warn"):
    """This process's msrun role: ``"MS_WORKER"`` or ``"MS_SCHED"`` inside a running msrun job, else ``None``.

    A shell or kernel where an earlier msrun's ``MS_ROLE`` (and MS_WORKER_NUM, MS_SCHED_HOST, RANK_ID, ...) was
    left exported is not a worker: no msrun is among this process's ancestors and nothing listens on
    ``MS_SCHED_HOST:MS_SCHED_PORT``. Such leftovers give ``None`` and, by ``on_leftover``: ``"warn"`` (a
    warning naming the variables and the fix), ``"raise"`` (``LeftoverMsrunEnvironment``) or ``"ignore"``.
    Use it instead of ``"MS_ROLE" in os.environ`` to decide whether a script runs as an msrun worker.
    """
    import warnings

    if on_leftover not in ("warn", "raise", "ignore"):
        raise ValueError(_("on_leftover must be 'warn', 'raise' or 'ignore', got {on_leftover!r}.").format(
            on_leftover=on_leftover))
    use_os = environ is None
    environ = os.environ if environ is None else environ
    found = msrun_variables(environ)
    role = environ.get("MS_ROLE")
    if not found:
        return None
    if role in _MSRUN_ROLES and "MS_SCHED_HOST" in environ and "MS_SCHED_PORT" in environ:
        if (use_os and _started_by_msrun()) or _scheduler_reachable(environ["MS_SCHED_HOST"],
                                                                     environ["MS_SCHED_PORT"]):
            return role
    if role is None and not any(key in found for key in ("MS_WORKER_NUM", "MS_SCHED_HOST", "MS_SCHED_PORT")):
        return None  # RANK_ID / DEVICE_ID alone are common settings, not msrun leftovers
    shown = ", ".join(f"{key}={value}" for key, value in found.items())
    unset = " ".join(found)
    message = _("msrun's environment variables are set ({shown}), but this process is not part of a running "
                "msrun job (no msrun started it and no scheduler answers at {host}:{port}): they were left "
                "exported by an earlier msrun, and are ignored here. Fix: `unset {unset}` in this shell "
                "(PowerShell: Remove-Item Env:MS_ROLE, ...), or open a new terminal or kernel.").format(
                    shown=shown, host=environ.get("MS_SCHED_HOST", "?"), port=environ.get("MS_SCHED_PORT", "?"),
                    unset=unset)
    if on_leftover == "raise":
        raise LeftoverMsrunEnvironment(message)
    if on_leftover == "warn":
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return None


# ----------------------------------------------------------------------------------------------- reports
def print_report(kind: str, **fields) -> None:
    """Print one machine-readable report line, ``@@report {"kind": ..., ...}``, for ``parse_worker_report``."""
    if not isinstance(kind, str):
        raise TypeError(_("kind must be a non-empty str without spaces, got {kind!r} ({kind_type}). Fix: e.g. "
                          "'model.params'.").format(kind=kind, kind_type=type(kind).__name__))
    if not kind or any(c.isspace() for c in kind):
        raise ValueError(_("kind must be a non-empty str without spaces, got {kind!r}. Fix: e.g. "
                           "'model.params'.").format(kind=kind))
    print(REPORT_MARKER + json.dumps({"kind": kind, **fields}, sort_keys=True), flush=True)


def parse_worker_report(log_text: str) -> dict:
    """Collect the ``@@report`` lines of one worker log: ``{kind: fields}`` (a later report of a kind wins)."""
    if not isinstance(log_text, str):
        raise TypeError(_("log_text must be the text of a worker log (str), got {log_text_type}.").format(
            log_text_type=type(log_text).__name__))
    decoder = json.JSONDecoder()
    reports = {}
    for number, line in enumerate(log_text.splitlines(), start=1):
        at = line.find(REPORT_MARKER)
        if at < 0:
            continue
        payload = line[at + len(REPORT_MARKER):]
        try:
            fields, _end = decoder.raw_decode(payload)  # ignores anything a C++ logger wrote after the JSON
        except json.JSONDecodeError as error:
            raise ValueError(_("Malformed report on log line {number}: {payload!r} ({error_msg}). Reports are "
                               "written by course_lib.parallel.launch.print_report.").format(
                                   number=number, payload=payload[:80], error_msg=error.msg)) from None
        if not isinstance(fields, dict) or "kind" not in fields:
            raise ValueError(_("Report on log line {number} has no 'kind': {payload!r}.").format(
                number=number, payload=payload[:80]))
        reports[fields.pop("kind")] = fields
    return reports


# ------------------------------------------------------------------------------------ what a rank trained on
def image_fingerprint(image) -> str:
    """A 12-hex-digit fingerprint of one sample's bytes (float32), to recognise it in another process."""
    array = np.ascontiguousarray(_to_numpy(image), dtype=np.float32)
    return hashlib.sha1(array.tobytes(), usedforsecurity=False).hexdigest()[:12]


def _to_numpy(value):
    return value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)


class ShardRecorder:
    """Remembers the fingerprint and label of every sample a rank trained on, in order.

    ``record(images, labels)`` takes one batch; ``callback()`` gives a ``Model.train`` callback that records each
    batch the model is fed (non-sink mode); ``summary()`` is the report: sample count, label histogram, digest.
    """

    def __init__(self):
        self.fingerprints = []
        self.labels = []

    def record(self, images, labels) -> None:
        images, labels = _to_numpy(images), _to_numpy(labels).reshape(-1)
        if images.shape[0] != labels.shape[0]:
            raise ValueError(_("images and labels must hold the same number of samples, got {n_images} images and "
                               "{n_labels} labels.").format(n_images=images.shape[0], n_labels=labels.shape[0]))
        self.fingerprints.extend(image_fingerprint(image) for image in images)
        self.labels.extend(int(label) for label in labels)

    def callback(self):
        """A ``mindspore.train.Callback`` recording ``cb_params.train_dataset_element`` at every step begin."""
        from mindspore.train import Callback

        recorder = self

        class _RecordBatches(Callback):
            def on_train_step_begin(self, run_context):
                element = run_context.original_args().train_dataset_element
                if element is None:
                    raise RuntimeError(_("ShardRecorder needs Model.train(..., dataset_sink_mode=False): in sink "
                                         "mode the batches never reach Python."))
                recorder.record(element[0], element[1])

        return _RecordBatches()

    def summary(self, with_fingerprints: bool = True) -> dict:
        counts = Counter(self.labels)
        summary = {
            "samples": len(self.fingerprints),
            "label_counts": [counts.get(label, 0) for label in range(max(counts, default=-1) + 1)],
            "digest": hashlib.sha256("\n".join(sorted(self.fingerprints)).encode()).hexdigest()[:16],
        }
        if with_fingerprints:
            summary["fingerprints"] = list(self.fingerprints)
        return summary


def dataset_fingerprints(dataset, image_column: str = "image") -> list:
    """Fingerprints of every sample of a MindData pipeline, in order (e.g. the whole unsharded train set)."""
    fingerprints = []
    for batch in dataset.create_dict_iterator(num_epochs=1, output_numpy=True):
        fingerprints.extend(image_fingerprint(image) for image in batch[image_column])
    return fingerprints


def parameter_checksum(params) -> dict:
    """``{"count", "sha256", "sum"}`` of a network's parameters (or a name -> array dict such as a loaded
    checkpoint): equal sha256 on two ranks means bit-identical parameters."""
    from mindspore import nn

    if isinstance(params, nn.Cell):
        items = [(name, param) for name, param in params.parameters_and_names()]
    elif isinstance(params, dict):
        items = list(params.items())
    else:
        raise TypeError(_("params must be a network (nn.Cell) or a dict name -> parameter, got {params_type}. Fix: "
                          "pass the trained net, or load_checkpoint(path).").format(params_type=type(params).__name__))
    digest = hashlib.sha256()
    total = 0.0
    for name, value in sorted(items, key=lambda item: item[0]):
        array = _to_numpy(value)
        if not isinstance(array, np.ndarray) or array.dtype.kind not in "fiub":
            raise TypeError(_("parameter {name!r} is not a numeric array (got {value_type}). Fix: pass only "
                              "parameters (a checkpoint saved without append_dict).").format(
                                  name=name, value_type=type(value).__name__))
        array = np.ascontiguousarray(array)
        digest.update(name.encode() + b"\0" + str(array.dtype).encode() + str(array.shape).encode())
        digest.update(array.tobytes())
        total += float(array.astype(np.float64).sum())
    return {"count": len(items), "sha256": digest.hexdigest()[:16], "sum": total}
