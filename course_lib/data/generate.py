"""Regenerate the embedded data sets in ``data/`` bit-for-bit (``make data`` or ``python -m course_lib.data.generate``).

Nothing is downloaded: the digits are scikit-learn's bundled copy of the UCI handwritten digits (1,797 real
8x8 scans), the segmentation "shapes" are drawn from a fixed seed. Every file is first written into a
temporary folder next to ``data/`` and moved into place only when complete, then listed in
``data/MANIFEST.sha256``, which ``course_lib.data.datasets`` verifies before reading.

``--out DIR`` never replaces anything of a user's: datagen writes into DIR only when DIR holds none of its
folders (``digits_mnist/``, ``digits_png/``, ``shapes/``) and no ``MANIFEST.sha256``, or exactly what an earlier
datagen run wrote there (every file listed in the manifest with its digest, no other file in those folders).
Otherwise it refuses and names the files that differ. Other files in DIR are never touched.

A killed run leaves its temporary folder ``.tmp-datagen-<pid>-*`` beside the target; the next run deletes it once
its owner record proves that process has ended (``course_lib.staging``). A full disk stops the run with one
message (what, where, how much space it needs, the fix) and leaves the target as it was.
"""
import argparse
import hashlib
import io
import os
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

from course_lib import staging as _staging
from course_lib.i18n import _
from course_lib.paths import DATA_DIR, relative

DIGITS_SEED = 20240601
DIGITS_TEST_SIZE = 360
SHAPES_SEED = 20240602
SHAPES_SIZE = 64
SHAPES_TRAIN, SHAPES_VAL = 320, 80
SHAPES_CLASSES = ("background", "circle", "rectangle", "triangle")
IGNORE_LABEL = 255
MANIFEST_NAME = "MANIFEST.sha256"
DATASETS = ("digits_mnist", "digits_png", "shapes")
STAGING_PREFIX = _staging.DATAGEN_PREFIX
#: The disk space datagen needs, for the free-space check: `du -s data` is 13 MB on a disk with 4 KiB blocks
#: (6.9 MB of file content in about 1,800 small files).
EXPECTED_BYTES = 14_000_000
def regenerate_hint() -> str:
    """The fix for missing or damaged embedded data, in the learner's language."""
    return _("Fix: regenerate it with `make data` (or `python -m course_lib.data.generate`) from the repository "
             "root.")


# ---------------------------------------------------------------------------------------------- digits
def load_digit_images():
    """The 1,797 UCI digit scans upsampled to 28x28 uint8, MNIST-style (digit in a 20x20 box, centred)."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.zeros((len(digits.images), 28, 28), dtype=np.uint8)
    for i, scan in enumerate(digits.images):
        small = Image.fromarray(np.round(scan * (255.0 / 16.0)).astype(np.uint8), mode="L")
        images[i, 4:24, 4:24] = np.asarray(small.resize((20, 20), Image.BILINEAR))
    return images, digits.target.astype(np.uint8)


def split_digits(labels):
    """Indices of a fixed random train/test split (the same on every machine)."""
    order = np.random.default_rng(DIGITS_SEED).permutation(len(labels))
    return np.sort(order[DIGITS_TEST_SIZE:]), np.sort(order[:DIGITS_TEST_SIZE])


def write_idx(path: Path, array: np.ndarray):
    """Write a uint8 array in the IDX format MNIST uses (magic 0x0803 images, 0x0801 labels)."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    path.write_bytes(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def write_digits(root: Path):
    images, labels = load_digit_images()
    train_idx, test_idx = split_digits(labels)
    mnist = root / "digits_mnist"
    mnist.mkdir(parents=True)
    for prefix, idx in (("train", train_idx), ("t10k", test_idx)):
        write_idx(mnist / f"{prefix}-images-idx3-ubyte", images[idx])
        write_idx(mnist / f"{prefix}-labels-idx1-ubyte", labels[idx])
    from PIL import Image

    for split, idx in (("train", train_idx), ("val", test_idx)):
        for i in idx:
            folder = root / "digits_png" / split / str(labels[i])
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(images[i], mode="L").save(folder / f"{i:04d}.png", format="PNG", optimize=False)


# ---------------------------------------------------------------------------------------------- shapes
def shape_colour(rng, kind, base, colour_hint=True):
    """An RGB fill that differs from the background ``base``; with ``colour_hint`` its hue tells the class.

    The hint (circles reddish, rectangles greenish, triangles bluish, each channel drawn at random) lets lesson
    05's small network reach mIoU 0.9 in about a minute on a CPU; without it, telling the shapes apart by
    outline alone takes many times longer.
    """
    for _attempt in range(100):
        if colour_hint:
            colour = rng.uniform(0, 90, size=3)
            colour[kind - 1] = rng.uniform(170, 255)
        else:
            colour = rng.uniform(0, 255, size=3)
        if np.abs(colour - base).max() >= 60:
            return colour
    # A background close to every allowed colour (rare with the hint): take the allowed colour farthest from it.
    low, high = np.zeros(3), np.full(3, 90.0 if colour_hint else 255.0)
    if colour_hint:
        low[kind - 1], high[kind - 1] = 170.0, 255.0
    return np.where(np.abs(low - base) > np.abs(high - base), low, high)


def _draw_sample(rng, size=SHAPES_SIZE, colour_hint=True):
    """One image (H,W,3 uint8) and its mask (H,W uint8): 1-3 shapes on a textured background."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    base = rng.uniform(40, 200, size=3)
    tilt = rng.uniform(-0.6, 0.6, size=(2, 3))
    image = base + yy[..., None] * tilt[0] + xx[..., None] * tilt[1]
    mask = np.zeros((size, size), dtype=np.uint8)
    for _shape in range(rng.integers(1, 4)):
        kind = int(rng.integers(1, 4))
        cy, cx = rng.uniform(12, size - 12, size=2)
        r = rng.uniform(7, 14)
        if kind == 1:
            inside = (yy - cy) ** 2 + (xx - cx) ** 2 <= r ** 2
        elif kind == 2:
            h, w = rng.uniform(0.6, 1.0, size=2) * r
            inside = (np.abs(yy - cy) <= h) & (np.abs(xx - cx) <= w)
        else:
            angle = rng.uniform(0, 2 * np.pi)
            corners = [(cy + r * np.sin(angle + k * 2 * np.pi / 3), cx + r * np.cos(angle + k * 2 * np.pi / 3))
                       for k in range(3)]
            inside = np.ones_like(mask, dtype=bool)
            for k in range(3):
                (y0, x0), (y1, x1) = corners[k], corners[(k + 1) % 3]
                inside &= (x1 - x0) * (yy - y0) - (y1 - y0) * (xx - x0) >= 0
        image[inside] = shape_colour(rng, kind, base, colour_hint)
        mask[inside] = kind
    image += rng.normal(0, 3, size=image.shape)
    return np.clip(np.round(image), 0, 255).astype(np.uint8), mask


def ignore_borders(mask: np.ndarray) -> np.ndarray:
    """Label every pixel whose 4-neighbourhood crosses a class boundary as IGNORE_LABEL."""
    border = np.zeros(mask.shape, dtype=bool)
    border[1:, :] |= mask[1:, :] != mask[:-1, :]
    border[:-1, :] |= mask[1:, :] != mask[:-1, :]
    border[:, 1:] |= mask[:, 1:] != mask[:, :-1]
    border[:, :-1] |= mask[:, 1:] != mask[:, :-1]
    out = mask.copy()
    out[border] = IGNORE_LABEL
    return out


def shapes_samples(count: int, seed: int, colour_hint: bool = True):
    """Yield ``count`` (png_bytes, mask) pairs; the same seed gives the same bytes."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for _sample in range(count):
        image, mask = _draw_sample(rng, colour_hint=colour_hint)
        buf = io.BytesIO()
        Image.fromarray(image, mode="RGB").save(buf, format="PNG", optimize=False)
        yield buf.getvalue(), ignore_borders(mask)


SHAPES_SCHEMA = {
    "image": {"type": "bytes"},     # PNG, decoded by mindspore.dataset.vision.Decode
    "mask": {"type": "bytes"},      # raw uint8, height x width, 255 = ignore
    "height": {"type": "int32"},
    "width": {"type": "int32"},
}


def write_shapes(root: Path):
    from mindspore.mindrecord import FileWriter

    folder = root / "shapes"
    folder.mkdir(parents=True)
    for split, count, seed in (("train", SHAPES_TRAIN, SHAPES_SEED), ("val", SHAPES_VAL, SHAPES_SEED + 1)):
        writer = FileWriter(str(folder / f"shapes_{split}.mindrecord"), shard_num=1, overwrite=False)
        writer.set_header_size(1 << 16)  # the defaults (16 MB header, 32 MB pages) pad each file to ~50 MB
        writer.set_page_size(1 << 16)
        writer.add_schema(SHAPES_SCHEMA, f"shapes_{split}")
        rows = [{"image": png, "mask": mask.tobytes(), "height": mask.shape[0], "width": mask.shape[1]}
                for png, mask in shapes_samples(count, seed)]
        writer.write_raw_data(rows)
        writer.commit()


# --------------------------------------------------------------------------------------------- manifest
def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_manifest(root: Path) -> str:
    lines = []
    for path in sorted(p for name in DATASETS for p in (root / name).rglob("*") if p.is_file()):
        lines.append(f"{file_digest(path)}  {path.relative_to(root).as_posix()}")
    return "\n".join(lines) + "\n"


class DatagenRefused(FileExistsError):
    """The target folder holds files that datagen did not write (or that changed since): they are not replaced."""


def _not_datagens(target: Path) -> list[str]:
    """What in ``target`` datagen would replace but did not write itself (empty: safe to replace)."""
    present = [name for name in (*DATASETS, MANIFEST_NAME) if (target / name).exists()]
    if not present:
        return []
    manifest = target / MANIFEST_NAME
    if not manifest.is_file():
        return [_("{name} (no {manifest} says datagen wrote it)").format(name=name, manifest=MANIFEST_NAME)
                for name in present]
    listed = {}
    for line in manifest.read_text(encoding="utf-8", errors="replace").splitlines():
        digest, _sep, name = line.partition("  ")
        if not name or len(digest) != 64:
            return [_("{manifest} (not a datagen manifest: line {line!r})").format(manifest=MANIFEST_NAME,
                                                                                    line=line[:60])]
        listed[name] = digest
    found = {p.relative_to(target).as_posix(): p for name in DATASETS if (target / name).exists()
             for p in ([target / name] if (target / name).is_file() else (target / name).rglob("*")) if p.is_file()}
    problems = [_("{name} (not written by datagen)").format(name=name) for name in sorted(set(found) - set(listed))]
    problems += [_("{name} (listed in {manifest}, missing)").format(name=name, manifest=MANIFEST_NAME)
                 for name in sorted(set(listed) - set(found)) if name.split("/")[0] in DATASETS]
    problems += [_("{name} (changed since datagen wrote it)").format(name=name)
                 for name in sorted(set(found) & set(listed)) if file_digest(found[name]) != listed[name]]
    problems += [_("{manifest} (lists {name}, which is not datagen's)").format(manifest=MANIFEST_NAME, name=name)
                 for name in sorted(listed) if name.split("/")[0] not in DATASETS]
    return problems


def clean_stale_staging(parent: Path, report=print) -> list[Path]:
    """Delete the temporary folders of killed datagen runs in ``parent`` (only those whose owner has ended)."""
    removed = []
    for folder in _staging.stale_folders(parent, STAGING_PREFIX):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
            report(f"removed {relative(folder)}/, left by a datagen run that was stopped")
    return removed


def generate(target: Path = DATA_DIR, quiet: bool = False) -> Path:
    """Build every data set in a temporary folder beside ``target`` and move them into place.

    Raises DatagenRefused when ``target`` holds files of datagen's names that datagen did not write, and
    ``course_lib.staging.DiskFullError`` when the disk fills up (``target`` is then left as it was).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(target.parent, report=(lambda _line: None) if quiet else print)
    foreign = _not_datagens(target)
    if foreign:
        shown = "\n  ".join(foreign[:10]) + (f"\n  ... and {len(foreign) - 10} more" if len(foreign) > 10 else "")
        raise DatagenRefused(
            _("Not writing into {target}: it holds files that datagen did not write, and datagen never replaces "
              "them:\n  {shown}\nFix: pass an empty or new folder to --out, or move these files away first.").format(
            target=target, shown=shown))
    fix = _("free at least {size} on that disk, or pass another folder with --out (`python -m "
            "course_lib.data.generate --out /a/folder/with/space`).").format(size=_staging.megabytes(EXPECTED_BYTES))
    if _staging.shutil_free(target.parent) < EXPECTED_BYTES:
        raise _staging.DiskFullError(_("the course's data sets"), target.parent, EXPECTED_BYTES, fix)
    staging = _staging.claim(target.parent, STAGING_PREFIX)
    try:
        write_digits(staging)
        write_shapes(staging)
        manifest = build_manifest(staging)
        target.mkdir(exist_ok=True)
        for name in DATASETS:
            old = target / name
            if old.exists():
                os.replace(old, staging / f"replaced-{name}")  # datagen's own, verified above; deleted below
            os.replace(staging / name, old)
        tmp_manifest = target / (MANIFEST_NAME + ".tmp")
        tmp_manifest.write_text(manifest)
        os.replace(tmp_manifest, target / MANIFEST_NAME)
    except OSError as error:
        if _staging.is_disk_full(error):
            shutil.rmtree(staging, ignore_errors=True)  # first, so that the message shows the space really free
            raise _staging.DiskFullError(_("the course's data sets"), target.parent, EXPECTED_BYTES, fix) from None
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not quiet:
        print(_("wrote {count} files under {target}/ and {manifest}").format(
            count=len(manifest.splitlines()), target=relative(target), manifest=MANIFEST_NAME))
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="target folder (default: the repo's data/)")
    args = parser.parse_args(argv)
    try:
        generate(args.out)
    except (DatagenRefused, _staging.DiskFullError) as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
