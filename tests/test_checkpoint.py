import course_lib  # noqa: F401  (sets env before mindspore)
import os

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from course_lib.checkpoint import TEMP_MARK, latest_checkpoint, load_checkpoint, save_checkpoint


def dense(seed=0, shape=(3, 2)):
    ms.set_seed(seed)
    return nn.Dense(*shape)


def test_round_trip_with_append_dict(tmp_path):
    net = dense(1)
    path = save_checkpoint(net, tmp_path / "sub" / "net.ckpt", append_dict={"epoch": 4})
    assert path == tmp_path / "sub" / "net.ckpt" and path.is_file()
    fresh = dense(2)
    params = load_checkpoint(path, fresh)
    assert np.array_equal(fresh.weight.asnumpy(), net.weight.asnumpy())
    assert int(params["epoch"].asnumpy()) == 4
    assert [p.name for p in path.parent.iterdir()] == ["net.ckpt"]  # no temporary file left behind


def test_overwrite_keeps_a_valid_file_and_no_temp(tmp_path):
    path = tmp_path / "best.ckpt"
    save_checkpoint(dense(1), path)
    second = dense(5)
    save_checkpoint(second, path)
    loaded = dense(9)
    load_checkpoint(path, loaded)
    assert np.array_equal(loaded.weight.asnumpy(), second.weight.asnumpy())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.ckpt"]


def test_failed_save_leaves_the_old_checkpoint_untouched(tmp_path, monkeypatch):
    path = tmp_path / "best.ckpt"
    save_checkpoint(dense(1), path)
    before = path.read_bytes()

    def crash(obj, name, **kwargs):
        open(name, "wb").write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(ms, "save_checkpoint", crash)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(dense(2), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.ckpt"]


def test_crc_catches_a_flipped_byte_that_a_plain_load_accepts(tmp_path):
    path = save_checkpoint(dense(1), tmp_path / "net.ckpt")
    raw = bytearray(path.read_bytes())
    raw[40] ^= 0xFF
    os.chmod(path, 0o600)
    path.write_bytes(bytes(raw))
    ms.load_checkpoint(str(path))  # MindSpore's plain load: no error
    with pytest.raises(ValueError, match="net.ckpt is corrupted or truncated.*CRC"):
        load_checkpoint(path)


def test_truncated_empty_missing(tmp_path):
    path = save_checkpoint(dense(1), tmp_path / "net.ckpt")
    truncated = tmp_path / "trunc.ckpt"
    truncated.write_bytes(path.read_bytes()[:30])
    with pytest.raises(ValueError, match="trunc.ckpt is corrupted or truncated"):
        load_checkpoint(truncated)
    empty = tmp_path / "empty.ckpt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.ckpt is empty"):
        load_checkpoint(empty)
    with pytest.raises(FileNotFoundError, match="missing.ckpt does not exist"):
        load_checkpoint(tmp_path / "missing.ckpt")
    (tmp_path / "folder.ckpt").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        load_checkpoint(tmp_path / "folder.ckpt")


def test_checkpoint_from_another_network(tmp_path):
    path = save_checkpoint(dense(1), tmp_path / "net.ckpt")
    with pytest.raises(ValueError, match=r"shape mismatch: weight: network \(2, 4\) vs checkpoint \(2, 3\)"):
        load_checkpoint(path, nn.Dense(4, 2))
    with pytest.raises(ValueError, match=r"missing from the checkpoint: 0.weight, 0.bias"):
        load_checkpoint(path, nn.SequentialCell([nn.Dense(3, 2)]))


@pytest.mark.parametrize("args, error, message", [
    (("not a net", "x.ckpt"), ValueError, "save_obj must be a network"),
    ((None, "x.ckpt"), ValueError, "save_obj must be a network"),
])
def test_bad_save_arguments(tmp_path, args, error, message):
    with pytest.raises(error, match=message):
        save_checkpoint(args[0], tmp_path / args[1])


def test_bad_names(tmp_path):
    with pytest.raises(ValueError, match=r"must end with .ckpt, got 'net.pt'"):
        save_checkpoint(dense(), tmp_path / "net.pt")
    with pytest.raises(ValueError, match="must be a str or Path"):
        load_checkpoint(3)
    path = save_checkpoint(dense(), tmp_path / "n.ckpt")
    with pytest.raises(ValueError, match="net must be a MindSpore nn.Cell"):
        load_checkpoint(path, net="lenet")


def test_latest_checkpoint_orders_by_epoch_and_step_and_skips_temp_files(tmp_path):
    assert latest_checkpoint(tmp_path / "none") is None
    for name in ("lenet-1_44.ckpt", "lenet-2_10.ckpt", "lenet-10_3.ckpt"):
        save_checkpoint(dense(), tmp_path / name)
    (tmp_path / f".lenet-11_1{TEMP_MARK}abcd.ckpt").write_bytes(b"partial")
    assert latest_checkpoint(tmp_path, "lenet").name == "lenet-10_3.ckpt"


def test_a_save_that_fails_inside_mindspore_leaves_no_temporary_file(tmp_path, monkeypatch):
    from mindspore.train import serialization

    path = save_checkpoint(dense(1), tmp_path / "best.ckpt")
    before = path.read_bytes()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(serialization, "_write_parameter_data", fail)
    monkeypatch.setattr(serialization, "_write_parameter_bytes_data", fail)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(dense(2), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.ckpt"] and path.read_bytes() == before


def test_non_strict_load_never_loads_optimizer_moments_into_weights(tmp_path):
    net = dense(1)
    moments = {"moments.weight": ms.Parameter(ms.Tensor(np.full((2, 3), 7.0, np.float32)), name="moments.weight"),
               "bias": ms.Parameter(ms.Tensor(np.zeros(2, np.float32)), name="bias")}
    path = save_checkpoint(list(moments.values()), tmp_path / "opt.ckpt")
    before = net.weight.asnumpy().copy()
    load_checkpoint(path, net, strict=False)
    assert np.array_equal(net.weight.asnumpy(), before)
