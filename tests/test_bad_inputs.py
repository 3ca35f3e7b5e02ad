"""The mistakes learners make, table-driven: each must raise a clear error that names what was wrong and the fix.

Every case is (exception type, a regex for the offending thing, a regex for the fix), checked before the
bad value reaches deep MindSpore code wherever course_lib can check first.
"""
import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from mindspore import nn
from mindspore.train import Model

from course_lib import exercises, inference, models, paths, validation
from course_lib.data import datasets as data
from course_lib.migrate import convert as migration
from course_lib.migrate import torch_resnet
from course_lib.parallel import launch as distributed
from course_lib.run import config, env
from course_lib.train import callbacks, checkpoint, losses, metrics, optim, schedules

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Broken files of every kind a learner runs into."""
    tmp = tmp_path_factory.mktemp("bad")
    good = checkpoint.save_checkpoint(nn.Dense(3, 2), tmp / "good.ckpt")
    (tmp / "truncated.ckpt").write_bytes(good.read_bytes()[:30])
    flipped = bytearray(good.read_bytes())
    flipped[40] ^= 0xFF
    (tmp / "flipped.ckpt").write_bytes(bytes(flipped))
    (tmp / "list.yaml").write_text("- epochs\n- 3\n")
    (tmp / "broken.yaml").write_text("epochs: [1,\n")
    (tmp / "typo.yaml").write_text("epoch: 3\n")
    (tmp / "empty_folder").mkdir()
    mnist = tmp / "truncated_mnist"
    shutil.copytree(paths.DATA_DIR / "digits_mnist", mnist)
    images = mnist / "train-images-idx3-ubyte"
    images.write_bytes(images.read_bytes()[:-100])
    flat = tmp / "flat_images" / "train"
    flat.mkdir(parents=True)
    shutil.copy(next((paths.DATA_DIR / "digits_png" / "train" / "0").glob("*.png")), flat / "0001.png")
    corrupt = tmp / "corrupt_images" / "train" / "cat"
    corrupt.mkdir(parents=True)
    (corrupt / "a.png").write_bytes(b"this is not a png")
    return tmp


def _tensor(array):
    from mindspore import Tensor
    return Tensor(array)


def _lenet_model_with(**kwargs):
    net = models.lenet5()
    return Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                 nn.Momentum(net.trainable_params(), 0.01, 0.9), **kwargs)


CASES = {
    # --- config ---------------------------------------------------------------------------------------
    "config unknown key": (lambda f: config.load_config(batchsize=3), ValueError, r"'batchsize'", r"Fix"),
    "config wrong type": (lambda f: config.load_config(epochs="3x"), TypeError, r"'epochs'.*'3x'", r"Fix"),
    "config bad choice": (lambda f: config.load_config(context_mode="grpah"), ValueError, r"grpah",
                          r"\['graph', 'pynative'\]"),
    "config YAML not a mapping": (lambda f: config.load_config(f / "list.yaml"), ValueError, r"list.yaml",
                                  r"Fix: write one `key: value` per line"),
    "config invalid YAML": (lambda f: config.load_config(f / "broken.yaml"), ValueError, r"broken.yaml",
                            r"not valid YAML"),
    "config unknown key in file": (lambda f: config.load_config(f / "typo.yaml"), ValueError, r"'epoch'.*typo.yaml",
                                   r"check the spelling"),
    "config file missing": (lambda f: config.load_config(f / "nope.yaml"), FileNotFoundError, r"nope.yaml",
                            r"Fix: pass the path of a YAML file"),
    "config bad command line": (lambda f: config.load_config(argv=["epochs", "3"]), ValueError, r"'epochs'",
                                r"--key value"),
    # --- env ------------------------------------------------------------------------------------------
    "env unknown device": (lambda f: env.init_env({**config.load_config().to_dict(), "device_target": "TPU"}),
                           ValueError, r"'TPU'", r"Fix the config key device_target"),
    "env device not in this wheel": (lambda f: env.init_env(config.load_config(device_target="GPU")),
                                     RuntimeError, r"'GPU' is not available", r"Fix: set device_target to 'CPU'"),
    "env bad mode": (lambda f: env.init_env({**config.load_config().to_dict(), "context_mode": "eager"}),
                     ValueError, r"'eager'", r"\['graph', 'pynative'\]"),
    "env device_num 0": (lambda f: env.init_env({**config.load_config().to_dict(), "device_num": 0}),
                         ValueError, r"device_num must be an integer >= 1, got 0",
                         r"Fix: set the config key device_num to a whole number >= 1"),
    # --- data -----------------------------------------------------------------------------------------
    "data missing folder": (lambda f: data.create_mnist_dataset(f / "nowhere"), FileNotFoundError, r"nowhere",
                            r"Fix: pass the folder"),
    "data empty folder": (lambda f: data.create_mnist_dataset(f / "empty_folder"), FileNotFoundError,
                          r"train-images-idx3-ubyte", r"Fix: download and gunzip MNIST"),
    "data truncated IDX": (lambda f: data.create_mnist_dataset(f / "truncated_mnist"), ValueError,
                           r"train-images-idx3-ubyte is truncated", r"announces"),
    "data wrong ImageFolder layout": (lambda f: data.create_imagefolder_dataset(f / "flat_images"), ValueError,
                                      r"no class subfolders", r"class_name/xxx.png"),
    "data image that does not decode": (lambda f: data.create_imagefolder_dataset(f / "corrupt_images"),
                                        ValueError, r"a.png is not a readable image", r"Fix: remove or replace"),
    "data batch_size 0": (lambda f: data.create_mnist_dataset(batch_size=0), ValueError, r"batch_size.*got 0",
                          r"Fix"),
    "data too many workers": (lambda f: data.create_mnist_dataset(num_parallel_workers=512), ValueError,
                              r"num_parallel_workers.*512", r"leave it as None"),
    "data shard out of range": (lambda f: data.create_mnist_dataset(num_shards=2, shard_id=5), ValueError,
                                r"shard_id.*5", r"0..num_shards-1"),
    "data shard without count": (lambda f: data.create_mnist_dataset(shard_id=0), ValueError, r"num_shards",
                                 r"pass both"),
    "data segmentation folder without MindRecord": (lambda f: data.create_segmentation_dataset(f / "empty_folder"),
                                                    FileNotFoundError, r"shapes_train.mindrecord",
                                                    r"Fix: pass the folder that holds both"),
    # --- checkpoints ----------------------------------------------------------------------------------
    "checkpoint missing": (lambda f: checkpoint.load_checkpoint(f / "missing.ckpt"), FileNotFoundError,
                           r"missing.ckpt", r"Fix: check the path"),
    "checkpoint truncated": (lambda f: checkpoint.load_checkpoint(f / "truncated.ckpt"), ValueError,
                             r"truncated.ckpt is corrupted or truncated", r"Fix: use an earlier checkpoint"),
    "checkpoint flipped bytes": (lambda f: checkpoint.load_checkpoint(f / "flipped.ckpt"), ValueError,
                                 r"flipped.ckpt.*CRC", r"Fix"),
    "checkpoint from another network": (lambda f: checkpoint.load_checkpoint(f / "good.ckpt", nn.Dense(4, 2)),
                                        ValueError, r"shape mismatch: weight", r"same architecture"),
    "checkpoint wrong suffix": (lambda f: checkpoint.save_checkpoint(nn.Dense(3, 2), f / "net.pth"), ValueError,
                                r"'net.pth'", r"\.ckpt"),
    # --- models ---------------------------------------------------------------------------------------
    "model lenet init": (lambda f: models.lenet5(init="xavier"), ValueError, r"'xavier'", r"Fix: use 'default'"),
    "model resnet classes": (lambda f: models.resnet18(num_classes=-1), ValueError, r"num_classes.*-1", r"Fix"),
    "model segmentation classes": (lambda f: models.segmentation_fcn(0), ValueError, r"num_classes.*0", r"Fix"),
    # --- metrics and eval_indexes ---------------------------------------------------------------------
    "MIoU num_classes 0": (lambda f: metrics.MIoU(0), ValueError, r"num_classes.*0", r"Fix"),
    "MIoU one input": (lambda f: metrics.MIoU(4).update(np.zeros((1, 4, 4))), ValueError, r"needs 2 inputs",
                       r"eval_indexes=\[0, 1, 2\]"),
    "MIoU shape mismatch": (lambda f: metrics.MIoU(4).update(np.zeros((1, 4, 4), np.int32),
                                                             np.zeros((1, 5, 4), np.int32)),
                            ValueError, r"\(1, 4, 4\) does not match label shape \(1, 5, 4\)", r"Fix"),
    "MIoU label out of range": (lambda f: metrics.MIoU(4).update(np.zeros((1, 4, 4), np.int32),
                                                                 np.full((1, 4, 4), 7, np.int32)),
                                ValueError, r"outside \[0, 4\).*7", r"Fix: set num_classes"),
    "MIoU float labels": (lambda f: metrics.MIoU(4).update(np.zeros((1, 4, 4), np.int32),
                                                           np.zeros((1, 4, 4), np.float32)),
                          ValueError, r"dtype float32", r"int32"),
    "MIoU eval before update": (lambda f: metrics.MIoU(4).eval(), RuntimeError, r"update\(\) has not been called",
                                r"Fix"),
    "Model eval_indexes as tuple": (lambda f: _lenet_model_with(eval_network=nn.WithEvalCell(
        models.lenet5(), nn.SoftmaxCrossEntropyWithLogits(sparse=True)), eval_indexes=(0, 1, 2),
        metrics={"acc"}), ValueError, r"eval_indexes", r"length of it must be three"),
    "Model eval_indexes wrong length": (lambda f: _lenet_model_with(eval_network=nn.WithEvalCell(
        models.lenet5(), nn.SoftmaxCrossEntropyWithLogits(sparse=True)), eval_indexes=[0, 1], metrics={"acc"}),
        ValueError, r"eval_indexes", r"length of it must be three"),
    # --- schedules, optimisers, losses, callbacks ----------------------------------------------
    "cosine schedule arguments swapped": (lambda f: schedules.cosine_lr(0.1, 0.2, 10, 5), ValueError,
                                          r"lr_min=0.2, lr_max=0.1", r"argument order"),
    "param groups negative weight decay": (lambda f: optim.param_groups(nn.Dense(2, 2), -0.1), ValueError,
                                           r"weight_decay.*-0.1", r"Fix"),
    "label smoothing out of range": (lambda f: losses.CrossEntropySmooth(smooth_factor=1.5), ValueError,
                                     r"smooth_factor.*1.5", r"Fix"),
    "EvalCallback without a Model": (lambda f: callbacks.EvalCallback(None, None, "acc"), TypeError,
                                     r"model must be a mindspore.train.Model, got None \(NoneType\)", r"Fix"),
    # --- inference and migration ----------------------------------------------------------------------
    "predict with RGB images on LeNet": (lambda f: inference.predict(models.lenet5(),
                                                                     np.zeros((2, 3, 32, 32), np.float32)),
                                         ValueError, r"\(1, 32, 32\), got \(3, 32, 32\)", r"Fix"),
    "export to a non-MindIR name": (lambda f: inference.export_mindir(
        models.lenet5(), np.zeros((1, 1, 32, 32), np.float32), f / "x.onnx"), ValueError, r"'x.onnx'", r"\.mindir"),
    "load a missing MindIR": (lambda f: inference.load_mindir(f / "nope.mindir"), FileNotFoundError,
                              r"nope.mindir", r"Fix"),
    "convert a state dict from another network": (lambda f: migration.convert_torch_state_dict(
        {"foo.weight": np.zeros(3)}, models.resnet18(10)), ValueError, r"foo.weight", r"not in the state dict"),
    "torch reference of an unknown depth": (lambda f: torch_resnet.build_torch_resnet(19), ValueError, r"19",
                                            r"Fix"),
    # --- launcher, lessons, exercises -----------------------------------------------------------------
    "launch a missing script": (lambda f: distributed.launch(f / "nope.py"), FileNotFoundError, r"nope.py", r""),
    "launch with zero workers": (lambda f: distributed.launch(
        ROOT / "scripts" / "distributed_worker.py", worker_num=0), ValueError, r"worker_num", r""),
    "lesson folder outside outputs": (lambda f: paths.lesson_dir("../x"), ValueError, r"'../x'",
                                      r"plain folder name"),
    "unknown exercise": (lambda f: exercises.check("99.9", 1), KeyError, r"99.9", r"Known"),
}


def _config_case(key, value):
    return (lambda f: config.load_config(**{key: value}), ValueError, rf"'{key}'.*got {re.escape(repr(value))}",
            rf"Fix: set {key}")


# Issue 11: every numeric config key has a range, checked in one place (config.RANGES via course_lib.validation).
ISSUE_11_CASES = {
    f"config {key} = {value!r}": _config_case(key, value) for key, value in [
        ("lr", float("nan")), ("lr", float("inf")), ("lr", 0.0), ("lr", -0.1), ("lr_end", -1.0),
        ("lr_end", float("nan")), ("epochs", 0), ("epochs", -3), ("batch_size", 0), ("batch_size", -8),
        ("image_size", 0), ("num_classes", 1), ("num_classes", 0), ("momentum", 1.5), ("momentum", -0.1),
        ("momentum", 1.0), ("weight_decay", -0.1), ("weight_decay", float("inf")), ("label_smooth_factor", 1.0),
        ("label_smooth_factor", -0.2), ("loss_scale", 0.5), ("loss_scale", float("nan")), ("loss_scale", 1e39),
        ("warmup_epochs", -1), ("save_checkpoint_epochs", 0), ("keep_checkpoint_max", 0), ("seed", -1),
        ("device_num", 0), ("device_id", -1), ("rank_id", -2), ("steps_per_epoch", -5), ("steps_per_epoch", 0),
        ("num_parallel_workers", 0), ("num_parallel_workers", -4)]
}
ISSUE_11_CASES.update({
    "config path not a path": (lambda f: config.load_config(path=123), TypeError, r"got 123", r"Fix"),
    "config path a folder": (lambda f: config.load_config(f / "empty_folder"), IsADirectoryError,
                             r"empty_folder is a folder", r"Fix: pass the .yaml file"),
    "config not UTF-8": (lambda f: config.load_config(f / "latin1.yaml"), ValueError, r"latin1.yaml.*not UTF-8",
                         r"Fix: save the file as UTF-8"),
    "checkpoint without CRC record": (lambda f: checkpoint.load_checkpoint(f / "no_crc.ckpt"), ValueError,
                                      r"no_crc.ckpt is corrupted or truncated: it has no CRC record",
                                      r"crc_check=False"),
    "checkpoint cut at a record boundary": (lambda f: checkpoint.load_checkpoint(f / "boundary.ckpt"), ValueError,
                                            r"boundary.ckpt .*no CRC record", r"Fix: use an earlier checkpoint"),
    "checkpoint folder is a file": (lambda f: checkpoint.CheckpointManager(f / "list.yaml", "lenet5").check_folder(),
                                    NotADirectoryError, r"list.yaml is a file", r"Fix: pass a folder"),
    "another run's checkpoints": (lambda f: checkpoint.CheckpointManager(f / "old_run", "lenet5").__enter__(),
                                  FileExistsError, r"lenet5-6_2.ckpt", r"--resume.*--overwrite"),
    "save under a parent that is a file": (lambda f: checkpoint.save_checkpoint(nn.Dense(2, 1),
                                                                             f / "list.yaml" / "net.ckpt"),
                                           NotADirectoryError, r"list.yaml is a file", r"Fix: save into a folder"),
    "manager keep 0": (lambda f: checkpoint.CheckpointManager(f, "lenet5", keep=0), ValueError,
                       r"keep_checkpoint_max.*got 0", r"Fix"),
    "MIoU NaN logits": (lambda f: metrics.MIoU(2).update(np.full((1, 2, 2, 2), np.nan, np.float32),
                                                         np.zeros((1, 2, 2), np.int32)), ValueError,
                        r"NaN/inf", r"Fix"),
    "MIoU no batch axis": (lambda f: metrics.MIoU(2).update(np.zeros((2, 2), np.int32), np.zeros((2, 2), np.int32)),
                           ValueError, r"got shape \(2, 2\)", r"Fix: keep the batch axis"),
    "MIoU empty batch": (lambda f: metrics.MIoU(2).update(np.zeros((0, 2, 2), np.int32),
                                                          np.zeros((0, 2, 2), np.int32)),
                         ValueError, r"got shape \(0, 2, 2\)", r"non-empty batch"),
    "MNIST label byte out of range": (lambda f: data.create_mnist_dataset(f / "bad_labels"), ValueError,
                                      r"train-labels-idx1-ubyte.*value 200 at sample 3", r"Fix: download"),
    "launch into a folder with a user's logs": (lambda f: distributed.launch(
        ROOT / "scripts" / "distributed_worker.py", log_dir=f / "user_logs"), ValueError, r"worker_0.log",
        r"Fix: pass an empty or new folder"),
})


def _mindir(f, name):
    return inference.load_mindir(f / name)


def _call_graph(f, name, *shapes):
    from mindspore import Tensor
    return _mindir(f, name)(*(Tensor(np.zeros(shape, np.float32)) for shape in shapes))


# Issue 11, second pass (helper R2): labels, init_env, MindIR shapes, data paths, output folders, validation.
ISSUE_11_CASES.update({
    "init_env given a YAML path": (lambda f: env.init_env("file.yaml"), TypeError, r"not a file path: got 'file.yaml'",
                                   r"Fix: init_env\(load_config\('file.yaml'\)\)"),
    "init_env given a Path": (lambda f: env.init_env(f / "list.yaml"), TypeError, r"list.yaml",
                              r"Fix: init_env\(load_config"),
    "init_env given None": (lambda f: env.init_env(None), TypeError, r"got None \(NoneType\)",
                            r"Fix: init_env\(load_config\(\)\)"),
    "init_env given a number": (lambda f: env.init_env(3), TypeError, r"got 3 \(int\)", r"Fix: init_env"),
    "init_env seed as text": (lambda f: env.init_env({**config.load_config().to_dict(), "seed": "1"}), TypeError,
                              r"seed must be an integer \(>= 0\), got '1' \(str\)",
                              r"Fix: set the config key seed to a whole number >= 0"),
    "loss label 12 for 10 classes": (lambda f: losses.CrossEntropySmooth(num_classes=10)(
        _tensor(np.zeros((2, 10), np.float32)), _tensor(np.array([1, 12], np.int32))), ValueError,
        r"\[0, 10\).*e\.g\. 12 at position 1", r"Fix: set num_classes"),
    "loss negative label": (lambda f: losses.CrossEntropySmooth(num_classes=10, smooth_factor=0.1)(
        _tensor(np.zeros((3, 10), np.float32)), _tensor(np.array([0, -56, 3], np.int32))), ValueError,
        r"-56 at position 1", r"corrupted label file"),
    "loss float labels with sparse=True": (lambda f: losses.CrossEntropySmooth(num_classes=10)(
        _tensor(np.zeros((2, 10), np.float32)), _tensor(np.array([1.0, 2.0], np.float32))), ValueError,
        r"dtype float32", r"Fix: cast them"),
    "check_labels on numpy": (lambda f: losses.check_labels(np.array([0, 5, 9]), 5, "y"), ValueError,
                              r"y must lie in \[0, 5\).*2 label\(s\) outside, e\.g\. 5", r"Fix"),
    "MNIST read with too few classes": (lambda f: data.create_mnist_dataset(num_classes=5), ValueError,
                                        r"train-labels-idx1-ubyte has 10 classes.*num_classes is 5",
                                        r"Fix: num_classes=10"),
    "ImageFolder read with too few classes": (lambda f: data.create_imagefolder_dataset(image_size=32, num_classes=3),
                                              ValueError, r"train has 10 classes \(labels 0-9\).*num_classes is 3",
                                              r"--num_classes 10"),
    "reader num_classes 1": (lambda f: data.create_mnist_dataset(num_classes=1), ValueError,
                             r"num_classes.*got 1", r"Fix: pass the number of classes"),
    "data path empty string": (lambda f: data.create_mnist_dataset(""), ValueError, r"path must not be empty, got ''",
                               r"Fix: pass the folder that holds MNIST IDX files .*, or path=None"),
    "data path blank": (lambda f: data.create_imagefolder_dataset("  "), ValueError,
                        r"path must not be empty, got '  '", r"path=None"),
    "data path is a file": (lambda f: data.create_mnist_dataset(f / "list.yaml"), NotADirectoryError,
                            r"list.yaml is a file; expected a folder holding MNIST", r"Fix: pass the folder"),
    "data folder without train/": (lambda f: data.create_imagefolder_dataset(f / "empty_folder"), FileNotFoundError,
                                   r"empty_folder/train", r"Fix: check the path"),
    "data class folders without images": (lambda f: data.create_imagefolder_dataset(f / "no_images"), ValueError,
                                          r"no_images/train \(cat, dog\) contain no images",
                                          r"Fix: put the images into the class folders"),
    "data segmentation folder with other files": (lambda f: data.create_segmentation_dataset(f / "no_images"),
                                                  FileNotFoundError, r"shapes_train.mindrecord.*no_images",
                                                  r"path=None for the embedded shapes"),
    "MindIR fed 28x28 through predict": (lambda f: inference.predict(_mindir(f, "lenet_fixed.mindir"),
                                                                     np.zeros((2, 1, 28, 28), np.float32)),
                                         ValueError, r"\(1, 32, 32\), got \(1, 28, 28\)", r"Fix: resize"),
    "MindIR called with 28x28": (lambda f: _call_graph(f, "lenet_fixed.mindir", (2, 1, 28, 28)), ValueError,
                                 r"lenet_fixed.mindir must have shape \(N, 1, 32, 32\) \(exported as \(2, 1, 32, "
                                 r"32\)\), got \(2, 1, 28, 28\)",
                                 r"Fix: preprocess like the exported input"),
    "MindIR called with RGB": (lambda f: _call_graph(f, "lenet_dynamic.mindir", (4, 3, 32, 32)), ValueError,
                               r"\(N, 1, 32, 32\).*got \(4, 3, 32, 32\)", r"Fix"),
    "MindIR called without batch axis": (lambda f: _call_graph(f, "lenet_dynamic.mindir", (1, 32, 32)), ValueError,
                                         r"got \(1, 32, 32\)", r"Fix"),
    "MindIR called with two inputs": (lambda f: _call_graph(f, "lenet_dynamic.mindir", (1, 1, 32, 32),
                                                            (1, 1, 32, 32)), ValueError,
                                      r"takes 1 input\(s\).*got 2", r"Fix: call it with exactly"),
    "output folder is a file": (lambda f: paths.check_output_folder(f / "list.yaml", "log folder", "pick another"),
                                NotADirectoryError, r"log folder list.yaml is a file", r"Fix: pick another"),
    "output folder under a file": (lambda f: paths.check_output_folder(f / "list.yaml" / "sub", "cache", "pick one"),
                                   PermissionError, r"cache sub is not writable", r"Fix: pick one"),
    "validation int as text": (lambda f: validation.check_int("epochs", "3", 1), TypeError,
                               r"epochs must be an integer.*got '3' \(str\)", r"Fix"),
    "validation bool as int": (lambda f: validation.check_int("device_num", True, 1), TypeError,
                               r"device_num.*got True", r"Fix"),
    "validation int above range": (lambda f: validation.check_int("shard_id", 4, 0, 3), ValueError,
                                   r"shard_id must be an integer >= 0 and <= 3, got 4", r"Fix: set shard_id"),
    "validation real NaN": (lambda f: validation.check_real("lr", float("nan"), 0, low_open=True), ValueError,
                            r"lr must be a finite number > 0, got nan", r"Fix"),
    "validation real open bound": (lambda f: validation.check_real("momentum", 1.0, 0, 1, high_open=True),
                                   ValueError, r"momentum.*< 1, got 1.0", r"Fix"),
})
CASES.update(ISSUE_11_CASES)


@pytest.fixture(scope="module", autouse=True)
def issue_11_files(files):
    (files / "latin1.yaml").write_bytes("lr: 0.1  # d\xe9j\xe0 vu\n".encode("latin-1"))
    net = nn.Dense(3, 2)
    import mindspore as ms
    ms.save_checkpoint(net, str(files / "no_crc.ckpt"))
    good = (files / "good.ckpt").read_bytes()
    (files / "boundary.ckpt").write_bytes(good[:-17])  # exactly the CRC record cut off
    (files / "old_run").mkdir()
    for epoch in (5, 6):
        shutil.copy(files / "good.ckpt", files / "old_run" / f"lenet5-{epoch}_2.ckpt")
    bad = files / "bad_labels"
    shutil.copytree(paths.DATA_DIR / "digits_mnist", bad)
    labels = bytearray((bad / "train-labels-idx1-ubyte").read_bytes())
    labels[8 + 3] = 200
    (bad / "train-labels-idx1-ubyte").write_bytes(bytes(labels))
    (files / "user_logs").mkdir()
    (files / "user_logs" / "worker_0.log").write_text("mine")
    for name in ("cat", "dog"):
        (files / "no_images" / "train" / name).mkdir(parents=True)
        (files / "no_images" / "train" / name / "notes.txt").write_text("no image here")
    lenet = models.lenet5()
    inference.export_mindir(lenet, np.zeros((2, 1, 32, 32), np.float32), files / "lenet_fixed.mindir")
    inference.export_mindir(lenet, np.zeros((2, 1, 32, 32), np.float32), files / "lenet_dynamic.mindir",
                            dynamic_batch=True)


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, files):
    call, error, what, fix = CASES[case]
    with pytest.raises(error) as info:
        call(files)
    message = str(info.value)
    assert re.search(what, message, re.S), f"{case}: the message does not name the offending thing: {message}"
    assert re.search(fix, message, re.S), f"{case}: the message gives no fix: {message}"
    assert "Traceback" not in message


def test_there_are_at_least_forty_cases():
    assert len(CASES) >= 40
    assert len(ISSUE_11_CASES) >= 75


@pytest.mark.parametrize("bad", ["file.yaml", None])
def test_init_env_with_a_bad_config_changes_no_global_state(bad):
    """Regression (issue 11): init_env("file.yaml") / init_env(None) set the seed and mode, then failed."""
    import mindspore as ms
    seed, mode = ms.get_seed(), ms.get_context("mode")
    ms.set_seed(12345)
    try:
        with pytest.raises(TypeError):
            env.init_env(bad)
        assert ms.get_seed() == 12345 and ms.get_context("mode") == mode
    finally:
        if seed is not None:
            ms.set_seed(seed)
