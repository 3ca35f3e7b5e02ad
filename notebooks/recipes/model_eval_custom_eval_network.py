# SPDX-License-Identifier: Apache-2.0
"""`Model.eval` with a custom `eval_network` and `eval_indexes`.

What: the eval network returns `(loss, logits, label)` and adds evaluation-only post-processing (here
  test-time augmentation: the mean of the logits for the input and its mirror image). `eval_indexes=[0, 1, 2]`
  tells `Model` which output is the loss, the prediction and the label, so the built-in `Loss` and `Accuracy`
  metrics (and your own) receive the right tensors. The script checks both metrics against numpy.
When to use it: evaluation that differs from training: post-processing, extra outputs, several predictions.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/05_eval_indexes_miou.ipynb
"""
import argparse

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn, ops
from mindspore.train import Accuracy, Loss, Model


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


class FlipEvalCell(nn.Cell):
    """(image, label) -> (loss, logits averaged over the image and its left-right mirror, label)."""

    def __init__(self, network, loss_fn):
        super().__init__(auto_prefix=False)
        self.network, self.loss_fn = network, loss_fn

    def construct(self, image, label):
        logits = (self.network(image) + self.network(ops.flip(image, (3,)))) / 2
        return self.loss_fn(logits, label), logits, label


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    rs = np.random.RandomState(0)
    images = rs.randn(40, 1, 4, 6).astype(np.float32)
    labels = rs.randint(0, 3, 40).astype(np.int32)
    net = nn.SequentialCell(nn.Flatten(), nn.Dense(24, 3))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, metrics={"accuracy": Accuracy(), "loss": Loss()},
                  eval_network=FlipEvalCell(net, loss_fn), eval_indexes=[0, 1, 2])
    data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False).batch(8)
    results = model.eval(data, dataset_sink_mode=False)

    weight, bias = net[1].weight.asnumpy(), net[1].bias.asnumpy()
    logits = ((images.reshape(40, -1) + images[..., ::-1].reshape(40, -1)) / 2) @ weight.T + bias
    shifted = logits - logits.max(axis=1, keepdims=True)
    losses = np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(40), labels]
    expected_loss = float(np.mean(losses.reshape(5, 8).mean(axis=1)))  # Loss averages the per-batch losses
    expected_accuracy = float(np.mean(logits.argmax(axis=1) == labels))
    plain_accuracy = float(np.mean((images.reshape(40, -1) @ weight.T + bias).argmax(axis=1) == labels))
    check(np.isclose(results["loss"], expected_loss, rtol=1e-5),
          f"Model.eval loss {results['loss']} != numpy {expected_loss}")
    check(results["accuracy"] == expected_accuracy,
          f"Model.eval accuracy {results['accuracy']} != numpy {expected_accuracy}")
    print(f"Model.eval with FlipEvalCell: accuracy {results['accuracy']:.3f} (without the flip {plain_accuracy:.3f}), "
          f"loss {results['loss']:.4f}; both match numpy")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
