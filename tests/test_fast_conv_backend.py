"""FastConv2d's two oneDNN copies (course_lib.perf.fast_conv, issue #30): the private wheel (oneDNN 3.2, OpenMP, at
the CPU's best ISA) and MindSpore's own copy (3.10, threadpool, capped by ONEDNN_MAX_CPU_ISA) both compute what
nn.Conv2d computes; the two copies live side by side in one process without touching each other; bad settings and
other operating systems fail with a clear message.

The kernels' library is compiled and loaded once per process (``_LIB``; the oneDNN ISA is fixed at its first use),
so each oneDNN choice runs in its own Python subprocess, once for the whole file."""
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import course_lib  # noqa: F401  # isort: skip  (sets the environment before mindspore is imported)

from course_lib.perf import fast_conv as fc

ROOT = Path(__file__).resolve().parent.parent

CASES = [  # in, out, kernel, stride, pad_mode, padding, size: a few of test_fast_conv.CASES
    (3, 8, 3, 1, "pad", 1, 9),
    (3, 5, 7, 2, "pad", 3, 15),
    (4, 4, 3, 2, "same", 0, 9),
    (5, 7, 1, 1, "pad", (1, 0, 2, 1), 6),
]

#: Runs in the subprocess: argv[1] is where to write the JSON report, argv[2] the cases and argv[3] the modes
#: (JSON; each mode runs every case).
#: backend() loads the kernels' oneDNN (and sets the private copy's ISA) before MindSpore runs any oneDNN kernel
#: of its own, so a private ISA that leaked into MindSpore's copy would show in MindSpore's `isa:` line.
RUNNER = r'''
import json
import sys

import course_lib  # noqa: F401
import numpy as np
import mindspore as ms
from mindspore import nn

from course_lib.perf import fast_conv as fc

out_path, cases, modes = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
report = {"choice": fc.onednn_choice(), "backend": fc.backend(), "errors": []}


def forward_and_grads(net, x):
    def loss(x):
        y = net(x)
        return (y * y).sum()

    _, (dx, pgrads) = ms.value_and_grad(loss, 0, net.trainable_params())(x)
    return [net(x).asnumpy(), dx.asnumpy()] + [g.asnumpy() for g in pgrads]


for mode, (cin, cout, k, s, pad_mode, padding, size) in [(m, c) for m in modes for c in cases]:
    ms.set_context(mode={"pynative": ms.PYNATIVE_MODE, "graph": ms.GRAPH_MODE}[mode])
    padding = tuple(padding) if isinstance(padding, list) else padding
    ref = nn.Conv2d(cin, cout, k, stride=s, pad_mode=pad_mode, padding=padding, has_bias=True)
    fast = fc.FastConv2d(cin, cout, k, stride=s, pad_mode=pad_mode, padding=padding, has_bias=True)
    fast.weight.set_data(ref.weight.data.copy())
    fast.bias.set_data(ref.bias.data.copy())
    x = ms.Tensor(np.random.default_rng(0).standard_normal((2, cin, size, size)).astype(np.float32))
    got, expected = forward_and_grads(fast, x), forward_and_grads(ref, x)
    report["errors"].append({name: [list(a.shape), list(b.shape),
                                    float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))]
                             for name, a, b in zip(["output", "d_input", "d_weight", "d_bias"], got, expected)})
with open(out_path, "w", encoding="utf-8") as f:
    json.dump(report, f)
'''


def _env(**settings):
    """The test's environment without any FAST_CONV_* setting, MindSpore's oneDNN capped at AVX2 as the course does,
    oneDNN's verbose lines on, and the worktree first on the path; ``settings`` (None = unset) on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAST_CONV_")}
    env.update(PYTHONPATH=str(ROOT), ONEDNN_MAX_CPU_ISA="AVX2", ONEDNN_VERBOSE="1")
    for key, value in settings.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _launch(tmp_path, cases, modes, settings):
    report_path, script = tmp_path / "report.json", tmp_path / "run_fast_conv.py"
    script.write_text(RUNNER, encoding="utf-8")  # a file, not -c: graph mode reads the source of what it compiles
    command = [sys.executable, "-X", "faulthandler", str(script), str(report_path), json.dumps(cases),
               json.dumps(modes)]
    proc = subprocess.run(command, cwd=tmp_path, env=_env(**settings), capture_output=True, text=True,
                          encoding="utf-8", errors="replace")
    return proc, report_path


def _run(tmp_path, cases=CASES, modes=("pynative",), **settings):
    """Run RUNNER in a fresh Python; returns (report, oneDNN verbose lines, the whole output)."""
    proc, report_path = _launch(tmp_path, cases, modes, settings)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{output[-4000:]}"
    verbose = [line for line in output.splitlines() if line.startswith("onednn_verbose,")]
    return json.loads(report_path.read_text(encoding="utf-8")), verbose, output


def _cpu_flags():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise AssertionError("/proc/cpuinfo has no 'flags' line")


def _has_avx512():
    """oneDNN's avx512_core: AVX-512 F, BW, VL and DQ."""
    return {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= _cpu_flags()


def _mindspore_lines(verbose):  # oneDNN 3.10 (MindSpore's) tags its lines with a format version
    return [line for line in verbose if line.startswith("onednn_verbose,v1,")]


def _private_lines(verbose):  # oneDNN 3.2 (the wheel) does not
    return [line for line in verbose if not line.startswith("onednn_verbose,v1,")]


def _isa_lines(lines):
    return [line.split(",isa:", 1)[1] for line in lines if ",info,cpu,isa:" in line]


def _conv_lines(lines):
    return [line for line in lines if ",exec,cpu,convolution," in line]


@pytest.fixture(scope="module")
def private_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("private run 私有"), FAST_CONV_ONEDNN=None)


@pytest.fixture(scope="module")
def mindspore_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("mindspore run"), FAST_CONV_ONEDNN="mindspore")


def _assert_matches_nn_conv2d(report, cases=CASES):
    assert len(report["errors"]) == len(cases)
    for case, errors in zip(cases, report["errors"]):
        assert sorted(errors) == ["d_bias", "d_input", "d_weight", "output"], errors
        for name, (shape, expected_shape, rel) in errors.items():
            assert shape == expected_shape, (case, name)
            assert rel <= 1e-4, (case, name, rel)


# ---- each choice computes what nn.Conv2d computes, on the oneDNN it says ----------------------------------------

def test_private_onednn_matches_nn_conv2d(private_run):
    report, verbose, _ = private_run
    assert report["choice"] == "private"
    _assert_matches_nn_conv2d(report)
    assert _conv_lines(_private_lines(verbose)), "FastConv2d's convolutions did not run on the private oneDNN"


def test_mindspore_onednn_matches_nn_conv2d(mindspore_run):
    report, verbose, _ = mindspore_run
    assert report["choice"] == "mindspore"
    _assert_matches_nn_conv2d(report)
    assert _private_lines(verbose) == [], "FAST_CONV_ONEDNN=mindspore, yet a second oneDNN printed"


def test_the_kernels_move_to_mindspores_copy(private_run, mindspore_run):
    """Same cases in both runs: FastConv2d's convolutions print on the private copy in one and on MindSpore's copy
    (beside nn.Conv2d's) in the other, one for one."""
    private_verbose, mindspore_verbose = private_run[1], mindspore_run[1]
    stock = len(_conv_lines(_mindspore_lines(private_verbose)))
    kernels = len(_conv_lines(_private_lines(private_verbose)))
    assert stock > 0 and kernels > 0
    assert len(_conv_lines(_mindspore_lines(mindspore_verbose))) == stock + kernels


def test_backend_reports_each_choice(private_run, mindspore_run):
    private, mindspore = private_run[0]["backend"], mindspore_run[0]["backend"]
    assert private["onednn"] == "private" and private["runtime"] == "openmp"
    assert private["version"].startswith("3.2."), private
    assert mindspore["onednn"] == "mindspore" and mindspore["runtime"] == "threadpool"
    assert mindspore["version"].startswith("3.10."), mindspore
    assert mindspore["isa"] == "AVX2", mindspore  # MindSpore's copy keeps the course's ONEDNN_MAX_CPU_ISA


def test_private_onednn_runs_the_cpus_best_isa(private_run):
    """The course caps MindSpore's oneDNN at AVX2; the private copy is not capped: on an AVX-512 CPU it runs
    AVX-512 kernels, on an AVX2-only CPU AVX2 ones (each CPU gets the assertion that fits it)."""
    report, verbose, _ = private_run
    isa, lines = report["backend"]["isa"], _private_lines(verbose)
    (printed,) = _isa_lines(lines)
    if _has_avx512():
        assert isa.startswith("AVX-512"), isa
        assert "AVX-512" in printed, printed
        assert any("avx512" in line for line in _conv_lines(lines)), _conv_lines(lines)
    else:
        assert isa.startswith("AVX2"), isa  # AVX2, or AVX2 VNNI on CPUs that have it
        assert "AVX-512" not in printed, printed
        assert not any("avx512" in line for line in _conv_lines(lines))


def test_mindspore_keeps_its_avx2_cap_beside_the_private_copy(private_run):
    """Both copies print in one process: MindSpore's own nn.Conv2d still runs at AVX2 after the private copy was
    set to the CPU's best ISA, so the two copies do not share state or symbols."""
    _, verbose, _ = private_run
    mindspore_lines = _mindspore_lines(verbose)
    assert _isa_lines(mindspore_lines) == ["Intel AVX2"], _isa_lines(mindspore_lines)
    assert _conv_lines(mindspore_lines), "nn.Conv2d's convolutions did not print on MindSpore's oneDNN"
    assert not any("avx512" in line for line in _conv_lines(mindspore_lines))
    assert _isa_lines(_private_lines(verbose)), "the private oneDNN printed no isa line"


def test_fast_conv_max_cpu_isa_caps_the_private_copy(tmp_path):
    report, verbose, _ = _run(tmp_path, CASES[:1], FAST_CONV_ONEDNN="private", FAST_CONV_MAX_CPU_ISA="AVX2")
    assert report["backend"]["onednn"] == "private" and report["backend"]["isa"] == "AVX2", report["backend"]
    _assert_matches_nn_conv2d(report, CASES[:1])
    lines = _private_lines(verbose)
    assert _isa_lines(lines) == ["Intel AVX2"], _isa_lines(lines)
    assert _conv_lines(lines) and not any("avx512" in line for line in _conv_lines(lines))


# ---- bad settings fail with a clear message ---------------------------------------------------------------------

@pytest.mark.parametrize("value, choice", [("mindspore", "mindspore"), (" MindSpore ", "mindspore"),
                                           ("private", "private"), ("", "private")])
def test_fast_conv_onednn_choices(value, choice, monkeypatch):
    monkeypatch.setenv("FAST_CONV_ONEDNN", value)
    assert fc.onednn_choice() == choice


def test_private_onednn_is_found_from_the_installed_wheels():
    lib, include = fc.private_onednn()
    assert lib.name == "libdnnl.so.3" and lib.is_file()
    assert (include / "oneapi" / "dnnl" / "dnnl.h").is_file()
    assert lib in {Path(f.locate()).resolve() for f in importlib.metadata.files("onednn-cpu-gomp")}
    assert include / "oneapi" / "dnnl" / "dnnl.h" in {
        Path(f.locate()).resolve() for f in importlib.metadata.files("onednn-devel-cpu-gomp")}


def test_bogus_fast_conv_onednn_is_named(monkeypatch):
    monkeypatch.setenv("FAST_CONV_ONEDNN", "bogus")
    monkeypatch.setattr(fc, "_LIB", None)  # as in a fresh process: the choice is made when the kernels are built
    with pytest.raises(ValueError, match=r"FAST_CONV_ONEDNN.*'bogus'.*Fix:"):
        fc.onednn_choice()
    with pytest.raises(ValueError, match=r"FAST_CONV_ONEDNN.*'bogus'.*Fix:"):
        fc.FastConv2d(3, 8, 3)


def _without_private_wheels(monkeypatch):
    """Make the two oneDNN wheels look uninstalled to importlib.metadata (every other distribution stays)."""
    real = importlib.metadata.files

    def files(name):
        if name in fc.PRIVATE_PACKAGES:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "files", files)
    monkeypatch.setattr(fc, "_LIB", None)


def test_missing_private_wheels_fall_back_to_mindspores_copy(monkeypatch):
    _without_private_wheels(monkeypatch)
    monkeypatch.delenv("FAST_CONV_ONEDNN", raising=False)
    assert fc.private_onednn() is None
    assert fc.onednn_choice() == "mindspore"


def test_forcing_private_without_the_wheels_is_named(monkeypatch):
    _without_private_wheels(monkeypatch)
    monkeypatch.setenv("FAST_CONV_ONEDNN", "private")
    for attempt in (fc.onednn_choice, fc.build, lambda: fc.FastConv2d(3, 8, 3)):
        with pytest.raises(RuntimeError) as info:
            attempt()
        message = str(info.value)
        assert "FAST_CONV_ONEDNN=private" in message and "Fix:" in message, message
        assert all(package in message for package in fc.PRIVATE_PACKAGES), message
        assert "course.py fast-conv" in message, message


def test_bogus_fast_conv_max_cpu_isa_is_named(monkeypatch):
    monkeypatch.setenv("FAST_CONV_MAX_CPU_ISA", "bogus")
    monkeypatch.setattr(fc, "_LIB", None)  # as in a fresh process: the setting is read when the kernels are built
    for attempt in (fc.build, lambda: fc.FastConv2d(3, 8, 3)):
        with pytest.raises(ValueError) as info:
            attempt()
        message = str(info.value)
        assert "FAST_CONV_MAX_CPU_ISA" in message and "'bogus'" in message, message
        assert "AVX2" in message and "AVX512_CORE" in message and "Fix:" in message, message
    assert fc._LIB is None  # nothing was built or cached


def test_a_fast_conv_max_cpu_isa_that_build_accepts_runs(tmp_path):
    """A value is refused by build() with the reason, or works in the kernels too (here: a stray space, as a shell
    script may leave); never accepted by one and refused by the other."""
    settings = {"FAST_CONV_ONEDNN": "private", "FAST_CONV_MAX_CPU_ISA": " avx2", "ONEDNN_VERBOSE": None}
    proc, report_path = _launch(tmp_path, CASES[:1], ["pynative"], settings)
    if proc.returncode != 0:
        assert "ValueError: FAST_CONV_MAX_CPU_ISA" in proc.stderr and "' avx2'" in proc.stderr, proc.stderr[-3000:]
        return
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["backend"]["isa"] == "AVX2", report["backend"]
    _assert_matches_nn_conv2d(report, CASES[:1])


def test_a_kernel_cached_in_pynative_mode_runs_in_graph_mode(tmp_path):
    """One process, the same layer shape first in PyNative mode and then in graph mode (a notebook that checks a
    model eagerly and then trains it with graph mode): the second reuses the kernels cached by the first."""
    case = (5, 7, 1, 1, "pad", (1, 0, 2, 1), 6)  # 1x1 with padding: oneDNN 3.2 runs it as im2col + GEMM
    report, _, _ = _run(tmp_path, [case], modes=("pynative", "graph"), FAST_CONV_ONEDNN="private",
                        ONEDNN_VERBOSE=None)
    _assert_matches_nn_conv2d(report, [case, case])


# ---- other operating systems -------------------------------------------------------------------------------------

@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_not_linux_is_refused_with_the_fix(platform, monkeypatch):
    monkeypatch.setattr(fc, "_LIB", None)
    monkeypatch.setattr(sys, "platform", platform)
    for attempt in (fc.build, lambda: fc.FastConv2d(3, 8, 3)):
        with pytest.raises(RuntimeError) as info:
            attempt()
        message = str(info.value)
        assert "Linux only" in message and platform in message, message
        assert "Fix:" in message and "nn.Conv2d" in message, message
    assert fc._LIB is None  # nothing was built or cached

