# SPDX-License-Identifier: Apache-2.0
"""Images of different sizes: one dynamic-shape graph, batches grouped by size, no padding.

What: a network that ends with a global average pool (`ops.mean` over height and width) accepts any image size.
  `net.set_inputs(Tensor(shape=[None, 3, None, None], dtype=ms.float32))` compiles one graph for every batch
  size and image size, instead of one graph per new shape. Images of the same size are batched together
  (`batches_by_size`), so no image is padded. The script checks that every image is scored exactly once and that
  each output equals a call on that image alone; it also shows why padding to the largest size is wrong: the
  zeros enter the convolutions and the global average, and the outputs change.
When to use it: detection or segmentation inputs, documents, any data set whose images are not resized to one
  size. (Resizing to one size, as classifiers usually do, avoids all this.)
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/02_cells_lenet_resnet.ipynb
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops


class GlobalPoolNet(nn.Cell):
    def __init__(self, num_classes=5):
        super().__init__()
        self.features = nn.SequentialCell(
            nn.Conv2d(3, 8, 3, pad_mode="same"), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, pad_mode="same"), nn.ReLU())
        self.head = nn.Dense(16, num_classes)

    def construct(self, x):
        return self.head(ops.mean(self.features(x), (2, 3)))  # (N, 16) whatever the height and width


def batches_by_size(images, batch_size):
    """Yield (indices, stacked batch); every batch holds images of one size only."""
    groups = {}
    for index, image in enumerate(images):
        groups.setdefault(image.shape, []).append(index)
    for indices in groups.values():
        for start in range(0, len(indices), batch_size):
            chunk = indices[start:start + batch_size]
            batch = np.stack([images[i] for i in chunk])
            yield chunk, batch


def pad_to(image, size):
    """Zero-pad a (C, H, W) image at the bottom and right to (C, *size)."""
    return np.pad(image, ((0, 0), (0, size[0] - image.shape[1]), (0, size[1] - image.shape[2])))


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    rs = np.random.RandomState(0)
    sizes = [(16, 16), (24, 20), (32, 28)]
    images = [rs.randn(3, *sizes[rs.randint(3)]).astype(np.float32) for _ in range(30)]
    net = GlobalPoolNet()
    net.set_train(False)
    net.set_inputs(Tensor(shape=[None, 3, None, None], dtype=ms.float32))  # one graph for every shape

    outputs = np.full((len(images), 5), np.nan, np.float32)
    counts = np.zeros(len(images), np.int64)
    for chunk, batch in batches_by_size(images, batch_size=4):
        check(len({images[i].shape for i in chunk}) == 1, "a batch mixes image sizes")
        outputs[chunk] = net(Tensor(batch)).asnumpy()
        counts[chunk] += 1
    check((counts == 1).all(), f"images scored {sorted(set(counts.tolist()))} times, expected once each")

    alone = np.concatenate([net(Tensor(image[None])).asnumpy() for image in images])
    np.testing.assert_allclose(outputs, alone, rtol=1e-4, atol=1e-5,
                               err_msg="a batched output differs from the image scored alone")
    padded = np.concatenate([net(Tensor(pad_to(image, (32, 28))[None])).asnumpy() for image in images])
    small = [i for i, image in enumerate(images) if image.shape[1:] != (32, 28)]
    change = float(np.abs(padded[small] - alone[small]).max())
    check(change > 1e-3, f"zero-padding changed the outputs by only {change}")
    print(f"{len(images)} images of {len(sizes)} sizes in {len(list(batches_by_size(images, 4)))} same-size batches "
          f"through one dynamic-shape graph: each scored once and equal to the image alone; zero-padding to "
          f"32x28 would change the outputs by up to {change:.3f}")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
