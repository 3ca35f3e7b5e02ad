"""Measure training-step time honestly: warm-up excluded, median of repeats, and environment variables that
MindSpore reads only at import time (``ONEDNN_MAX_CPU_ISA``) varied in separate processes.
"""
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_bf16", "amx_tile")


def cpu_info() -> dict:
    """CPU model name, core count and the SIMD flags that matter to oneDNN (Linux; empty where unknown)."""
    model, flags = "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cores = os.cpu_count() or 1
    return {"model": model, "cores": cores, **{flag: flag in flags for flag in CPU_FLAGS_OF_INTEREST}}


def cpu_kind(info=None) -> str:
    """A short name for the kind of CPU, e.g. ``"AMD EPYC, AVX-512"``: model name and the widest SIMD it has.

    Benchmark results from different kinds never share a table (oneDNN picks different kernels on each).
    """
    info = cpu_info() if info is None else info
    if info.get("avx512f") and info.get("amx_tile"):
        simd = "AVX-512 + AMX"
    elif info.get("avx512f"):
        simd = "AVX-512"
    elif info.get("avx2"):
        simd = "AVX2"
    else:
        simd = "no AVX2"
    return f"{info.get('model') or 'unknown CPU'}, {simd}"


def summarize(seconds) -> dict:
    """Median, min and max of a list of timings (seconds)."""
    seconds = [float(s) for s in seconds]
    if not seconds:
        raise ValueError("summarize needs at least one timing, got none.")
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds), "n": len(seconds)}


def time_train_step(model="lenet5", batch_size=32, image_size=32, steps=5, warmup=2, mode="graph", seed=1):
    """Seconds per training step (median of ``steps`` after ``warmup``) of a course model on random data.

    The step is ``nn.TrainOneStepCell(WithLossCell(net, CrossEntropy), Momentum)``; the first call (graph
    compilation) is reported separately as ``first_step``.
    """
    import mindspore as ms
    from mindspore import nn

    from . import models

    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}.")
    if mode not in ("graph", "pynative"):
        raise ValueError(f"mode must be 'graph' or 'pynative', got {mode!r}.")
    factories = {"lenet5": models.lenet5, "resnet18": models.resnet18, "resnet50": models.resnet50}
    if model not in factories:
        raise ValueError(f"model must be one of {sorted(factories)}, got {model!r}.")
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(seed)
    num_classes = 10
    net = factories[model](num_classes=num_classes)
    channels = 1 if model == "lenet5" else 3
    rng = np.random.default_rng(seed)
    x = ms.Tensor(rng.standard_normal((batch_size, channels, image_size, image_size)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, num_classes, batch_size).astype(np.int32))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    step.set_train()
    start = time.perf_counter()
    step(x, y).asnumpy()
    first = time.perf_counter() - start
    for _ in range(max(0, warmup - 1)):
        step(x, y).asnumpy()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step(x, y).asnumpy()
        times.append(time.perf_counter() - start)
    return {"first_step": first, **summarize(times)}


def time_in_subprocess(env: dict, timeout=600, **kwargs) -> dict:
    """Run ``time_train_step(**kwargs)`` in a fresh Python process with ``env`` applied before import.

    The child imports course_lib, which fills in missing defaults, so to measure oneDNN's own choice pass
    ``{"ONEDNN_MAX_CPU_ISA": "ALL"}`` (oneDNN's documented "no cap") rather than leaving the variable out.
    """
    child_env = dict(os.environ)
    child_env.update({key: str(value) for key, value in env.items()})
    code = ("import json, sys, course_lib\nfrom course_lib.timing import time_train_step\n"
            "print(json.dumps(time_train_step(**json.loads(sys.argv[1]))))")
    result = subprocess.run([sys.executable, "-c", code, json.dumps(kwargs)], capture_output=True, text=True,
                            env=child_env, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"timing subprocess failed (exit {result.returncode}):\n{result.stderr[-1500:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])
