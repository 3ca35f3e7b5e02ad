# SPDX-License-Identifier: Apache-2.0
"""Training-data augmentation with MindData: random crop with padding, flip, colour jitter; same seed, same images.

What: `augment_pipeline(images, labels, seed)` maps `vision.RandomCrop(32, padding=4)`,
  `vision.RandomHorizontalFlip()`, `vision.RandomColorAdjust(...)`, `vision.Normalize` and `vision.HWC2CHW` over
  uint8 HWC images, with 2 parallel workers, and batches them. `ds.config.set_seed(seed)` makes the random
  choices repeat: the script checks that two runs with the same seed give bit-identical batches, that another
  seed gives other images, that the augmentation really changed the images (the evaluation pipeline, without
  the random ops, is deterministic and unchanged), that the labels still belong to their images, and prints
  the pipeline's throughput in images per second.
When to use it: training any image classifier on a small data set; augment the training set only.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/01_mindata_pipelines.ipynb
"""
import argparse
import time

import mindspore.dataset as ds
import numpy as np
from mindspore.dataset import vision

MEAN, STD = [125.3, 123.0, 113.9], [63.0, 62.1, 66.7]


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def make_images(n=256, size=32):
    """Synthetic RGB images whose label is written into the image (class k: a bright row at 5 + 10k)."""
    rs = np.random.RandomState(0)
    images = rs.randint(0, 100, (n, size, size, 3)).astype(np.uint8)
    labels = rs.randint(0, 3, n).astype(np.int32)
    for image, label in zip(images, labels):
        image[5 + 10 * label] = 255  # a bright row: flips keep it, crops move it by at most 4 rows
    return images, labels


def augment_pipeline(images, labels, seed, batch_size=32):
    ds.config.set_seed(seed)  # the random ops draw from this seed: same seed, same augmented images
    data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False)
    train_ops = [vision.RandomCrop(32, padding=4), vision.RandomHorizontalFlip(),
                 vision.RandomColorAdjust(brightness=0.3, contrast=0.3), vision.Normalize(MEAN, STD),
                 vision.HWC2CHW()]
    data = data.map(train_ops, input_columns="image", num_parallel_workers=2)
    return data.batch(batch_size)


def eval_pipeline(images, labels, batch_size=32):
    data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False)
    data = data.map([vision.Normalize(MEAN, STD), vision.HWC2CHW()], input_columns="image")
    return data.batch(batch_size)


def collect(dataset):
    rows = list(dataset.create_tuple_iterator(num_epochs=1, output_numpy=True))
    return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])


def bright_row_class(chw_images):
    """The class written in each image: where its bright row is."""
    row = chw_images.mean(axis=(1, 3)).argmax(axis=1)  # (N, C, H, W) -> brightest row of each image
    return np.clip(np.round((row - 5) / 10), 0, 2).astype(np.int32)


def main():
    images, labels = make_images()
    start = time.perf_counter()
    first, first_labels = collect(augment_pipeline(images, labels, seed=1))
    seconds = time.perf_counter() - start
    again, again_labels = collect(augment_pipeline(images, labels, seed=1))
    other, _ = collect(augment_pipeline(images, labels, seed=2))
    plain, _ = collect(eval_pipeline(images, labels))

    check(first.shape == (256, 3, 32, 32) and first.dtype == np.float32, f"batches {first.shape} {first.dtype}")
    check(np.array_equal(first, again), "the same seed gave different augmented images")
    check(not np.array_equal(first, other), "seeds 1 and 2 gave the same images: the ops are not random")
    changed = np.mean([not np.allclose(a, p) for a, p in zip(first, plain)])
    check(changed > 0.9, f"only {changed:.0%} of the images were changed by the augmentation")
    check(np.array_equal(collect(eval_pipeline(images, labels))[0], plain), "the evaluation pipeline is random")
    check(np.array_equal(first_labels, labels) and np.array_equal(again_labels, labels), "labels reordered")
    found = bright_row_class(first)
    match = np.mean(found == first_labels)
    check(match > 0.95, f"labels no longer match their images (only {match:.0%} do)")
    print(f"augmentation: seed 1 twice -> identical, seed 2 -> different, {changed:.0%} of images changed, labels "
          f"kept; throughput {len(first) / seconds:.0f} images/s (2 workers, 32x32, first run incl. start-up)")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
