import json
import math
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.paths import PROJECT_ROOT
from course_lib.perf.timing import cpu_kind

RUN = PROJECT_ROOT / "benchmarks" / "run.py"
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
import report  # noqa: E402
import run as bench_run  # noqa: E402

#: Fields that describe the machine rather than measure it, and may legitimately be 0.
MAY_BE_ZERO = {"load_average_before", "load_average_after", "max_abs_difference_vs_minddata"}
TIMING_KEYS = {"median", "min", "max", "n", "samples_per_second", "samples_per_second_min",
               "samples_per_second_max", "steps_per_repeat"}


def run_bench(*args, timeout=900):
    return subprocess.run([sys.executable, str(RUN), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=PROJECT_ROOT)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    result = run_bench("--quick", "--out", out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out, json.loads((out / "results.json").read_text())


def numbers(value, path=""):
    """Every (path, number) in a JSON value; booleans are not numbers here."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, f"{path}.{key}")
    else:
        for index, item in enumerate(value):
            yield from numbers(item, f"{path}[{index}]")


@pytest.mark.slow
def test_quick_run_writes_json_markdown_and_png_atomically(quick):
    out, data = quick
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "results.md", "results.png"]  # no temp files
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (out / "results.md").read_text()
    for heading in ("## Headline", "## Course goals", "## What the numbers say", "## 1. LeNet-5 training throughput",
                    "## 2. Training step time", "## Roofline", "## @ms.jit vs graph mode",
                    "## 3. oneDNN instruction-set cap", "## 4. Data pipeline throughput",
                    "## 5. Compile time", "## 6. Whole course", "## 7. Inference", "## How these numbers"):
        assert heading in markdown
    kind = data["cpu_kind"]
    assert markdown.startswith(f"# Benchmark results — {kind}\n")
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert len(headings) >= 13 and all(line.endswith(f" — {kind}") for line in headings), headings
    assert data["run"]["quick"] is True
    assert "/tmp/" not in markdown and str(out) not in markdown


@pytest.mark.slow
def test_results_json_has_every_section_and_environment_fact(quick):
    _, data = quick
    assert {"schema_version", "run", "environment", "results", "lenet_training", "onednn", "pipeline", "compile",
            "inference", "summary", "notebooks", "targets"} <= set(data)
    env = data["environment"]
    assert {"mindspore", "torch", "numpy", "python", "cpu", "cpu_kind", "threads", "env", "onednn", "sgemm_peak",
            "import_seconds"} <= set(env)
    assert env["mindspore"] == "2.10.0" and env["torch"].startswith("2.") and env["numpy"]
    assert env["cpu"]["model"] and env["cpu"]["cores"] >= 1
    assert data["cpu_kind"] == env["cpu_kind"] == cpu_kind(env["cpu"]) and env["cpu"]["model"] in data["cpu_kind"]
    assert data["schema_version"] == 2 and data["harness_version"] == 2 and data["other_cpu_kinds"] == {}
    assert {"avx2", "avx512f", "amx_tile"} <= set(env["cpu"])
    # PyTorch's headline process runs with its defaults; the two labelled variants change one variable each
    workers = env["worker_env"]
    assert workers["torch"]["OMP_WAIT_POLICY"] is None and workers["torch"]["ONEDNN_MAX_CPU_ISA"] is None
    assert workers["torch_passive"]["OMP_WAIT_POLICY"] == "PASSIVE"
    assert workers["torch_avx2"]["ONEDNN_MAX_CPU_ISA"] == "AVX2" and workers["torch_avx2"]["OMP_WAIT_POLICY"] is None
    assert workers["jit_on"]["MS_DEV_HOST_BLOCKING_RUN"] == "1"
    assert workers["jit_off"]["MS_DEV_HOST_BLOCKING_RUN"] is None
    # every framework's dispatched ISA, parsed from ONEDNN_VERBOSE
    assert set(env["onednn"]) == set(bench_run.ONEDNN_PROBES)
    for probe in env["onednn"].values():
        assert probe["isa"] and probe["framework"] in ("mindspore", "pytorch") and probe["convolution_kernels"]
    assert "AVX2" in env["onednn"]["course"]["isa"] and "AVX2" in env["onednn"]["pytorch_avx2"]["isa"]
    peak = env["sgemm_peak"]
    assert 0 < peak["avx2_gflops"] <= peak["gflops"] and len(peak["runs"]) == 6
    assert env["import_seconds"]["total"] >= env["import_seconds"]["mindspore"] > 0
    threads = env["threads"]
    assert threads["mindspore_op_threads"] == threads["torch_num_threads"] == threads["requested"]
    assert "ONEDNN_MAX_CPU_ISA" in env["env"]
    assert env["worker_env"]["graph_all"]["ONEDNN_MAX_CPU_ISA"] == "ALL"
    assert env["onednn"]["all"]["setting"] == "ALL" and env["onednn"]["course"]["isa"]
    assert data["run"]["repeats"] >= 5 and data["run"]["load_average_before"]


@pytest.mark.slow
def test_every_training_variant_is_measured(quick):
    _, data = quick
    everyone = set(bench_run.PARTICIPANTS) - {"graph_all"}  # graph_all is reported in the oneDNN section
    lenet = {r["participant"] for r in data["results"] if r["measurement"] == "lenet_training"}
    assert lenet == everyone
    steps = [r for r in data["results"] if r["measurement"] == "train_step"]
    configs = {(r["model"], r["batch_size"], r["image_size"]) for r in steps}
    assert {model for model, _, _ in configs} == {"lenet5", "resnet18"}
    for config in configs:
        found = {r["participant"] for r in steps if (r["model"], r["batch_size"], r["image_size"]) == config}
        assert found == everyone, config
    for record in steps:  # roofline: FLOPs per image x images/s, and its share of the SGEMM peak
        assert record["gflops_per_second"] == pytest.approx(
            record["training_flops_per_sample"] * record["samples_per_second"] / 1e9)
        assert record["percent_of_sgemm_peak"] == pytest.approx(
            100 * record["gflops_per_second"] / data["environment"]["sgemm_peak"]["gflops"])
    assert {(f["model"], f["image_size"]) for f in data["flops"]} == {(m, s) for m, _, s in configs}
    for record in data["results"]:
        assert record["n"] == data["run"]["repeats"]
        assert record["min"] <= record["median"] <= record["max"]
        # the contract lesson 04 plots from: images/s == batch_size / seconds per step (median of an odd count)
        assert record["samples_per_second"] == pytest.approx(record["batch_size"] / record["median"], rel=1e-9)
    assert {r["step"].split(" ")[0] for r in data["onednn"]} >= {"LeNet-5", "lenet5"}
    pipelines = {(r["pipeline"], r["impl"], r["workers"]) for r in data["pipeline"]}
    assert pipelines == {(p, impl, w) for p in ("digits", "imagefolder")
                         for impl, w in (("minddata", 1), ("minddata", 2), ("numpy", 1))}
    assert {(r["batch_size"], r["impl"], r["framework"]) for r in data["inference"]} == {
        (b, impl, fw) for b in (1, 64)
        for impl, fw in (("cell", "mindspore"), ("mindir", "mindspore"), ("module", "pytorch"))}
    assert {r["mode"] for r in data["inference"] if r["impl"] == "cell"} == {"pynative", "graph"}
    assert {(r["framework"], r["mode"]) for r in data["compile"]} >= {("mindspore", "graph"),
                                                                       ("mindspore", "pynative")}


@pytest.mark.slow
def test_every_number_is_positive_and_finite(quick):
    _, data = quick
    found = list(numbers(data))
    assert len(found) > 200
    for path, value in found:
        assert math.isfinite(value), path
        if path.split(".")[-1].split("[")[0] in MAY_BE_ZERO:
            assert value >= 0, path
        else:
            assert value > 0, path


@pytest.mark.slow
def test_summary_ratios_and_targets_follow_from_the_records(quick):
    _, data = quick
    by_key = {r["participant"]: r for r in data["results"] if r["measurement"] == "lenet_training"}
    ratio = data["summary"]["lenet_graph_vs_pytorch"]
    expected = by_key["graph"]["samples_per_second"] / by_key["torch"]["samples_per_second"]  # PyTorch defaults
    assert ratio["ratio"] == pytest.approx(expected)
    assert ratio["per_round_min"] <= ratio["per_round_max"]
    targets = {t["id"]: t for t in data["targets"]}
    assert set(targets) == {"jit_vs_graph", "pipeline_vs_training", "lesson_max_seconds", "course_total_seconds"}
    jit = bench_run.jit_vs_graph_ratios(data["summary"])
    assert len(jit) == 3  # the LeNet epoch and both steps
    worst = min(ratio for _, ratio in jit)
    assert targets["jit_vs_graph"]["value"] == worst and targets["jit_vs_graph"]["met"] == (worst >= 0.95)
    assert targets["jit_vs_graph"]["status"].startswith("met" if worst >= 0.95 else "NOT met")
    course_jit = bench_run.course_jit_worker()
    assert data["summary"]["lenet"]["jit_vs_graph"]["ratio"] == pytest.approx(
        by_key[course_jit]["samples_per_second"] / by_key["graph"]["samples_per_second"])
    pipe = data["summary"]["pipeline_vs_lenet_training"]
    assert pipe["training_images_per_second"] == pytest.approx(by_key["graph"]["samples_per_second"])
    assert targets["lesson_max_seconds"]["status"] == "not measured"


@pytest.mark.slow
def test_notebook_timing_is_merged_and_reports_failures(quick, tmp_path):
    out, before = quick
    merged = tmp_path / "out"
    shutil.copytree(out, merged)
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("import course_lib\nprint(6 * 7)")]), lessons / "00_ok.ipynb")
    nbformat.write(new_notebook(cells=[new_code_cell("raise ValueError('lesson is broken')")]),
                   lessons / "01_broken.ipynb")
    sources = {p.name: p.read_bytes() for p in lessons.iterdir()}
    result = run_bench("--notebooks", "--notebook-dir", lessons, "--out", merged, "--notebook-timeout", 120,
                       timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    data = json.loads((merged / "results.json").read_text())
    assert data["results"] == before["results"] and data["environment"] == before["environment"]
    notebooks = data["notebooks"]
    assert [r["notebook"] for r in notebooks["records"]] == ["00_ok.ipynb", "01_broken.ipynb"]
    assert notebooks["records"][0]["status"] == "ok"
    assert notebooks["records"][1]["status"].startswith("error: ") and "lesson is broken" in \
        notebooks["records"][1]["status"]
    assert notebooks["total_seconds"] == pytest.approx(sum(r["seconds"] for r in notebooks["records"]))
    assert notebooks["all_ok"] is False
    assert all(r["seconds"] > 0 for r in notebooks["records"])
    targets = {t["id"]: t for t in data["targets"]}
    assert targets["course_total_seconds"]["met"] is True
    assert "00_ok.ipynb" in (merged / "results.md").read_text()
    assert {p.name: p.read_bytes() for p in lessons.iterdir()} == sources  # executed from a scratch copy
    assert notebooks["cpu_kind"] == data["cpu_kind"]


@pytest.mark.slow
def test_render_only_rewrites_markdown_and_png_from_results_json(quick, tmp_path):
    out, data = quick
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / "results.md").unlink()
    (copy / "results.png").unlink()
    result = run_bench("--render-only", "--out", copy, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (copy / "results.md").read_text() == (out / "results.md").read_text()
    assert (copy / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((copy / "results.json").read_text()) == data


def test_render_only_without_results_says_how_to_get_them(tmp_path):
    result = run_bench("--render-only", "--out", tmp_path, timeout=120)
    assert result.returncode == 1
    assert "no results.json" in result.stderr and "Fix: run `make bench` first." in result.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("args, message", [
    (["--render-only", "--quick"], "cannot be combined"),
    (["--repeats", "3"], "--repeats must be at least 5"),
    (["--threads", "-1"], "--threads must be >= 1"),
    (["--notebooks", "--all"], "exclude each other"),
])
def test_bad_arguments_are_refused_with_the_fix(args, message, tmp_path):
    result = run_bench(*args, "--out", tmp_path, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert not any(tmp_path.iterdir())


def test_a_folder_without_notebooks_is_refused(tmp_path):
    result = run_bench("--notebooks", "--notebook-dir", tmp_path, "--out", tmp_path, timeout=120)
    assert result.returncode == 2
    assert "no *.ipynb files in" in result.stderr and "Fix:" in result.stderr


# ------------------------------------------------------------------------------------------------ CPU kinds
def test_cpu_kind_names_the_model_and_the_widest_simd():
    base = {"model": "Some CPU", "cores": 2, "avx2": True, "avx512f": False, "avx512_bf16": False, "amx_tile": False}
    assert cpu_kind(base) == "Some CPU, AVX2"
    assert cpu_kind({**base, "avx512f": True}) == "Some CPU, AVX-512"
    assert cpu_kind({**base, "avx512f": True, "amx_tile": True}) == "Some CPU, AVX-512 + AMX"
    assert cpu_kind({**base, "avx2": False}) == "Some CPU, no AVX2"


def test_results_of_another_cpu_kind_are_kept_apart_and_a_same_kind_run_replaces_its_archive():
    old = {"schema_version": 2, "cpu_kind": "A, AVX2", "results": [{"x": 1}], "notebooks": {"records": [{}]},
           "other_cpu_kinds": {"B, AVX-512": {"cpu_kind": "B, AVX-512", "results": [{"y": 2}]}}}
    same, others = bench_run.separate_cpu_kinds(old, "A, AVX2")
    assert same["results"] == [{"x": 1}] and "other_cpu_kinds" not in same and set(others) == {"B, AVX-512"}
    same, others = bench_run.separate_cpu_kinds(old, "B, AVX-512")
    assert same == {"cpu_kind": "B, AVX-512", "results": [{"y": 2}]} and set(others) == {"A, AVX2"}
    same, others = bench_run.separate_cpu_kinds(old, "C, AVX-512 + AMX")
    assert same is None and set(others) == {"A, AVX2", "B, AVX-512"}
    assert bench_run.separate_cpu_kinds(None, "A, AVX2") == (None, {})


def test_a_schema_1_results_json_is_tagged_with_its_cpu_kind(tmp_path):
    cpu = {"model": "AMD EPYC", "cores": 2, "avx2": True, "avx512f": False, "avx512_bf16": False, "amx_tile": False}
    (tmp_path / "results.json").write_text(json.dumps({
        "schema_version": 1, "environment": {"cpu": cpu}, "results": [],
        "notebooks": {"records": [{"notebook": "00.ipynb", "seconds": 1.0, "status": "ok"}]}}))
    data = bench_run.load_previous(tmp_path)
    assert data["schema_version"] == 2 and data["harness_version"] == 1 and data["cpu_kind"] == "AMD EPYC, AVX2"
    assert data["notebooks"]["cpu_kind"] == "AMD EPYC, AVX2"


@pytest.mark.slow
def test_tables_of_different_cpu_kinds_never_mix(quick):
    _, data = quick
    other = json.loads(json.dumps(data))
    other.update({"cpu_kind": "Other CPU, AVX2", "harness_version": 1})
    for record in other["results"]:  # slower there, so its verdicts differ
        record["samples_per_second"] /= 3
    combined = {**data, "other_cpu_kinds": {"Other CPU, AVX2": other}}
    markdown = report.markdown(combined)
    main, _, archived = markdown.partition("## Earlier results on another CPU kind: Other CPU, AVX2")
    assert archived and "Other CPU" not in main
    assert data["cpu_kind"] not in archived
    assert "OMP_WAIT_POLICY=PASSIVE" in archived  # the old harness is labelled as such
    assert report.headline_rows(other) != report.headline_rows(data)


@pytest.mark.slow
def test_verdicts_follow_the_numbers(quick):
    _, data = quick
    for factor, faster in ((100.0, "MindSpore graph mode at least as fast"),
                           (0.01, "Where PyTorch (defaults) is faster")):
        changed = json.loads(json.dumps(data))
        for record in changed["results"]:
            if record.get("participant") == "graph":
                record["samples_per_second"] *= factor
        findings = report.findings_section(changed)
        assert faster in findings
        other = "Where PyTorch (defaults) is faster" if factor > 1 else "MindSpore graph mode at least as fast"
        assert other not in findings


# ------------------------------------------------------------------------------------------------ FLOPs
def test_count_flops_matches_a_hand_count_for_lenet():
    from course_lib.models import lenet5
    from course_lib.perf.profiling import TRAINING_FLOPS_FACTOR, count_flops

    counted = count_flops(lenet5(num_classes=10), (1, 32, 32))
    # conv1 6x28x28 outputs x 1x5x5, conv2 16x10x10 x 6x5x5, fc 400x120, 120x84, 84x10 multiply-accumulates
    by_hand = {"conv1": 6 * 28 * 28 * 25, "conv2": 16 * 10 * 10 * 150, "fc1": 400 * 120, "fc2": 120 * 84,
               "fc3": 84 * 10}
    assert {layer.name: layer.macs for layer in counted["layers"]} == by_hand
    assert counted["macs"] == 416_520
    assert counted["forward_flops"] == 2 * 416_520
    assert counted["training_flops"] == TRAINING_FLOPS_FACTOR * 2 * 416_520 == 3 * 833_040


def test_count_flops_handles_stride_padding_and_groups_and_restores_the_mode():
    import mindspore as ms
    from mindspore import nn

    from course_lib.perf.profiling import count_flops

    class Tiny(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, stride=2, pad_mode="pad", padding=1)
            self.grouped = nn.Conv2d(8, 8, 1, group=4)
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(8 * 4 * 4, 10)

        def construct(self, x):
            return self.fc(self.flatten(self.grouped(self.conv(x))))

    mode = ms.get_context("mode")
    counted = count_flops(Tiny(), (3, 8, 8))
    assert ms.get_context("mode") == mode
    # 8x4x4 outputs x 3x3x3; 8x4x4 x (8/4)x1x1; 128 x 10
    assert [layer.macs for layer in counted["layers"]] == [128 * 27, 128 * 2, 128 * 10]
    assert counted["layers"][0].output_shape == (8, 4, 4)


def test_count_flops_of_resnet18_is_the_published_1_8_gmacs():
    from course_lib.models import resnet18
    from course_lib.perf.profiling import count_flops

    counted = count_flops(resnet18(num_classes=1000), (3, 224, 224))
    assert len([layer for layer in counted["layers"] if layer.kind == "conv2d"]) == 20
    assert counted["macs"] == pytest.approx(1.814e9, rel=2e-3)


@pytest.mark.parametrize(("shape", "error"), [((), ValueError), ((3, 0, 8), ValueError), ("3x8x8", TypeError),
                                              ((3, 8.0, 8), TypeError)])
def test_count_flops_rejects_bad_shapes(shape, error):
    """A wrong type is a TypeError, a bad value a ValueError (course_lib/validation.py's vocabulary)."""
    from course_lib.models import lenet5
    from course_lib.perf.profiling import count_flops

    with pytest.raises(error, match="input_shape"):
        count_flops(lenet5(), shape)


def test_onednn_verbose_parsing():
    text = ("onednn_verbose,v1,info,cpu,runtime:threadpool,nthr:2\n"
            "onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions\n"
            "onednn_verbose,v1,primitive,exec,cpu,convolution,gemm:jit,forward_training,src:f32::blocked:abcd\n"
            "onednn_verbose,v1,primitive,exec,cpu,convolution,brgconv:avx512_core,backward_data,src:f32\n")
    parsed = bench_run.parse_onednn_verbose(text)
    assert parsed == {"isa": "Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions",
                      "runtime": "threadpool", "threads": 2,
                      "convolution_kernels": ["brgconv:avx512_core backward_data", "gemm:jit forward_training"]}
    assert bench_run.parse_onednn_verbose("nothing") is None


def _fast_conv_results(kind):
    def variant(seconds, isa, impl, gflops):
        return {"median_s": seconds, "first_s": 2 * seconds, "isa": isa,
                "conv_kernels": [{"pass": "forward_training", "impl": impl, "onednn": "v3.2.0", "calls": 26,
                                  "seconds": 0.2, "gflops": gflops}]}
    cpu = {"v3.10.1": "Intel AVX2", "v3.2.0": "Intel AVX-512"}
    return {"batch": 8, "image_size": 224, "repeats": 3, "cpu_kind": kind, "measured_utc": "2026-11-25T15:00:00+00:00",
            "threads": {"as installed": 0.25, "OMP_NUM_THREADS=1": 0.4},
            "models": {"resnet18": {"mindspore": variant(0.7, {"v3.10.1": "Intel AVX2"}, "x64:gemm:jit", 167.0),
                                    "fastconv": variant(0.5, cpu, "jit:avx512_core", 445.0),
                                    "blocked": variant(0.35, cpu, "jit:avx512_core", 460.0),
                                    "pytorch": variant(0.37, {"v3.9": "Intel AVX-512"}, "jit:avx512_core", 413.0),
                                    "ratios": {"fastconv_over_stock": 0.7 / 0.5, "blocked_over_stock": 0.7 / 0.35,
                                               "fastconv_over_pytorch": 0.37 / 0.5,
                                               "blocked_over_pytorch": 0.37 / 0.35}}}}


def test_fast_conv_results_join_results_md_only_for_the_same_cpu_kind(tmp_path):
    data = {"cpu_kind": "Some CPU, AVX2"}
    (tmp_path / "fast_conv_results.json").write_text(json.dumps(_fast_conv_results("Another CPU, AVX-512")))
    bench_run.attach_fast_conv(data, tmp_path)
    assert "fast_conv" not in data and report.fast_conv_section(data) == ""
    (tmp_path / "fast_conv_results.json").write_text(json.dumps(_fast_conv_results("Some CPU, AVX2")))
    bench_run.attach_fast_conv(data, tmp_path)
    text = report.fast_conv_section(data)
    assert "## 8. FastConv2d" in text
    assert ("| resnet18 | 700.0 ms | 500.0 ms | 350.0 ms | 370.0 ms | 2.00× | 1.06× | 0.74× | v3.10.1: Intel AVX2; "
            "v3.2.0: Intel AVX-512 |") in text
    assert "| resnet18 | blocked | forward_training | `jit:avx512_core` | v3.2.0 | 26 | 460 |" in text
    assert "| OMP_NUM_THREADS=1 | 400.0 ms |" in text
    (tmp_path / "fast_conv_results.json").unlink()
    bench_run.attach_fast_conv(data, tmp_path)
    assert "fast_conv" not in data
