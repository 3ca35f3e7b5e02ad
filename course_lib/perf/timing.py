"""Measure training-step time honestly: warm-up excluded, median of repeats, and environment variables that
MindSpore reads only at import time (``ONEDNN_MAX_CPU_ISA``) varied in separate processes.

``time_step_in_subprocess`` times one train step, graph mode or ``@ms.jit``, in a fresh process with a chosen
``MS_DEV_HOST_BLOCKING_RUN`` (appendix A7).
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from course_lib.i18n import _
from course_lib.validation import check_int, check_real

CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_bf16", "amx_tile")


def _cpu_linux() -> tuple[str, set]:
    model, flags = "unknown", set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name") and model == "unknown":
            model = line.split(":", 1)[1].strip()
        elif line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    return model, flags


def _sysctl(name: str) -> str:
    done = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=10)
    return done.stdout.strip() if done.returncode == 0 else ""


def _cpu_macos() -> tuple[str, set]:
    # Intel Macs list their SIMD flags in two sysctl keys (upper case, "AVX512F", "AVX2"); Apple silicon (arm64)
    # has neither key: its SIMD is NEON, and the x86 flags below are simply absent.
    model = _sysctl("machdep.cpu.brand_string") or platform.processor() or "unknown"
    features = f"{_sysctl('machdep.cpu.features')} {_sysctl('machdep.cpu.leaf7_features')}"
    return model, {flag.lower().replace(".", "_") for flag in features.split()}


def cpu_info() -> dict:
    """CPU model name, core count and the SIMD flags that matter to oneDNN, and where they were read (``source``).

    Linux: /proc/cpuinfo. macOS: ``sysctl`` (Intel Macs list AVX flags; Apple silicon has none, it is arm64).
    Windows has neither: the model comes from ``platform.processor()`` and the flags are unknown, so they read False
    and ``source`` says so. Nothing here raises on an unknown platform.
    """
    model, flags, source = "unknown", set(), "unknown"
    try:
        if sys.platform.startswith("linux"):
            (model, flags), source = _cpu_linux(), "/proc/cpuinfo"
        elif sys.platform == "darwin":
            (model, flags), source = _cpu_macos(), "sysctl"
        else:
            model = platform.processor() or "unknown"
            source = "platform.processor() (no SIMD flags on this OS)"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        cores = os.cpu_count() or 1
    return {"model": model, "cores": cores, **{flag: flag in flags for flag in CPU_FLAGS_OF_INTEREST},
            "source": source}


def cpu_kind(info=None) -> str:
    """A short name for the kind of CPU, e.g. ``"AMD EPYC, AVX-512"``: model name and the widest SIMD it has.

    Benchmark results from different kinds never share a table (oneDNN picks different kernels on each).
    """
    info = cpu_info() if info is None else info
    if str(info.get("source", "")).startswith("platform.processor"):
        simd = "SIMD flags unknown"
    elif info.get("avx512f") and info.get("amx_tile"):
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
        raise ValueError(_("summarize needs at least one timing, got none."))
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds), "n": len(seconds)}


#: The course models the step timers accept.
STEP_MODELS = ("lenet5", "resnet18", "resnet50")


def _random_problem(model, batch_size, image_size, steps, warmup, seed, mode):
    """Check the arguments, set the mode and seed, and build (net, x, y, loss, Momentum optimizer) on random data."""
    import mindspore as ms
    from mindspore import nn

    from course_lib import models

    steps = check_int("steps", steps, 1, fix=_("time at least one step, e.g. steps=10"))
    warmup = check_int("warmup", warmup, 0, fix=_("e.g. warmup=2 (the untimed first calls)"))
    if model not in STEP_MODELS:
        raise ValueError(_("model must be one of {step_models}, got {model!r}.").format(
            step_models=list(STEP_MODELS), model=model))
    ms.set_context(mode=mode)
    ms.set_seed(seed)
    num_classes = 10
    net = getattr(models, model)(num_classes=num_classes)
    channels = 1 if model == "lenet5" else 3
    rng = np.random.default_rng(seed)
    x = ms.Tensor(rng.standard_normal((batch_size, channels, image_size, image_size)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, num_classes, batch_size).astype(np.int32))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return net, x, y, loss, nn.Momentum(net.trainable_params(), 0.01, 0.9)


def _time_calls(step, x, y, steps, warmup):
    """Time ``step(x, y).asnumpy()``: the first call alone (``first_step``), then ``steps`` calls after warm-up."""
    start = time.perf_counter()
    step(x, y).asnumpy()
    first = time.perf_counter() - start
    for _call in range(max(0, warmup - 1)):
        step(x, y).asnumpy()
    times = []
    for _step in range(steps):
        start = time.perf_counter()
        step(x, y).asnumpy()
        times.append(time.perf_counter() - start)
    return {"first_step": first, **summarize(times)}


def time_train_step(model="lenet5", batch_size=32, image_size=32, steps=5, warmup=2, mode="graph", seed=1):
    """Seconds per training step (median of ``steps`` after ``warmup``) of a course model on random data.

    The step is ``nn.TrainOneStepCell(WithLossCell(net, CrossEntropy), Momentum)``; the first call (graph
    compilation) is reported separately as ``first_step``.
    """
    import mindspore as ms
    from mindspore import nn

    if mode not in ("graph", "pynative"):
        raise ValueError(_("mode must be 'graph' or 'pynative', got {mode!r}.").format(mode=mode))
    net, x, y, loss, optimizer = _random_problem(model, batch_size, image_size, steps, warmup, seed,
                                                 ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), optimizer)
    step.set_train()
    return _time_calls(step, x, y, steps, warmup)


def time_in_subprocess(env: dict, timeout=600, **kwargs) -> dict:
    """Run ``time_train_step(**kwargs)`` in a fresh Python process with ``env`` applied before import.

    The child imports course_lib, which fills in missing defaults, so to measure oneDNN's own choice pass
    ``{"ONEDNN_MAX_CPU_ISA": "ALL"}`` (oneDNN's documented "no cap") rather than leaving the variable out.
    """
    child_env = dict(os.environ)
    child_env.update({key: str(value) for key, value in env.items()})
    code = ("import json, sys, course_lib\nfrom course_lib.perf.timing import time_train_step\n"
            "print(json.dumps(time_train_step(**json.loads(sys.argv[1]))))")
    return _child_json(code, json.dumps(kwargs), child_env, timeout, _("timing subprocess"))


def _child_json(code, argument, env, timeout, what):
    """Run ``python -c code argument`` with ``env``; the JSON of its last output line (RuntimeError if it fails)."""
    result = subprocess.run([sys.executable, "-c", code, argument], capture_output=True, text=True, env=env,
                            timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(_("{what} failed (exit {code}):\n{stderr}").format(
            what=what, code=result.returncode, stderr=result.stderr[-1500:]))
    return json.loads(result.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- graph mode vs @ms.jit (appendix A7)
#: The environment variable ``time_step_in_subprocess(host_blocking=...)`` controls.
HOST_BLOCKING_VARIABLE = "MS_DEV_HOST_BLOCKING_RUN"
STEP_APIS = ("graph", "jit")


def make_jit_train_step(net, loss_fn, optimizer):
    """Lesson 00's train step: ``ms.value_and_grad`` of ``loss_fn(net(x), y)`` + ``optimizer`` under ``@ms.jit``.

    Returns ``train_step(x, y) -> loss``. (``@ms.jit`` reads the function's source, so it lives in a file.)
    """
    import mindspore as ms

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    @ms.jit
    def train_step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        return loss

    return train_step


def time_jit_train_step(model="lenet5", batch_size=32, image_size=32, steps=5, warmup=2, seed=1):
    """Seconds per training step of lesson 00's idiom: ``ms.value_and_grad`` + optimizer under ``@ms.jit``.

    Runs in PyNative mode (set here) on random data, with the same network, loss (``SoftmaxCrossEntropyWithLogits``)
    and optimizer (``Momentum``) as ``time_train_step``. The first call (compilation) is reported as
    ``first_step``; the timed calls each end with ``asnumpy()``, which waits for the result.
    """
    import mindspore as ms

    net, x, y, loss_fn, optimizer = _random_problem(model, batch_size, image_size, steps, warmup, seed,
                                                    ms.PYNATIVE_MODE)
    net.set_train()
    return _time_calls(make_jit_train_step(net, loss_fn, optimizer), x, y, steps, warmup)


_CHILD_CODE = f"""\
import json, os, sys
import course_lib  # first: the course's environment defaults
settings = json.loads(sys.argv[1])
if settings["host_blocking"] is False:  # course_lib has just put its default back: remove it again
    os.environ.pop("{HOST_BLOCKING_VARIABLE}", None)
from course_lib.perf.timing import time_jit_train_step, time_train_step
seen = os.environ.get("{HOST_BLOCKING_VARIABLE}")
if settings["api"] == "graph":
    result = time_train_step(mode="graph", **settings["step"])
else:
    result = time_jit_train_step(**settings["step"])
print(json.dumps({{**result, "host_blocking_seen": seen}}))
"""


def time_step_in_subprocess(model="lenet5", batch_size=32, image_size=32, api="graph", host_blocking=None,
                            steps=10, warmup=2, seed=1, timeout=600) -> dict:
    """Time one training step in a fresh Python process, so that its mode and environment are clean.

    ``api="graph"``: ``nn.TrainOneStepCell`` in ``GRAPH_MODE`` (``time_train_step``). ``api="jit"``:
    ``ms.value_and_grad`` + optimizer under ``@ms.jit`` in PyNative mode, as in lesson 00 (``time_jit_train_step``).
    ``host_blocking`` sets ``MS_DEV_HOST_BLOCKING_RUN`` in the child: ``True`` -> ``"1"``; ``False`` -> removed
    (also after the child's ``import course_lib``, which would otherwise add the course default back); ``None``
    -> whatever this process has, else the course default (``course_lib.ENV_DEFAULTS``). The child imports
    ``course_lib`` first. Random data; ``model`` is ``"lenet5"`` (32x32 inputs only), ``"resnet18"`` or
    ``"resnet50"`` (inputs of 32x32 or larger).

    Returns a dict: ``median`` / ``min`` / ``max`` seconds per step over ``steps`` timed steps and their count ``n``,
    ``first_step`` (seconds of the first call, compilation included), ``images_per_second`` (``batch_size /
    median``), ``host_blocking_seen`` (the variable's value the child ran with, ``None`` if unset) and the inputs.
    """
    if model not in STEP_MODELS:
        raise ValueError(_("model must be one of {step_models}, got {model!r}. Fix: pass e.g. model='lenet5'.").format(
            step_models=list(STEP_MODELS), model=model))
    if api not in STEP_APIS:
        raise ValueError(_("api must be 'graph' (nn.TrainOneStepCell in GRAPH_MODE) or 'jit' (@ms.jit in PyNative "
                           "mode), got {api!r}. Fix: pass api='graph' or api='jit'.").format(api=api))
    if not (host_blocking is None or isinstance(host_blocking, bool)):
        raise TypeError(_("host_blocking must be True (set {host_blocking_variable}=1), False (remove it) or None "
                          "(course default), got {host_blocking!r}. Fix: pass a bool or None, not a string.").format(
                              host_blocking_variable=HOST_BLOCKING_VARIABLE, host_blocking=host_blocking))
    batch_size = check_int("batch_size", batch_size, 1, fix=_("pass the number of images per step, e.g. 32"))
    image_size = check_int("image_size", image_size, 1, fix=_("pass the image side in pixels, e.g. 32"))
    from course_lib.models import check_image_size

    check_image_size(model, image_size)
    steps = check_int("steps", steps, 1, fix=_("time at least one step, e.g. steps=10"))
    warmup = check_int("warmup", warmup, 0, fix=_("pass warmup=2 (the untimed first calls; 0 or 1 times only "
                                                  "the compiling call apart)"))
    seed = check_int("seed", seed, 0, fix=_("pass a non-negative int, e.g. seed=1"))
    timeout = check_real("timeout", timeout, 0, low_open=True, fix=_("e.g. timeout=600 (seconds)"))

    child_env = dict(os.environ)
    if host_blocking is True:
        child_env[HOST_BLOCKING_VARIABLE] = "1"
    elif host_blocking is False:
        child_env.pop(HOST_BLOCKING_VARIABLE, None)
    step = {"model": model, "batch_size": batch_size, "image_size": image_size, "steps": steps, "warmup": warmup,
            "seed": seed}
    settings = json.dumps({"api": api, "host_blocking": host_blocking, "step": step})
    what = _("timing subprocess ({api}, {model} b{batch_size} {image_size}px)").format(
        api=api, model=model, batch_size=batch_size, image_size=image_size)
    try:
        timing = _child_json(_CHILD_CODE, settings, child_env, timeout, what)
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(_("{what} did not finish in {timeout} s. Fix: fewer steps, a smaller batch, or a larger "
                             "timeout.").format(what=what, timeout=timeout)) from error
    return {"api": api, "host_blocking": host_blocking, **step, **timing,
            "images_per_second": batch_size / timing["median"]}
