import pytest

import course_lib  # noqa: F401
from course_lib import paths
from course_lib.lab.lesson import Timer, error_summary, show_error
from course_lib.paths import scrub_paths


def test_show_error_prints_type_and_message_without_traceback(capsys):
    with show_error(ValueError):
        raise ValueError("bad value\nsecond line\n----\n- C++ Call Stack: (For framework developers)\nnoise.cc:1")
    out = capsys.readouterr().out
    assert out.startswith("ValueError: bad value") and "second line" in out and "C++" not in out
    assert "noise" not in out


def test_show_error_requires_an_error_and_the_right_type():
    with pytest.raises(AssertionError, match="expected to raise"):
        with show_error():
            pass
    with pytest.raises(KeyError):
        with show_error(ValueError):
            raise KeyError("other")


def test_scrub_paths_removes_machine_prefixes():
    text = "File /work/main/.venv/lib/python3.11/site-packages/mindspore/train/model.py and /tmp/x/y.ckpt"
    out = scrub_paths(text)
    assert "mindspore/train/model.py" in out and "/work/" not in out and "/tmp/" not in out and "y.ckpt" in out


@pytest.mark.parametrize("root", ["/check/work/main", "/builds/course", "/home/me/src/course", "/opt/ci"])
def test_scrub_paths_handles_any_clone_location(root):
    text = f"mindrecord file: {root}/outputs/01/digits.mindrecord can not be found. Ratio 3/4, HWC/CHW, http://x/y"
    out = scrub_paths(text)
    assert out == ("mindrecord file: …/digits.mindrecord can not be found. Ratio 3/4, HWC/CHW, http://x/y")


def test_error_summary_truncates_long_messages():
    summary = error_summary(RuntimeError("\n".join(f"line {i}" for i in range(10))), max_lines=2)
    assert summary == "RuntimeError: line 0\n    line 1\n    …"


def test_timer_measures(capsys):
    with Timer("step") as t:
        sum(range(1000))
    assert t.seconds >= 0 and capsys.readouterr().out.startswith("step: ")


def test_paths_resolve_from_the_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (paths.DATA_DIR / "MANIFEST.sha256").is_file()
    assert paths.OUTPUT_DIR.parent == paths.PROJECT_ROOT
    monkeypatch.setattr(paths, "OUTPUT_DIR", tmp_path / "outputs")
    assert paths.lesson_dir("03") == tmp_path / "outputs" / "03" and (tmp_path / "outputs" / "03").is_dir()
    assert paths.relative(paths.DATA_DIR / "x") == "data/x"
    with pytest.raises(ValueError, match="plain folder name"):
        paths.lesson_dir("../escape")


def test_error_summary_skips_mindspore_banners_and_stops_at_the_stack():
    message = ("\n----------------------------------------------------\n- Kernel select failed:\n"
               "----------------------------------------------------\nUnsupported op [InitDataSetQueue] on CPU\n"
               "----------------------------------------------------\n- C++ Call Stack: (For framework developers)\n"
               "mindspore/ccsrc/x.cc:98 DoJump")
    assert error_summary(RuntimeError(message)) == "RuntimeError: Unsupported op [InitDataSetQueue] on CPU"


def test_run_time_reads_the_benchmark_results(tmp_path):
    import json

    from course_lib.lab.results import run_time

    results = tmp_path / "results.json"
    results.write_text(json.dumps({"AMD EPYC": {"notebooks": {"cpu": "AMD EPYC", "records": [
        {"notebook": "03_model_train_eval.ipynb", "seconds": 18.2, "status": "ok"},
        {"notebook": "04_x.ipynb", "seconds": 3.0, "status": "failed"}]}}}))
    assert run_time("03_model_train_eval", results) == (
        "Run time of 03_model_train_eval: about 19 s on AMD EPYC (measured by `make bench-notebooks`; "
        "yours may differ).")
    assert "not measured yet" in run_time("04_x", results)
    assert "not measured yet" in run_time("03_model_train_eval", tmp_path / "missing.json")
    import pytest

    with pytest.raises(ValueError, match="file stem"):
        run_time("notebooks/03.ipynb", results)
    assert "about" in run_time("00_environment")  # the committed results.json has every lesson


def test_show_source_prints_numbered_lines_from_the_package_root(capsys):
    from course_lib.lab.lesson import show_source
    from course_lib.models import lenet5

    show_source(lenet5)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "course_lib/models/lenet.py (lenet5)"
    assert out[1].split("|", 1)[1].strip().startswith("def lenet5")
    show_source(lenet5, "return")
    filtered = capsys.readouterr().out.splitlines()[1:]
    assert filtered and all("return" in line for line in filtered)


def test_show_source_refuses_objects_without_source():
    import pytest

    from course_lib.lab.lesson import show_source

    with pytest.raises(TypeError, match="no Python source"):
        show_source(len)


# --- lesson 00's GPU-plugin line on each OS (issue 25 part 4) ---------------------------------------------------
import subprocess  # noqa: E402

from course_lib.lab import lesson as lesson_module  # noqa: E402


@pytest.mark.parametrize("platform_name, shown", [("darwin", "macOS"), ("win32", "Windows")])
def test_gpu_plugin_needs_explains_instead_of_running_ldd_off_linux(monkeypatch, tmp_path, platform_name, shown):
    monkeypatch.setattr(lesson_module.sys, "platform", platform_name)
    monkeypatch.setattr(lesson_module.subprocess, "run", lambda *a, **k: pytest.fail("ran ldd off Linux"))
    line = lesson_module.gpu_plugin_needs(tmp_path)
    assert f"none on {shown}" in line and "CPU-only" in line and "Linux tool" in line


def test_gpu_plugin_needs_runs_ldd_on_the_newest_plugin_on_linux(monkeypatch, tmp_path):
    for name in ("libmindspore_gpu.so.11.1", "libmindspore_gpu.so.11.6"):
        (tmp_path / name).write_bytes(b"")
    seen = []

    def fake_run(args, **kwargs):
        seen.append(args)
        return subprocess.CompletedProcess(args, 0, "\tlibcuda.so.1 => not found\n\tlibc.so.6 => /lib/libc.so.6\n", "")

    monkeypatch.setattr(lesson_module.sys, "platform", "linux")
    monkeypatch.setattr(lesson_module.subprocess, "run", fake_run)
    assert lesson_module.gpu_plugin_needs(tmp_path) == "GPU plugin needs, not found: ['libcuda.so.1']"
    assert seen == [["ldd", str(tmp_path / "libmindspore_gpu.so.11.6")]]


def test_gpu_plugin_needs_on_a_cpu_only_linux_wheel(monkeypatch, tmp_path):
    monkeypatch.setattr(lesson_module.sys, "platform", "linux")
    assert "CPU-only" in lesson_module.gpu_plugin_needs(tmp_path)


def test_scrub_paths_handles_a_clone_path_with_spaces_and_chinese(monkeypatch):
    import site

    import course_lib.paths
    from course_lib.paths import scrub_paths

    root = "/home/Li Wei/课程 course"
    monkeypatch.setattr(course_lib.paths, "PROJECT_ROOT", type(course_lib.paths.PROJECT_ROOT)(root))
    monkeypatch.setattr(site, "getsitepackages", lambda: [f"{root}/.venv/lib/python3.11/site-packages"])
    assert scrub_paths(f"from 'mindspore' ({root}/.venv/lib/python3.11/site-packages/mindspore/__init__.py)") == \
        "from 'mindspore' (mindspore/__init__.py)"
    assert scrub_paths(f"the file {root}/outputs/A9/ms_best.ckpt. Maybe") == "the file …/ms_best.ckpt. Maybe"
