"""The mistakes learners make, table-driven: each must raise a clear error that names what was wrong and the fix.

Every case is (exception type, a regex for the offending thing, a regex for the fix), checked before the
bad value reaches deep MindSpore code wherever course_lib can check first.
"""
import course_lib  # noqa: F401  (sets env before mindspore)
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from mindspore import nn
from mindspore.train import Model

from course_lib import (callbacks, cells, checkpoint, config, data, distributed, env, exercises, inference, losses,
                        metrics, migration, models, optim, paths, schedules)

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


def _lenet_model_with(**kwargs):
    net = models.lenet5()
    return Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                 nn.Momentum(net.trainable_params(), 0.01, 0.9), **kwargs)


CASES = {
    # --- config ---------------------------------------------------------------------------------------
    "config unknown key": (lambda f: config.load_config(batchsize=3), ValueError, r"'batchsize'", r"Fix"),
    "config wrong type": (lambda f: config.load_config(epochs="3x"), ValueError, r"'epochs'.*'3x'", r"Fix"),
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
                         ValueError, r"device_num: 0", r"Fix the config key device_num"),
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
                                                    FileNotFoundError, r"shapes_train.mindrecord", r"make data"),
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
    # --- cells, schedules, optimisers, losses, callbacks ----------------------------------------------
    "segmentation eval cell with a function": (lambda f: cells.SegmentationEvalCell(lambda x: x, nn.CrossEntropyLoss()),
                                               TypeError, r"network must be a mindspore.nn.Cell, got function",
                                               r"Fix"),
    "segmentation eval cell with a loss name": (lambda f: cells.SegmentationEvalCell(models.segmentation_fcn(),
                                                                                     "cross_entropy"),
                                                TypeError, r"loss_fn must be a mindspore.nn.Cell, got str", r"Fix"),
    "segmentation eval cell flip_test as int": (lambda f: cells.SegmentationEvalCell(
        models.segmentation_fcn(), nn.CrossEntropyLoss(), flip_test=1), TypeError, r"flip_test.*got 1", r"Fix"),
    "TrainOneStepCell optimizer as string": (lambda f: cells.TrainOneStepCell(nn.Dense(2, 2), "sgd"), TypeError,
                                             r"got str", r"Fix: pass e.g. nn.Momentum"),
    "TrainOneStepCell negative sens": (lambda f: cells.TrainOneStepCell(
        nn.Dense(2, 2), nn.SGD(nn.Dense(2, 2).trainable_params()), sens=-1), ValueError, r"sens.*-1", r"Fix"),
    "NetWithLoss without losses": (lambda f: cells.NetWithLoss(nn.Dense(2, 2), []), ValueError,
                                   r"loss_fns is empty", r"Fix"),
    "cosine schedule arguments swapped": (lambda f: schedules.cosine_lr(0.1, 0.2, 10, 5), ValueError,
                                          r"lr_min=0.2, lr_max=0.1", r"argument order"),
    "param groups negative weight decay": (lambda f: optim.param_groups(nn.Dense(2, 2), -0.1), ValueError,
                                           r"weight_decay.*-0.1", r"Fix"),
    "label smoothing out of range": (lambda f: losses.CrossEntropySmooth(smooth_factor=1.5), ValueError,
                                     r"smooth_factor.*1.5", r"Fix"),
    "EvalCallback without a Model": (lambda f: callbacks.EvalCallback(None, None, "acc"), ValueError,
                                     r"model must be a mindspore.train.Model", r"Fix"),
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
    "torch reference of an unknown depth": (lambda f: migration.build_torch_resnet(19), ValueError, r"19",
                                            r"Fix"),
    # --- launcher, lessons, exercises -----------------------------------------------------------------
    "launch a missing script": (lambda f: distributed.launch(f / "nope.py"), FileNotFoundError, r"nope.py", r""),
    "launch with zero workers": (lambda f: distributed.launch(
        ROOT / "scripts" / "distributed_worker.py", worker_num=0), ValueError, r"worker_num", r""),
    "lesson folder outside outputs": (lambda f: paths.lesson_dir("../x"), ValueError, r"'../x'",
                                      r"plain folder name"),
    "unknown exercise": (lambda f: exercises.check("99.9", 1), KeyError, r"99.9", r"Known"),
}


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
