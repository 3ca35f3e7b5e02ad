# SPDX-License-Identifier: Apache-2.0
"""Linear warmup + cosine learning rate, with weight decay on weights only (none on BatchNorm or biases).

What: the schedule is a plain per-step Python list (`lr[i]`), which every MindSpore optimizer accepts as a
  dynamic learning rate; no deprecated helper (`nn.cosine_decay_lr`, `nn.warmup_lr`, `nn.WarmUpLR`) is needed.
  Parameter groups give `weight_decay` to conv/dense weights and 0 to BatchNorm gamma/beta and to biases.
  The script checks, with a zero loss gradient, that a decayed weight shrinks by exactly prod(1 - lr[i] * wd)
  over the steps, and that gamma, beta and the biases do not change.
When to use it: ResNet-style training (warmup for large batches, cosine decay, no decay on BN/bias).
  For an epoch-based scheduler object, see `mindspore.experimental.optim.lr_scheduler`
  (LinearLR + CosineAnnealingLR + SequentialLR) with the `mindspore.experimental.optim` optimizers.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/06_functional_training.ipynb (applied to ResNet-50: notebooks/07_migrate_resnet_from_pytorch.ipynb)
"""
import argparse
import math

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def warmup_cosine_lr(lr_max, lr_min, warmup_steps, total_steps):
    """Per step: linear from lr_max/warmup_steps up to lr_max, then cosine from lr_max down to lr_min."""
    warmup = [lr_max * (i + 1) / warmup_steps for i in range(warmup_steps)]
    decay_steps = total_steps - warmup_steps
    cosine = [lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * i / decay_steps))
              for i in range(decay_steps)]
    return warmup + cosine


def param_groups(net, weight_decay, no_decay=("gamma", "beta", "bias")):
    decayed, not_decayed = [], []
    for param in net.trainable_params():
        (not_decayed if param.name.rsplit(".", 1)[-1] in no_decay else decayed).append(param)
    return [{"params": decayed, "weight_decay": weight_decay},
            {"params": not_decayed, "weight_decay": 0.0},
            {"order_params": net.trainable_params()}]  # keep the network's parameter order


class ZeroLoss(nn.Cell):
    """A loss whose gradient is 0 everywhere: only weight decay moves the parameters."""

    def __init__(self, net):
        super().__init__(auto_prefix=False)  # keep the parameter names of net
        self.net = net

    def construct(self, x):
        return ops.sum(self.net(x)) * 0.0


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    lr = warmup_cosine_lr(lr_max=0.1, lr_min=0.001, warmup_steps=5, total_steps=20)
    check(len(lr) == 20 and lr[4] == 0.1 and max(lr) == 0.1 and np.isclose(lr[5], 0.1),
          f"schedule peak or length wrong: {lr}")
    check(all(a < b for a, b in zip(lr[:5], lr[1:5])) and all(a > b for a, b in zip(lr[5:], lr[6:])),
          f"warmup must rise and cosine fall: {lr}")

    net = nn.SequentialCell(nn.Conv2d(1, 4, 3, has_bias=True), nn.BatchNorm2d(4), nn.ReLU(),
                            nn.Flatten(), nn.Dense(4 * 6 * 6, 3))
    groups = param_groups(net, weight_decay=0.01)
    check(sorted(p.name.rsplit(".", 1)[-1] for p in groups[1]["params"]) == ["beta", "bias", "bias", "gamma"],
          f"the no-decay group is {[p.name for p in groups[1]['params']]}")
    optimizer = nn.Momentum(groups, learning_rate=lr, momentum=0.0)  # momentum 0: plain SGD, easy to check
    before = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    train_step = nn.TrainOneStepCell(ZeroLoss(net), optimizer)
    x = Tensor(np.ones((2, 1, 6, 6), np.float32))
    for _ in range(len(lr)):
        train_step(x)
    shrink = float(np.prod([1 - step_lr * 0.01 for step_lr in lr]))
    for p in net.trainable_params():
        leaf = p.name.rsplit(".", 1)[-1]
        expected = before[p.name] if leaf in ("gamma", "beta", "bias") else before[p.name] * shrink
        np.testing.assert_allclose(p.asnumpy(), expected, rtol=1e-5, atol=1e-7, err_msg=p.name)
    print(f"lr: warmup {lr[0]:.3f} -> {lr[4]:.3f}, cosine -> {lr[-1]:.4f}; weights shrank by {shrink:.5f} "
          f"(= prod(1 - lr*wd)); gamma, beta and biases unchanged")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
