"""FastConv2d and the blocked ResNet vs MindSpore's nn.Conv2d vs PyTorch: ResNet-18/50 train steps at 224 px,
batch 8, on CPU; then the blocked ResNet-18 under a few OpenMP thread settings.

Run: .venv/bin/python benchmarks/fast_conv_bench.py [--repeats N] [--models resnet18,resnet50] [--no-threads]
Prints a table and writes benchmarks/fast_conv_results.json. Per-kernel GFLOP/s come from oneDNN's own
timings (ONEDNN_VERBOSE=1 in a child process that runs one step of each variant).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
BATCH, SIZE = 8, 224


def mindspore_step(model, variant):
    import course_lib  # noqa: F401  # isort: skip  (first: the environment defaults, before mindspore)
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    from course_lib.models import resnet
    from course_lib.perf.fast_conv import block_resnet, swap_convs
    from course_lib.perf.timing import make_jit_train_step

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = getattr(resnet, model)(num_classes=10)
    net.set_train(True)  # batch statistics in BatchNorm, as PyTorch's net.train(): a real training step
    if variant == "fastconv":
        swap_convs(net)
    elif variant == "blocked":
        block_resnet(net)
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step = make_jit_train_step(net, nn.CrossEntropyLoss(), opt)  # lesson 00's value_and_grad + optimizer step

    rng = np.random.default_rng(0)
    x = ms.Tensor(rng.standard_normal((BATCH, 3, SIZE, SIZE)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 10, BATCH).astype(np.int32))
    return lambda: step(x, y).asnumpy()


def torch_step(model):
    # PyTorch runs "as installed": course_lib's AVX2 cap (ONEDNN_MAX_CPU_ISA) applies to it only if the
    # environment this script was started with already had it (same rule as benchmarks/worker.py).
    given = os.environ.get("ONEDNN_MAX_CPU_ISA")
    import course_lib  # noqa: F401
    from course_lib.migrate.torch_resnet import build_torch_resnet
    if given is None:
        os.environ.pop("ONEDNN_MAX_CPU_ISA", None)
    import torch

    torch.manual_seed(0)
    net = build_torch_resnet(int(model.replace("resnet", "")), num_classes=10)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(BATCH, 3, SIZE, SIZE), torch.randint(0, 10, (BATCH,))

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def make(variant, model):
    if variant == "pytorch":
        return torch_step(model)
    return mindspore_step(model, variant)


def time_variant(variant, model, repeats):
    step = make(variant, model)
    info = {}
    if variant in ("fastconv", "blocked"):
        from course_lib.perf.fast_conv import backend

        info["backend"] = backend()
    t0 = time.perf_counter()
    step()  # compile / warm up
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"first_s": first, "median_s": sorted(times)[len(times) // 2], "times_s": times, **info}


_PROBLEM = re.compile(r"mb(\d+)_ic(\d+)oc(\d+)_ih(\d+)oh(\d+)kh(\d+)\D.*_iw(\d+)ow(\d+)kw(\d+)")


def _verbose_format(line):
    """oneDNN 3.4+ (MindSpore's copy) prefixes its lines with "onednn_verbose,v1,"; 3.2 (the private wheel)
    does not. The two copies run in one process, so each line is told apart by its format."""
    return "v1" if line.startswith("onednn_verbose,v1,") else "v0"


def kernel_profile(variant, model):
    """Run one step in a child with ONEDNN_VERBOSE=1; sum convolution time and FLOPs per (pass, implementation,
    oneDNN copy). Returns ({oneDNN version: ISA}, kernels)."""
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    out = subprocess.run([sys.executable, __file__, "--child", variant, "--models", model], env=env,
                         cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=1800).stdout
    versions, isas, stats = {}, {}, defaultdict(lambda: [0.0, 0.0, 0])
    seen_first = set()
    for line in out.splitlines():
        fmt = _verbose_format(line)
        if ",info,oneDNN v" in line:
            versions[fmt] = line.split("oneDNN ", 1)[1].split()[0]
        if ",info,cpu,isa:" in line:
            isas.setdefault(fmt, line.split("isa:", 1)[1].strip())
        f = line.split(",")
        if "exec" not in f or "convolution" not in f:
            continue
        at = f.index("convolution")
        impl, prop, problem, ms_time = f[at + 1], f[at + 2], f[-2], float(f[-1])
        m = _PROBLEM.search(problem)
        if not m:
            continue
        mb, ic, oc, _ih, oh, kh, _iw, ow, kw = map(int, m.groups())
        flops = 2.0 * mb * ic * oc * oh * ow * kh * kw
        key = (prop, impl, versions.get(fmt, fmt))
        if (key, problem) not in seen_first:  # the first run of a shape includes JIT/first-touch costs
            seen_first.add((key, problem))
            continue
        stats[key][0] += ms_time / 1000
        stats[key][1] += flops
        stats[key][2] += 1
    kernels = [{"pass": p, "impl": i, "onednn": v, "calls": n, "seconds": s, "gflops": fl / s / 1e9 if s else None}
               for (p, i, v), (s, fl, n) in sorted(stats.items())]
    return {versions.get(fmt, fmt): isa for fmt, isa in isas.items()}, kernels


VARIANTS = {"mindspore": "MindSpore nn.Conv2d", "fastconv": "FastConv2d (swap_convs)",
            "blocked": "blocked ResNet (block_resnet)", "pytorch": "PyTorch"}
# Issue 30's third point: do oneDNN's OpenMP threads (the private copy) and MindSpore's own thread pool share the
# cores well? The blocked ResNet-18 step under each setting, each in a fresh process (libgomp reads these once).
THREAD_SETTINGS = {"as installed": {}, "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
                   "OMP_WAIT_POLICY=ACTIVE": {"OMP_WAIT_POLICY": "ACTIVE"},
                   "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"}}


def run_variant(variant, model, repeats, extra_env=None):
    # each variant in its own process so MindSpore and PyTorch never share a run's caches/threads
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import fast_conv_bench as b; "
            f"print('RESULT', json.dumps(b.time_variant({variant!r}, {model!r}, {repeats})))")
    env = dict(os.environ, **(extra_env or {}))
    out = subprocess.run([sys.executable, "-c", code], cwd=tempfile.gettempdir(), capture_output=True, text=True,
                         timeout=3600, env=env)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise RuntimeError(f"{model}/{variant} failed:\n{out.stderr[-3000:]}")
    return json.loads(line[0][7:])


def write_atomic(path, text):
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", default="resnet18,resnet50")
    ap.add_argument("--no-threads", action="store_true", help="skip the thread settings check (ResNet-18)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    models = args.models.split(",")
    if args.child:  # two steps under ONEDNN_VERBOSE (the second one is measured)
        step = make(args.child, models[0])
        step()
        step()
        return
    variants = list(VARIANTS)
    results = {"batch": BATCH, "image_size": SIZE, "ONEDNN_MAX_CPU_ISA": os.environ.get("ONEDNN_MAX_CPU_ISA"),
               "repeats": args.repeats, "variants": VARIANTS, "models": {}}
    for model in models:
        results["models"][model] = {}
        for v in variants:
            r = run_variant(v, model, args.repeats)
            r["isa"], r["conv_kernels"] = kernel_profile(v, model)
            results["models"][model][v] = r
            isa = "; ".join(f"oneDNN {ver}: {name}" for ver, name in r["isa"].items())
            print(f"{model:9s} {v:10s} step {r['median_s'] * 1000:8.1f} ms  (first {r['first_s']:.1f} s)  "
                  f"{isa}", flush=True)
            for k in r["conv_kernels"]:
                print(f"    {k['pass']:18s} {k['impl']:30s} {k['onednn']:8s} {k['calls']:4d} calls "
                      f"{k['seconds'] * 1000:8.1f} ms "
                      f"{k['gflops'] or 0:7.1f} GFLOP/s", flush=True)
    print("\nmodel      MindSpore  FastConv2d  blocked   PyTorch   fast/stock  blocked/stock  fast/torch  "
          "blocked/torch")
    for model, r in results["models"].items():
        m, f, b, t = (r[v]["median_s"] * 1000 for v in variants)
        r["ratios"] = {"fastconv_over_stock": m / f, "blocked_over_stock": m / b, "fastconv_over_pytorch": t / f,
                       "blocked_over_pytorch": t / b}
        print(f"{model:9s} {m:9.1f} {f:10.1f} {b:8.1f} {t:9.1f}   {m / f:9.2f}x {m / b:12.2f}x {t / f:10.2f}x "
              f"{t / b:12.2f}x")
    if not args.no_threads and "resnet18" in models:
        print("\nthreads: blocked ResNet-18 step (median ms) under each setting")
        results["threads"] = {}
        for name, extra in THREAD_SETTINGS.items():
            r = run_variant("blocked", "resnet18", args.repeats, extra)
            results["threads"][name] = r["median_s"]
            print(f"    {name:26s} {r['median_s'] * 1000:8.1f} ms", flush=True)
    # Imported only now: run imports course_lib, whose environment defaults (the AVX2 cap) must not reach the
    # PyTorch children above. It names the CPU kind, so results.md files this under the right CPU.
    import run

    results["cpu_kind"], results["measured_utc"] = run.cpu_kind(), run.utc_now()
    print("CPU:", results["cpu_kind"])
    write_atomic(HERE / "fast_conv_results.json", json.dumps(results, indent=1))
    print("wrote benchmarks/fast_conv_results.json")


if __name__ == "__main__":
    main()
