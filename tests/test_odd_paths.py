"""Every place course_lib hands a path to MindSpore works from a folder whose path has spaces and Chinese
characters (a Windows user "C:\\Users\\Li Wei\\..." or a checkout under 课程/). Real MindSpore calls, no mocks.

MindSpore 2.10's ``export`` refuses such names (``Validator.check_file_name_by_regular`` in
mindspore/_checkparam.py, regex ``^[0-9a-zA-Z@\\_\\-\\.\\:\\/\\\\]+$``); the first test proves it, so the others
test something real. msrun's ``--log_dir`` is covered in tests/test_distributed.py.
"""
import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import os
import shutil

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

from course_lib import paths
from course_lib.data import datasets as data
from course_lib.inference import export_mindir, load_mindir, predict
from course_lib.models import lenet5
from course_lib.train.checkpoint import CheckpointManager, load_checkpoint, save_checkpoint

ODD_NAMES = ["课程 test dir", "Li Wei", "数据"]


@pytest.fixture(params=ODD_NAMES)
def odd(tmp_path, request):
    folder = tmp_path / request.param / "sub folder 二"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture(scope="module")
def net():
    ms.set_seed(5)
    return lenet5()


IMAGE = np.random.default_rng(1).normal(size=(2, 1, 32, 32)).astype(np.float32)


def test_mindspore_export_itself_refuses_these_folders(odd, net):
    with pytest.raises(ValueError, match="is illegal, it must be match regular"):
        ms.export(net, Tensor(IMAGE[:1]), file_name=str(odd / "model"), file_format="MINDIR")


def test_export_and_load_mindir_work_there_and_leave_the_working_folder_alone(odd, net):
    before = os.getcwd()
    path = export_mindir(net, IMAGE[:1], odd / "模型 v1.mindir", dynamic_batch=True)
    assert os.getcwd() == before
    assert sorted(p.name for p in odd.iterdir()) == ["模型 v1.mindir", "模型 v1.mindir.sha256"]
    graph = load_mindir(path)
    np.testing.assert_allclose(predict(graph, IMAGE).probabilities, predict(net, IMAGE).probabilities, atol=1e-5)


def test_export_with_a_relative_path_from_inside_such_a_folder(odd, net, monkeypatch):
    monkeypatch.chdir(odd)
    path = export_mindir(net, IMAGE[:1], "lenet.mindir")
    assert (odd / "lenet.mindir").is_file() and path.name == "lenet.mindir"
    assert load_mindir("lenet.mindir")(Tensor(IMAGE[:1])).shape == (1, 10)


def test_checkpoints_save_load_and_a_managed_run_work_there(odd, net):
    path = save_checkpoint(net, odd / "网络.ckpt")
    fresh = lenet5()
    load_checkpoint(path, fresh)
    assert np.array_equal(fresh.conv1.weight.asnumpy(), net.conv1.weight.asnumpy())
    with CheckpointManager(odd / "运行 1", "lenet5", keep=2) as manager:
        for epoch in (1, 2, 3):
            manager.save(net, epoch, 4)
    assert CheckpointManager(odd / "运行 1", "lenet5").checkpoints()[0].name == "lenet5-3_4.ckpt"
    assert sorted(p.name for p in (odd / "运行 1").iterdir()) == ["lenet5-2_4.ckpt", "lenet5-3_4.ckpt"]


def first_batch(dataset):
    return next(dataset.create_tuple_iterator(output_numpy=True))


def test_every_data_set_reads_from_such_a_folder(odd):
    for name in ("digits_mnist", "digits_png", "shapes"):
        shutil.copytree(paths.DATA_DIR / name, odd / name)
    image, label = first_batch(data.create_mnist_dataset(odd / "digits_mnist", batch_size=4, shuffle=False))
    assert image.shape == (4, 1, 32, 32) and label.shape == (4,)
    image, _ = first_batch(data.create_imagefolder_dataset(odd / "digits_png", batch_size=4, image_size=32,
                                                           shuffle=False))
    assert image.shape == (4, 3, 32, 32)
    image, label = first_batch(data.create_segmentation_dataset(odd / "shapes", batch_size=4, shuffle=False))
    assert image.shape == (4, 3, 64, 64) and label.shape == (4, 64, 64)


def test_mindrecord_files_are_written_and_read_there(odd):
    from course_lib.data.generate import write_shapes

    write_shapes(odd)
    names = sorted(p.name for p in (odd / "shapes").iterdir())
    assert names == ["shapes_train.mindrecord", "shapes_train.mindrecord.db", "shapes_val.mindrecord",
                     "shapes_val.mindrecord.db"]
    _, label = first_batch(data.create_segmentation_dataset(odd / "shapes", batch_size=8, train=False))
    assert label.shape == (8, 64, 64)


def test_a_mindspore_log_folder_with_such_a_path_is_one_clear_message_before_mindspore_fails(tmp_path):
    import subprocess
    import sys

    env = dict(os.environ, GLOG_logtostderr="0", GLOG_log_dir=str(tmp_path / "课程 logs"))
    done = subprocess.run([sys.executable, "-c", "import course_lib, mindspore"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: GLOG_log_dir is ") and "课程 logs" in last
    assert "Fix: set GLOG_log_dir to such a folder" in last
    course_lib._check_mindspore_log_dir({"GLOG_logtostderr": "0", "GLOG_log_dir": "/tmp/ms_logs"})
    course_lib._check_mindspore_log_dir({"GLOG_logtostderr": "1", "GLOG_log_dir": "/tmp/课程 logs"})  # not used
