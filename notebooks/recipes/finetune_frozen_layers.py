# SPDX-License-Identifier: Apache-2.0
"""Fine-tuning with frozen layers: the backbone keeps its bits, BatchNorm stays in eval mode, the head learns.

What: a pretrained backbone (conv + BatchNorm) and a new classifier head. Freezing takes two lines, and both
  are needed: `param.requires_grad = False` on the backbone's parameters (then `net.trainable_params()`, the
  optimizer's list, holds only the head), and `backbone.set_train(False)` after every `net.set_train(True)`
  (otherwise BatchNorm normalises with batch statistics and overwrites its moving mean and variance, which are
  not trainable parameters and so are not frozen by requires_grad). The script trains the head for 20 steps
  and checks that every backbone parameter, moving statistics included, is bit-identical, that the head
  changed and that the loss fell. With `Model.train`, which calls `set_train(True)` on the whole network at
  the start, set the backbone back in a callback's `on_train_begin`.
When to use it: transfer learning from a pretrained model on a small data set, or training a new head first.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/07_migrate_resnet_from_pytorch.ipynb
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn


class FineTuneNet(nn.Cell):
    def __init__(self, num_classes):
        super().__init__()
        self.backbone = nn.SequentialCell(nn.Conv2d(1, 8, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(8),
                                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Dense(8, num_classes)

    def construct(self, x):
        return self.head(self.backbone(x))


def freeze(cell):
    for param in cell.get_parameters():
        param.requires_grad = False


def set_train_frozen(net):
    """Training mode for the head, inference mode (moving statistics, no updates) for the frozen backbone."""
    net.set_train(True)
    net.backbone.set_train(False)


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = FineTuneNet(num_classes=3)
    bn = net.backbone[1]  # "pretrained" moving statistics
    bn.moving_mean.set_data(Tensor(np.linspace(-0.3, 0.3, 8).astype(np.float32)))
    bn.moving_variance.set_data(Tensor(np.linspace(0.5, 1.5, 8).astype(np.float32)))
    freeze(net.backbone)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    check({p.name for p in optimizer.parameters} == {"head.weight", "head.bias"},
          f"the optimizer updates {[p.name for p in optimizer.parameters]}, expected only the head")
    loss_fn = nn.CrossEntropyLoss()

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.jit(ms.value_and_grad(forward, None, optimizer.parameters))
    rs = np.random.RandomState(0)
    x = rs.randn(64, 1, 8, 8).astype(np.float32) * 2 + 1  # batch statistics far from the moving ones
    y = (x.mean(axis=(1, 2, 3)) > 1).astype(np.int32) + (x[:, 0, 0, 0] > 2).astype(np.int32)
    frozen = {p.name: p.asnumpy().tobytes() for p in net.backbone.get_parameters()}
    head_before = net.head.weight.asnumpy().copy()
    set_train_frozen(net)
    losses = [float(grad_fn(Tensor(x), Tensor(y))[0].asnumpy())]
    for _ in range(20):
        loss, grads = grad_fn(Tensor(x), Tensor(y))
        optimizer(grads)
        losses.append(float(loss.asnumpy()))
    changed = [name for name, bits in frozen.items()
               if net.backbone.parameters_dict()[name].asnumpy().tobytes() != bits]
    check(not changed, f"frozen backbone parameters changed: {changed}")
    check(not np.array_equal(net.head.weight.asnumpy(), head_before), "the head did not train")
    check(losses[-1] < 0.8 * losses[0], f"the loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}")
    print(f"20 steps: {len(frozen)} backbone tensors (moving statistics included) bit-identical, head trained, "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
