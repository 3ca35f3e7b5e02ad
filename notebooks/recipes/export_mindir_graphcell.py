# SPDX-License-Identifier: Apache-2.0
"""Export a trained network to MindIR and run it again with `nn.GraphCell`.

What: `ms.export(net, example_input, file_name=..., file_format="MINDIR")` writes the network's graph and
  weights to one `.mindir` file; `ms.load` reads it back and `nn.GraphCell` runs it without the Python class
  of the network. The script checks that the loaded graph gives the same outputs as the eager network, in
  eval mode (BatchNorm with its moving statistics, Dropout off).
When to use it: deployment, or handing a model to someone who does not have your model code
  (MindSpore Lite and serving read the same file).
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/09_inference_and_export.ipynb
"""
import argparse
import os
import shutil
import tempfile

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


class SmallConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.features = nn.SequentialCell(
            nn.Conv2d(1, 8, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.head = nn.SequentialCell(nn.Flatten(), nn.Dropout(p=0.5), nn.Dense(8 * 4 * 4, 10))

    def construct(self, x):
        return self.head(self.features(x))


def export_and_load(net, example, folder):
    """Export net (already in inference mode) to folder/small_convnet.mindir; load it back as an nn.GraphCell."""
    ms.export(net, example, file_name=os.path.join(folder, "small_convnet"), file_format="MINDIR")
    path = os.path.join(folder, "small_convnet.mindir")
    check(os.path.getsize(path) > 0, "ms.export wrote an empty MindIR file")
    return nn.GraphCell(ms.load(path))


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = SmallConvNet()
    bn = net.features[1]  # non-trivial moving statistics, as after training
    bn.moving_mean.set_data(Tensor(np.linspace(-0.5, 0.5, 8).astype(np.float32)))
    bn.moving_variance.set_data(Tensor(np.linspace(0.5, 2.0, 8).astype(np.float32)))
    net.set_train(False)  # export the inference graph
    x = Tensor(np.random.RandomState(0).randn(4, 1, 8, 8).astype(np.float32))
    eager = net(x).asnumpy()

    folder = tempfile.mkdtemp(prefix="recipe-mindir-")
    try:
        graph = export_and_load(net, x, folder)
        loaded = graph(x).asnumpy()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    np.testing.assert_allclose(loaded, eager, rtol=1e-5, atol=1e-6)
    # An inference graph: each sample's output depends on that sample only (BatchNorm uses its moving statistics,
    # Dropout is off), so changing the other samples of the batch leaves it unchanged.
    changed = x.asnumpy().copy()
    changed[1:] = np.random.RandomState(1).randn(3, 1, 8, 8)
    check(np.allclose(graph(Tensor(changed)).asnumpy()[0], loaded[0], rtol=1e-5, atol=1e-6),
          "the exported graph is a training graph (batch statistics or Dropout). Fix: net.set_train(False) first")
    check(eager.shape == (4, 10) and np.abs(eager).max() > 0,
          f"eager output {eager.shape} is not (4, 10) logits or is all zero")
    print(f"MindIR graph output equals the eager network's (max |diff| {np.abs(loaded - eager).max():.2e}, "
          f"shape {loaded.shape})")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
