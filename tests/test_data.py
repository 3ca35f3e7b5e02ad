import shutil

import numpy as np
import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib import paths
from course_lib.data import datasets as data
from course_lib.data.generate import IGNORE_LABEL, write_idx


def batches(dataset):
    return list(dataset.create_tuple_iterator(output_numpy=True))


def test_mnist_train_and_test_splits():
    train = batches(data.create_mnist_dataset(batch_size=32))
    test = batches(data.create_mnist_dataset(batch_size=32, train=False))
    assert len(train) == 1437 // 32 and sum(len(b[1]) for b in test) == 360
    image, label = train[0]
    assert image.shape == (32, 1, 32, 32) and image.dtype == np.float32
    assert label.shape == (32,) and label.dtype == np.int32
    assert test[-1][0].shape == (360 % 32, 1, 32, 32)  # evaluation keeps the last partial batch
    # the programming guide's "Training"'s normalisation: background pixels are (0 - 0.1307) / 0.3081
    assert np.isclose(image.min(), -0.1307 / 0.3081, atol=1e-5)
    assert set(np.concatenate([b[1] for b in test])) == set(range(10))


def test_mnist_is_deterministic_for_evaluation():
    a = batches(data.create_mnist_dataset(train=False))
    b = batches(data.create_mnist_dataset(train=False))
    assert all((x[0] == y[0]).all() and (x[1] == y[1]).all() for x, y in zip(a, b))


def test_two_shards_partition_the_data():
    seen = []
    for shard in range(2):
        ds = data.create_mnist_dataset(train=False, batch_size=360, num_shards=2, shard_id=shard,
                                       drop_remainder=False)
        seen.append(np.concatenate([b[0].reshape(len(b[0]), -1) for b in batches(ds)]))
    assert len(seen[0]) == len(seen[1]) == 180
    rows = {r.tobytes() for r in seen[0]} | {r.tobytes() for r in seen[1]}
    everything = np.concatenate([b[0].reshape(len(b[0]), -1) for b in batches(data.create_mnist_dataset(
        train=False, batch_size=360))])
    assert rows == {r.tobytes() for r in everything}


def test_real_mnist_folder_in_both_layouts(tmp_path):
    src = paths.DATA_DIR / "digits_mnist"
    flat = tmp_path / "flat"
    shutil.copytree(src, flat)
    assert data.create_mnist_dataset(flat, train=False).get_dataset_size() == 12
    seeds_layout = tmp_path / "seed"
    (seeds_layout / "test").mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        shutil.copy(src / name, seeds_layout / "test" / name)
    assert data.create_mnist_dataset(seeds_layout, train=False, batch_size=360).get_dataset_size() == 1


def test_imagefolder_digits():
    image, label = batches(data.create_imagefolder_dataset(image_size=64, batch_size=8))[0]
    assert image.shape == (8, 3, 64, 64) and image.dtype == np.float32 and label.dtype == np.int32
    val = data.create_imagefolder_dataset(image_size=32, train=False, batch_size=100)
    assert sum(len(b[1]) for b in batches(val)) == 360


def test_segmentation_shapes():
    train = batches(data.create_segmentation_dataset(batch_size=16))
    image, label = train[0]
    assert image.shape == (16, 3, 64, 64) and image.dtype == np.float32
    assert label.shape == (16, 64, 64) and label.dtype == np.int32
    assert 0.0 <= image.min() and image.max() <= 1.0
    values = set(np.unique(np.concatenate([b[1] for b in train])))
    assert values == {0, 1, 2, 3, IGNORE_LABEL}
    assert len(train) == 20 and data.create_segmentation_dataset(train=False).get_dataset_size() == 5


def test_default_workers_is_what_the_machine_has():
    assert 1 <= data.default_num_workers()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"batch_size": 0}, ValueError, r"batch_size must be an integer >= 1, got 0"),
    ({"batch_size": 2.5}, TypeError, r"batch_size must be an integer \(>= 1\), got 2.5 \(float\)"),
    ({"num_parallel_workers": 10_000}, ValueError,
     r"num_parallel_workers must be an integer >= 1 and <= \d+, got 10000. Fix: this machine has \d+ cores"),
    ({"num_shards": 2}, ValueError, r"num_shards and shard_id go together: pass both or neither, got num_shards=2, "
                                    r"shard_id=None"),
    ({"num_shards": 2, "shard_id": 2}, ValueError, r"shard_id must be an integer >= 0 and <= 1, got 2"),
    ({"train": "yes"}, TypeError, r"train must be True or False, got 'yes' \(str\)"),
    ({"path": 42}, TypeError, r"path must be a path \(str or Path\), got 42 \(int\)"),
])
def test_bad_arguments(kwargs, error, message):
    """A wrong type is a TypeError, a wrong value a ValueError (validation.py's vocabulary)."""
    with pytest.raises(error, match=message):
        data.create_mnist_dataset(**kwargs)


def test_missing_paths_say_what_was_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist. Expected MNIST IDX files"):
        data.create_mnist_dataset(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="expected train-images-idx3-ubyte"):
        data.create_mnist_dataset(tmp_path)
    with pytest.raises(FileNotFoundError, match="Expected an image folder"):
        data.create_imagefolder_dataset(tmp_path)
    with pytest.raises(FileNotFoundError, match="shapes_train.mindrecord"):
        data.create_segmentation_dataset(tmp_path)


def test_truncated_and_wrong_idx_files(tmp_path):
    images = np.zeros((4, 28, 28), np.uint8)
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="hold different numbers of samples"):
        data.create_mnist_dataset(tmp_path)
    raw = (tmp_path / "train-images-idx3-ubyte").read_bytes()
    (tmp_path / "train-images-idx3-ubyte").write_bytes(raw[:-10])
    with pytest.raises(ValueError, match="truncated or corrupted"):
        data.create_mnist_dataset(tmp_path)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x1f\x8b" + raw[2:])
    with pytest.raises(ValueError, match="gunzip"):
        data.create_mnist_dataset(tmp_path)


def test_imagefolder_wrong_layouts(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "a.png").write_bytes(b"x")
    with pytest.raises(ValueError, match="no class subfolders"):
        data.create_imagefolder_dataset(tmp_path)
    (tmp_path / "train" / "cat").mkdir()
    (tmp_path / "train" / "cat" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="contain no images"):
        data.create_imagefolder_dataset(tmp_path)


def test_corrupted_embedded_file_names_file_and_fix(tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(paths.DATA_DIR, copy)
    target = copy / "digits_mnist" / "t10k-labels-idx1-ubyte"
    raw = bytearray(target.read_bytes())
    raw[-1] ^= 1
    target.write_bytes(bytes(raw))
    monkeypatch.setattr(data, "DATA_DIR", copy)
    monkeypatch.setattr(data, "_verified", set())
    with pytest.raises(ValueError, match=r"digits_mnist/t10k-labels-idx1-ubyte is corrupted.*make data"):
        data.create_mnist_dataset(train=False)
    target.unlink()
    with pytest.raises(FileNotFoundError, match=r"t10k-labels-idx1-ubyte is missing.*make data"):
        data.create_mnist_dataset(train=False)
    (copy / "MANIFEST.sha256").unlink()
    with pytest.raises(FileNotFoundError, match="manifest"):
        data.create_segmentation_dataset()


# ------------------------------------------------------------------------- a batch larger than the data
def image_folder_copy(tmp_path, per_class):
    """The embedded digits_png with ``per_class`` images in each train class folder."""
    root = tmp_path / "digits_png"
    for split in ("train", "val"):
        for class_dir in sorted((paths.DATA_DIR / "digits_png" / split).iterdir()):
            target = root / split / class_dir.name
            target.mkdir(parents=True)
            for image in sorted(class_dir.iterdir())[:per_class]:
                shutil.copy(image, target / image.name)
    return root


@pytest.mark.parametrize("build, kwargs, samples", [
    (data.create_mnist_dataset, {}, "1,437"),
    (data.create_imagefolder_dataset, {"image_size": 32}, "1,437"),
    (data.create_segmentation_dataset, {}, "320"),
])
def test_a_batch_larger_than_the_data_is_an_error_not_zero_batches(build, kwargs, samples):
    with pytest.raises(ValueError, match=rf"batch_size 2000 is larger than the {samples} samples of .*0 batches\. "
                                         rf"Fix: a batch_size of at most {samples}.*drop_remainder=False"):
        build(batch_size=2000, **kwargs)
    with pytest.raises(ValueError, match=r"batch_size 2000 is larger"):
        build(batch_size=2000, train=False, drop_remainder=True, **kwargs)
    kept = build(batch_size=2000, drop_remainder=False, **kwargs)  # one partial batch, as asked
    assert kept.get_dataset_size() == 1


@pytest.mark.parametrize("build, kwargs, per_shard", [
    (data.create_mnist_dataset, {}, "719"),
    (data.create_imagefolder_dataset, {"image_size": 32}, "719"),
    (data.create_segmentation_dataset, {}, "160"),
])
def test_the_check_counts_the_samples_of_one_shard(build, kwargs, per_shard):
    limit = int(per_shard.replace(",", ""))
    with pytest.raises(ValueError, match=rf"\({per_shard} per shard of 2\).*at most {per_shard}"):
        build(batch_size=limit + 1, num_shards=2, shard_id=1, **kwargs)
    assert build(batch_size=limit, num_shards=2, shard_id=1, **kwargs).get_dataset_size() == 1


def test_a_small_image_folder_is_counted_exactly(tmp_path):
    root = image_folder_copy(tmp_path, per_class=3)
    with pytest.raises(ValueError, match=r"batch_size 31 is larger than the 30 samples of the image folder train/"):
        data.create_imagefolder_dataset(root, batch_size=31, image_size=32)
    assert data.create_imagefolder_dataset(root, batch_size=30, image_size=32).get_dataset_size() == 1


def test_an_mnist_folder_without_samples_is_an_error(tmp_path):
    images = np.zeros((0, 28, 28), np.uint8)
    for prefix in ("train", "t10k"):
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte", images)
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte", np.zeros((0,), np.uint8))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte holds no samples.*Fix"):
        data.create_mnist_dataset(tmp_path, batch_size=4, drop_remainder=False)
