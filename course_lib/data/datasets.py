"""MindData pipelines for the course: digits as MNIST IDX files, digits as an ImageFolder, and shapes for
segmentation in MindRecord. Each builder takes ``path=None`` (the embedded data in ``data/``, verified against
``data/MANIFEST.sha256``) or the path of a real data set in the same layout (full MNIST, an ImageNet folder).
"""
import hashlib
import os
import struct
from pathlib import Path

import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.transforms as transforms
import mindspore.dataset.vision as vision
import numpy as np
from mindspore.dataset.vision import Inter

from course_lib.data.generate import IGNORE_LABEL, MANIFEST_NAME, SHAPES_CLASSES, regenerate_hint
from course_lib.i18n import _
from course_lib.paths import DATA_DIR
from course_lib.validation import check_bool, check_int, check_path, check_together

__all__ = [
    "DIGITS_CLASSES", "SHAPES_CLASSES", "IGNORE_LABEL", "MNIST_MEAN", "MNIST_STD", "IMAGENET_MEAN", "IMAGENET_STD",
    "default_num_workers", "verify_embedded_data", "create_mnist_dataset", "create_imagefolder_dataset",
    "create_segmentation_dataset",
]

DIGITS_CLASSES = tuple(str(d) for d in range(10))
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
_MNIST_FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
_verified: set = set()


def default_num_workers() -> int:
    """The number of CPU cores this process may use (the seeds' 8 fails on a 2-core machine)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS
        return max(1, os.cpu_count() or 1)


# ------------------------------------------------------------------------------------------ validation
def _check_common(batch_size, train, num_parallel_workers, num_shards, shard_id):
    check_int("batch_size", batch_size, 1, fix=_("pass a positive batch size such as 32"))
    check_bool("train", train, _("True for the training split, False for the test split"))
    cores = default_num_workers()
    if num_parallel_workers is None:
        num_parallel_workers = cores
    check_int("num_parallel_workers", num_parallel_workers, 1, cores,
              fix=_("this machine has {cores} cores; leave it as None to use them all").format(cores=cores))
    check_together("num_shards", num_shards, "shard_id", shard_id,
                   _("pass both (e.g. num_shards=get_group_size(), shard_id=get_rank()) or neither"))
    if num_shards is not None:
        check_int("num_shards", num_shards, 1, fix=_("pass the number of processes, e.g. get_group_size()"))
        check_int("shard_id", shard_id, 0, num_shards - 1,
                  fix=_("shard_id is this process's rank, 0..num_shards-1"))
    return int(num_parallel_workers)


def _check_batches(batch_size, samples, num_shards, drop_remainder, what):
    """A pipeline must give at least one batch: with ``drop_remainder`` a batch larger than the samples of a
    shard gives 0 batches, and MindData says nothing until something downstream fails."""
    shards = num_shards or 1
    per_shard = -(-samples // shards)  # MindSpore's DistributedSampler gives each shard ceil(n / shards)
    where = what if shards == 1 else _("{what} ({per_shard:,} per shard of {shards})").format(
        what=what, per_shard=per_shard, shards=shards)
    if samples == 0 or per_shard == 0:
        raise ValueError(_("{what} holds no samples, so the pipeline would give 0 batches. Fix: pass a folder with "
                           "data in it, or path=None for the embedded data.").format(what=what))
    if drop_remainder and batch_size > per_shard:
        raise ValueError(_("batch_size {batch_size} is larger than the {samples:,} samples of {where}, so with "
                           "drop_remainder=True the pipeline would give 0 batches. Fix: a batch_size of at most "
                           "{per_shard:,} (e.g. --batch_size {example}), or drop_remainder=False to keep the one "
                           "partial batch.").format(batch_size=batch_size, samples=samples, where=where,
                                                    per_shard=per_shard, example=min(32, per_shard)))


# ----------------------------------------------------------------------------------------- embedded data
def _manifest() -> dict:
    path = DATA_DIR / MANIFEST_NAME
    if not path.is_file():
        raise FileNotFoundError(_("The embedded data manifest {file} is missing. {fix}").format(
            file=f"{DATA_DIR.name}/{MANIFEST_NAME}", fix=regenerate_hint()))
    entries = {}
    for line in path.read_text().splitlines():
        digest, _sep, name = line.partition("  ")
        if digest and name:
            entries[name] = digest
    return entries


def verify_embedded_data(name: str) -> Path:
    """Check every file of embedded data set ``name`` against the manifest; return its folder."""
    if name in _verified:
        return DATA_DIR / name
    expected = {k: v for k, v in _manifest().items() if k.startswith(name + "/")}
    if not expected:
        raise FileNotFoundError(_("{file} lists no files for {name!r}. {fix}").format(
            file=f"{DATA_DIR.name}/{MANIFEST_NAME}", name=name, fix=regenerate_hint()))
    for rel, digest in expected.items():
        path = DATA_DIR / rel
        if not path.is_file():
            raise FileNotFoundError(_("Embedded data file {file} is missing. {fix}").format(
                file=f"{DATA_DIR.name}/{rel}", fix=regenerate_hint()))
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise ValueError(_("Embedded data file {file} is corrupted (its sha256 does not match {manifest}). "
                               "{fix}").format(file=f"{DATA_DIR.name}/{rel}",
                                               manifest=f"{DATA_DIR.name}/{MANIFEST_NAME}", fix=regenerate_hint()))
    _verified.add(name)
    return DATA_DIR / name


def _resolve(path, embedded: str, what: str) -> Path:
    if path is None:
        return verify_embedded_data(embedded)
    path = check_path("path", path, _("pass the folder that holds {what}, or path=None (data_path: null) for the "
                                      "embedded data").format(what=what)).expanduser()
    if not path.exists():
        raise FileNotFoundError(_("Data path {path} does not exist. Expected {what}. Fix: pass the folder that "
                                  "holds it, or path=None for the embedded data.").format(path=path, what=what))
    if not path.is_dir():
        raise NotADirectoryError(_("Data path {path} is a file; expected a folder holding {what}. Fix: pass the "
                                   "folder that holds it, or path=None for the embedded data.").format(
            path=path, what=what))
    return path


# ------------------------------------------------------------------------------------------------ MNIST
def _check_idx(path: Path, magic_dims: int):
    """Read an IDX header and compare the announced size with the file size (catches truncated files)."""
    data = path.read_bytes()[:4 + 4 * magic_dims]
    if len(data) < 4 + 4 * magic_dims or data[:3] != b"\x00\x00\x08" or data[3] != magic_dims:
        raise ValueError(_("{path} is not an MNIST IDX file with {magic_dims} dimension(s) of uint8. Fix: pass the "
                           "folder of the original, uncompressed MNIST files (gunzip the .gz files).").format(
            path=path, magic_dims=magic_dims))
    dims = struct.unpack(">" + "I" * magic_dims, data[4:])
    expected = 4 + 4 * magic_dims + int(np.prod(dims))
    if path.stat().st_size != expected:
        raise ValueError(_("{path} is truncated or corrupted: header announces {dims} ({expected} bytes) but the "
                           "file has {size} bytes. Fix: download the file again (or path=None for the embedded "
                           "digits).").format(path=path, dims=dims, expected=expected, size=path.stat().st_size))
    return dims[0]


#: MNIST's classes: the digits 0-9.
MNIST_NUM_CLASSES = 10


def mnist_labels(labels_file) -> np.ndarray:
    """The labels of an MNIST IDX label file, checked to be digits 0-9 (a corrupted byte is an error here, not a
    label the loss silently accepts)."""
    labels = np.frombuffer(Path(labels_file).read_bytes()[8:], np.uint8)
    bad = np.flatnonzero(labels >= MNIST_NUM_CLASSES)
    if bad.size:
        raise ValueError(_("{labels_file} has {count} label(s) outside 0-{last}: value "
                           "{value} at sample {sample}. The file is corrupted. Fix: download the MNIST label "
                           "files again (or path=None for the embedded digits).").format(
            labels_file=labels_file, count=bad.size, last=MNIST_NUM_CLASSES - 1, value=int(labels[bad[0]]),
            sample=int(bad[0])))
    return labels


def _mnist_folder(root: Path, train: bool) -> Path:
    """Accept the flat MNIST layout (all four files in one folder) and the seeds' train/ + test/ layout."""
    names = _MNIST_FILES[train]
    for folder in (root, root / ("train" if train else "test")):
        if all((folder / n).is_file() for n in names):
            return folder
    raise FileNotFoundError(
        _("No MNIST {split} files in {root}: expected {images} and {labels} there (or in its "
          "{split}/ subfolder). Fix: download and gunzip MNIST into that folder, or pass "
          "path=None to use the embedded digits.").format(
        split="train" if train else "test", root=root, images=names[0], labels=names[1]))


def _check_num_classes(num_classes, found: int, where):
    """The labels run 0..found-1: a network with fewer outputs would train silently on out-of-range labels."""
    if num_classes is None:
        return
    check_int("num_classes", num_classes, 2, fix=_("pass the number of classes the network predicts"))
    if found > num_classes:
        raise ValueError(_("{where} has {found} classes (labels 0-{last}), but num_classes is {num_classes}: "
                           "labels >= {num_classes} would train silently with a meaningless loss. Fix: "
                           "num_classes={found} (--num_classes {found}).").format(
            where=where, found=found, last=found - 1, num_classes=num_classes))


def create_mnist_dataset(path=None, batch_size=32, train=True, image_size=32, num_parallel_workers=None,
                         num_shards=None, shard_id=None, shuffle=None, drop_remainder=None, num_classes=None):
    """The MNIST pipeline of the programming guide's "Training", in MindSpore 2.10 spelling: columns image
    float32 (N,1,S,S), label int32 (N,).

    ``path=None`` reads the embedded digits (1,437 train / 360 test); a real MNIST folder works the same way.
    ``train`` picks the split and the defaults: shuffle and drop the last partial batch when training.
    ``num_classes`` (optional): the network's number of outputs, checked against the labels in the file.

    Taught in lesson 01 (notebooks/01_mindata_pipelines.ipynb).
    Copy held equal by tests/test_technique_agreement.py: the lesson's ``mnist_pipeline``.
    """
    workers = _check_common(batch_size, train, num_parallel_workers, num_shards, shard_id)
    check_int("image_size", image_size, 8, fix=_("LeNet-5 expects 32"))
    root = _resolve(path, "digits_mnist", _("MNIST IDX files (train-images-idx3-ubyte, ...)"))
    folder = _mnist_folder(root, train)
    images_file, labels_file = (folder / n for n in _MNIST_FILES[train])
    samples = _check_idx(images_file, 3)
    if samples != _check_idx(labels_file, 1):
        raise ValueError(_("{images} and {labels} in {folder} hold different numbers of "
                           "samples. Fix: use matching files from the same MNIST download.").format(
            images=images_file.name, labels=labels_file.name, folder=folder))
    labels = mnist_labels(labels_file)
    _check_num_classes(num_classes, int(labels.max()) + 1 if labels.size else 0, labels_file)
    shuffle = train if shuffle is None else shuffle
    drop_remainder = train if drop_remainder is None else drop_remainder
    _check_batches(batch_size, samples, num_shards, drop_remainder,
                   _("the MNIST {split} set {file}").format(split="train" if train else "test", file=images_file.name))

    data = ds.MnistDataset(str(folder), usage="train" if train else "test", shuffle=shuffle,
                           num_shards=num_shards, shard_id=shard_id, num_parallel_workers=workers)
    image_ops = [
        vision.Resize((image_size, image_size), interpolation=Inter.LINEAR),
        vision.Rescale(1.0 / 255.0, 0.0),
        vision.Rescale(1.0 / MNIST_STD, -MNIST_MEAN / MNIST_STD),
        vision.HWC2CHW(),
    ]
    data = data.map(operations=transforms.TypeCast(ms.int32), input_columns="label", num_parallel_workers=workers)
    data = data.map(operations=image_ops, input_columns="image", num_parallel_workers=workers)
    return data.batch(batch_size, drop_remainder=drop_remainder)


# ------------------------------------------------------------------------------------------ ImageFolder
def _check_image_folder(folder: Path):
    if not folder.is_dir():
        raise FileNotFoundError(_("Expected an image folder at {folder} with one subfolder per class "
                                  "(class_name/xxx.png). Fix: check the path; for ImageNet pass its root (holding "
                                  "train/ and val/).").format(folder=folder))
    classes = sorted(p for p in folder.iterdir() if p.is_dir())
    if not classes:
        raise ValueError(_("{folder} has no class subfolders; expected the layout class_name/xxx.png (one folder "
                           "per class). Fix: put each class's images in a subfolder named after the class, or pass "
                           "path=None for the embedded digits.").format(folder=folder))
    firsts = [next((f for f in sorted(c.iterdir()) if f.suffix.lower() in IMAGE_EXTENSIONS), None) for c in classes]
    if not any(firsts):
        raise ValueError(_("The class folders of {folder} ({classes}) contain no images "
                           "with extensions {extensions}. Fix: put the images into the class folders, or "
                           "pass path=None for the embedded digits.").format(
            folder=folder, classes=", ".join(c.name for c in classes[:5]), extensions=IMAGE_EXTENSIONS))
    from PIL import Image, UnidentifiedImageError

    for image in filter(None, firsts):  # one cheap check per class: MindData would only fail mid-epoch
        try:
            with Image.open(image) as opened:
                opened.verify()
        except (UnidentifiedImageError, OSError, SyntaxError) as error:
            raise ValueError(_("{image} is not a readable image ({type}). Fix: remove or replace the file; every "
                               "file in a class folder must be an image.").format(
                image=image, type=type(error).__name__)) from None
    return [c.name for c in classes]


def _count_images(folder: Path, enough: int) -> int:
    """The number of images in the class folders of ``folder``, counted only up to ``enough`` (a large data
    set such as ImageNet is not walked to the end just to prove it has more than one batch)."""
    count = 0
    for class_folder in sorted(p for p in folder.iterdir() if p.is_dir()):
        for entry in os.scandir(class_folder):
            if entry.name.lower().endswith(IMAGE_EXTENSIONS) and entry.is_file():
                count += 1
                if count >= enough:
                    return count
    return count


def create_imagefolder_dataset(path=None, batch_size=32, train=True, image_size=224, num_parallel_workers=None,
                               num_shards=None, shard_id=None, shuffle=None, drop_remainder=None, num_classes=None):
    """The ImageNet-style pipeline of the ResNet-50 migration example: Decode, Resize, CenterCrop, Normalize,
    HWC2CHW; label int32.

    ``path`` is a root with ``train/`` and ``val/`` class folders (the ImageNet layout); ``None`` = the embedded
    digits as PNG files (10 classes). Images come out float32 (N,3,image_size,image_size).
    ``num_classes`` (optional): the network's number of outputs; more class folders than that is an error.
    """
    workers = _check_common(batch_size, train, num_parallel_workers, num_shards, shard_id)
    check_int("image_size", image_size, 8, fix=_("use e.g. 224 (ImageNet) or 64 (quick runs)"))
    root = _resolve(path, "digits_png", _("an ImageNet-style root with train/ and val/ class folders"))
    folder = root / ("train" if train else "val")
    classes = _check_image_folder(folder)
    _check_num_classes(num_classes, len(classes), folder)
    shuffle = train if shuffle is None else shuffle
    drop_remainder = train if drop_remainder is None else drop_remainder
    _check_batches(batch_size, _count_images(folder, batch_size * (num_shards or 1)), num_shards, drop_remainder,
                   _("the image folder {folder}/").format(folder=folder.name))

    data = ds.ImageFolderDataset(str(folder), shuffle=shuffle, num_shards=num_shards, shard_id=shard_id,
                                 num_parallel_workers=workers, extensions=list(IMAGE_EXTENSIONS))
    image_ops = [
        vision.Decode(),
        vision.Resize(int(round(image_size / 0.875))),
        vision.CenterCrop(image_size),
        vision.Normalize(mean=[m * 255 for m in IMAGENET_MEAN], std=[s * 255 for s in IMAGENET_STD]),
        vision.HWC2CHW(),
    ]
    data = data.map(operations=image_ops, input_columns="image", num_parallel_workers=workers)
    data = data.map(operations=transforms.TypeCast(ms.int32), input_columns="label", num_parallel_workers=workers)
    return data.batch(batch_size, drop_remainder=drop_remainder)


# ---------------------------------------------------------------------------------------- segmentation
def _decode_mask(mask, height, width):
    return np.frombuffer(mask.tobytes(), dtype=np.uint8).reshape(int(height), int(width)).astype(np.int32)


def create_segmentation_dataset(path=None, batch_size=16, train=True, num_parallel_workers=None,
                                num_shards=None, shard_id=None, shuffle=None, drop_remainder=None):
    """The synthetic shapes set from MindRecord: image float32 (N,3,64,64) in [0,1], label int32 (N,64,64).

    Classes 0..3 are ``SHAPES_CLASSES``; pixels on object borders are ``IGNORE_LABEL`` (255).
    ``path`` is a folder holding ``shapes_train.mindrecord`` / ``shapes_val.mindrecord`` (None = embedded).
    """
    workers = _check_common(batch_size, train, num_parallel_workers, num_shards, shard_id)
    root = _resolve(path, "shapes", _("shapes_train.mindrecord and shapes_val.mindrecord"))
    file = root / f"shapes_{'train' if train else 'val'}.mindrecord"
    if not file.is_file() or not Path(str(file) + ".db").is_file():
        fix = regenerate_hint() if path is None else _(
            "Fix: pass the folder that holds both files (written by course_lib.data.generate), or path=None for the "
            "embedded shapes.")
        raise FileNotFoundError(_("Expected {file} and its index {file}.db in {root}. {fix}").format(
            file=file.name, root=root, fix=fix))
    shuffle = train if shuffle is None else shuffle
    drop_remainder = train if drop_remainder is None else drop_remainder

    data = ds.MindDataset(str(file), columns_list=["image", "mask", "height", "width"], shuffle=shuffle,
                          num_shards=num_shards, shard_id=shard_id, num_parallel_workers=workers)
    samples = ds.MindDataset(str(file), columns_list=["height"], shuffle=False).get_dataset_size()
    _check_batches(batch_size, samples, num_shards, drop_remainder,
                   _("the MindRecord file {file}").format(file=file.name))
    data = data.map(operations=[vision.Decode(), vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],
                    input_columns="image", num_parallel_workers=workers)
    data = data.map(operations=_decode_mask, input_columns=["mask", "height", "width"], output_columns=["label"],
                    num_parallel_workers=workers)
    data = data.project(["image", "label"])
    return data.batch(batch_size, drop_remainder=drop_remainder)

