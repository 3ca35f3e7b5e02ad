"""Issue 11 at the scripts' boundary: Ctrl-C, a PNG that fails to decode mid-epoch, output folders that cannot be
written, more classes in the data than the network has outputs. Each runs scripts/train.py in a subprocess and
checks the exit code and the one clear message (what failed, the value or file, the fix)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.paths import DATA_DIR, PROJECT_ROOT

TRAIN = PROJECT_ROOT / "scripts" / "train.py"
EVAL = PROJECT_ROOT / "scripts" / "eval.py"
QUICK = ["--steps_per_epoch", "2", "--batch_size", "16", "--num_parallel_workers", "1", "--seed", "3"]


def run(args, cwd, env=None, timeout=300):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.slow
def test_ctrl_c_stops_with_exit_130_names_the_position_and_resume_continues(tmp_path):
    folder = tmp_path / "ckpt"
    process = subprocess.Popen([sys.executable, str(TRAIN), *QUICK, "--epochs", "500", "--checkpoint_dir",
                                str(folder)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        deadline = time.monotonic() + 240
        while not list(folder.glob("lenet5-*_2.ckpt")):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, (out, err)
    found = re.search(r"interrupted at epoch (\d+), step (\d+); last checkpoint: (\S*lenet5-(\d+)_2\.ckpt)\. "
                      r"Resume with: scripts/train.py \.\.\. --checkpoint_dir \S+ --resume", err)
    assert found, err
    assert "Traceback" not in err
    epoch, step, last_epoch = int(found.group(1)), int(found.group(2)), int(found.group(4))
    assert 1 <= last_epoch <= epoch and 1 <= step <= 2
    assert (folder / f"lenet5-{last_epoch}_2.ckpt").is_file()
    assert not list(folder.glob(".*.tmp*")), "an interrupted save left a temporary file"

    resumed = run([TRAIN, *QUICK, "--epochs", last_epoch + 1, "--checkpoint_dir", folder, "--resume"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr  # the interrupted run released its folder lock
    assert "resume: " in resumed.stdout and f"lenet5-{last_epoch}_2.ckpt (epoch {last_epoch}" in resumed.stdout
    assert f"epoch {last_epoch + 1}/{last_epoch + 1}" in resumed.stdout
    assert (folder / f"lenet5-{last_epoch + 1}_2.ckpt").is_file()


@pytest.fixture(scope="module")
def broken_png_root(tmp_path_factory):
    """The embedded digits as PNG folders, with one image (not the first of its class) replaced by junk."""
    root = tmp_path_factory.mktemp("png") / "digits"
    shutil.copytree(DATA_DIR / "digits_png", root)
    victim = sorted((root / "train" / "3").glob("*.png"))[-1]
    victim.write_bytes(b"this is not a png")
    return root, victim


@pytest.mark.slow
def test_a_png_that_fails_to_decode_mid_epoch_names_the_file_and_the_fix(tmp_path, broken_png_root):
    root, victim = broken_png_root
    result = run([TRAIN, "--model", "resnet18", "--dataset", "imagefolder", "--image_size", "32", "--batch_size",
                  "64", "--epochs", "1", "--num_parallel_workers", "1", "--data_path", root, "--checkpoint_dir",
                  tmp_path / "ckpt"], tmp_path)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error") or line.startswith("Fix")]
    message = "\n".join(lines)
    assert re.search(r"error \(DataPipelineFailed\): the data pipeline failed during epoch 1 .*Decode step on the "
                     rf"file {re.escape(str(victim))}", message), result.stderr
    assert f"Fix: {victim} is not a readable image: remove or replace it" in message
    assert "Traceback" not in result.stderr


def test_describe_pipeline_error_without_a_file_still_gives_a_fix():
    from course_lib.run import cli as train

    assert train.describe_pipeline_error("ValueError: not a pipeline error") is None
    text = ("Exception thrown from dataset pipeline. Refer to 'Dataset Pipeline Error Message'.\n----\n"
            "- Dataset Pipeline Error Message: \n----\n[ERROR] map operation: [Resize] failed. Bad size.\n----\n"
            "- C++ Call Stack: (For framework developers) \n----\nimage_utils.cc(1).\n")
    described = train.describe_pipeline_error(text, "during epoch 2 (after 3 finished steps)")
    assert "failed during epoch 2 (after 3 finished steps) in its Resize step: map operation: [Resize] failed. " \
           "Bad size." in described
    assert "Fix: check the data set files" in described and "image_utils.cc" not in described


@pytest.mark.parametrize("script", [TRAIN, EVAL])
@pytest.mark.parametrize("variable,switch,value", [("GLOG_log_dir", "GLOG_logtostderr", "0"),
                                                   ("MS_COMPILER_CACHE_PATH", "MS_COMPILER_CACHE_ENABLE", "1")])
def test_other_output_folders_are_checked_before_training(tmp_path, script, variable, switch, value):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    env = {**os.environ, variable: str(blocker), switch: value}
    args = [script, *QUICK, "--epochs", "1", "--checkpoint_dir", tmp_path / "ckpt"]
    if script == EVAL:
        args += ["--checkpoint_path", tmp_path / "none.ckpt"]
    result = run(args, tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    assert re.search(rf"error \(NotADirectoryError\): .*\({variable}\) a_file is a file, not a folder\. "
                     rf"Fix: set {variable} to a folder you can write to, or unset {switch}", result.stderr), \
        result.stderr
    assert "epoch 1/1" not in result.stdout


def test_more_class_folders_than_num_classes_is_refused_before_training(tmp_path):
    result = run([TRAIN, "--model", "resnet18", "--dataset", "imagefolder", "--image_size", "32", "--epochs", "1",
                  "--num_classes", "5", *QUICK, "--checkpoint_dir", tmp_path / "ckpt"], tmp_path)
    assert result.returncode == 1, result.stderr
    assert re.search(r"train has 10 classes \(labels 0-9\), but num_classes is 5: .*Fix: num_classes=10 "
                     r"\(--num_classes 10\)", result.stderr), result.stderr
    assert "epoch 1/1" not in result.stdout
