import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import re
import subprocess
import sys

import mindspore as ms
import numpy as np
import pytest

from course_lib.data.datasets import create_mnist_dataset
from course_lib.models import lenet5
from course_lib.paths import PROJECT_ROOT
from course_lib.run import factory, fit
from course_lib.run.config import load_config

TRAIN = PROJECT_ROOT / "scripts" / "train.py"
EVAL = PROJECT_ROOT / "scripts" / "eval.py"
# LeNet-5 on the embedded digits: 3 epochs of 4 steps, with every part of the recipe that has state to resume
# (momentum, warmup + cosine LR position, weight decay groups, label smoothing, shuffled data order).
RECIPE = ["--epochs", "3", "--steps_per_epoch", "4", "--batch_size", "16", "--lr", "0.05", "--lr_schedule", "cosine",
          "--warmup_epochs", "1", "--weight_decay", "0.0005", "--label_smooth_factor", "0.1", "--seed", "7",
          "--num_parallel_workers", "1"]
KILL_AT_STEP = 7  # epoch 2, step 3 of 4: after the epoch-1 checkpoint, in the middle of epoch 2

KILL_DRIVER = '''
import os, runpy, signal, sys
kill_at = int(sys.argv[1])
train = runpy.run_path(sys.argv[2], run_name="course_train")
from mindspore.train import Callback

class KillAtStep(Callback):
    """SIGKILL this process after global step kill_at: no clean-up runs, as with an OOM kill or a lost node."""
    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == kill_at:
            print("sending SIGKILL", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

train["main"](sys.argv[3:], callbacks=[KillAtStep()])
'''


def start(args, cwd):
    return subprocess.Popen([sys.executable, *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(process, timeout=300):
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An uninterrupted run, and a run killed mid-epoch then resumed (with a damaged newer checkpoint planted)."""
    root = tmp_path_factory.mktemp("scripts")
    work = root / "elsewhere"  # run from a working directory unrelated to the repo
    work.mkdir()
    driver = root / "kill_driver.py"
    driver.write_text(KILL_DRIVER)
    full_dir, resumed_dir = root / "full", root / "resumed"

    full = start([TRAIN, *RECIPE, "--checkpoint_dir", full_dir], work)
    killed = start([driver, KILL_AT_STEP, TRAIN, *RECIPE, "--checkpoint_dir", resumed_dir], work)
    results = {"full": finish(full), "killed": finish(killed)}
    results["after_kill"] = sorted(p.name for p in resumed_dir.iterdir())

    # What a non-atomic writer killed mid-save leaves behind: a truncated file with the next epoch's name,
    # plus the temporary file of an interrupted atomic save. Resume must use neither.
    good = (resumed_dir / "lenet5-1_4.ckpt").read_bytes()
    (resumed_dir / "lenet5-2_4.ckpt").write_bytes(good[: len(good) // 2])
    (resumed_dir / ".lenet5-2_4.tmp-0badf00d.ckpt").write_bytes(good[:100])

    resumed = start([TRAIN, *RECIPE, "--checkpoint_dir", resumed_dir, "--resume"], work)
    evaluated = start([EVAL, "--checkpoint_dir", full_dir, "--batch_size", "64"], work)
    results["resumed"], results["eval"] = finish(resumed), finish(evaluated)
    results.update(root=root, full_dir=full_dir, resumed_dir=resumed_dir)
    return results


@pytest.mark.slow
def test_uninterrupted_run_trains_and_saves_every_epoch(runs):
    code, out, err = runs["full"]
    assert code == 0, err
    assert "train lenet5 on digits_mnist: 4 steps/epoch x 3 epochs, batch 16" in out
    assert re.findall(r"epoch (\d)/3: loss", out) == ["1", "2", "3"]
    assert sorted(p.name for p in runs["full_dir"].iterdir()) == ["lenet5-1_4.ckpt", "lenet5-2_4.ckpt",
                                                                  "lenet5-3_4.ckpt", "logs", "run_settings.json"]
    assert str(runs["root"]) not in out + err  # printed paths are relative


@pytest.mark.slow
def test_sigkill_mid_epoch_leaves_only_the_finished_checkpoint(runs):
    code, out, _ = runs["killed"]
    assert code == -9
    assert "epoch 1/3" in out and "sending SIGKILL" in out and "epoch 2/3" not in out
    # and the lock file of the dead run, which holds no lock any more (the resumed run takes it over)
    assert runs["after_kill"] == [".course_checkpoints.lock", "lenet5-1_4.ckpt", "logs", "run_settings.json"]


@pytest.mark.slow
def test_resume_skips_damaged_files_and_continues_from_the_last_good_epoch(runs):
    code, out, err = runs["resumed"]
    assert code == 0, err
    assert "skipping lenet5-2_4.ckpt: Checkpoint lenet5-2_4.ckpt is corrupted or truncated" in out
    assert "tmp-0badf00d" not in out
    assert "resume: lenet5-1_4.ckpt (epoch 1, optimizer step 4)" in out
    assert re.findall(r"epoch (\d)/3: loss", out) == ["2", "3"]


@pytest.mark.slow
def test_resumed_run_ends_bit_identical_to_the_uninterrupted_run(runs):
    full = ms.load_checkpoint(str(runs["full_dir"] / "lenet5-3_4.ckpt"))
    resumed = ms.load_checkpoint(str(runs["resumed_dir"] / "lenet5-3_4.ckpt"))
    assert set(full) == set(resumed)
    assert any(name.startswith("moments.") for name in full) and "global_step" in full
    assert int(resumed["global_step"].asnumpy()[0]) == 12 and int(resumed["epoch_num"].asnumpy()) == 3
    different = [name for name in full if not np.array_equal(full[name].asnumpy(), resumed[name].asnumpy())]
    assert different == []
    # and training did change the weights, so the comparison means something
    first = ms.load_checkpoint(str(runs["full_dir"] / "lenet5-1_4.ckpt"))
    assert not np.array_equal(first["fc3.weight"].asnumpy(), full["fc3.weight"].asnumpy())


@pytest.mark.slow
def test_eval_prints_top1_and_top5_of_the_checkpoint(runs):
    code, out, err = runs["eval"]
    assert code == 0, err
    match = re.search(r"result: top_1_accuracy ([\d.]+), top_5_accuracy ([\d.]+) \(lenet5, 6 batches\) "
                      r"ckpt=lenet5-3_4.ckpt", out)
    assert match, out
    top1, top5 = map(float, match.groups())
    assert top1 <= top5
    # the same number computed here, without Model.eval
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = lenet5(10)
    ms.load_param_into_net(net, ms.load_checkpoint(str(runs["full_dir"] / "lenet5-3_4.ckpt")))
    net.set_train(False)
    correct = total = 0
    for images, labels in create_mnist_dataset(batch_size=64, train=False).create_tuple_iterator(num_epochs=1):
        correct += int((net(images).asnumpy().argmax(axis=1) == labels.asnumpy()).sum())
        total += labels.shape[0]
    assert total == 360
    assert top1 == pytest.approx(correct / total, abs=1e-4)


@pytest.mark.slow
def test_resume_state_loads_weights_and_refuses_another_epoch_length(runs):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    cfg = load_config(argv=RECIPE)
    net = factory.create_network(cfg)
    optimizer = factory.create_optimizer(cfg, net, 4)
    epoch, path = fit.load_resume_state(runs["full_dir"], "lenet5", net, optimizer, 4)
    assert (epoch, path.name, int(optimizer.global_step.asnumpy()[0])) == (3, "lenet5-3_4.ckpt", 12)
    saved = ms.load_checkpoint(str(path))
    np.testing.assert_array_equal(net.fc3.weight.asnumpy(), saved["fc3.weight"].asnumpy())
    moment = next(p for p in optimizer.moments if p.name == "moments.fc3.weight")
    np.testing.assert_array_equal(moment.asnumpy(), saved["moments.fc3.weight"].asnumpy())
    assert not np.array_equal(moment.asnumpy(), net.fc3.weight.asnumpy())  # moments did not land in weights
    with pytest.raises(ValueError, match="saved after 12 optimizer steps in 3 epochs, but this run has 3 steps"):
        fit.load_resume_state(runs["full_dir"], "lenet5", net, optimizer, 3)


@pytest.mark.parametrize("script, args, message", [
    (TRAIN, ["--model", "resnet18"], "model 'resnet18' takes RGB images, but dataset 'digits_mnist' is grayscale"),
    (TRAIN, ["--epoch", "3"], "Unknown config key(s) ['epoch']"),
    (TRAIN, ["--dataset", "shapes"], "the 'shapes' set is for segmentation"),
    (TRAIN, ["--model", "resnet18", "--dataset", "imagefolder", "--image_size", "16"], "image_size must be >= 32"),
    (EVAL, ["--checkpoint_dir", "no_such_folder"], "No checkpoint lenet5-*.ckpt in no_such_folder"),
])
def test_bad_command_lines_fail_fast_with_a_fix(tmp_path, script, args, message):
    result = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_checkpoint_files_are_ordered_by_epoch_and_ignore_other_files(tmp_path):
    from course_lib.train.checkpoint import CheckpointManager

    for name in ["lenet5-9_4.ckpt", "lenet5-10_4.ckpt", ".lenet5-11_4.tmp-1234abcd.ckpt", "resnet18-12_4.ckpt",
                 "lenet5-best.ckpt", "lenet5-2_4.ckpt"]:
        (tmp_path / name).write_bytes(b"x")
    found = CheckpointManager(tmp_path, "lenet5").checkpoints()
    assert [p.name for p in found] == ["lenet5-10_4.ckpt", "lenet5-9_4.ckpt", "lenet5-2_4.ckpt"]
    assert CheckpointManager(tmp_path / "missing", "lenet5").checkpoints() == []
    cfg = load_config(checkpoint_dir=str(tmp_path))
    assert factory.resolve_checkpoint(cfg).name == "lenet5-10_4.ckpt"


def test_a_second_run_on_a_busy_or_foreign_folder_is_refused_and_nothing_is_lost(tmp_path):
    from course_lib.train.checkpoint import CheckpointManager, save_checkpoint

    old = tmp_path / "old"
    save_checkpoint(lenet5(10), old / "lenet5-6_2.ckpt", append_dict={"epoch_num": 6})
    args = ["--epochs", "1", "--steps_per_epoch", "1", "--num_parallel_workers", "1"]
    result = subprocess.run([sys.executable, str(TRAIN), *args, "--checkpoint_dir", old], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "already holds checkpoints of another run (lenet5-6_2.ckpt)" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in old.iterdir()) == ["lenet5-6_2.ckpt"]
    busy = tmp_path / "busy"
    with CheckpointManager(busy, "lenet5"):
        result = subprocess.run([sys.executable, str(TRAIN), *args, "--checkpoint_dir", busy], cwd=tmp_path,
                                capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "is in use by another run" in result.stderr
    assert [p.name for p in busy.iterdir()] == []
