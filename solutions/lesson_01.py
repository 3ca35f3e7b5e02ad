"""Solutions of lesson 01's exercises (the notebook's cells tagged `solution` show the same code)."""


def solve_01_1():
    import mindspore as ms
    import mindspore.dataset as ds
    import mindspore.dataset.transforms as transforms
    import mindspore.dataset.vision as vision
    from mindspore.dataset.vision import Inter

    from course_lib.paths import DATA_DIR

    pipeline = ds.MnistDataset(str(DATA_DIR / "digits_mnist"), usage="train", shuffle=False)
    image_ops = [
        vision.RandomRotation(10),  # on the 28×28 uint8 image, where the fill value 0 is the background
        vision.Resize((32, 32), interpolation=Inter.LINEAR),
        vision.Rescale(1.0 / 255.0, 0.0),
        vision.Rescale(1 / 0.3081, -1 * 0.1307 / 0.3081),
        vision.HWC2CHW(),
    ]
    pipeline = pipeline.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
    pipeline = pipeline.map(operations=image_ops, input_columns="image")
    return pipeline.shuffle(10000).batch(32, drop_remainder=True)


def solve_01_2():
    """Write the digits' PNG files to a MindRecord file (as in section 6) and read it back in 4 shards."""
    import tempfile
    from collections import Counter
    from pathlib import Path

    import mindspore.dataset as ds
    from mindspore.mindrecord import FileWriter

    from course_lib.data.stats import sample_fingerprints
    from course_lib.paths import DATA_DIR

    png_train = DATA_DIR / "digits_png" / "train"
    class_index = ds.ImageFolderDataset(str(png_train), shuffle=False).get_class_indexing()
    rows = [{"image": png.read_bytes(), "label": class_index[png.parent.name]}
            for png in sorted(png_train.glob("*/*.png"))]
    with tempfile.TemporaryDirectory() as folder:
        record = str(Path(folder) / "digits.mindrecord")
        writer = FileWriter(record, shard_num=1)
        writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}}, "digits as PNG bytes")
        writer.write_raw_data(rows)
        writer.commit()
        shards = [sample_fingerprints(ds.MindDataset(record, num_shards=4, shard_id=k, shuffle=False))
                  for k in range(4)]
    counts = Counter(fingerprint for shard in shards for fingerprint in shard)
    return [len(shard) for shard in shards], sum(1 for count in counts.values() if count > 1)


def solve_01_3():
    from course_lib.data.datasets import create_imagefolder_dataset

    def build(num_parallel_workers):
        return create_imagefolder_dataset(image_size=64, batch_size=32, train=True,
                                          num_parallel_workers=num_parallel_workers)

    return build


def _wrong_01():
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision

    from course_lib.data.datasets import create_imagefolder_dataset, create_mnist_dataset
    from course_lib.paths import DATA_DIR

    unaugmented = create_mnist_dataset(batch_size=32, train=True)
    rotated_last = create_mnist_dataset(batch_size=32, train=True).map(operations=vision.RandomRotation(10),
                                                                       input_columns="image")
    keeps_partial_batch = (ds.MnistDataset(str(DATA_DIR / "digits_mnist"), usage="train")
                           .map(operations=[vision.RandomRotation(10), vision.Resize((32, 32))], input_columns="image")
                           .batch(32))
    return {
        "01.1": [unaugmented, rotated_last, keeps_partial_batch, "RandomRotation(10)"],
        "01.2": [([359, 359, 359, 360], 0), ([360, 360, 360, 360], 0), ([360, 360, 360, 360], 4), 360, [360, 3]],
        "01.3": [create_imagefolder_dataset(image_size=64, batch_size=32),
                 lambda num_parallel_workers: create_imagefolder_dataset(image_size=64, batch_size=32),
                 lambda num_parallel_workers: create_imagefolder_dataset(
                     image_size=224, batch_size=32, num_parallel_workers=num_parallel_workers),
                 lambda workers: create_imagefolder_dataset(image_size=64, batch_size=32,
                                                            num_parallel_workers=workers)],
    }


WRONG = _wrong_01
