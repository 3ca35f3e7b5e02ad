import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import os
import time
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from course_lib.train.checkpoint import TEMP_MARK, load_checkpoint, save_checkpoint


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
    (("not a net", "x.ckpt"), TypeError, r"save_obj must be a network .*got 'not a net' \(str\)"),
    ((None, "x.ckpt"), TypeError, r"save_obj must be a network .*got None \(NoneType\)"),
])
def test_bad_save_arguments(tmp_path, args, error, message):
    with pytest.raises(error, match=message):
        save_checkpoint(args[0], tmp_path / args[1])


def test_bad_names(tmp_path):
    with pytest.raises(ValueError, match=r"must end with .ckpt, got 'net.pt'"):
        save_checkpoint(dense(), tmp_path / "net.pt")
    with pytest.raises(TypeError, match=r"path must be a path \(str or Path\), got 3 \(int\)"):
        load_checkpoint(3)
    path = save_checkpoint(dense(), tmp_path / "n.ckpt")
    with pytest.raises(TypeError, match=r"net must be a mindspore.nn.Cell, got 'lenet' \(str\)"):
        load_checkpoint(path, net="lenet")


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


def test_a_checkpoint_truncated_at_any_length_is_rejected(tmp_path):
    # MindSpore's CRC is the last record: a file cut at a record boundary has none and loads with a warning only.
    good = save_checkpoint(nn.Dense(2, 1), tmp_path / "good.ckpt", append_dict={"epoch_num": 3}).read_bytes()
    cut = tmp_path / "cut.ckpt"
    accepted = []
    for length in range(1, len(good)):
        cut.write_bytes(good[:length])
        try:
            load_checkpoint(cut)
            accepted.append(length)
        except ValueError as error:
            assert "cut.ckpt" in str(error) and "Fix:" in str(error)
    assert accepted == []
    cut.write_bytes(good)
    assert int(load_checkpoint(cut)["epoch_num"].asnumpy()) == 3


def test_a_checkpoint_without_crc_is_refused_when_a_crc_check_is_asked_for(tmp_path):
    path = tmp_path / "plain.ckpt"
    ms.save_checkpoint(dense(1), str(path))  # MindSpore's default: no CRC record
    with pytest.raises(ValueError, match=r"plain.ckpt is corrupted or truncated: it has no CRC.*crc_check=False"):
        load_checkpoint(path)
    assert set(load_checkpoint(path, crc_check=False)) == {"weight", "bias"}


# ------------------------------------------------------------------------------------------ CheckpointManager
from course_lib.train.checkpoint import CheckpointFolderBusy, CheckpointManager  # noqa: E402


def test_manager_refuses_another_runs_checkpoints_and_keeps_them(tmp_path):
    for epoch in (5, 6):
        save_checkpoint(dense(epoch), tmp_path / f"lenet5-{epoch}_2.ckpt")
    with pytest.raises(FileExistsError, match=r"holds checkpoints of another run \(lenet5-6_2.ckpt.*--resume"):
        with CheckpointManager(tmp_path, "lenet5", keep=2):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet5-5_2.ckpt", "lenet5-6_2.ckpt"]  # lock released
    with CheckpointManager(tmp_path, "lenet5", keep=2, overwrite=True) as manager:
        for epoch in (1, 2, 3):
            manager.save(dense(epoch), epoch, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet5-2_2.ckpt", "lenet5-3_2.ckpt"]


def test_retention_only_deletes_files_of_the_run_that_writes(tmp_path):
    save_checkpoint(dense(0), tmp_path / "resnet18-9_2.ckpt")  # another model's run: not this prefix
    with CheckpointManager(tmp_path, "lenet5", keep=1) as manager:
        for epoch in (1, 2, 3):
            manager.save(dense(epoch), epoch, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet5-3_2.ckpt", "resnet18-9_2.ckpt"]


def test_second_run_on_a_locked_folder_is_refused_and_a_dead_owner_is_not(tmp_path):
    import subprocess
    import sys

    with CheckpointManager(tmp_path, "lenet5"):
        with pytest.raises(CheckpointFolderBusy, match=rf"in use by another run \(process {os.getpid()}\).*Fix"):
            with CheckpointManager(tmp_path, "lenet5"):
                pass
    # a process killed while holding the lock leaves the file, but not the lock
    code = (f"import os, signal, course_lib.train.checkpoint as c; "
            f"m = c.CheckpointManager({str(tmp_path)!r}, 'lenet5'); "
            "m.__enter__(); os.kill(os.getpid(), signal.SIGKILL)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == -9
    assert (tmp_path / ".course_checkpoints.lock").exists()
    with CheckpointManager(tmp_path, "lenet5"):
        pass


def dead_pid() -> int:
    """The pid of a process that has ended."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_files_of_a_killed_save_are_cleaned_and_nothing_else(tmp_path):
    gone = dead_pid()
    names = [f".lenet5-2_4.tmp-p{gone}-0badf00d.ckpt", f".lenet5-2_4.tmp-p{gone}-0badf00d.tmp",
             ".best.tmp-12345678.ckpt", ".lenet5-3_4.tmp-0badf00d.tmp"]  # the last two: old names, an hour old
    live = [f".lenet5-5_4.tmp-p{os.getpid()}-0badf00d.ckpt",  # a save of this (live) process
            ".lenet5-6_4.tmp-abcdef12.ckpt"]  # an old-style name, written just now: maybe a live writer
    keep = live + ["notes.tmp", ".hidden.ckpt", "my.tmp-0badf00d.ckpt", ".x.tmp-nothex00.ckpt"]
    for name in names + keep:
        (tmp_path / name).write_bytes(b"x")
    hour_ago = time.time() - 3700
    for name in names[2:]:
        os.utime(tmp_path / name, (hour_ago, hour_ago))
    with CheckpointManager(tmp_path, "lenet5"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)


def test_a_damaged_newest_checkpoint_is_set_aside_and_the_previous_one_used(tmp_path):
    for epoch in (1, 2):
        save_checkpoint(dense(epoch), tmp_path / f"lenet5-{epoch}_2.ckpt", append_dict={"epoch_num": epoch})
    good = (tmp_path / "lenet5-2_2.ckpt").read_bytes()
    save_checkpoint(dense(9), tmp_path / "lenet5-9_2.ckpt")
    (tmp_path / "lenet5-9_2.ckpt").write_bytes(good[: len(good) // 2])
    with CheckpointManager(tmp_path, "lenet5", keep=2, resume=True) as manager:
        params, path = manager.resume_from(load_checkpoint)
        assert path.name == "lenet5-2_2.ckpt" and int(params["epoch_num"].asnumpy()) == 2
        manager.save(dense(3), 3, 2)
    # the damaged file holds no keep slot: epochs 2 and 3 are kept, epoch 1 went
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet5-2_2.ckpt", "lenet5-3_2.ckpt",
                                                          "lenet5-9_2.ckpt.damaged"]


def test_non_finite_weights_are_never_saved(tmp_path):
    net = dense(1)
    net.weight.set_data(ms.Tensor(np.full((2, 3), np.nan, np.float32)))
    with CheckpointManager(tmp_path, "lenet5") as manager:
        with pytest.raises(ValueError, match=r"parameter 'weight' holds NaN or inf.*Fix: lower --lr"):
            manager.save(net, 1, 2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make", ["file", "readonly"])
def test_an_unusable_checkpoint_folder_fails_before_training(tmp_path, make):
    if make == "file":
        target = tmp_path / "a_file"
        target.write_text("x")
        error = NotADirectoryError
    else:
        if os.geteuid() == 0:  # root writes through chmod 0o500; /proc refuses even root
            target = Path("/proc/self/course-checkpoints")
        else:
            target = tmp_path / "ro"
            target.mkdir()
            target.chmod(0o500)
        error = PermissionError
    with pytest.raises(error, match=r"checkpoint_dir .* Fix"):
        CheckpointManager(target, "lenet5").check_folder()


# ------------------------------------------------------------------------- tensor sizes against their bytes
def crafted_checkpoint(path, tensors, crc=True):
    """Write a .ckpt by hand: ``tensors`` is a list of (tag, dims, tensor_type, content bytes); a valid CRC."""
    import binascii

    from mindspore.train.checkpoint_pb2 import Checkpoint

    data = b""
    for tag, dims, dtype, content in tensors:
        checkpoint = Checkpoint()
        value = checkpoint.value.add()
        value.tag = tag
        value.tensor.dims.extend(dims)
        value.tensor.tensor_type = dtype
        value.tensor.tensor_content = content
        data += checkpoint.SerializeToString()
    if crc:
        data += b"crc_num" + binascii.crc32(data, 0).to_bytes(10, "big")
    path.write_bytes(data)
    return path


SIX_FLOATS = np.arange(6, dtype=np.float32).tobytes()


@pytest.mark.parametrize("tensors, message", [
    ([("weight", [1000, 1000], "Float32", SIX_FLOATS)], r"declares shape \(1000, 1000\) of Float32 \(4000000 bytes\) "
                                                        r"but holds 24 bytes"),
    ([("weight", [2, 2], "Float32", SIX_FLOATS)], r"declares shape \(2, 2\) of Float32 \(16 bytes\) but holds 24"),
    ([("weight", [-2, -3], "Float32", SIX_FLOATS)], r"declares a negative dimension in its shape \(-2, -3\)"),
    ([("weight", [2, 3], "Float64", SIX_FLOATS)], r"shape \(2, 3\) of Float64 \(48 bytes\) but holds 24 bytes"),
    ([("weight", [2, 3], "Float8", SIX_FLOATS)], r"declares an unknown dtype 'Float8'"),
    ([("weight", [0], "Float32", SIX_FLOATS)], r"declares shape \(\) of Float32 \(4 bytes\) but holds 24"),
    ([("ok", [2, 3], "Float32", SIX_FLOATS), ("weight", [3, 3], "Float32", SIX_FLOATS[:12]),
      ("weight", [3, 3], "Float32", SIX_FLOATS[12:])],
     r"'weight' declares shape \(3, 3\) of Float32 \(36 bytes\) but holds 24"),
    ([("weight", [2, 3], "Float32", SIX_FLOATS[:12]), ("weight", [3, 2], "Float32", SIX_FLOATS[12:])],
     r"split into parts that declare different shapes"),
    ([("weight", [2, 3], "Float32", SIX_FLOATS[:12]), ("weight", [2, 3], "Float64", SIX_FLOATS[12:])],
     r"split into parts that declare different shapes or dtypes"),
    ([("note", [1], "str", "abc".encode("utf-32-le")[:-1])], r"'note' is a string of 11 bytes, not a multiple of 4"),
])
def test_a_checkpoint_whose_shapes_do_not_match_its_bytes_is_refused_despite_a_valid_crc(tmp_path, tensors,
                                                                                          message):
    path = crafted_checkpoint(tmp_path / "crafted.ckpt", tensors)
    with pytest.raises(ValueError, match=r"crafted.ckpt is corrupted or inconsistent: tensor .*" + message
                       + r".*Fix: use an earlier checkpoint"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="is corrupted or inconsistent"):
        load_checkpoint(path, crc_check=False)


def test_consistent_crafted_and_split_tensors_load(tmp_path):
    path = crafted_checkpoint(tmp_path / "fine.ckpt", [
        ("weight", [2, 3], "Float32", SIX_FLOATS[:8]), ("weight", [2, 3], "Float32", SIX_FLOATS[8:]),
        ("step", [0], "Int32", np.int32(7).tobytes()), ("flags", [3], "Bool", b"\x01\x00\x01")])
    params = load_checkpoint(path)
    assert params["weight"].asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert int(params["step"].asnumpy()) == 7


def test_every_tensor_of_a_real_checkpoint_passes_the_size_check(tmp_path):
    from course_lib.models import lenet5
    from course_lib.train.checkpoint import check_tensor_sizes

    path = save_checkpoint(lenet5(), tmp_path / "lenet.ckpt", append_dict={"epoch_num": 3, "note": "x"})
    assert check_tensor_sizes(path) == len(load_checkpoint(path)) - 1  # the str "note" is checked apart


def test_a_resumed_run_sets_an_inconsistent_checkpoint_aside(tmp_path):
    save_checkpoint(dense(1), tmp_path / "lenet5-1_2.ckpt")
    crafted_checkpoint(tmp_path / "lenet5-2_2.ckpt", [("weight", [9, 9], "Float32", SIX_FLOATS)])
    with CheckpointManager(tmp_path, "lenet5", resume=True) as manager:
        _, path = manager.resume_from(load_checkpoint)
    assert path.name == "lenet5-1_2.ckpt" and (tmp_path / "lenet5-2_2.ckpt.damaged").exists()


# ------------------------------------------------------------------------------- CheckpointManager's prefix
@pytest.mark.parametrize("prefix", ["../x", "../", "..", "sub/x", "sub\\x", "..\\x", "/tmp/x", "C:x", "a\0b"])
def test_the_manager_refuses_a_prefix_that_is_a_path(tmp_path, prefix):
    with pytest.raises(ValueError, match=r"prefix must be the start of a file name inside the folder, not a path.*"
                                         r"Fix: pass the folder"):
        CheckpointManager(tmp_path, prefix)


def test_the_manager_prefix_is_literal_and_not_empty(tmp_path):
    save_checkpoint(dense(1), tmp_path / "net[1]-3_1.ckpt")
    save_checkpoint(dense(1), tmp_path / "net1-9_1.ckpt")  # "net[1]" as a glob pattern would match this one
    assert CheckpointManager(tmp_path, "net[1]").checkpoints() == [tmp_path / "net[1]-3_1.ckpt"]
    with pytest.raises(TypeError, match="prefix must be a str"):
        CheckpointManager(tmp_path, None)
    with pytest.raises(ValueError, match="prefix must not be empty"):
        CheckpointManager(tmp_path, "")
