"""results.md (tables) and results.png (bar charts) from the results.json dict that run.py assembles."""
import math

#: Training variants shown in the step chart.
STEP_COLUMNS = (("graph", "MindSpore graph"), ("jit", "MindSpore @ms.jit"), ("pynative", "MindSpore PyNative"),
                ("torch", "PyTorch (defaults)"), ("torch_avx2", "PyTorch, AVX2 cap"))


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


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


#: Participants (run.py PARTICIPANTS) in table order, with short column names.
PARTICIPANT_NAMES = {
    "graph": "MindSpore graph", "jit": "MindSpore @ms.jit (course setting)", "pynative": "MindSpore PyNative",
    "jit_off": "@ms.jit, MS_DEV_HOST_BLOCKING_RUN unset", "jit_on": "@ms.jit, MS_DEV_HOST_BLOCKING_RUN=1",
    "torch": "PyTorch (defaults)", "torch_passive": "PyTorch, OMP_WAIT_POLICY=PASSIVE",
    "torch_avx2": "PyTorch, ONEDNN_MAX_CPU_ISA=AVX2",
}


def cpu_kind_of(data):
    kind = data.get("cpu_kind") or (data.get("environment") or {}).get("cpu_kind")
    if kind:
        return kind
    cpu = (data.get("environment") or {}).get("cpu")
    return cpu.get("model", "unknown CPU") if cpu else "unknown CPU"


def participant_of(record, data):
    """The participant key of a training record; results of harness 1 (no key) are mapped from framework/mode."""
    if record.get("participant"):
        return record["participant"]
    if record["framework"] == "pytorch":
        policy = (((data.get("environment") or {}).get("worker_env") or {}).get("torch") or {}).get("OMP_WAIT_POLICY")
        return "torch_passive" if policy == "PASSIVE" else "torch"
    return {"graph": "graph", "pynative": "pynative", "jit": "jit_off"}.get(record["mode"], record["mode"])


def course_jit_key(data):
    """Which @ms.jit participant ran with the course's setting of MS_DEV_HOST_BLOCKING_RUN."""
    setting = (data.get("environment") or {}).get("course_host_blocking", "unset")
    return "jit_on" if setting == "1" else "jit_off"


def groups(data):
    """{(measurement, model, batch, size): {participant: record}} in the order measured (jit = course setting)."""
    found = {}
    for record in data.get("results", []):
        if record["measurement"] not in ("lenet_training", "train_step"):
            continue
        key = (record["measurement"], record["model"], record["batch_size"], record["image_size"])
        cells = found.setdefault(key, {})
        cells[participant_of(record, data)] = record
    jit_key = course_jit_key(data)
    for cells in found.values():
        if jit_key in cells:
            cells["jit"] = cells[jit_key]
    return found


def group_name(key):
    measurement, model, batch, size = key
    if measurement == "lenet_training":
        return f"LeNet-5 training epoch, batch {batch}"
    return f"{model} step, batch {batch}, {size}×{size}"


def speed_ratio(cells, a, b):
    """Images/s of participant a over b (ratio of medians), or None if either is missing."""
    if a not in cells or b not in cells:
        return None
    return cells[a]["samples_per_second"] / cells[b]["samples_per_second"]


def ratio_cell(value):
    return "not measured" if value is None else f"{value:.2f}×"


def environment_text(data):
    env = data.get("environment")
    run = data.get("run", {})
    if not env:
        return "Measurements 1–5 and 7 have not been run yet on this CPU kind (`make bench`)."
    cpu, threads = env["cpu"], env["threads"]
    flags = ", ".join(flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if cpu.get(flag)) or "none"
    isa = env["onednn"]["course"]
    text = (f"Measured {run.get('created_utc', '?')} ({'quick smoke run' if run.get('quick') else 'full run'}, "
            f"{run.get('seconds', 0):.0f} s) on **{cpu['model']}**, {cpu['cores']} cores (SIMD flags: {flags}); "
            f"load average (1/5/15 min) {_load(run.get('load_average_before'))} before, "
            f"{_load(run.get('load_average_after'))} after. "
            f"MindSpore {env['mindspore']}, PyTorch {env['torch']}, numpy {env['numpy']}, Python {env['python']}. "
            f"Threads: MindSpore kernels {threads['mindspore_op_threads']} (oneDNN {isa['runtime']} "
            f"nthr={threads['mindspore_onednn_threads']}), PyTorch {threads['torch_num_threads']} "
            f"(inter-op {threads['torch_interop_threads']}); MindData default workers "
            f"{threads['minddata_default_workers']}. Environment as started: "
            + (", ".join(f"`{k}={v}`" for k, v in env["env"].items() if v is not None) or "none of "
               + ", ".join(f"`{k}`" for k in env["env"]) + " set")
            + ". MindSpore processes import course_lib first, which adds its defaults (`ONEDNN_MAX_CPU_ISA=AVX2`, "
            f"`GLOG_v`; `MS_DEV_HOST_BLOCKING_RUN`: {env.get('course_host_blocking', 'unset')}).")
    if data.get("harness_version", 2) < 2:
        text += (" **Measured by the earlier harness** (before issue #14): PyTorch ran with "
                 "`OMP_WAIT_POLICY=PASSIVE` only, so there is no PyTorch-defaults column; re-run `make bench`.")
    probes = env["onednn"]
    dispatched = [f"{p.get('label', key)}: `{p['isa']}`" for key, p in probes.items()
                  if key in ("course", "pytorch", "pytorch_avx2")]
    if dispatched:
        text += " oneDNN dispatches (from `ONEDNN_VERBOSE`): " + "; ".join(dispatched) + "."
    peak = env.get("sgemm_peak")
    if peak:
        text += (f" SGEMM peak ({peak['size']}×{peak['size']} fp32, {peak['threads']} threads): "
                 f"**{peak['gflops']:.0f} GFLOP/s**, capped at AVX2 {peak['avx2_gflops']:.0f} GFLOP/s.")
    imports = env.get("import_seconds")
    if imports:
        text += (f" `import course_lib` + `import mindspore` in a fresh process: **{imports['total']:.2f} s** "
                 f"(median of {imports['n']}).")
    return text


def _load(values):
    return " / ".join(f"{v:.2f}" for v in values) if values else "n/a"


def headline_rows(data):
    rows = []
    for key, cells in groups(data).items():
        if "graph" not in cells:
            continue
        if key[0] == "lenet_training":
            shown = {k: rate_text(r["samples_per_second"]) + " img/s" for k, r in cells.items()}
        else:
            shown = {k: seconds_text(r["median"]) for k, r in cells.items()}
        rows.append((group_name(key), shown.get("graph", "–"), shown.get("jit", "not measured"),
                     shown.get("torch", "not measured"),
                     *(ratio_cell(speed_ratio(cells, "graph", other))
                       for other in ("torch", "torch_passive", "torch_avx2"))))
    return rows


HEADLINE_HEADER = ("measurement (median)", "MindSpore graph", "MindSpore @ms.jit (course setting)",
                   "PyTorch (defaults)", "graph vs PyTorch defaults", "vs PyTorch PASSIVE", "vs PyTorch AVX2 cap")


def headline_section(data):
    """The short table for README's Performance section: MindSpore vs PyTorch as its users run it."""
    rows = headline_rows(data)
    if not rows:
        return ""
    return ("## Headline\n\nSpeed ratios are images/s over images/s: > 1 means MindSpore graph mode is faster. "
            "The headline PyTorch runs with its defaults; `OMP_WAIT_POLICY=PASSIVE` and `ONEDNN_MAX_CPU_ISA=AVX2` "
            "are extra PyTorch rows (one setting each).\n\n" + _table(HEADLINE_HEADER, rows))


def targets_section(data):
    rows = [(t["target"], t["status"]) for t in data.get("targets", [])]
    imports = (data.get("environment") or {}).get("import_seconds")
    if imports:
        rows.append(("import time of `course_lib` + `mindspore` (reported, no target)", f"{imports['total']:.2f} s"))
    return ("## Course goals\n\nEach goal with its status, computed from this run's numbers (benchmarks, not "
            "timed unit tests).\n\n" + _table(("goal", "measured status"), rows))


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
            + _table(("variant", "images/s (median)", "min–max", "time per step", "vs PyTorch (defaults)"), rows))


def steps_section(data):
    found = [(key, cells) for key, cells in groups(data).items() if key[0] == "train_step"]
    if not found:
        return ""
    rows = []
    for key, cells in found:
        for name, record in cells.items():
            if name == "jit":
                continue
            rows.append((group_name(key), record["label"],
                         f"{seconds_text(record['median'])} ({seconds_text(record['min'])}–"
                         f"{seconds_text(record['max'])})", rate_text(record["samples_per_second"]),
                         f"{record['vs_pytorch']:.2f}×"))
    return ("## 2. Training step time\n\nMindSpore: `nn.TrainOneStepCell(WithLossCell(net, "
            "SoftmaxCrossEntropyWithLogits), Momentum)` (graph, PyNative) or lesson 06's `Trainer.train_step` "
            "(`ms.value_and_grad` + optimizer under `@ms.jit`); PyTorch: `SGD(momentum)` + `CrossEntropyLoss`. One "
            "fixed random batch, time per step (median, min–max).\n\n"
            + _table(("step", "variant", "time per step", "images/s", "vs PyTorch (defaults)"), rows))


def roofline_section(data):
    found = [(key, cells) for key, cells in groups(data).items()
             if key[0] == "train_step" and key[1].startswith("resnet")]
    peak = (data.get("environment") or {}).get("sgemm_peak")
    if not found or not peak or not any("gflops_per_second" in r for _, cells in found for r in cells.values()):
        return ""
    flops = {(f["model"], f["image_size"]): f for f in data.get("flops", [])}
    rows = []
    for key, cells in found:
        counted = flops.get((key[1], key[3]))
        for name in ("graph", "jit", "torch", "torch_avx2"):
            record = cells.get(name)
            if not record or "gflops_per_second" not in record:
                continue
            rows.append((group_name(key), PARTICIPANT_NAMES[name],
                         f"{record['training_flops_per_sample'] / 1e9:.2f}" if counted else "?",
                         f"{record['gflops_per_second']:.0f}", f"{record['percent_of_sgemm_peak']:.0f} %",
                         f"{record['percent_of_avx2_sgemm_peak']:.0f} %"))
    return ("## Roofline: achieved GFLOP/s\n\nFLOPs counted from the course's model by "
            "`course_lib.perf.profiling.count_flops` (every `nn.Conv2d` and `nn.Dense`; a multiply-accumulate = "
            "2 FLOPs; "
            "batch norm, activations, pooling and the loss not counted). A training step is counted as 3× the "
            "forward FLOPs (forward, gradient of the activations, gradient of the weights). Achieved GFLOP/s = "
            "FLOPs per image × images/s. The peak is the best SGEMM (fp32 matrix product) of numpy, torch.matmul and a "
            "oneDNN 1×1 convolution (the same product) in "
            f"this run: {peak['gflops']:.0f} GFLOP/s, or {peak['avx2_gflops']:.0f} GFLOP/s capped at AVX2 (the "
            "ceiling of MindSpore's AVX2-capped oneDNN).\n\n"
            + _table(("step", "variant", "GFLOP per image (training)", "GFLOP/s", "% of SGEMM peak",
                      "% of AVX2 SGEMM peak"), rows))


def jit_section(data):
    rows = []
    for key, cells in groups(data).items():
        if "graph" not in cells or not ({"jit_off", "jit_on"} & set(cells)):
            continue
        rows.append((group_name(key), seconds_text(cells["graph"]["median"]),
                     *(seconds_text(cells[k]["median"]) if k in cells else "–" for k in ("jit_off", "jit_on")),
                     *(ratio_cell(speed_ratio(cells, a, b))
                       for a, b in (("jit_off", "graph"), ("jit_on", "graph"), ("jit_on", "jit_off")))))
    if not rows:
        return ""
    setting = (data.get("environment") or {}).get("course_host_blocking", "unset")
    return ("## @ms.jit vs graph mode, and MS_DEV_HOST_BLOCKING_RUN\n\nThe 2.x idiom (lesson 06's Trainer: "
            "`ms.value_and_grad` and the optimizer under `@ms.jit`, PyNative mode) against global graph mode "
            "(`Model.train` for the LeNet epoch, `TrainOneStepCell` for the steps), with and without "
            f"`MS_DEV_HOST_BLOCKING_RUN=1`, each in its own process. The course's setting: `{setting}`. "
            "Speed ratios: > 1 means the first-named is faster.\n\n"
            + _table(("measurement", "graph", "@ms.jit, unset", "@ms.jit, =1", "unset vs graph", "=1 vs graph",
                      "=1 vs unset"), rows))


def onednn_section(data):
    records = data.get("onednn") or []
    env = (data.get("environment") or {}).get("onednn") or {}
    if not env:
        return ""
    course = records[0]["course_setting"] if records else "AVX2"
    text = "## 3. oneDNN instruction-set cap\n\n"
    if records:
        rows = [(r["step"], seconds_text(r["all_seconds"]), seconds_text(r["course_seconds"]),
                 ratio_text(r["course_vs_all"])) for r in records]
        text += ("The same graph-mode steps in two processes that differ only in `ONEDNN_MAX_CPU_ISA`: `ALL` "
                 f"(oneDNN's own choice, what an unset variable means) and `{course}` (the course default), "
                 "interleaved. Speed-up > 1 means the course default is faster.\n\n"
                 + _table(("step", "ISA=ALL", f"ISA={course}", f"{course} speed-up"), rows) + "\n\n")
    probe_rows = [(p.get("label", key), f"`{p['setting']}`", p["isa"], f"{p['runtime']}, {p['threads']}",
                   ", ".join(p["convolution_kernels"])) for key, p in env.items()]
    return (text + "What oneDNN itself reports (`ONEDNN_VERBOSE=1`, conv 5×5/3×3/7×7 forward and backward, one "
            "short process per row; 'after import' rows set the variable in `os.environ` after importing the "
            "framework, before the first convolution):\n\n"
            + _table(("framework and setting", "`ONEDNN_MAX_CPU_ISA`", "ISA dispatched", "threading, threads",
                      "convolution kernels"), probe_rows)
            + "\n\n`gemm:jit` is im2col + matrix multiply on the plain NCHW layout; `jit:avx2`, `brg*` and "
              "`jit:avx512*` are oneDNN's direct convolutions on blocked layouts (with `reorder` primitives around "
              "them); `ref` is the reference (slow) path.")


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
    return ("## 4. Data pipeline throughput\n\nImages/s delivered without a model (`course_lib.data.stats."
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


def notebooks_section(data):
    notebooks = data.get("notebooks") or {}
    records = notebooks.get("records")
    if not records:
        return ("## 6. Whole course\n\nNot measured on this CPU kind: `make bench-notebooks` (`benchmarks/run.py "
                "--notebooks`) times every lesson and merges the result here.")
    rows = [(r["notebook"], f"{r['seconds']:.1f}", r["status"]) for r in records]
    rows.append(("**total**", f"**{notebooks['total_seconds']:.0f}**", "all ok" if notebooks["all_ok"] else "FAILURES"))
    return ("## 6. Whole course\n\nEach notebook executed once, headless, as nbval runs it (nbclient, a fresh "
            "`python3` kernel per notebook, kernel start-up included), in course order from a scratch copy with a "
            f"fresh output folder. Measured {notebooks['measured_utc']} (`make bench-notebooks`); load average "
            f"{_load(notebooks['load_average_before'])} before, {_load(notebooks['load_average_after'])} after. "
            "Goals: each lesson ≤ 60 s, the course ≤ 5 min (status under Course goals).\n\n"
            + _table(("notebook", "seconds", "status"), rows))


def method_section(data):
    run = data.get("run", {})
    return ("## How these numbers were obtained\n\n"
            "- `benchmarks/run.py` starts one process per participant (MindSpore graph mode with the course's "
            "environment and with `ONEDNN_MAX_CPU_ISA=ALL`; PyNative; `@ms.jit` with and without "
            "`MS_DEV_HOST_BLOCKING_RUN=1`; PyTorch with its defaults, with `OMP_WAIT_POLICY=PASSIVE`, and with "
            "`ONEDNN_MAX_CPU_ISA=AVX2`), builds the same task in each, then times one repeat per participant in "
            "turn, rotating the order each round, so that load from other programs hits all participants alike.\n"
            f"- Warm-up excluded (the first call and one more), median of {run.get('repeats', 5)} repeats, min–max "
            f"shown; a repeat groups steps until it lasts about {run.get('seconds_per_repeat_target', 0.25):g} s "
            "(one LeNet repeat is one pass over the pre-read batches).\n"
            "- Before any worker starts, one process at a time: `import course_lib, mindspore` (import time) and "
            "the SGEMM peak (numpy/OpenBLAS and torch/MKL, uncapped and capped at AVX2).\n"
            "- Data loading is excluded from training throughput: the digits are read once through the course "
            "pipeline and saved; MindSpore gets them through a minimal `NumpySlicesDataset` (whole batches, no "
            "transforms), PyTorch iterates the same arrays as tensors.\n"
            "- MindSpore kernel threads (`mindspore.device_context.cpu.op_tuning.threads_num`) and "
            "`torch.set_num_threads` are set to the same number.\n"
            "- Notebook times (section 6) come from `make bench-notebooks`, a run of its own, merged into the same "
            "results.json when the CPU kind is the same.\n"
            "- Results are tagged with the CPU kind (model name and widest SIMD). A run on another kind keeps the "
            "previous kind's results in `other_cpu_kinds`; they are shown in their own sections, never in a table "
            "with this kind's numbers.\n"
            "- The machine may be shared: the load average before and after each run is recorded; compare ratios "
            "measured in the same run, not absolute numbers across runs.\n")


def _kernels(probe):
    """The distinct convolution implementations a probe saw, e.g. ``"x64:gemm:jit"`` (passes dropped)."""
    names = dict.fromkeys(kernel.split(" ")[0] for kernel in (probe or {}).get("convolution_kernels", []))
    return ", ".join(names)


def findings_section(data):
    """What the numbers say, generated from them: who wins where, and why. Nothing here is typed in."""
    env = data.get("environment")
    found = groups(data)
    if not env or not found:
        return ""
    items = []
    vs_torch = [(key, speed_ratio(cells, "graph", "torch")) for key, cells in found.items()]
    vs_torch = [(key, ratio) for key, ratio in vs_torch if ratio is not None]
    wins = [f"{group_name(key)} ({ratio:.2f}×)" for key, ratio in vs_torch if ratio >= 1]
    losses = [f"{group_name(key)} ({ratio:.2f}×)" for key, ratio in vs_torch if ratio < 1]
    if wins:
        items.append("- **MindSpore graph mode at least as fast as PyTorch (defaults)**: " + ", ".join(wins) + ".")
    probes = env.get("onednn", {})
    if losses:
        text = "- **Where PyTorch (defaults) is faster**: " + ", ".join(losses) + "."
        ms_kernels, torch_kernels = _kernels(probes.get("course")), _kernels(probes.get("pytorch"))
        if "gemm" in ms_kernels and "gemm" not in torch_kernels:
            text += (f" MindSpore's CPU `Conv2D` hands oneDNN plain NCHW tensors, so oneDNN can only do im2col + "
                     f"matrix multiply (here: `{ms_kernels}`); PyTorch lets oneDNN pick blocked layouts and direct "
                     f"convolution kernels (here: `{torch_kernels}`). The bigger the convolutions, the more that "
                     "costs; no MindSpore 2.10 setting changes it.")
        items.append(text)
    roof = [(participant, r["percent_of_sgemm_peak"]) for key, cells in found.items() if key[1].startswith("resnet")
            for participant, r in cells.items() if "percent_of_sgemm_peak" in r and participant in ("graph", "torch")]
    if roof:
        spans = []
        for participant in ("graph", "torch"):
            values = [v for p, v in roof if p == participant]
            if values:
                span = (f"{min(values):.0f} %" if round(min(values)) == round(max(values))
                        else f"{min(values):.0f}–{max(values):.0f} %")
                spans.append(f"{PARTICIPANT_NAMES[participant]} {span}")
        items.append("- **Roofline**: share of this machine's SGEMM peak on the ResNet steps: " + "; ".join(spans)
                     + ".")
    course, unset = probes.get("course", {}), probes.get("all", {})
    onednn = data.get("onednn") or []
    if course and unset:
        span = ""
        if onednn:
            ratios = [r["course_vs_all"]["ratio"] for r in onednn]
            span = f" (course setting vs ALL: {min(ratios):.2f}–{max(ratios):.2f}×)"
        if course.get("isa") == unset.get("isa"):
            items.append(f"- **MindSpore's ISA cap**: oneDNN dispatches `{course['isa']}` with and without "
                         f"`ONEDNN_MAX_CPU_ISA={course['setting']}`, so the cap does nothing on this CPU{span}.")
        else:
            slow = " `ref`" if "ref" in _kernels(unset) and "ref" not in _kernels(course) else ""
            items.append(f"- **MindSpore's ISA cap**: with the cap oneDNN dispatches `{course['isa']}` instead of "
                         f"`{unset['isa']}`{span}."
                         + (f" Without it, MindSpore's convolutions take oneDNN's reference path ({slow.strip()})."
                            if slow else ""))
    late = probes.get("mindspore_late") or probes.get("pytorch_late")
    if late and unset:
        if late.get("isa") == unset.get("isa"):
            items.append("- **When oneDNN reads the cap**: cannot be told apart on this CPU (AVX2 is the widest "
                         "ISA either way).")
        elif late.get("isa") == course.get("isa"):
            items.append("- **When oneDNN reads the cap**: at its first kernel, not at import: setting "
                         "`ONEDNN_MAX_CPU_ISA=AVX2` after `import mindspore` (or `import torch`) still gives "
                         f"`{late['isa']}`.")
        else:
            items.append(f"- **When oneDNN reads the cap**: set after import it gave `{late['isa']}` (not the "
                         "cap): it is read at import in this build.")
    torch_cap = [(key, speed_ratio(cells, "torch_avx2", "torch")) for key, cells in found.items()]
    torch_cap = [f"{group_name(key)} {ratio:.2f}×" for key, ratio in torch_cap if ratio is not None]
    if torch_cap and probes.get("pytorch") and probes.get("pytorch_avx2"):
        same = probes["pytorch"]["isa"] == probes["pytorch_avx2"]["isa"]
        items.append(f"- **PyTorch capped at AVX2** (`{probes['pytorch_avx2']['isa']}` instead of "
                     f"`{probes['pytorch']['isa']}`{', the same ISA' if same else ''}), speed vs its defaults: "
                     + ", ".join(torch_cap) + ".")
    passive = [(key, speed_ratio(cells, "torch_passive", "torch")) for key, cells in found.items()]
    passive = [f"{group_name(key)} {ratio:.2f}×" for key, ratio in passive if ratio is not None]
    if passive:
        items.append("- **PyTorch with `OMP_WAIT_POLICY=PASSIVE`** (sleeping OpenMP threads; the old harness's "
                     "setting), speed vs its defaults: " + ", ".join(passive) + ".")
    jit = [(key, speed_ratio(cells, "jit_off", "graph"), speed_ratio(cells, "jit_on", "graph"))
           for key, cells in found.items()]
    jit = [(key, off, on) for key, off, on in jit if off is not None and on is not None]
    if jit:
        items.append("- **`@ms.jit` vs graph mode** (speed, unset → with `MS_DEV_HOST_BLOCKING_RUN=1`): "
                     + ", ".join(f"{group_name(key)} {off:.2f}× → {on:.2f}×" for key, off, on in jit) + ".")
    threads = env["threads"]
    items.append(
        f"- **Ruled out on our side**: thread counts are equal (MindSpore kernels {threads['mindspore_op_threads']}, "
        f"oneDNN nthr={threads['mindspore_onednn_threads']}; PyTorch {threads['torch_num_threads']}); training "
        "reads pre-loaded batches; both sides wait for the step's result (`asnumpy()` / `loss.item()`) before the "
        "clock stops; identical architectures, initialisation and optimiser.")
    before = data.get("run", {}).get("load_average_before") or []
    cores = env["cpu"]["cores"]
    if before and before[0] >= 0.5 * cores:
        items.append(f"- **The machine was busy**: 1-min load average {before[0]:.2f} on {cores} cores before the "
                     "run started. Interleaving spreads that load over all participants, but a neighbour holding a "
                     "core hurts PyTorch's spinning OpenMP threads most (see the PASSIVE row): re-run `make bench` "
                     "on an idle machine before quoting these numbers.")
    return "## What the numbers say\n\n" + "\n".join(items)


def other_kinds_section(data):
    """Each earlier run on another CPU kind: its own heading, its own headline table."""
    parts = []
    for kind, other in (data.get("other_cpu_kinds") or {}).items():
        run = other.get("run") or {}
        rows = headline_rows(other)
        text = f"## Earlier results on another CPU kind: {kind}\n\n"
        if other.get("harness_version", 2) < 2:
            text += ("Measured by the earlier harness (before issue #14): PyTorch ran with "
                     "`OMP_WAIT_POLICY=PASSIVE` only, so there is no PyTorch-defaults column. ")
        text += f"Measured {run.get('created_utc', '?')}; load average before {_load(run.get('load_average_before'))}."
        if rows:
            text += "\n\n" + _table(HEADLINE_HEADER, rows)
        notebooks = other.get("notebooks") or {}
        if notebooks.get("records"):
            slowest = max(notebooks["records"], key=lambda r: r["seconds"])
            text += (f"\n\nWhole course: {notebooks['total_seconds']:.0f} s; slowest lesson {slowest['notebook']} "
                     f"{slowest['seconds']:.0f} s (measured {notebooks.get('measured_utc', '?')}).")
        parts.append(text)
    return "\n\n".join(parts)


def fast_conv_section(data):
    """``make fast-conv-bench``: appendix A8's FastConv2d and blocked ResNet against MindSpore's nn.Conv2d and
    PyTorch (same CPU kind)."""
    found = data.get("fast_conv")
    if not found or not found.get("models"):
        return ""
    rows, kernels = [], []
    for model, r in found["models"].items():
        ratios = r["ratios"]
        isa = "; ".join(f"{ver}: {name}" for ver, name in r["blocked"]["isa"].items())
        rows.append((model, seconds_text(r["mindspore"]["median_s"]), seconds_text(r["fastconv"]["median_s"]),
                     seconds_text(r["blocked"]["median_s"]), seconds_text(r["pytorch"]["median_s"]),
                     ratio_cell(ratios["blocked_over_stock"]), ratio_cell(ratios["blocked_over_pytorch"]),
                     ratio_cell(ratios["fastconv_over_pytorch"]), isa))
        for variant in ("mindspore", "fastconv", "blocked", "pytorch"):
            for k in r[variant].get("conv_kernels", []):
                if k.get("gflops") and k["seconds"] >= 0.01:  # kernels that matter (≥ 10 ms a step)
                    kernels.append((model, variant, k["pass"], f"`{k['impl']}`", k.get("onednn", "?"),
                                    str(k["calls"]), f"{k['gflops']:.0f}"))
    threads = found.get("threads") or {}
    thread_text = ""
    if threads:
        thread_text = ("\n\nOpenMP settings (the blocked ResNet-18 step, each in a fresh process):\n\n"
                       + _table(("setting", "step"), [(name, seconds_text(s)) for name, s in threads.items()]))
    return (f"## 8. FastConv2d (appendix A8) against nn.Conv2d and PyTorch\n\n`make fast-conv-bench` (part of "
            f"`make bench`, measured {found.get('measured_utc', '?')}): one ResNet training step at "
            f"{found['image_size']}×{found['image_size']} px, batch {found['batch']}, "
            f"median of {found.get('repeats', 3)}; "
            "MindSpore with `@ms.jit` in graph mode: stock `nn.Conv2d`; `FastConv2d` by `swap_convs` (oneDNN "
            "kernels with `format_tag::any`, a reorder around each call); the blocked ResNet by `block_resnet` "
            "(activations stay blocked; oneDNN batch norm with fused ReLU and max pooling). FastConv2d's kernels run "
            "the private oneDNN (the `onednn-cpu-gomp` wheel) at the CPU's best ISA, while MindSpore's own oneDNN "
            "keeps the course's AVX2 cap; PyTorch as installed. > 1 means the left one is faster.\n\n"
            + _table(("model", "MindSpore nn.Conv2d", "FastConv2d", "blocked", "PyTorch", "blocked vs nn.Conv2d",
                      "blocked vs PyTorch", "FastConv2d vs PyTorch", "ISA (oneDNN copy: ISA)"), rows)
            + "\n\nConvolution kernels from `ONEDNN_VERBOSE` (one step; each kind's first call left out):\n\n"
            + _table(("model", "variant", "pass", "oneDNN implementation", "oneDNN", "calls", "GFLOP/s"), kernels)
            + thread_text)


def _tag_headings(text, kind):
    return "\n".join(f"{line} — {kind}" if line.startswith("## ") else line for line in text.split("\n"))


def markdown(data) -> str:
    kind = cpu_kind_of(data)
    parts = [environment_text(data), headline_section(data), targets_section(data), findings_section(data),
             lenet_section(data), steps_section(data), roofline_section(data), jit_section(data),
             onednn_section(data), pipeline_section(data), compile_section(data), notebooks_section(data),
             inference_section(data), fast_conv_section(data), method_section(data)]
    body = [_tag_headings(part, kind) for part in parts if part]
    others = other_kinds_section(data)
    return "\n\n".join([f"# Benchmark results — {kind}", *body, *([others] if others else [])]).rstrip() + "\n"



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
        short = {"graph": "MS graph", "pynative": "MS PyNative", "jit_off": "MS @ms.jit",
                 "jit_on": "MS @ms.jit\nblocking=1", "torch": "PyTorch\ndefaults", "torch_passive": "PyTorch\nPASSIVE",
                 "torch_avx2": "PyTorch\nAVX2 cap"}
        names = [short.get(r.get("participant"))
                 or r["label"].replace("MindSpore ", "MS ").replace(", ", "\n").replace(" (", "\n(") for r in lenet]
        bars = ax_lenet.bar(names, [r["samples_per_second"] for r in lenet],
                            color=[f"C{i % 10}" for i in range(len(lenet))])
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
    step_groups = [(key, cells) for key, cells in groups(data).items() if key[0] == "train_step"]
    steps = [r for r in results if r["measurement"] == "train_step"]
    if step_groups:
        names = [f"{key[1]}\nb{key[2]} {key[3]}px" for key, _ in step_groups]
        values = {(name, label): cells[k]["samples_per_second"]
                  for name, (_, cells) in zip(names, step_groups) for k, label in STEP_COLUMNS if k in cells}
        _bars(ax_steps, names, [label for _, label in STEP_COLUMNS], values, "2. Training step speed",
              "images / s (log)", log=True)
    onednn = data.get("onednn") or []
    if onednn:
        course = onednn[0]["course_setting"]
        names = [r["step"].replace(" step, ", "\n").replace(" Model.train epoch ", "\n") for r in onednn]
        values = {}
        for group, r in zip(names, onednn):
            values[(group, "ISA=ALL")] = r["all_images_per_second"]
            values[(group, f"ISA={course}")] = r["course_images_per_second"]
        _bars(ax_onednn, names, ["ISA=ALL", f"ISA={course}"], values, "3. oneDNN ISA cap (graph mode)",
              "images / s (log)", log=True)
    pipes = data.get("pipeline") or []
    if pipes:
        names = list(dict.fromkeys(r["pipeline"] for r in pipes))
        values = {(r["pipeline"], r["label"]): r["samples_per_second"] for r in pipes}
        _bars(ax_pipe, names, list(dict.fromkeys(r["label"] for r in pipes)), values,
              "4. Data pipeline throughput", "images / s (log)", log=True)
        need = 3 * data["summary"]["pipeline_vs_lenet_training"]["training_images_per_second"]
        ax_pipe.axhline(need, color="red", linestyle="--", linewidth=1)
        ax_pipe.text(-0.45, need, " 3× LeNet training", color="red", fontsize=6, va="bottom")
    infer = data.get("inference") or []
    if infer:
        names = [f"batch {b}" for b in dict.fromkeys(r["batch_size"] for r in infer)]
        values = {(f"batch {r['batch_size']}", r["label"]): r["samples_per_second"] for r in infer}
        _bars(ax_infer, names, list(dict.fromkeys(r["label"] for r in infer)), values, "7. LeNet-5 inference",
              "images / s (log)", log=True)
    notebooks = (data.get("notebooks") or {}).get("records")
    if notebooks:
        names = [r["notebook"].replace(".ipynb", "") for r in notebooks]
        seconds = [r["seconds"] for r in notebooks]
        colors = ["tab:blue" if r["status"] == "ok" and r["seconds"] <= 60 else "tab:red" for r in notebooks]
        ax_nb.barh(names[::-1], seconds[::-1], color=colors[::-1])
        ax_nb.axvline(60, color="red", linestyle="--", linewidth=1)
        ax_nb.set_title(f"6. Notebooks (total {data['notebooks']['total_seconds']:.0f} s)", fontsize=9)
        ax_nb.set_xlabel("seconds (goal ≤ 60 each)", fontsize=8)
        ax_nb.tick_params(axis="y", labelsize=7)
    for ax, present, text in ((ax_lenet, lenet, "LeNet"), (ax_steps, steps, "steps"), (ax_onednn, onednn, "oneDNN"),
                              (ax_pipe, pipes, "pipelines"), (ax_infer, infer, "inference"),
                              (ax_nb, notebooks, "notebooks")):
        if not present:
            ax.text(0.5, 0.5, f"{text}: not measured", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
    env = data.get("environment")
    title = f"MindSpore vs PyTorch on CPU — {cpu_kind_of(data)}"
    if env:
        title += f", {env['cpu']['cores']} cores, MindSpore {env['mindspore']}, " \
                 f"PyTorch {env['torch']}" + (" (quick run)" if data["run"].get("quick") else "")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
