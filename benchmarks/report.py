"""results.md (tables) and results.png (bar charts) from the results.json dict that run.py assembles."""
import math

#: Order and display names of the training variants in tables and charts.
STEP_COLUMNS = (("graph", "MindSpore graph"), ("pynative", "MindSpore PyNative"), ("torch", "PyTorch eager"))


def seconds_text(value):
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def rate_text(value):
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def ratio_text(ratio):
    return f"{ratio['ratio']:.2f}× ({ratio['per_round_min']:.2f}–{ratio['per_round_max']:.2f})"


def _step_key(record):
    return {"graph": "graph", "pynative": "pynative", "eager": "torch"}.get(record["mode"])


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def environment_text(data):
    env = data.get("environment")
    run = data.get("run", {})
    if not env:
        return "Measurements 1–5 and 7 have not been run yet (`make bench`)."
    cpu, threads = env["cpu"], env["threads"]
    flags = ", ".join(flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if cpu.get(flag)) or "none"
    isa = env["onednn"]["course"]
    return (f"Measured {run.get('created_utc', '?')} ({'quick smoke run' if run.get('quick') else 'full run'}, "
            f"{run.get('seconds', 0):.0f} s) on **{cpu['model']}**, {cpu['cores']} cores (SIMD: {flags}); "
            f"load average (1/5/15 min) {_load(run.get('load_average_before'))} before, "
            f"{_load(run.get('load_average_after'))} after. "
            f"MindSpore {env['mindspore']}, PyTorch {env['torch']}, numpy {env['numpy']}, Python {env['python']}. "
            f"Threads: MindSpore kernels {threads['mindspore_op_threads']} (oneDNN {isa['runtime']} "
            f"nthr={threads['mindspore_onednn_threads']}), PyTorch {threads['torch_num_threads']} "
            f"(inter-op {threads['torch_interop_threads']}); MindData default workers "
            f"{threads['minddata_default_workers']}. Environment as started: "
            + (", ".join(f"`{k}={v}`" for k, v in env["env"].items() if v is not None) or "none of "
               + ", ".join(f"`{k}`" for k in env["env"]) + " set")
            + " (course_lib adds `ONEDNN_MAX_CPU_ISA=AVX2` and `GLOG_v=3` in MindSpore processes when unset"
            + (f"; the PyTorch process runs with `OMP_WAIT_POLICY={_torch_wait_policy(data)}`"
               if _torch_wait_policy(data) else "") + ").")


def _torch_wait_policy(data):
    return ((data.get("environment") or {}).get("worker_env", {}).get("torch") or {}).get("OMP_WAIT_POLICY")


def _load(values):
    return " / ".join(f"{v:.2f}" for v in values) if values else "n/a"


def _verdict(target):
    if not target or "met" not in target:
        return "not measured"
    return "met" if target["met"] else "**NOT met**"


def headline_section(data):
    """The short table for README's Performance section: training speed side by side, with the targets."""
    results = data.get("results", [])
    if not results:
        return ""
    targets = {t["id"]: t for t in data.get("targets", [])}
    rows = []
    lenet = {r["mode"]: r for r in results if r["measurement"] == "lenet_training"}
    if lenet:
        target = _verdict(targets.get("lenet_graph_vs_pytorch"))
        rows.append(("LeNet-5 training, batch 32 (`Model.train`), images/s",
                     *(rate_text(lenet[mode]["samples_per_second"]) for mode in ("graph", "pynative", "eager")),
                     f"{lenet['graph']['vs_pytorch']:.2f}×", f"≥ 1.0×: {target}"))
    steps = [r for r in results if r["measurement"] == "train_step"]
    for key in dict.fromkeys((r["model"], r["batch_size"], r["image_size"]) for r in steps):
        cells = {_step_key(r): r for r in steps if (r["model"], r["batch_size"], r["image_size"]) == key}
        is_target = key[0] == "resnet18" and key[2] == 64
        target = _verdict(targets.get("resnet18_64_graph_vs_pytorch")) if is_target else ""
        rows.append((f"{key[0]} step, batch {key[1]}, {key[2]}×{key[2]}",
                     *(seconds_text(cells[k]["median"]) for k, _ in STEP_COLUMNS),
                     f"{cells['graph']['vs_pytorch']:.2f}×", f"≥ 1.0×: {target}" if is_target else ""))
    text = _table(("measurement (median)", "MindSpore graph", "MindSpore PyNative", "PyTorch eager",
                   "graph vs PyTorch (speed)", "target"), rows)
    pipe = targets.get("pipeline_vs_training")
    notebooks = targets.get("course_total_seconds")
    slowest = targets.get("notebook_max_seconds")
    extra = []
    if pipe:
        extra.append(f"- Data pipeline vs LeNet training (≥ 3×): {pipe['status']}")
    if notebooks and slowest:
        extra.append(f"- Whole course (≤ 10 min): {notebooks['status']}; "
                     f"slowest notebook (≤ 120 s): {slowest['status']}")
    bench = targets.get("bench_seconds")
    if bench:
        extra.append(f"- `make bench` itself (< 10 min): {bench['status']}")
    return "## Headline\n\n" + text + ("\n\n" + "\n".join(extra) if extra else "")


def targets_section(data):
    rows = [(t["target"], t["status"]) for t in data.get("targets", [])]
    return "## Targets\n\n" + _table(("target", "measured status"), rows)


def lenet_section(data):
    records = [r for r in data.get("results", []) if r["measurement"] == "lenet_training"]
    if not records:
        return ""
    info = data["lenet_training"]
    rows = [(r["label"], rate_text(r["samples_per_second"]),
             f"{rate_text(r['samples_per_second_min'])}–{rate_text(r['samples_per_second_max'])}",
             seconds_text(r["median"]), f"{r['vs_pytorch']:.2f}×") for r in records]
    return (f"## 1. LeNet-5 training throughput\n\nDigits (MNIST format, 32×32), batch 32, {info['optimizer']}; one "
            f"repeat = {info['batches_per_repeat']} pre-read batches ({info['batches_per_repeat'] * 32} images). "
            "MindSpore graph mode and PyNative train with `Model.train(dataset_sink_mode=False)`, lesson 06's Trainer "
            "with `@ms.jit`, PyTorch with a plain loop over the same arrays; identical LeNet, identical initial "
            "weights.\n\n"
            + _table(("variant", "images/s (median)", "min–max", "time per step", "vs PyTorch"), rows))


def steps_section(data):
    records = [r for r in data.get("results", []) if r["measurement"] == "train_step"]
    if not records:
        return ""
    configs = []
    for r in records:
        key = (r["model"], r["batch_size"], r["image_size"])
        if key not in configs:
            configs.append(key)
    summaries = {(s["model"], s["batch_size"], s["image_size"]): s for s in data["summary"]["train_steps"]}
    rows = []
    for key in configs:
        cells = {_step_key(r): r for r in records if (r["model"], r["batch_size"], r["image_size"]) == key}
        summary = summaries[key]
        rows.append((key[0], key[1], f"{key[2]}×{key[2]}",
                     *(f"{seconds_text(cells[k]['median'])} ({seconds_text(cells[k]['min'])}–"
                       f"{seconds_text(cells[k]['max'])})" for k, _ in STEP_COLUMNS),
                     ratio_text(summary["graph_vs_pytorch"]), ratio_text(summary["graph_vs_pynative"])))
    return ("## 2. Training step time\n\n`nn.TrainOneStepCell(WithLossCell(net, SoftmaxCrossEntropyWithLogits), "
            "Momentum)` vs PyTorch `SGD(momentum)` + `CrossEntropyLoss`, one fixed random batch, time per step "
            "(median, min–max). Ratios are speed (images/s) ratios: > 1 means MindSpore graph mode is faster; the "
            "range is over the per-round ratios.\n\n"
            + _table(("model", "batch", "size", *(name for _, name in STEP_COLUMNS), "graph vs PyTorch",
                      "graph vs PyNative"), rows))


def onednn_section(data):
    records = data.get("onednn") or []
    if not records:
        return ""
    env = data["environment"]["onednn"]
    rows = [(r["step"], seconds_text(r["all_seconds"]), seconds_text(r["course_seconds"]),
             ratio_text(r["course_vs_all"])) for r in records]
    probes = [("MindSpore", env["all"]), ("MindSpore", env["course"])]
    if "pytorch" in env:
        probes.append(("PyTorch", env["pytorch"]))
    probe_rows = [(framework, f"`ONEDNN_MAX_CPU_ISA={p['setting']}`", p["isa"], f"{p['runtime']}, {p['threads']}",
                   ", ".join(p["convolution_kernels"])) for framework, p in probes]
    course = records[0]["course_setting"]
    return ("## 3. oneDNN instruction-set cap\n\nThe same graph-mode steps in two processes that differ only in "
            f"`ONEDNN_MAX_CPU_ISA`: `ALL` (oneDNN's own choice, what an unset variable means) and `{course}` "
            "(the course default), interleaved. Speed-up > 1 means the course default is faster.\n\n"
            + _table(("step", "ISA=ALL", f"ISA={course}", f"{course} speed-up"), rows)
            + "\n\nWhat oneDNN itself reports (`ONEDNN_VERBOSE=1`, conv 5×5/3×3/7×7 forward and backward):\n\n"
            + _table(("framework", "setting", "ISA dispatched", "threading, threads", "convolution kernels"),
                     probe_rows)
            + "\n\n`gemm:jit` is im2col + matrix multiply on the plain NCHW layout; `jit:avx2` is oneDNN's direct "
              "convolution on a blocked layout (with `reorder` primitives around it).")


def pipeline_section(data):
    records = data.get("pipeline") or []
    if not records:
        return ""
    rows = []
    for name in dict.fromkeys(r["pipeline"] for r in records):
        group = {(r["impl"], r["workers"]): r for r in records if r["pipeline"] == name}
        first = next(iter(group.values()))
        numpy_record = group[("numpy", 1)]
        rows.append((f"{name} ({first['image_size']}×{first['image_size']}, batch {first['batch_size']})",
                     *(f"{rate_text(group[k]['samples_per_second'])} ({rate_text(group[k]['samples_per_second_min'])}"
                       f"–{rate_text(group[k]['samples_per_second_max'])})"
                       for k in (("minddata", 1), ("minddata", 2), ("numpy", 1))),
                     f"{numpy_record.get('max_abs_difference_vs_minddata', float('nan')):.4f}"))
    ratio = data["summary"]["pipeline_vs_lenet_training"]
    return ("## 4. Data pipeline throughput\n\nImages/s delivered without a model (`course_lib.pipeline_stats."
            "measure_throughput`, first batch of each pass excluded), vs a plain per-image numpy loop doing the "
            "same transforms (PIL decodes and resizes the PNGs). The last column is the largest difference between "
            "the loop's and MindData's tensors (one grey level after normalisation, from uint8 rounding in the "
            "resize).\n\n"
            + _table(("pipeline", "MindData 1 worker", "MindData 2 workers", "numpy loop", "max |diff|"), rows)
            + f"\n\nThe digits pipeline ({ratio['pipeline_workers']} workers, the default) delivers "
              f"{rate_text(ratio['pipeline_images_per_second'])} images/s, {ratio['ratio']:.1f}× what graph-mode "
              f"LeNet training consumes ({rate_text(ratio['training_images_per_second'])} images/s).")


def compile_section(data):
    records = data.get("compile") or []
    if not records:
        return ""
    rows = [(f"{r['model']} b{r['batch_size']} {r['image_size']}px ({r['unit']})", r["label"],
             seconds_text(r["first_seconds"]), seconds_text(r["steady_seconds"]), f"{r['first_over_steady']:.1f}×")
            for r in records]
    return ("## 5. Compile time: first step vs steady state\n\nThe first call includes graph compilation (graph "
            "mode, `@ms.jit`) or PyNative's first-call op compilation and caching; steady = median of the timed "
            "repeats. Each first step ran alone (participants are set up one at a time).\n\n"
            + _table(("task", "variant", "first", "steady", "first / steady"), rows))


def notebooks_section(data):
    notebooks = data.get("notebooks") or {}
    records = notebooks.get("records")
    if not records:
        return ("## 6. Whole course\n\nNot measured in this run: `make bench-notebooks` (`benchmarks/run.py "
                "--notebooks`) times every lesson and merges the result here.")
    rows = [(r["notebook"], f"{r['seconds']:.1f}", r["status"]) for r in records]
    rows.append(("**total**", f"**{notebooks['total_seconds']:.0f}**", "all ok" if notebooks["all_ok"] else "FAILURES"))
    return ("## 6. Whole course\n\nEach notebook executed once, headless, as nbval runs it (nbclient, a fresh "
            "`python3` kernel per notebook, kernel start-up included), in course order from a scratch copy with a "
            f"fresh output folder. Measured {notebooks['measured_utc']} (`make bench-notebooks`); load average "
            f"{_load(notebooks['load_average_before'])} before, {_load(notebooks['load_average_after'])} after.\n\n"
            + _table(("notebook", "seconds", "status"), rows))


def inference_section(data):
    records = data.get("inference") or []
    if not records:
        return ""
    labels = list(dict.fromkeys(r["label"] for r in records))
    rows = []
    for batch in dict.fromkeys(r["batch_size"] for r in records):
        cells = {r["label"]: r for r in records if r["batch_size"] == batch}
        rows.append((batch, *(f"{rate_text(cells[label]['samples_per_second'])}" for label in labels)))
    return ("## 7. Inference\n\nLeNet-5 forward passes in inference mode on one fixed batch, output copied to numpy; "
            "images/s (median). The MindIR file is written by `course_lib.inference.export_mindir` and loaded as a "
            "`GraphCell`.\n\n" + _table(("batch", *labels), rows))


def method_section(data):
    run = data.get("run", {})
    return ("## How these numbers were obtained\n\n"
            "- `benchmarks/run.py` starts one process per participant (MindSpore graph mode with the course's "
            "environment, MindSpore graph mode with `ONEDNN_MAX_CPU_ISA=ALL`, MindSpore PyNative, PyTorch eager), "
            "builds the same task in each, then times one repeat per participant in turn, rotating the order each "
            "round, so that load from other programs hits all participants alike.\n"
            f"- Warm-up excluded (the first call and one more), median of {run.get('repeats', 5)} repeats, min–max "
            f"shown; a repeat groups steps until it lasts about {run.get('seconds_per_repeat_target', 0.25):g} s "
            "(one LeNet repeat is one pass over the pre-read batches).\n"
            "- Data loading is excluded from training throughput: the digits are read once through the course "
            "pipeline and saved; MindSpore gets them through a minimal `NumpySlicesDataset` (whole batches, no "
            "transforms; `Model.train` needs a dataset), PyTorch iterates the same arrays as tensors.\n"
            "- MindSpore kernel threads (`mindspore.device_context.cpu.op_tuning.threads_num`) and "
            "`torch.set_num_threads` are set to the same number.\n"
            "- Notebook times (section 6) come from `make bench-notebooks` (`run.py --notebooks`), a run of its "
            "own: executing every lesson takes minutes by itself (the course's target is ≤ 10 min), too much to share "
            "`make bench`'s 10 minutes, and it must not run next to the micro-benchmarks. It merges into the "
            "same results.json; `make bench` keeps the last notebook timings it finds there.\n"
            "- The machine may be shared: the load average before and after each run is recorded. Load from other "
            "programs slows every participant (interleaving spreads it evenly), widens the min–max ranges and hurts "
            "2-thread kernels most, as each parallel region waits for a thread that lost its core; compare ratios "
            "measured in the same run, not absolute numbers across runs.\n")


def findings_section(data):
    """What the numbers say, generated from them: who wins where, and why (what is ours, what is MindSpore's)."""
    summary, env = data.get("summary"), data.get("environment")
    results = data.get("results", [])
    if not summary or not env or not results:
        return ""
    items = []
    lenet = {r["mode"]: r for r in results if r["measurement"] == "lenet_training"}
    graph_vs_torch = summary["lenet_graph_vs_pytorch"]["ratio"]
    items.append(
        f"- **LeNet-5**: graph mode trains {graph_vs_torch:.2f}× as fast as PyTorch eager "
        f"({'target met' if graph_vs_torch >= 1 else 'target NOT met'}) and "
        f"{summary['lenet_graph_vs_pynative']['ratio']:.1f}× as fast as PyNative; lesson 06's Trainer with "
        f"`@ms.jit` reaches {summary['lenet_trainer_jit_vs_pytorch']['ratio']:.2f}× PyTorch. A LeNet step is "
        f"{seconds_text(lenet['graph']['median'])} in graph mode: its kernels are tiny, so per-op dispatch decides, "
        "and graph mode runs the whole step as one compiled graph while PyNative and PyTorch eager go through "
        "Python for every op.")
    steps = summary.get("train_steps", [])
    wins = [s for s in steps if s["graph_vs_pytorch"]["ratio"] >= 1]
    losses = [s for s in steps if s["graph_vs_pytorch"]["ratio"] < 1]

    def config(s):
        ratio = s["graph_vs_pytorch"]
        noise = ", within noise" if ratio["per_round_min"] < 1 < ratio["per_round_max"] else ""
        return (f"{s['model']} b{s['batch_size']} {s['image_size']}px ({ratio['ratio']:.2f}×; per round "
                f"{ratio['per_round_min']:.2f}–{ratio['per_round_max']:.2f}{noise})")

    if wins:
        items.append("- **Training steps where MindSpore graph mode is at least as fast as PyTorch**: "
                     + ", ".join(config(s) for s in wins) + ".")
    probes = env.get("onednn", {})
    ms_kernels = " ".join(probes.get("course", {}).get("convolution_kernels", []))
    torch_kernels = " ".join(probes.get("pytorch", {}).get("convolution_kernels", []))
    kernels_differ = "gemm" in ms_kernels and "gemm" not in torch_kernels
    if losses:
        text = ("- **Where PyTorch is faster**: " + ", ".join(config(s) for s in losses) + ".")
        if kernels_differ:
            text += (" This is MindSpore's, not the course's: its CPU `Conv2D` kernels give oneDNN plain NCHW "
                     "(`abcd`) tensors, which leaves oneDNN only im2col + matrix multiply (`gemm:jit`), while "
                     "PyTorch lets oneDNN choose a blocked layout (`aBcd8b`) and its direct AVX2 convolution "
                     "(`jit:avx2`; see the `ONEDNN_VERBOSE` table in section 3). The larger the convolutions "
                     "(224 px, ResNet-50's wide layers), the more that costs; no MindSpore 2.10 setting changes it.")
        items.append(text)
    pynative = [s for s in steps if s["pynative_vs_pytorch"]["ratio"] < 1]
    if pynative:
        items.append("- **PyNative vs PyTorch eager** (both op by op): PyNative is slower in "
                     f"{len(pynative)} of {len(steps)} step configurations ("
                     + ", ".join(f"{s['model']} {s['image_size']}px {s['pynative_vs_pytorch']['ratio']:.2f}×"
                                 for s in pynative)
                     + "): its per-op dispatch costs more than PyTorch's, on top of the convolution kernels above. "
                     "Graph mode is the way to speed on a CPU.")
    threads = env["threads"]
    items.append(
        f"- **Ruled out on our side**: thread counts are equal (MindSpore kernels {threads['mindspore_op_threads']}, "
        f"oneDNN nthr={threads['mindspore_onednn_threads']}; PyTorch {threads['torch_num_threads']}); training "
        "reads pre-loaded batches, so no pipeline stalls are timed (section 4 shows the pipeline is far faster "
        "anyway); both sides wait for the step's result (`asnumpy()` / `loss.item()`) before the clock stops; "
        "identical architectures, initialisation and optimiser.")
    course, unset = probes.get("course", {}), probes.get("all", {})
    onednn = data.get("onednn") or []
    if course and unset and onednn:
        ratios = [r["course_vs_all"]["ratio"] for r in onednn]
        span = f"{min(ratios):.2f}–{max(ratios):.2f}×"
        if course.get("isa") == unset.get("isa"):
            items.append(f"- **oneDNN cap**: on this CPU oneDNN dispatches `{course['isa']}` with the cap and "
                         f"without it, so `ONEDNN_MAX_CPU_ISA={course['setting']}` changes nothing here "
                         f"(speed-ups {span} are noise); it matters on CPUs with AVX-512/AMX, where it is the "
                         "course's guard against the slow paths of the foundation issue.")
        else:
            items.append(f"- **oneDNN cap**: with the cap oneDNN dispatches `{course['isa']}` instead of "
                         f"`{unset['isa']}`; speed-up of the course setting: {span}.")
    run = data.get("run", {})
    before = run.get("load_average_before") or []
    cores = env["cpu"]["cores"]
    policy = _torch_wait_policy(data)
    if before and before[0] >= 0.5 * cores:  # measured before the run started: other programs only
        text = (f"- **The machine was busy**: 1-min load average {before[0]:.2f} on {cores} cores before the run "
                "started. Interleaving spreads that load over all participants, but it widens the min–max ranges, "
                "and a neighbour holding a core hurts OpenMP's spinning threads most (benchmarks/README.md: a "
                "PyTorch ResNet-18 step 5–13× slower). ")
        if policy == "PASSIVE":
            text += ("PyTorch ran with `OMP_WAIT_POLICY=PASSIVE`, which removes most of that penalty; on an idle "
                     "machine the default (spinning) policy can be slightly faster for PyTorch's small ops, so re-run "
                     "`make bench` on an idle machine for the cleanest verdict.")
        else:
            text += (f"PyTorch ran with `OMP_WAIT_POLICY={policy or 'unset (spinning)'}`, so the ratios vs PyTorch "
                     "are biased in MindSpore's favour; re-run on an idle machine, or leave `OMP_WAIT_POLICY` unset "
                     "(run.py "
                     "then gives PyTorch `PASSIVE`).")
        items.append(text)
    return "## What the numbers say\n\n" + "\n".join(items)


def markdown(data) -> str:
    parts = ["# Benchmark results", environment_text(data), headline_section(data), targets_section(data),
             findings_section(data), lenet_section(data),
             steps_section(data), onednn_section(data), pipeline_section(data), compile_section(data),
             notebooks_section(data), inference_section(data), method_section(data)]
    return "\n\n".join(part for part in parts if part).rstrip() + "\n"


# ------------------------------------------------------------------------------------------------ figure
def _bars(ax, groups, series, values, title, ylabel, log=False):
    """Grouped bars: ``values[(group, series)]`` (missing pairs are skipped)."""
    width = 0.8 / max(1, len(series))
    for index, name in enumerate(series):
        xs = [g + (index - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [values.get((group, name), math.nan) for group in groups]
        bars = ax.bar(xs, heights, width, label=name)
        ax.bar_label(bars, labels=[f"{h:.3g}" if math.isfinite(h) else "" for h in heights], fontsize=6)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.margins(y=0.2)
    ax.legend(fontsize=6)
    ax.grid(axis="y", alpha=0.3)


def figure(data, path):
    """Six panels: LeNet throughput, step speed, oneDNN, pipelines, inference, notebooks; saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8), dpi=80)
    (ax_lenet, ax_steps, ax_onednn), (ax_pipe, ax_infer, ax_nb) = axes
    results = data.get("results", [])

    lenet = [r for r in results if r["measurement"] == "lenet_training"]
    if lenet:
        names = [r["label"].replace("MindSpore ", "MS ").replace(", ", "\n").replace(" (", "\n(") for r in lenet]
        bars = ax_lenet.bar(names, [r["samples_per_second"] for r in lenet],
                            color=["tab:blue", "tab:orange", "tab:purple", "tab:green"][:len(lenet)])
        ax_lenet.errorbar(names, [r["samples_per_second"] for r in lenet],
                          yerr=[[r["samples_per_second"] - r["samples_per_second_min"] for r in lenet],
                                [r["samples_per_second_max"] - r["samples_per_second"] for r in lenet]],
                          fmt="none", ecolor="black", capsize=3, linewidth=0.8)
        ax_lenet.bar_label(bars, labels=[f"{r['samples_per_second']:.3g}" for r in lenet], fontsize=7,
                           label_type="center")
        ax_lenet.set_title("1. LeNet-5 training, batch 32 (bars: median, whiskers: min–max)", fontsize=9)
        ax_lenet.set_ylabel("images / s", fontsize=8)
        ax_lenet.tick_params(axis="x", labelsize=7)
        ax_lenet.grid(axis="y", alpha=0.3)
    steps = [r for r in results if r["measurement"] == "train_step"]
    if steps:
        groups = list(dict.fromkeys(f"{r['model']}\nb{r['batch_size']} {r['image_size']}px" for r in steps))
        values = {(f"{r['model']}\nb{r['batch_size']} {r['image_size']}px", dict(STEP_COLUMNS)[_step_key(r)]):
                  r["samples_per_second"] for r in steps}
        _bars(ax_steps, groups, [name for _, name in STEP_COLUMNS], values, "2. Training step speed",
              "images / s (log)", log=True)
    onednn = data.get("onednn") or []
    if onednn:
        course = onednn[0]["course_setting"]
        groups = [r["step"].replace(" step, ", "\n").replace(" Model.train epoch ", "\n") for r in onednn]
        values = {}
        for group, r in zip(groups, onednn):
            values[(group, "ISA=ALL")] = r["all_images_per_second"]
            values[(group, f"ISA={course}")] = r["course_images_per_second"]
        _bars(ax_onednn, groups, ["ISA=ALL", f"ISA={course}"], values, "3. oneDNN ISA cap (graph mode)",
              "images / s (log)", log=True)
    pipes = data.get("pipeline") or []
    if pipes:
        groups = list(dict.fromkeys(r["pipeline"] for r in pipes))
        values = {(r["pipeline"], r["label"]): r["samples_per_second"] for r in pipes}
        _bars(ax_pipe, groups, list(dict.fromkeys(r["label"] for r in pipes)), values,
              "4. Data pipeline throughput", "images / s (log)", log=True)
        need = 3 * data["summary"]["pipeline_vs_lenet_training"]["training_images_per_second"]
        ax_pipe.axhline(need, color="red", linestyle="--", linewidth=1)
        ax_pipe.text(-0.45, need, " 3× LeNet training", color="red", fontsize=6, va="bottom")
    infer = data.get("inference") or []
    if infer:
        groups = [f"batch {b}" for b in dict.fromkeys(r["batch_size"] for r in infer)]
        values = {(f"batch {r['batch_size']}", r["label"]): r["samples_per_second"] for r in infer}
        _bars(ax_infer, groups, list(dict.fromkeys(r["label"] for r in infer)), values, "7. LeNet-5 inference",
              "images / s (log)", log=True)
    notebooks = (data.get("notebooks") or {}).get("records")
    if notebooks:
        names = [r["notebook"].replace(".ipynb", "") for r in notebooks]
        seconds = [r["seconds"] for r in notebooks]
        colors = ["tab:blue" if r["status"] == "ok" and r["seconds"] <= 120 else "tab:red" for r in notebooks]
        ax_nb.barh(names[::-1], seconds[::-1], color=colors[::-1])
        ax_nb.axvline(120, color="red", linestyle="--", linewidth=1)
        ax_nb.set_title(f"6. Notebooks (total {data['notebooks']['total_seconds']:.0f} s)", fontsize=9)
        ax_nb.set_xlabel("seconds (target ≤ 120 each)", fontsize=8)
        ax_nb.tick_params(axis="y", labelsize=7)
    for ax, present, text in ((ax_lenet, lenet, "LeNet"), (ax_steps, steps, "steps"), (ax_onednn, onednn, "oneDNN"),
                              (ax_pipe, pipes, "pipelines"), (ax_infer, infer, "inference"),
                              (ax_nb, notebooks, "notebooks")):
        if not present:
            ax.text(0.5, 0.5, f"{text}: not measured", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
    env = data.get("environment")
    title = "MindSpore vs PyTorch on CPU"
    if env:
        title += f" — {env['cpu']['model']}, {env['cpu']['cores']} cores, MindSpore {env['mindspore']}, " \
                 f"PyTorch {env['torch']}" + (" (quick run)" if data["run"].get("quick") else "")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
