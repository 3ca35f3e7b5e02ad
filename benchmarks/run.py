"""`make bench`: how fast the course trains on this CPU, measured side by side in one run.

MindSpore graph mode vs PyNative vs PyTorch eager (LeNet-5 throughput, ResNet step times), the oneDNN ISA cap,
MindData pipeline throughput, compile time and inference; writes results.json, results.md and results.png.

    python benchmarks/run.py                 # `make bench`: measurements 1-5 and 7 (5-8 min on 2 cores)
    python benchmarks/run.py --notebooks     # `make bench-notebooks`: measurement 6, merged into results.json
    python benchmarks/run.py --all           # both, one after the other (about 15 min)
    python benchmarks/run.py --quick         # `make bench-quick`: 1-2 min smoke run, same structure,
                                             # written to outputs/bench-quick/ unless --out is given

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
from course_lib.lesson import scrub_paths  # noqa: E402
from course_lib.paths import OUTPUT_DIR, PROJECT_ROOT  # noqa: E402
from course_lib.timing import cpu_info, summarize  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import notebook_timing  # noqa: E402
import report  # noqa: E402

SCHEMA_VERSION = 1
MIN_REPEATS = 5
#: Pause between two timed repeats, so threads still spinning after one participant's repeat have gone idle.
PAUSE_SECONDS = 0.05
#: Longest a worker may take to answer one command (a ResNet-50 graph compile on a busy machine included).
CALL_TIMEOUT = 900
SEED = 1
#: Environment variables that change speed; recorded with the results.
ENV_KEYS = ("ONEDNN_MAX_CPU_ISA", "GLOG_v", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY",
            "KMP_AFFINITY", "GOMP_SPINCOUNT", "MS_SUBMODULE_LOG_v", "COURSE_DATA_DIR")
DEFAULT_ISA_NOTE = "AVX2 (course default)"


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


def make_plan(quick, repeats, threads) -> Plan:
    if quick:  # every participant of the full run, on tiny work: a smoke test of the whole pipeline
        return Plan(quick=True, repeats=repeats, threads=threads, lenet_batches=4, target_seconds=0.02,
                    train_steps=[{"model": "lenet5", "batch_size": 32, "image_size": 32, "onednn": True},
                                 {"model": "resnet18", "batch_size": 2, "image_size": 64, "onednn": False}],
                    pipelines=[{"pipeline": "digits", "batch_size": 32, "image_size": 32, "max_batches": 4},
                               {"pipeline": "imagefolder", "batch_size": 16, "image_size": 32, "max_batches": 2}])
    # The oneDNN comparison (measurement 3) runs on LeNet and ResNet-18 64x64, the steps the course trains.
    return Plan(quick=False, repeats=repeats, threads=threads, lenet_batches=44,
                train_steps=[{"model": "lenet5", "batch_size": 32, "image_size": 32, "onednn": True},
                             {"model": "resnet18", "batch_size": 16, "image_size": 64, "onednn": True},
                             {"model": "resnet18", "batch_size": 16, "image_size": 224, "onednn": False},
                             {"model": "resnet50", "batch_size": 16, "image_size": 64, "onednn": False},
                             {"model": "resnet50", "batch_size": 4, "image_size": 224, "onednn": False}],
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


def torch_env():
    """PyTorch's environment: as started, plus ``OMP_WAIT_POLICY=PASSIVE`` unless the caller chose a policy.

    With OpenMP's default (spinning) wait policy, a program holding one of 2 cores makes every PyTorch parallel
    region wait for the thread that lost its core: a ResNet-18 step measured 5-13x slower (benchmarks/README.md).
    Sleeping threads make the comparison fair on a shared machine. MindSpore uses its own thread pool (no OpenMP).
    """
    env = dict(ORIGINAL_ENV)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def start_workers(threads, run_dir, workers):
    """Start the participants into ``workers`` (so the caller can stop them whatever happens) and wait until
    all are ready: MindSpore graph (course env), graph with ONEDNN_MAX_CPU_ISA=ALL, PyNative, PyTorch."""
    course_env = dict(ORIGINAL_ENV)  # the worker imports course_lib first, which fills in its defaults
    specs = {
        "graph": (["--framework", "mindspore", "--mode", "graph"], course_env),
        "graph_all": (["--framework", "mindspore", "--mode", "graph"], {**ORIGINAL_ENV, "ONEDNN_MAX_CPU_ISA": "ALL"}),
        "pynative": (["--framework", "mindspore", "--mode", "pynative"], course_env),
        "torch": (["--framework", "torch", "--mode", "eager"], torch_env()),
    }
    for key, (args, env) in specs.items():
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


def measure_lenet(workers, plan, run_dir, log):
    """Measurement 1: LeNet-5 training throughput on the digits, batch 32, Momentum(0.01, 0.9)."""
    data = run_dir / "digits_batches.npz"
    prepared = workers["graph"].call("prepare_digits", path=str(data), batch_size=32, seed=SEED)
    batches = min(plan.lenet_batches, prepared["batches"])
    task = {"kind": "lenet_epoch", "data": str(data), "batches": batches, "seed": SEED}
    common = {"measurement": "lenet_training", "model": "lenet5", "batch_size": 32, "image_size": 32}
    participants = [
        Participant("graph", "lenet_model_graph", {**task, "api": "Model.train"},
                    {**common, "label": "MindSpore graph, Model.train", "framework": "mindspore", "mode": "graph",
                     "api": "Model.train", "onednn_max_cpu_isa": isa_of(workers["graph"].info)}),
        Participant("pynative", "lenet_model_pynative", {**task, "api": "Model.train"},
                    {**common, "label": "MindSpore PyNative, Model.train", "framework": "mindspore",
                     "mode": "pynative", "api": "Model.train", "onednn_max_cpu_isa": isa_of(workers["pynative"].info)}),
        Participant("pynative", "lenet_trainer_jit", {**task, "api": "Trainer", "jit": True},
                    {**common, "label": "MindSpore Trainer (@ms.jit)", "framework": "mindspore", "mode": "jit",
                     "api": "course_lib.trainer.Trainer", "onednn_max_cpu_isa": isa_of(workers["pynative"].info)}),
        Participant("torch", "lenet_torch", task,
                    {**common, "label": "PyTorch eager", "framework": "pytorch", "mode": "eager",
                     "api": "training loop", "onednn_max_cpu_isa": isa_of(workers["torch"].info)}),
        Participant("graph_all", "lenet_model_graph_all", {**task, "api": "Model.train"},
                    {**common, "label": "MindSpore graph, Model.train, ISA=ALL", "framework": "mindspore",
                     "mode": "graph", "api": "Model.train", "onednn_max_cpu_isa": "ALL"}),
    ]
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
        participants = [
            Participant("graph", f"{tag}_graph", spec, {**base, "label": "MindSpore graph", "framework": "mindspore",
                                                       "mode": "graph",
                                                       "onednn_max_cpu_isa": isa_of(workers["graph"].info)}),
            Participant("pynative", f"{tag}_pynative", spec,
                        {**base, "label": "MindSpore PyNative", "framework": "mindspore", "mode": "pynative",
                         "onednn_max_cpu_isa": isa_of(workers["pynative"].info)}),
            Participant("torch", f"{tag}_torch", spec,
                        {**base, "label": "PyTorch eager", "framework": "pytorch", "mode": "eager",
                         "api": "training loop", "onednn_max_cpu_isa": isa_of(workers["torch"].info)}),
        ]
        if config["onednn"]:
            participants.append(Participant("graph_all", f"{tag}_graph_all", spec,
                                            {**base, "label": "MindSpore graph, ISA=ALL", "framework": "mindspore",
                                             "mode": "graph", "onednn_max_cpu_isa": "ALL"}))
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
import course_lib, numpy as np, mindspore as ms
from mindspore import nn
ms.set_context(mode=ms.PYNATIVE_MODE)
for cin, cout, k, size in ((1, 6, 5, 32), (64, 64, 3, 16), (3, 64, 7, 64)):
    conv = nn.Conv2d(cin, cout, k, pad_mode="valid")
    grad = ms.grad(lambda x: conv(x).sum(), grad_position=0, weights=conv.trainable_params())
    grad(ms.Tensor(np.ones((2, cin, size, size), np.float32)))
""",
    "torch": """
import sys, torch
torch.set_num_threads(int(sys.argv[1]))
for cin, cout, k, size in ((1, 6, 5, 32), (64, 64, 3, 16), (3, 64, 7, 64)):
    conv = torch.nn.Conv2d(cin, cout, k)
    x = torch.ones((2, cin, size, size), requires_grad=True)
    conv(x).sum().backward()
""",
}


def start_onednn_probe(framework, isa_value, threads):
    """Start a short process that reports what a framework's oneDNN does with ``ONEDNN_MAX_CPU_ISA=isa_value``.

    With ``ONEDNN_VERBOSE=1`` it runs a 5x5, a 3x3 and a 7x7 convolution, forward and backward; oneDNN's verbose
    lines name the instruction set it dispatches to, its thread count and every convolution kernel it picked.
    ``isa_value=None`` leaves the variable as `make bench` was started (PyTorch: its own default).
    """
    env = {**(torch_env() if framework == "torch" else ORIGINAL_ENV), "ONEDNN_VERBOSE": "1"}
    if isa_value is not None:
        env["ONEDNN_MAX_CPU_ISA"] = isa_value
    process = subprocess.Popen([sys.executable, "-c", _PROBE_CODE[framework], str(threads)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env, cwd=str(PROJECT_ROOT))
    return (isa_value or ORIGINAL_ENV.get("ONEDNN_MAX_CPU_ISA") or "unset"), process


def finish_onednn_probe(probe):
    isa_value, process = probe
    text, _ = process.communicate(timeout=CALL_TIMEOUT)
    isa = re.search(r"onednn_verbose,[^\n]*?,cpu,isa:([^\n]+)", text)
    threads = re.search(r"onednn_verbose,[^\n]*?,cpu,runtime:([^,\n]+),nthr:(\d+)", text)
    kernels = sorted({m.group(1) + " " + m.group(2) for m in
                      re.finditer(r"primitive,exec,cpu,convolution,([^,]+),([a-z_]+),", text)})
    if process.returncode != 0 or not isa:
        raise WorkerError(f"the oneDNN probe with ONEDNN_MAX_CPU_ISA={isa_value} failed "
                          f"(exit {process.returncode}):\n{text[-1500:]}")
    return {"setting": isa_value, "isa": isa.group(1).strip(),
            "runtime": threads.group(1) if threads else "not reported",
            "threads": int(threads.group(2)) if threads else "not reported",
            "convolution_kernels": kernels}


# ------------------------------------------------------------------------------------------------ assembling
def utc_now():
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def load_average():
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover
        return []


def environment(workers, probes, plan):
    import numpy as np

    graph, torch_info = workers["graph"].info, workers["torch"].info
    return {
        "python": platform.python_version(), "platform": platform.platform(),
        "mindspore": graph["mindspore"], "torch": torch_info["torch"], "numpy": np.__version__,
        "cpu": cpu_info(),
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
        "onednn": probes,
    }


def default_workers():
    from course_lib.data import default_num_workers

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


def assemble(plan, lenet, lenet_info, steps, pipelines, inference):
    """All records and ratios as one JSON-ready dict (the sections of results.json except environment/notebooks)."""
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
    onednn.append(onednn_record("LeNet-5 Model.train epoch (graph)", lenet_graph, by_worker(lenet, "graph_all")))

    step_summary = []
    for group in steps:
        graph, pynative, torch = (by_worker(group, key) for key in ("graph", "pynative", "torch"))
        for p in (graph, pynative, torch):
            record = timing_record(p)
            record["vs_pytorch"] = ratio_record(p, torch)["ratio"]
            results.append(record)
            compile_records.append({
                "task": "train_step", "label": p.meta["label"], "model": p.meta["model"],
                "batch_size": p.meta["batch_size"], "image_size": p.meta["image_size"],
                "framework": p.meta["framework"], "mode": p.meta["mode"], "unit": "step",
                "first_seconds": p.setup["first_seconds"], "steady_seconds": record["median"],
                "first_over_steady": p.setup["first_seconds"] / record["median"]})
        step_summary.append({"model": graph.meta["model"], "batch_size": graph.meta["batch_size"],
                             "image_size": graph.meta["image_size"],
                             "graph_vs_pytorch": ratio_record(graph, torch),
                             "graph_vs_pynative": ratio_record(graph, pynative),
                             "pynative_vs_pytorch": ratio_record(pynative, torch)})
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
        "lenet_trainer_jit_vs_pytorch": ratio_record(find(lenet, mode="jit"), lenet_torch),
        "lenet_graph_vs_pynative": ratio_record(lenet_graph, find(lenet, mode="pynative")),
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


def targets(data):
    """Each target of the issue with its measured value and status."""
    found = []
    summary = data.get("summary") or {}

    def add(key, text, value, threshold, higher_is_better=True, unit="x"):
        if value is None:
            found.append({"id": key, "target": text, "status": "not measured"})
            return
        met = value >= threshold if higher_is_better else value <= threshold
        shown = f"{value:.2f}{unit}" if unit == "x" else f"{value:.0f} {unit}"
        found.append({"id": key, "target": text, "value": value, "threshold": threshold, "met": bool(met),
                      "status": f"{'met' if met else 'NOT met'}: {shown}"})

    lenet = summary.get("lenet_graph_vs_pytorch")
    add("lenet_graph_vs_pytorch", "MindSpore graph-mode LeNet training throughput >= 1.0x PyTorch eager",
        lenet["ratio"] if lenet else None, 1.0)
    resnet = [s for s in summary.get("train_steps", []) if s["model"] == "resnet18" and s["image_size"] == 64]
    add("resnet18_64_graph_vs_pytorch", "ResNet-18 64x64 training step (graph) >= 1.0x PyTorch eager",
        resnet[0]["graph_vs_pytorch"]["ratio"] if resnet else None, 1.0)
    pipe = summary.get("pipeline_vs_lenet_training")
    add("pipeline_vs_training", "digits pipeline images/s >= 3x LeNet training images/s",
        pipe["ratio"] if pipe else None, 3.0)
    notebooks = data.get("notebooks") or {}
    records = notebooks.get("records") or []
    add("notebook_max_seconds", "every notebook executes in <= 120 s",
        max(r["seconds"] for r in records) if records else None, 120.0, higher_is_better=False, unit="s (slowest)")
    add("course_total_seconds", "whole course executes in <= 10 min",
        notebooks.get("total_seconds"), 600.0, higher_is_better=False, unit="s")
    if data.get("run", {}).get("quick") is False:
        add("bench_seconds", "`make bench` finishes in < 10 min", data["run"]["seconds"], 600.0,
            higher_is_better=False, unit="s")
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


def write_outputs(data, out_dir: Path):
    check_numbers(data)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "results.json", lambda p: p.write_text(json.dumps(data, indent=1) + "\n"))
    write_atomic(out_dir / "results.md", lambda p: p.write_text(report.markdown(data)))
    write_atomic(out_dir / "results.png", lambda p: report.figure(data, p))


def load_previous(out_dir: Path):
    path = out_dir / "results.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema_version") == SCHEMA_VERSION else None


def time_course(args, log):
    paths = args.notebook_paths
    log(f"6. notebooks: {len(paths)} from {args.notebook_dir}, one at a time, timeout {args.notebook_timeout} s each")
    before = load_average()
    started = utc_now()
    records = notebook_timing.time_notebooks(paths, timeout=args.notebook_timeout, progress=log)
    return {"measured_utc": started, "load_average_before": before, "load_average_after": load_average(),
            "kernel": "python3", "timeout_seconds": args.notebook_timeout, "runs_per_notebook": 1,
            "records": records, "total_seconds": sum(r["seconds"] for r in records),
            "all_ok": all(r["status"] == "ok" for r in records)}


def measure_everything(plan, log):
    """Measurements 1-5 and 7 with all participants alive; returns (results sections, environment)."""
    run_dir = Path(tempfile.mkdtemp(prefix="bench-run-"))
    workers, probes = {}, {}
    try:
        log(f"starting workers (threads={plan.threads}, repeats={plan.repeats}, quick={plan.quick}) ...")
        # The probes run while the workers import their frameworks: nothing is timed yet.
        probes = {"course": start_onednn_probe("mindspore", ORIGINAL_ENV.get("ONEDNN_MAX_CPU_ISA") or "AVX2",
                                               plan.threads),
                  "all": start_onednn_probe("mindspore", "ALL", plan.threads),
                  "pytorch": start_onednn_probe("torch", None, plan.threads)}
        start_workers(plan.threads, run_dir, workers)
        probe_results = {key: finish_onednn_probe(probe) for key, probe in probes.items()}
        lenet, lenet_info = measure_lenet(workers, plan, run_dir, log)
        steps = measure_train_steps(workers, plan, log)
        pipelines = measure_pipelines(workers, plan, log)
        inference = measure_inference(workers, plan, run_dir, log)
        env = environment(workers, probe_results, plan)
    finally:
        for worker in workers.values():
            worker.request_exit()
        for worker in workers.values():
            worker.close()
        for _, process in probes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(run_dir, ignore_errors=True)
    return assemble(plan, lenet, lenet_info, steps, pipelines, inference), env


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
    data = {"schema_version": SCHEMA_VERSION}
    if args.render_only:
        if not previous:
            raise SystemExit(f"--render-only: no results.json (schema {SCHEMA_VERSION}) "
                             f"in {scrub_paths(str(out_dir))}. "
                             "Fix: run `make bench` first.")
        data = previous
    elif args.notebooks:
        if previous:
            data = previous
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
        elif previous and previous.get("notebooks", {}).get("records"):
            data["notebooks"] = previous["notebooks"]  # measured by an earlier --notebooks run (own timestamp)
        else:
            data["notebooks"] = {"status": "not measured: run `make bench-notebooks` (benchmarks/run.py --notebooks)"}
    data["targets"] = targets(data)
    write_outputs(data, out_dir)
    log(f"wrote results.json, results.md, results.png to {out_dir} in {time.perf_counter() - started:.0f} s")
    for target in data["targets"]:
        log(f"  target: {target['target']}: {target['status']}")


if __name__ == "__main__":
    main()
