import course_lib  # noqa: F401  (sets env before mindspore)

import json
import math
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from course_lib.paths import PROJECT_ROOT

RUN = PROJECT_ROOT / "benchmarks" / "run.py"

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


def test_quick_run_writes_json_markdown_and_png_atomically(quick):
    out, data = quick
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "results.md", "results.png"]  # no temp files
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (out / "results.md").read_text()
    for heading in ("## Targets", "## 1. LeNet-5 training throughput", "## 2. Training step time",
                    "## 3. oneDNN instruction-set cap", "## 4. Data pipeline throughput",
                    "## 5. Compile time", "## 6. Whole course", "## 7. Inference", "## How these numbers"):
        assert heading in markdown
    assert data["run"]["quick"] is True
    assert "/tmp/" not in markdown and str(out) not in markdown


def test_results_json_has_every_section_and_environment_fact(quick):
    _, data = quick
    assert {"schema_version", "run", "environment", "results", "lenet_training", "onednn", "pipeline", "compile",
            "inference", "summary", "notebooks", "targets"} <= set(data)
    env = data["environment"]
    assert {"mindspore", "torch", "numpy", "python", "cpu", "threads", "env", "onednn"} <= set(env)
    assert env["mindspore"] == "2.10.0" and env["torch"].startswith("2.") and env["numpy"]
    assert env["cpu"]["model"] and env["cpu"]["cores"] >= 1
    threads = env["threads"]
    assert threads["mindspore_op_threads"] == threads["torch_num_threads"] == threads["requested"]
    assert "ONEDNN_MAX_CPU_ISA" in env["env"]
    assert env["worker_env"]["graph_all"]["ONEDNN_MAX_CPU_ISA"] == "ALL"
    assert env["onednn"]["all"]["setting"] == "ALL" and env["onednn"]["course"]["isa"]
    assert data["run"]["repeats"] >= 5 and data["run"]["load_average_before"]


def test_every_training_variant_is_measured(quick):
    _, data = quick
    lenet = {(r["framework"], r["mode"]) for r in data["results"] if r["measurement"] == "lenet_training"}
    assert lenet == {("mindspore", "graph"), ("mindspore", "pynative"), ("mindspore", "jit"), ("pytorch", "eager")}
    steps = [r for r in data["results"] if r["measurement"] == "train_step"]
    configs = {(r["model"], r["batch_size"], r["image_size"]) for r in steps}
    assert {model for model, _, _ in configs} == {"lenet5", "resnet18"}
    for config in configs:
        modes = {r["mode"] for r in steps if (r["model"], r["batch_size"], r["image_size"]) == config}
        assert modes == {"graph", "pynative", "eager"}, config
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


def test_summary_ratios_and_targets_follow_from_the_records(quick):
    _, data = quick
    by_mode = {r["mode"]: r for r in data["results"] if r["measurement"] == "lenet_training"}
    ratio = data["summary"]["lenet_graph_vs_pytorch"]
    expected = by_mode["graph"]["samples_per_second"] / by_mode["eager"]["samples_per_second"]
    assert ratio["ratio"] == pytest.approx(expected)
    assert ratio["per_round_min"] <= ratio["per_round_max"]
    targets = {t["id"]: t for t in data["targets"]}
    assert set(targets) == {"lenet_graph_vs_pytorch", "resnet18_64_graph_vs_pytorch", "pipeline_vs_training",
                            "notebook_max_seconds", "course_total_seconds"}
    assert targets["lenet_graph_vs_pytorch"]["met"] == (ratio["ratio"] >= 1.0)
    assert targets["lenet_graph_vs_pytorch"]["status"].startswith("met" if ratio["ratio"] >= 1.0 else "NOT met")
    pipe = data["summary"]["pipeline_vs_lenet_training"]
    assert pipe["training_images_per_second"] == pytest.approx(by_mode["graph"]["samples_per_second"])
    assert targets["notebook_max_seconds"]["status"] == "not measured"


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
