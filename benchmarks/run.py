"""`make bench`: how fast the course trains on this CPU, measured side by side in one run.

MindSpore graph mode vs PyNative vs `@ms.jit` vs PyTorch eager as its users run it (LeNet-5 throughput, ResNet
step times, with PyTorch's OMP_WAIT_POLICY=PASSIVE and AVX2-capped variants as extra rows), the oneDNN ISA cap,
the machine's SGEMM peak and each step's share of it (roofline), import time, MindData pipeline throughput,
compile time and inference; writes results.json, results.md and results.png, tagged with the CPU kind.

    python benchmarks/run.py                 # `make bench`: measurements 0-5 and 7 (goal < 10 min on 2 cores)
    python benchmarks/run.py --notebooks     # `make bench-notebooks`: measurement 6, merged into results.json
    python benchmarks/run.py --all           # both, one after the other
    python benchmarks/run.py --quick         # `make bench-quick`: smoke run of the same structure,
                                             # written to outputs/bench-quick/ unless --out is given

Results are tagged with the CPU kind (course_lib.perf.timing.cpu_kind); a run on another kind keeps the previous
results under ``other_cpu_kinds`` instead of mixing them (report.py shows each kind on its own).

Every participant is its own process (one framework, one mode, one environment); the parent sends each the same
task and then asks them for one repeat at a time, taking turns, so a busy neighbour slows all of them alike.
"""
import os

#: The environment `make bench` was started with, before course_lib fills in its defaults.
ORIGINAL_ENV = dict(os.environ)

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import selectors  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import course_lib  # noqa: E402,F401
from course_lib.paths import (  # noqa: E402
    OUTPUT_DIR,
    PROJECT_ROOT,
    scrub_paths,  # noqa: E402
)
from course_lib.perf.timing import cpu_info, cpu_kind, summarize  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import notebook_timing  # noqa: E402
import report  # noqa: E402

#: 2: results tagged with ``cpu_kind``; runs of other CPU kinds kept apart in ``other_cpu_kinds``.
SCHEMA_VERSION = 2
MIN_REPEATS = 5
#: Pause between two timed repeats, so threads still spinning after one participant's repeat have gone idle.
PAUSE_SECONDS = 0.05
#: Longest a worker may take to answer one command (a ResNet-50 graph compile on a busy machine included).
CALL_TIMEOUT = 900
SEED = 1
#: Environment variables that change speed; recorded with the results.
ENV_KEYS = ("ONEDNN_MAX_CPU_ISA", "GLOG_v", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY",
            "KMP_AFFINITY", "GOMP_SPINCOUNT", "MS_SUBMODULE_LOG_v", "COURSE_DATA_DIR", "MS_DEV_HOST_BLOCKING_RUN",
            "MKL_ENABLE_INSTRUCTIONS")
HOST_BLOCKING = "MS_DEV_HOST_BLOCKING_RUN"
#: Variables removed from PyTorch's environment: its headline row runs as PyTorch's users run it.
TORCH_DEFAULT_UNSET = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA",
                       "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_VERBOSE", "DNNL_VERBOSE")
#: Every participant (one process each): label, framework, mode, what it changes.
PARTICIPANTS = {
    "graph": ("MindSpore graph", "mindspore", "graph"),
    "pynative": ("MindSpore PyNative", "mindspore", "pynative"),
    "jit_off": (f"MindSpore @ms.jit, {HOST_BLOCKING} unset", "mindspore", "jit"),
    "jit_on": (f"MindSpore @ms.jit, {HOST_BLOCKING}=1", "mindspore", "jit"),
    "torch": ("PyTorch eager (defaults)", "pytorch", "eager"),
    "torch_passive": ("PyTorch eager, OMP_WAIT_POLICY=PASSIVE", "pytorch", "eager"),
    "torch_avx2": ("PyTorch eager, ONEDNN_MAX_CPU_ISA=AVX2", "pytorch", "eager"),
    "graph_all": ("MindSpore graph, ONEDNN_MAX_CPU_ISA=ALL", "mindspore", "graph"),
}
EVERYONE = tuple(PARTICIPANTS)
#: Big steps: no PASSIVE row (it changes the waiting between small ops) and no ISA=ALL row (minutes on AVX-512).
BIG_STEP = ("graph", "pynative", "jit_off", "jit_on", "torch", "torch_avx2")
#: ResNet-50: only the @ms.jit process with the course's MS_DEV_HOST_BLOCKING_RUN ("jit_course"): each @ms.jit
#: compile of ResNet-50 takes tens of seconds, and the on/off comparison is already made on ResNet-18.
BIGGEST_STEP = ("graph", "pynative", "jit_course", "torch", "torch_avx2")
#: SGEMM size for the machine's peak (2 x 2048^3 FLOPs a product).
SGEMM_SIZE = 2048
SGEMM_REPEATS = 10
IMPORT_REPEATS = 3


@dataclass
class Plan:
    """What one run measures; ``--quick`` keeps the structure and shrinks the sizes."""

    quick: bool
    repeats: int
    threads: int
    lenet_batches: int
    train_steps: list
    pipelines: list
    inference_batches: tuple = (1, 64)
    target_seconds: float = 0.25
    sgemm_size: int = SGEMM_SIZE
    import_repeats: int = IMPORT_REPEATS


def make_plan(quick, repeats, threads) -> Plan:
    if quick:  # every participant of the full run, on tiny work: a smoke test of the whole pipeline
        return Plan(quick=True, repeats=repeats, threads=threads, lenet_batches=4, target_seconds=0.02,
                    sgemm_size=512, import_repeats=1,
                    train_steps=[{"model": "lenet5", "batch_size": 32, "image_size": 32, "with": EVERYONE},
                                 {"model": "resnet18", "batch_size": 2, "image_size": 64,
                                  "with": tuple(k for k in EVERYONE if k != "graph_all")}],
                    pipelines=[{"pipeline": "digits", "batch_size": 32, "image_size": 32, "max_batches": 4},
                               {"pipeline": "imagefolder", "batch_size": 16, "image_size": 32, "max_batches": 2}])
    # The oneDNN comparison (measurement 3) runs on LeNet and ResNet-18 64x64, the steps the course trains.
    return Plan(quick=False, repeats=repeats, threads=threads, lenet_batches=44,
                train_steps=[{"model": "lenet5", "batch_size": 32, "image_size": 32, "with": EVERYONE},
                             {"model": "resnet18", "batch_size": 16, "image_size": 64, "with": EVERYONE},
                             {"model": "resnet18", "batch_size": 8, "image_size": 224, "with": BIG_STEP},
                             {"model": "resnet50", "batch_size": 16, "image_size": 64, "with": BIGGEST_STEP},
                             {"model": "resnet50", "batch_size": 4, "image_size": 224, "with": BIGGEST_STEP}],
                pipelines=[{"pipeline": "digits", "batch_size": 32, "image_size": 32, "max_batches": 43},
                           {"pipeline": "imagefolder", "batch_size": 32, "image_size": 224, "max_batches": 12}])


# ------------------------------------------------------------------------------------------------ workers
class WorkerError(RuntimeError):
    pass


class Worker:
    """A ``worker.py`` process and the JSON-lines conversation with it."""

    def __init__(self, key, args, env, log_path):
        self.key = key
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen([sys.executable, str(HERE / "worker.py"), *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log, text=True, env=env,
                                        cwd=str(PROJECT_ROOT))
        self.info = None
        self.busy = True  # until it has said it is ready

    def _read(self, timeout):
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        try:
            if not selector.select(timeout):
                raise WorkerError(f"worker {self.key} did not answer within {timeout} s{self._log_tail()}")
        finally:
            selector.close()
        line = self.process.stdout.readline()
        if not line:
            raise WorkerError(f"worker {self.key} exited (code {self.process.poll()}){self._log_tail()}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise WorkerError(f"worker {self.key}: {answer.get('error')}{self._log_tail()}")
        return answer

    def _log_tail(self):
        self.log.flush()
        try:
            tail = Path(self.log_path).read_text(errors="replace")[-2000:]
        except OSError:
            tail = ""
        return f"\n--- last lines of its log ---\n{tail}" if tail.strip() else ""

    def wait_ready(self, timeout=CALL_TIMEOUT):
        self.info = self._read(timeout)["info"]
        self.busy = False
        return self.info

    def call(self, op, timeout=CALL_TIMEOUT, **payload):
        try:
            self.process.stdin.write(json.dumps({"op": op, **payload}) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(
                f"worker {self.key} is gone (exit code {self.process.poll()}){self._log_tail()}") from None
        self.busy = True
        answer = self._read(timeout)
        self.busy = False
        answer.pop("ok")
        return answer

    def request_exit(self):
        """Ask an idle worker to exit without waiting for it (MindSpore takes seconds to shut down)."""
        if self.process.poll() is None and not self.busy:
            try:
                self.process.stdin.write(json.dumps({"op": "exit"}) + "\n")
                self.process.stdin.close()
                self.busy = True  # exiting: close() only waits
            except (OSError, ValueError):
                pass

    def close(self, grace=30):
        """Wait for a worker asked to exit; stop one that is still busy (the run was interrupted or failed)."""
        if self.process.poll() is None and self.busy:
            try:
                self.process.wait(timeout=grace if self.process.stdin.closed else 0.1)
            except subprocess.TimeoutExpired:
                pass
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def torch_env(**extra):
    """PyTorch's environment: as `make bench` was started, minus every variable that changes how PyTorch waits or
    which instruction set it uses (TORCH_DEFAULT_UNSET), plus ``extra``.

    The headline row is PyTorch as its users run it. Two labelled rows add one setting each:
    ``OMP_WAIT_POLICY=PASSIVE`` (sleeping OpenMP threads: robust when another program holds a core, about 2x slower
    on small ops of an idle machine) and ``ONEDNN_MAX_CPU_ISA=AVX2`` (the cap the course gives MindSpore).
    """
    env = {key: value for key, value in ORIGINAL_ENV.items() if key not in TORCH_DEFAULT_UNSET}
    env.update(extra)
    return env


def course_host_blocking():
    """``MS_DEV_HOST_BLOCKING_RUN`` as a course process sees it: as started, else course_lib's default (or None)."""
    from course_lib import ENV_DEFAULTS

    return ORIGINAL_ENV.get(HOST_BLOCKING, ENV_DEFAULTS.get(HOST_BLOCKING))


def course_jit_worker():
    """The @ms.jit participant that runs with the course's setting of MS_DEV_HOST_BLOCKING_RUN."""
    return "jit_on" if course_host_blocking() == "1" else "jit_off"


def worker_specs():
    """Arguments and environment of every participant's process."""
    course_env = dict(ORIGINAL_ENV)  # the worker imports course_lib first, which fills in its defaults
    mindspore = ["--framework", "mindspore", "--mode"]
    return {
        "graph": ([*mindspore, "graph"], course_env),
        "graph_all": ([*mindspore, "graph"], {**ORIGINAL_ENV, "ONEDNN_MAX_CPU_ISA": "ALL"}),
        "pynative": ([*mindspore, "pynative"], course_env),
        "jit_off": ([*mindspore, "pynative", "--host-blocking", "off"], course_env),
        "jit_on": ([*mindspore, "pynative", "--host-blocking", "on"], course_env),
        "torch": (["--framework", "torch", "--mode", "eager"], torch_env()),
        "torch_passive": (["--framework", "torch", "--mode", "eager"], torch_env(OMP_WAIT_POLICY="PASSIVE")),
        "torch_avx2": (["--framework", "torch", "--mode", "eager"], torch_env(ONEDNN_MAX_CPU_ISA="AVX2")),
    }


def start_workers(threads, run_dir, workers, keys=None):
    """Start the participants ``keys`` (default: all) into ``workers`` (so the caller can stop them whatever
    happens) and wait until all are ready."""
    specs = worker_specs()
    for key in keys or specs:
        args, env = specs[key]
        workers[key] = Worker(key, [*args, "--threads", str(threads)], env, run_dir / f"worker-{key}.log")
    for worker in workers.values():
        worker.wait_ready()


# ------------------------------------------------------------------------------------------------ timing
@dataclass
class Participant:
    worker: str
    name: str
    spec: dict
    meta: dict
    setup: dict = field(default_factory=dict)
    repeats: list = field(default_factory=list)


def run_group(workers, participants, repeats, log):
    """Set every participant up (one at a time: first-step times stay clean), then time ``repeats`` rounds,
    each participant once per round in a rotating order; release them afterwards."""
    for p in participants:
        p.setup = workers[p.worker].call("setup", name=p.name, task=p.spec)
        log(f"    set up {p.meta['label']}: first call {p.setup['first_seconds']:.2f} s")
    for round_index in range(repeats):
        shift = round_index % len(participants)
        for p in participants[shift:] + participants[:shift]:
            p.repeats.append(workers[p.worker].call("measure", name=p.name))
            time.sleep(PAUSE_SECONDS)
    for p in participants:
        workers[p.worker].call("release", name=p.name)
    for p in participants:
        log(f"    {p.meta['label']:<44} {summary_line(p)}")
    return participants


def summary_line(p):
    rates = [r["samples"] / r["seconds"] for r in p.repeats]
    return f"{statistics_median(rates):10.1f} images/s (min {min(rates):.1f}, max {max(rates):.1f})"


def statistics_median(values):
    return summarize(values)["median"]


def timing_record(p, **extra):
    """Seconds per step (median/min/max/n over repeats) and images/s, plus the participant's labels."""
    step_seconds = [r["seconds"] / r["steps"] for r in p.repeats]
    rates = [r["samples"] / r["seconds"] for r in p.repeats]
    stats = summarize(step_seconds)
    rate_stats = summarize(rates)
    record = {**p.meta, **extra, "median": stats["median"], "min": stats["min"], "max": stats["max"],
              "n": stats["n"], "samples_per_second": rate_stats["median"],
              "samples_per_second_min": rate_stats["min"], "samples_per_second_max": rate_stats["max"],
              "steps_per_repeat": p.setup["steps_per_repeat"]}
    return record


def ratio_record(numerator, denominator):
    """Speed of ``numerator`` relative to ``denominator`` (images/s over images/s): ratio of medians and the
    range of the per-round ratios (both measured in the same round, so the range shows the noise)."""
    per_round = [(a["samples"] / a["seconds"]) / (b["samples"] / b["seconds"])
                 for a, b in zip(numerator.repeats, denominator.repeats)]
    median_a = statistics_median([r["samples"] / r["seconds"] for r in numerator.repeats])
    median_b = statistics_median([r["samples"] / r["seconds"] for r in denominator.repeats])
    return {"ratio": median_a / median_b, "per_round_min": min(per_round), "per_round_max": max(per_round)}


# ------------------------------------------------------------------------------------------------ measurements
def isa_of(worker_info):
    value = worker_info["env"].get("ONEDNN_MAX_CPU_ISA")
    return value if value else "unset"


def make_participant(workers, key, tag, spec, base, api=None):
    """Participant ``key`` (a PARTICIPANTS entry) of a measurement: its task and the labels of its record."""
    label, framework, mode = PARTICIPANTS[key]
    meta = {**base, "participant": key, "label": label + (f", {api}" if api else ""), "framework": framework,
            "mode": mode, "onednn_max_cpu_isa": isa_of(workers[key].info)}
    if framework == "pytorch":
        meta["api"] = "training loop"
        meta["omp_wait_policy"] = workers[key].info["env"].get("OMP_WAIT_POLICY") or "unset"
    if mode == "jit":
        meta["host_blocking"] = workers[key].info["env"].get(HOST_BLOCKING) or "unset"
        meta["course_setting"] = key == course_jit_worker()
    return Participant(key, f"{tag}_{key}", spec, meta)


def measure_lenet(workers, plan, run_dir, log):
    """Measurement 1: LeNet-5 training throughput on the digits, batch 32, Momentum(0.01, 0.9)."""
    data = run_dir / "digits_batches.npz"
    prepared = workers["graph"].call("prepare_digits", path=str(data), batch_size=32, seed=SEED)
    batches = min(plan.lenet_batches, prepared["batches"])
    task = {"kind": "lenet_epoch", "data": str(data), "batches": batches, "seed": SEED}
    common = {"measurement": "lenet_training", "model": "lenet5", "batch_size": 32, "image_size": 32}
    participants = []
    for key in EVERYONE:
        if key not in workers:
            continue
        if key.startswith("jit"):
            participants.append(make_participant(workers, key, "lenet", {**task, "api": "Trainer", "jit": True},
                                                 {**common, "api": "course_lib.train.trainer.Trainer"}, api="Trainer"))
        elif key.startswith("torch"):
            participants.append(make_participant(workers, key, "lenet", task, common))
        else:
            participants.append(make_participant(workers, key, "lenet", {**task, "api": "Model.train"},
                                                 {**common, "api": "Model.train"}, api="Model.train"))
    log(f"1. LeNet-5 training, {batches} batches of 32 per repeat")
    return run_group(workers, participants, plan.repeats, log), {"batches_per_repeat": batches}


def measure_train_steps(workers, plan, log):
    """Measurement 2 (and the ResNet-18/LeNet part of 3): seconds per training step on a fixed random batch."""
    groups = []
    for config in plan.train_steps:
        spec = {"kind": "train_step", "model": config["model"], "batch_size": config["batch_size"],
                "image_size": config["image_size"], "seed": SEED, "target_seconds": plan.target_seconds}
        base = {"measurement": "train_step", "model": config["model"], "batch_size": config["batch_size"],
                "image_size": config["image_size"], "api": "TrainOneStepCell"}
        tag = f"{config['model']}_b{config['batch_size']}_{config['image_size']}"
        participants = []
        for key in config["with"]:
            key = course_jit_worker() if key == "jit_course" else key
            if key not in workers:
                continue
            if key.startswith("jit"):
                participants.append(make_participant(workers, key, tag, {**spec, "api": "jit"},
                                                     {**base, "api": "Trainer.train_step"}))
            else:
                participants.append(make_participant(workers, key, tag, spec, base))
        log(f"2. training step: {config['model']}, batch {config['batch_size']}, "
            f"{config['image_size']}x{config['image_size']}")
        groups.append(run_group(workers, participants, plan.repeats, log))
    return groups


def measure_pipelines(workers, plan, log):
    """Measurement 4: MindData 1 vs 2 workers vs a plain numpy loop, images/s without a model."""
    groups = []
    for config in plan.pipelines:
        spec = {"kind": "pipeline", "seed": SEED, **config}
        base = {"measurement": "pipeline", **config}
        participants = [
            Participant("pynative", f"{config['pipeline']}_w{w}", {**spec, "impl": "minddata", "workers": w},
                        {**base, "impl": "minddata", "workers": w, "label": f"MindData, {w} worker{'s' * (w > 1)}"})
            for w in (1, 2)
        ]
        participants.append(Participant("pynative", f"{config['pipeline']}_numpy", {**spec, "impl": "numpy"},
                                        {**base, "impl": "numpy", "workers": 1, "label": "numpy loop"}))
        log(f"4. pipeline: {config['pipeline']} ({config['image_size']}x{config['image_size']}, "
            f"batch {config['batch_size']}, {config['max_batches']} batches per repeat)")
        groups.append(run_group(workers, participants, plan.repeats, log))
    return groups


def measure_inference(workers, plan, run_dir, log):
    """Measurement 7: LeNet-5 inference images/s, eager Cell vs exported MindIR GraphCell (and graph mode, PyTorch)."""
    groups = []
    for batch in plan.inference_batches:
        spec = {"kind": "infer", "batch_size": batch, "seed": SEED, "dir": str(run_dir),
                "target_seconds": plan.target_seconds}
        base = {"measurement": "inference", "model": "lenet5", "batch_size": batch, "image_size": 32}
        participants = [
            Participant("pynative", f"infer_eager_b{batch}", {**spec, "impl": "cell"},
                        {**base, "impl": "cell", "framework": "mindspore", "mode": "pynative",
                         "label": "MindSpore eager (PyNative Cell)"}),
            Participant("pynative", f"infer_mindir_b{batch}", {**spec, "impl": "mindir"},
                        {**base, "impl": "mindir", "framework": "mindspore", "mode": "graph",
                         "label": "MindIR GraphCell"}),
            Participant("graph", f"infer_graph_b{batch}", {**spec, "impl": "cell"},
                        {**base, "impl": "cell", "framework": "mindspore", "mode": "graph",
                         "label": "MindSpore graph-mode Cell"}),
            Participant("torch", f"infer_torch_b{batch}", spec,
                        {**base, "impl": "module", "framework": "pytorch", "mode": "eager",
                         "label": "PyTorch eager (inference_mode)"}),
        ]
        log(f"7. inference: LeNet-5, batch {batch}")
        groups.append(run_group(workers, participants, plan.repeats, log))
    return groups


# ------------------------------------------------------------------------------------------------ oneDNN probe
_PROBE_CODE = {
    "mindspore": """
import os, sys, course_lib, numpy as np, mindspore as ms
from mindspore import nn
if sys.argv[2]:  # set after the import, before the first kernel
    os.environ["ONEDNN_MAX_CPU_ISA"] = sys.argv[2]
ms.set_context(mode=ms.PYNATIVE_MODE)
for cin, cout, k, size in ((1, 6, 5, 32), (64, 64, 3, 16), (3, 64, 7, 64)):
    conv = nn.Conv2d(cin, cout, k, pad_mode="valid")
    grad = ms.grad(lambda x: conv(x).sum(), grad_position=0, weights=conv.trainable_params())
    grad(ms.Tensor(np.ones((2, cin, size, size), np.float32)))
""",
    "torch": """
import os, sys, torch
torch.set_num_threads(int(sys.argv[1]))
if sys.argv[2]:  # set after the import, before the first kernel
    os.environ["ONEDNN_MAX_CPU_ISA"] = sys.argv[2]
for cin, cout, k, size in ((1, 6, 5, 32), (64, 64, 3, 16), (3, 64, 7, 64)):
    conv = torch.nn.Conv2d(cin, cout, k)
    x = torch.ones((2, cin, size, size), requires_grad=True)
    conv(x).sum().backward()
""",
}

#: The oneDNN probes: framework, ONEDNN_MAX_CPU_ISA in the environment at start (None: unset), value set after
#: the import (before the first kernel), and what the row shows.
ONEDNN_PROBES = {
    "course": ("mindspore", "course", "", "MindSpore, course environment"),
    "all": ("mindspore", "ALL", "", "MindSpore, no cap"),
    "mindspore_late": ("mindspore", "ALL", "AVX2", "MindSpore, AVX2 set after `import mindspore`"),
    "pytorch": ("torch", None, "", "PyTorch, defaults"),
    "pytorch_avx2": ("torch", "AVX2", "", "PyTorch, AVX2 cap"),
    "pytorch_late": ("torch", None, "AVX2", "PyTorch, AVX2 set after `import torch`"),
}


def start_onednn_probe(key, threads):
    """Start a short process that reports what a framework's oneDNN does under probe ``key`` (ONEDNN_PROBES).

    With ``ONEDNN_VERBOSE=1`` it runs a 5x5, a 3x3 and a 7x7 convolution, forward and backward; oneDNN's verbose
    lines name the instruction set it dispatches to (``cpu,isa:...``), its threading (``cpu,runtime:...``) and
    every convolution kernel it picked.
    """
    framework, start_value, late_value, _ = ONEDNN_PROBES[key]
    if framework == "torch":
        env = torch_env(ONEDNN_VERBOSE="1")
    else:
        env = {**ORIGINAL_ENV, "ONEDNN_VERBOSE": "1"}
    if start_value == "course":
        start_value = ORIGINAL_ENV.get("ONEDNN_MAX_CPU_ISA") or "AVX2"
    if start_value is not None:
        env["ONEDNN_MAX_CPU_ISA"] = start_value
    process = subprocess.Popen([sys.executable, "-c", _PROBE_CODE[framework], str(threads), late_value],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               cwd=str(PROJECT_ROOT))
    setting = start_value or "unset"
    if late_value:
        setting += f", then {late_value} after import"
    return key, setting, process


def parse_onednn_verbose(text):
    """``{"isa", "runtime", "threads", "convolution_kernels"}`` from ONEDNN_VERBOSE=1 output (None if no isa line)."""
    isa = re.search(r"onednn_verbose,[^\n]*?,cpu,isa:([^\n]+)", text)
    threads = re.search(r"onednn_verbose,[^\n]*?,cpu,runtime:([^,\n]+),nthr:(\d+)", text)
    kernels = sorted({m.group(1) + " " + m.group(2) for m in
                      re.finditer(r"primitive,exec,cpu,convolution,([^,]+),([a-z_]+),", text)})
    if not isa:
        return None
    return {"isa": isa.group(1).strip(), "runtime": threads.group(1) if threads else "not reported",
            "threads": int(threads.group(2)) if threads else "not reported", "convolution_kernels": kernels}


def finish_onednn_probe(probe):
    key, setting, process = probe
    text, _ = process.communicate(timeout=CALL_TIMEOUT)
    parsed = parse_onednn_verbose(text)
    if process.returncode != 0 or not parsed:
        raise WorkerError(f"the oneDNN probe {key} ({setting}) failed (exit {process.returncode}):\n{text[-1500:]}")
    framework, _, late_value, label = ONEDNN_PROBES[key]
    return {"framework": "pytorch" if framework == "torch" else "mindspore", "label": label, "setting": setting,
            "set_after_import": late_value or None, **parsed}


# ------------------------------------------------------------------------------------------------ machine
_SGEMM_CODE = {
    "numpy": """
import json, sys, time, numpy as np
n, repeats = int(sys.argv[1]), int(sys.argv[2])
a, b = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
out = np.empty((n, n), np.float32)
for _ in range(3):
    np.matmul(a, b, out=out)
best = float("inf")
for _ in range(repeats):
    start = time.perf_counter(); np.matmul(a, b, out=out); best = min(best, time.perf_counter() - start)
print(json.dumps({"best_seconds": best, "gflops": 2 * n ** 3 / best / 1e9}))
""",
    "torch": """
import json, sys, time, torch
n, repeats, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
a, b, out = torch.rand(n, n), torch.rand(n, n), torch.empty(n, n)
for _ in range(3):
    torch.matmul(a, b, out=out)
best = float("inf")
for _ in range(repeats):
    start = time.perf_counter(); torch.matmul(a, b, out=out); best = min(best, time.perf_counter() - start)
print(json.dumps({"best_seconds": best, "gflops": 2 * n ** 3 / best / 1e9}))
""",
    # The same 2 n^3 FLOPs as a 1x1 convolution (n -> n channels over n pixels, channels-last) through oneDNN, the
    # library both frameworks' convolutions use. MKL's matmul may not use AVX-512 on every CPU (it did not reach
    # PyTorch's achieved convolution speed on an AMD EPYC), oneDNN's direct kernels do.
    "onednn": """
import json, sys, time, torch
n, repeats, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
x = torch.rand(1, n, 32, n // 32).contiguous(memory_format=torch.channels_last)
w = torch.rand(n, n, 1, 1).contiguous(memory_format=torch.channels_last)
with torch.no_grad():
    for _ in range(3):
        torch.nn.functional.conv2d(x, w)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter(); torch.nn.functional.conv2d(x, w); best = min(best, time.perf_counter() - start)
print(json.dumps({"best_seconds": best, "gflops": 2 * n ** 3 / best / 1e9}))
""",
}
#: SGEMM libraries and how each is capped at AVX2 (OpenBLAS: Haswell kernels; MKL: its documented variable).
SGEMM_LIBRARIES = {"numpy": ("numpy (OpenBLAS)", {"OPENBLAS_CORETYPE": "Haswell"}),
                   "torch": ("torch.matmul (MKL)", {"MKL_ENABLE_INSTRUCTIONS": "AVX2"}),
                   "onednn": ("torch 1x1 conv2d (oneDNN)", {"ONEDNN_MAX_CPU_ISA": "AVX2"})}


def _run_json(code, args, env, what):
    result = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                            env=env, timeout=CALL_TIMEOUT, cwd=str(PROJECT_ROOT))
    if result.returncode != 0:
        raise WorkerError(f"{what} failed (exit {result.returncode}):\n{result.stderr[-1500:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure_sgemm_peak(plan, log):
    """The machine's fp32 matrix-multiply peak with ``plan.threads`` threads: the best of numpy (OpenBLAS), torch
    (MKL) on square matrices and the same product as a oneDNN 1x1 convolution, uncapped and capped at AVX2; run
    before the workers start (nothing else timed)."""
    n = plan.sgemm_size
    runs = []
    for library, (label, avx2_env) in SGEMM_LIBRARIES.items():
        for cap in ("none", "AVX2"):
            env = {key: value for key, value in ORIGINAL_ENV.items() if key not in TORCH_DEFAULT_UNSET}
            env.update({"OPENBLAS_NUM_THREADS": str(plan.threads), "OMP_NUM_THREADS": str(plan.threads)})
            if cap == "AVX2":
                env.update(avx2_env)
            run = _run_json(_SGEMM_CODE[library], (n, SGEMM_REPEATS, plan.threads), env, f"SGEMM ({label})")
            runs.append({"library": label, "isa_cap": cap, "size": n, "threads": plan.threads, **run})
    peak = max(r["gflops"] for r in runs)
    peak_avx2 = max(r["gflops"] for r in runs if r["isa_cap"] == "AVX2")
    log(f"   SGEMM {n}x{n}, {plan.threads} threads: peak {peak:.0f} GFLOP/s, capped at AVX2 {peak_avx2:.0f} GFLOP/s")
    return {"gflops": peak, "avx2_gflops": peak_avx2, "size": n, "threads": plan.threads, "runs": runs,
            "note": "best of numpy (OpenBLAS), torch.matmul (MKL) and a torch 1x1 conv2d (oneDNN), fp32, "
                    f"best of {SGEMM_REPEATS} products after 3 warm-ups"}


_IMPORT_CODE = """
import json, time
start = time.perf_counter()
import course_lib
middle = time.perf_counter()
import mindspore
end = time.perf_counter()
print(json.dumps({"course_lib": middle - start, "mindspore": end - middle, "total": end - start}))
"""


def measure_import_time(plan, log):
    """Seconds for ``import course_lib`` + ``import mindspore`` in a fresh process (median of a few)."""
    runs = [_run_json(_IMPORT_CODE, (), dict(ORIGINAL_ENV), "import timing") for _ in range(plan.import_repeats)]
    result = {key: summarize([r[key] for r in runs])["median"] for key in ("course_lib", "mindspore", "total")}
    result["n"] = len(runs)
    log(f"   import course_lib + mindspore: {result['total']:.2f} s (median of {len(runs)})")
    return result


# ------------------------------------------------------------------------------------------------ assembling
def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def load_average():
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover
        return []


def environment(workers, probes, plan, machine):
    import numpy as np

    graph, torch_info = workers["graph"].info, workers["torch"].info
    cpu = cpu_info()
    return {
        "python": platform.python_version(), "platform": platform.platform(),
        "mindspore": graph["mindspore"], "torch": torch_info["torch"], "numpy": np.__version__,
        "cpu": cpu, "cpu_kind": cpu_kind(cpu),
        "threads": {
            "requested": plan.threads,
            "mindspore_op_threads": graph["op_threads"],
            "mindspore_onednn_threads": probes["course"]["threads"],
            "torch_num_threads": torch_info["num_threads"],
            "torch_interop_threads": torch_info["num_interop_threads"],
            "minddata_default_workers": default_workers(),
        },
        "env": {key: ORIGINAL_ENV.get(key) for key in ENV_KEYS},
        "worker_env": {key: worker.info["env"] for key, worker in workers.items()},
        "course_host_blocking": course_host_blocking() or "unset",
        "onednn": probes,
        "sgemm_peak": machine["sgemm"],
        "import_seconds": machine["import"],
    }


def default_workers():
    from course_lib.data.datasets import default_num_workers

    return default_num_workers()


def by_worker(participants, key):
    """The one participant of a group that ran in worker ``key``."""
    matches = [p for p in participants if p.worker == key]
    if len(matches) != 1:
        raise KeyError(f"expected one participant from worker {key!r}, found {len(matches)}")
    return matches[0]


def find(participants, **match):
    for p in participants:
        if all(p.meta.get(k) == v for k, v in match.items()):
            return p
    raise KeyError(match)


#: Ratios computed for every group that has both participants: name -> (numerator, denominator).
COMPARISONS = {
    "graph_vs_pytorch": ("graph", "torch"),
    "graph_vs_pytorch_passive": ("graph", "torch_passive"),
    "graph_vs_pytorch_avx2": ("graph", "torch_avx2"),
    "graph_vs_pynative": ("graph", "pynative"),
    "pynative_vs_pytorch": ("pynative", "torch"),
    "jit_vs_graph": ("jit", "graph"),  # jit: the @ms.jit participant with the course's MS_DEV_HOST_BLOCKING_RUN
    "jit_vs_pytorch": ("jit", "torch"),
    "jit_on_vs_off": ("jit_on", "jit_off"),
    "jit_off_vs_graph": ("jit_off", "graph"),
    "jit_on_vs_graph": ("jit_on", "graph"),
    "pytorch_passive_vs_default": ("torch_passive", "torch"),
    "pytorch_avx2_vs_default": ("torch_avx2", "torch"),
}


def comparisons(group):
    """Every COMPARISONS ratio whose two participants are in ``group``."""
    present = {p.worker: p for p in group}
    present["jit"] = present.get(course_jit_worker())
    return {name: ratio_record(present[a], present[b]) for name, (a, b) in COMPARISONS.items()
            if present.get(a) is not None and present.get(b) is not None}


def add_roofline(record, flops, sgemm):
    """Achieved GFLOP/s of a training record and its share of the machine's SGEMM peaks."""
    per_sample = flops["training_flops"]
    gflops = per_sample * record["samples_per_second"] / 1e9
    record.update({"training_flops_per_sample": per_sample, "gflops_per_second": gflops,
                   "percent_of_sgemm_peak": 100 * gflops / sgemm["gflops"],
                   "percent_of_avx2_sgemm_peak": 100 * gflops / sgemm["avx2_gflops"]})


def assemble(plan, lenet, lenet_info, steps, pipelines, inference, flops, sgemm):
    """All records and ratios as one JSON-ready dict (the sections of results.json except environment/notebooks).

    ``flops``: {(model, image_size): count_flops answer}; ``sgemm``: measure_sgemm_peak's answer.
    """
    results, compile_records, onednn = [], [], []
    lenet_graph = by_worker(lenet, "graph")
    lenet_torch = by_worker(lenet, "torch")
    for p in lenet:
        if p.worker == "graph_all":
            continue
        record = timing_record(p, epoch_seconds=statistics_median([r["seconds"] for r in p.repeats]))
        record["vs_pytorch"] = ratio_record(p, lenet_torch)["ratio"]
        results.append(record)
        steady_epoch = statistics_median([r["seconds"] for r in p.repeats])
        compile_records.append({
            "task": "lenet_epoch", "label": p.meta["label"], "model": "lenet5", "batch_size": 32, "image_size": 32,
            "framework": p.meta["framework"], "mode": p.meta["mode"], "unit": "epoch",
            "first_seconds": p.setup["first_seconds"], "steady_seconds": steady_epoch,
            "first_over_steady": p.setup["first_seconds"] / steady_epoch})
    if any(p.worker == "graph_all" for p in lenet):
        onednn.append(onednn_record("LeNet-5 Model.train epoch (graph)", lenet_graph, by_worker(lenet, "graph_all")))

    step_summary = []
    for group in steps:
        graph, torch = by_worker(group, "graph"), by_worker(group, "torch")
        for p in group:
            if p.worker == "graph_all":
                continue
            record = timing_record(p)
            record["vs_pytorch"] = ratio_record(p, torch)["ratio"]
            key = (p.meta["model"], p.meta["image_size"])
            if key in flops:
                add_roofline(record, flops[key], sgemm)
            results.append(record)
            compile_records.append({
                "task": "train_step", "label": p.meta["label"], "model": p.meta["model"],
                "batch_size": p.meta["batch_size"], "image_size": p.meta["image_size"],
                "framework": p.meta["framework"], "mode": p.meta["mode"], "unit": "step",
                "first_seconds": p.setup["first_seconds"], "steady_seconds": record["median"],
                "first_over_steady": p.setup["first_seconds"] / record["median"]})
        step_summary.append({"model": graph.meta["model"], "batch_size": graph.meta["batch_size"],
                             "image_size": graph.meta["image_size"], **comparisons(group)})
        if any(p.worker == "graph_all" for p in group):
            name = f"{graph.meta['model']} step, batch {graph.meta['batch_size']}, {graph.meta['image_size']}px"
            onednn.append(onednn_record(name, graph, by_worker(group, "graph_all")))

    pipeline_records = []
    for group in pipelines:
        for p in group:
            record = timing_record(p)
            for key in ("max_abs_difference_vs_minddata",):
                if key in p.setup:
                    record[key] = p.setup[key]
            pipeline_records.append(record)

    inference_records = []
    for group in inference:
        for p in group:
            record = timing_record(p)
            record["first_seconds"] = p.setup["first_seconds"]
            inference_records.append(record)

    lenet_rate = timing_record(lenet_graph)["samples_per_second"]
    digits_default = [r for r in pipeline_records
                      if r["pipeline"] == "digits" and r["impl"] == "minddata" and r["workers"] == default_workers()]
    digits_rate = (digits_default or [r for r in pipeline_records if r["pipeline"] == "digits"])[0]
    summary = {
        "lenet_graph_vs_pytorch": ratio_record(lenet_graph, lenet_torch),
        "lenet_pynative_vs_pytorch": ratio_record(find(lenet, mode="pynative"), lenet_torch),
        "lenet_trainer_jit_vs_pytorch": ratio_record(by_worker(lenet, course_jit_worker()), lenet_torch),
        "lenet_graph_vs_pynative": ratio_record(lenet_graph, find(lenet, mode="pynative")),
        "lenet": comparisons(lenet),
        "train_steps": step_summary,
        "pipeline_vs_lenet_training": {
            "pipeline_images_per_second": digits_rate["samples_per_second"],
            "pipeline_workers": digits_rate["workers"],
            "training_images_per_second": lenet_rate,
            "ratio": digits_rate["samples_per_second"] / lenet_rate},
    }
    return {
        "results": results,
        "lenet_training": {"batches_per_repeat": lenet_info["batches_per_repeat"], "batch_size": 32,
                           "optimizer": f"Momentum(lr={0.01}, momentum={0.9})"},
        "flops": [{"model": model, "image_size": size, **counted} for (model, size), counted in flops.items()],
        "onednn": onednn,
        "pipeline": pipeline_records,
        "compile": compile_records,
        "inference": inference_records,
        "summary": summary,
    }


def onednn_record(name, course, unset):
    ratio = ratio_record(course, unset)
    return {"step": name, "course_setting": course.meta["onednn_max_cpu_isa"],
            "course_seconds": timing_record(course)["median"], "all_seconds": timing_record(unset)["median"],
            "course_images_per_second": timing_record(course)["samples_per_second"],
            "all_images_per_second": timing_record(unset)["samples_per_second"],
            "course_vs_all": ratio}


#: The course's own goals (issue #14), reported with a computed status; no unit test asserts them.
JIT_TOLERANCE = 0.95
LESSON_SECONDS = 60.0
COURSE_SECONDS = 300.0
BENCH_SECONDS = 600.0


def jit_vs_graph_ratios(summary):
    """[(what, ratio)] of the course's @ms.jit step over graph mode, for every configuration measured."""
    found = []
    lenet = (summary.get("lenet") or {}).get("jit_vs_graph")
    if lenet:
        found.append(("LeNet-5 epoch, Trainer vs Model.train", lenet["ratio"]))
    for step in summary.get("train_steps", []):
        if "jit_vs_graph" in step:
            found.append((f"{step['model']} b{step['batch_size']} {step['image_size']}px",
                          step["jit_vs_graph"]["ratio"]))
    return found


def targets(data):
    """Each target with its measured value and status (computed, never asserted)."""
    found = []
    summary = data.get("summary") or {}

    def add(key, text, value, threshold, higher_is_better=True, unit="x", where=None):
        if value is None:
            found.append({"id": key, "target": text, "status": "not measured"})
            return
        met = value >= threshold if higher_is_better else value <= threshold
        shown = f"{value:.2f}{unit}" if unit == "x" else f"{value:.0f} {unit}"
        if where:
            shown += f" ({where})"
        found.append({"id": key, "target": text, "value": value, "threshold": threshold, "met": bool(met),
                      "status": f"{'met' if met else 'NOT met'}: {shown}"})

    jit = jit_vs_graph_ratios(summary)
    worst = min(jit, key=lambda item: item[1]) if jit else (None, None)
    add("jit_vs_graph", f"@ms.jit train step (course setting of {HOST_BLOCKING}) within 5% of graph mode: speed "
        f">= {JIT_TOLERANCE}x graph" + (f", slowest of the {len(jit)} steps measured" if jit else ""), worst[1],
        JIT_TOLERANCE, where=worst[0])
    pipe = summary.get("pipeline_vs_lenet_training")
    add("pipeline_vs_training", "digits pipeline images/s >= 3x LeNet training images/s",
        pipe["ratio"] if pipe else None, 3.0)
    notebooks = data.get("notebooks") or {}
    records = notebooks.get("records") or []
    slowest = max(records, key=lambda r: r["seconds"]) if records else None
    add("lesson_max_seconds", f"each lesson executes in <= {LESSON_SECONDS:.0f} s on 2 cores",
        slowest["seconds"] if slowest else None, LESSON_SECONDS, higher_is_better=False, unit="s (slowest)",
        where=slowest["notebook"] if slowest else None)
    add("course_total_seconds", f"whole course executes in <= {COURSE_SECONDS / 60:.0f} min",
        notebooks.get("total_seconds"), COURSE_SECONDS, higher_is_better=False, unit="s")
    if data.get("run", {}).get("quick") is False:
        add("bench_seconds", f"`make bench` finishes in < {BENCH_SECONDS / 60:.0f} min", data["run"]["seconds"],
            BENCH_SECONDS, higher_is_better=False, unit="s")
    return found


# ------------------------------------------------------------------------------------------------ output
def write_atomic(path: Path, write):
    """Write through ``write(temp_path)`` into a temp file in the same folder, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        write(Path(temp))
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def check_numbers(value, where="results"):
    """Raise if any number in ``value`` is NaN/inf, or is a timing that is not positive."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where} = {value!r}: every number in results.json must be finite and >= 0")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            check_numbers(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_numbers(item, f"{where}[{index}]")


def attach_fast_conv(data, out_dir: Path):
    """Put ``fast_conv_results.json`` (``make fast-conv-bench``, part of ``make bench``) into ``data["fast_conv"]``
    when it was measured on this CPU kind; drop an older one of another kind (kinds never share a table)."""
    path = out_dir / "fast_conv_results.json"
    found = json.loads(path.read_text()) if path.is_file() else None
    if found and found.get("cpu_kind") == data.get("cpu_kind"):
        data["fast_conv"] = found
    else:
        data.pop("fast_conv", None)


def write_outputs(data, out_dir: Path):
    check_numbers(data)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "results.json", lambda p: p.write_text(json.dumps(data, indent=1) + "\n"))
    write_atomic(out_dir / "results.md", lambda p: p.write_text(report.markdown(data)))
    write_atomic(out_dir / "results.png", lambda p: report.figure(data, p))


def load_previous(out_dir: Path):
    """The results.json in ``out_dir`` as schema 2 (a schema-1 file is tagged with its CPU kind), or None."""
    path = out_dir / "results.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema_version") not in (1, SCHEMA_VERSION):
        return None
    if data["schema_version"] == 1:  # before issue #14: PyTorch ran with OMP_WAIT_POLICY=PASSIVE, no CPU kind
        cpu = (data.get("environment") or {}).get("cpu")
        kind = cpu_kind(cpu) if cpu else None
        data = {"schema_version": SCHEMA_VERSION, "harness_version": 1, "cpu_kind": kind,
                **{key: value for key, value in data.items() if key != "schema_version"}}
        if isinstance(data.get("notebooks"), dict) and data["notebooks"].get("records") and kind:
            data["notebooks"].setdefault("cpu_kind", kind)
            data["notebooks"].setdefault("cpu", kind)  # course_lib.lab.lesson.run_time names the machine from "cpu"
    return data


def separate_cpu_kinds(previous, kind):
    """(earlier results of CPU kind ``kind`` or None, {other kind: its last results}) from a previous results.json.

    Results of different CPU kinds are never mixed: a run on another kind moves the previous top level into
    ``other_cpu_kinds`` (where report.py shows it in its own section); a run of an archived kind replaces it.
    """
    if not previous:
        return None, {}
    others = dict(previous.get("other_cpu_kinds") or {})
    same = others.pop(kind, None)
    previous_kind = previous.get("cpu_kind")
    top = {key: value for key, value in previous.items() if key != "other_cpu_kinds"}
    if previous_kind == kind:
        return top, others
    if previous_kind and (top.get("results") or (top.get("notebooks") or {}).get("records")):
        others[previous_kind] = top
    return same, others


def time_course(args, log):
    paths = args.notebook_paths
    log(f"6. notebooks: {len(paths)} from {args.notebook_dir}, one at a time, timeout {args.notebook_timeout} s each")
    before = load_average()
    started = utc_now()
    records = notebook_timing.time_notebooks(paths, timeout=args.notebook_timeout, progress=log)
    kind = cpu_kind()
    return {"cpu_kind": kind, "cpu": kind, "measured_utc": started, "load_average_before": before,
            "load_average_after": load_average(),
            "kernel": "python3", "timeout_seconds": args.notebook_timeout, "runs_per_notebook": 1,
            "records": records, "total_seconds": sum(r["seconds"] for r in records),
            "all_ok": all(r["status"] == "ok" for r in records)}


def measure_everything(plan, log):
    """Measurements 1-5 and 7 with all participants alive; returns (results sections, environment)."""
    run_dir = Path(tempfile.mkdtemp(prefix="bench-run-"))
    workers, probes = {}, {}
    try:
        log(f"0. machine: import time and SGEMM peak ({plan.threads} threads), one process at a time")
        machine = {"import": measure_import_time(plan, log), "sgemm": measure_sgemm_peak(plan, log)}
        log(f"starting workers (threads={plan.threads}, repeats={plan.repeats}, quick={plan.quick}) ...")
        # The oneDNN probes run while the workers import their frameworks: nothing is timed yet.
        probes = {key: start_onednn_probe(key, plan.threads) for key in ONEDNN_PROBES}
        start_workers(plan.threads, run_dir, workers)
        probe_results = {key: finish_onednn_probe(probe) for key, probe in probes.items()}
        flops = {}
        for config in plan.train_steps:
            key = (config["model"], config["image_size"])
            if key not in flops:
                flops[key] = workers["pynative"].call("count_flops", model=key[0], image_size=key[1])
        lenet, lenet_info = measure_lenet(workers, plan, run_dir, log)
        steps = measure_train_steps(workers, plan, log)
        pipelines = measure_pipelines(workers, plan, log)
        inference = measure_inference(workers, plan, run_dir, log)
        env = environment(workers, probe_results, plan, machine)
    finally:
        for worker in workers.values():
            worker.request_exit()
        for worker in workers.values():
            worker.close()
        for _, _, process in probes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(run_dir, ignore_errors=True)
    return assemble(plan, lenet, lenet_info, steps, pipelines, inference, flops, machine["sgemm"]), env


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1-2 minute smoke run with tiny sizes (same structure)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for results.json/.md/.png (default benchmarks/; "
                        "with --quick outputs/bench-quick/, "
                             "so a smoke run never replaces the committed results)")
    parser.add_argument("--repeats", type=int, default=MIN_REPEATS,
                        help=f"timed repeats per measurement, at least {MIN_REPEATS} (default {MIN_REPEATS})")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for MindSpore kernels and PyTorch alike "
                        "(default: the cores this process may use)")
    parser.add_argument("--notebooks", action="store_true",
                        help="only time the notebooks (measurement 6), merged into an existing results.json")
    parser.add_argument("--all", action="store_true", help="measurements 1-5 and 7, then the notebooks")
    parser.add_argument("--render-only", action="store_true",
                        help="measure nothing: rewrite results.md and results.png from the existing results.json")
    parser.add_argument("--notebook-dir", type=Path, default=PROJECT_ROOT / "notebooks")
    parser.add_argument("--notebook-timeout", type=int, default=notebook_timing.DEFAULT_TIMEOUT)
    args = parser.parse_args(argv)
    if args.repeats < MIN_REPEATS:
        parser.error(f"--repeats must be at least {MIN_REPEATS} (the median of fewer is too noisy), got "
                     f"{args.repeats}. Fix: leave it out, or pass e.g. --repeats 7.")
    if args.threads < 0:
        parser.error(f"--threads must be >= 1 (or 0 for all available cores), got {args.threads}.")
    if args.notebook_timeout < 1:
        parser.error(f"--notebook-timeout must be a positive number of seconds, got {args.notebook_timeout}.")
    if args.notebooks and args.all:
        parser.error("--notebooks (only the notebooks) and --all (everything) exclude each other; pass one.")
    if args.render_only and (args.notebooks or args.all or args.quick):
        parser.error("--render-only measures nothing; it cannot be combined with --quick, --notebooks or --all.")
    args.threads = args.threads or cpu_info()["cores"]
    if args.out is None:
        args.out = OUTPUT_DIR / "bench-quick" if args.quick else HERE
    if args.notebooks or args.all:
        try:
            args.notebook_paths = notebook_timing.find_notebooks(args.notebook_dir)
        except ValueError as error:
            parser.error(str(error))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.perf_counter()

    def log(text):
        print(f"[{time.perf_counter() - started:5.0f} s] {text}", flush=True)

    out_dir = args.out.resolve()
    previous = load_previous(out_dir)
    kind = cpu_kind()
    same_kind, other_kinds = separate_cpu_kinds(previous, kind)
    # other_cpu_kinds comes before this kind's sections: readers that take the last notebook record find ours.
    data = {"schema_version": SCHEMA_VERSION, "harness_version": 2, "cpu_kind": kind, "other_cpu_kinds": other_kinds}
    if args.render_only:
        if not previous:
            raise SystemExit(f"--render-only: no results.json (schema 1 or {SCHEMA_VERSION}) "
                             f"in {scrub_paths(str(out_dir))}. "
                             "Fix: run `make bench` first.")
        data = previous
    elif args.notebooks:
        if same_kind:
            data.update({key: value for key, value in same_kind.items()
                         if key not in ("schema_version", "cpu_kind", "other_cpu_kinds")})
        else:
            data.update({"run": {"status": "not measured: run `make bench`"}, "results": []})
        data["notebooks"] = time_course(args, log)
    else:
        plan = make_plan(args.quick, args.repeats, args.threads)
        created = utc_now()
        load_before = load_average()
        try:
            measured, env = measure_everything(plan, log)
        except WorkerError as error:
            raise SystemExit(f"benchmark failed: {error}") from error
        data.update(measured)
        data["environment"] = env
        data["run"] = {"created_utc": created, "quick": plan.quick, "repeats": plan.repeats,
                       "warmup": 2, "warmup_note": "calls per participant excluded: the first (compile) and one more",
                       "seconds_per_repeat_target": plan.target_seconds,
                       "statistic": "median over repeats (min/max shown)", "interleaved": True,
                       "command": scrub_paths(" ".join(["benchmarks/run.py",
                                                        *(argv if argv is not None else sys.argv[1:])])),
                       "load_average_before": load_before, "load_average_after": load_average()}
        data["run"]["seconds"] = time.perf_counter() - started  # the notebooks below are timed separately
        if args.all:
            data["notebooks"] = time_course(args, log)
        elif same_kind and (same_kind.get("notebooks") or {}).get("records"):
            data["notebooks"] = same_kind["notebooks"]  # an earlier --notebooks run on this CPU kind (own timestamp)
        else:
            data["notebooks"] = {"status": "not measured: run `make bench-notebooks` (benchmarks/run.py --notebooks)"}
    data["targets"] = targets(data)
    attach_fast_conv(data, out_dir)
    write_outputs(data, out_dir)
    log(f"wrote results.json, results.md, results.png to {out_dir} in {time.perf_counter() - started:.0f} s")
    for target in data["targets"]:
        log(f"  target: {target['target']}: {target['status']}")


if __name__ == "__main__":
    main()
