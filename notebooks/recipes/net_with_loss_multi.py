# SPDX-License-Identifier: Apache-2.0
"""A loss cell for a network with two inputs, two outputs and two weighted losses.

What: `NetWithLoss(backbone, ...)` calls the backbone with (image, extra), applies a classification loss and a
  regression loss, and returns their weighted sum as one scalar, which `nn.TrainOneStepCell` differentiates.
  The script checks the value against a hand computation and that training lowers both losses.
When to use it: `nn.WithLossCell` only fits `construct(data, label)`; use this shape for several inputs or losses.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/04_train_one_step_and_sink.ipynb
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


class TwoHeadNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dense(6, 16), nn.Dense(2, 16)
        self.cls, self.reg = nn.Dense(16, 3), nn.Dense(16, 1)

    def construct(self, x, extra):
        hidden = ops.relu(self.a(x) + self.b(extra))
        return self.cls(hidden), self.reg(hidden)


class NetWithLoss(nn.Cell):
    """total = cls_weight * CE(logits, label) + reg_weight * MSE(value, target); returns (total, ce, mse)."""

    def __init__(self, backbone, cls_weight=1.0, reg_weight=0.5):
        super().__init__(auto_prefix=False)
        self.backbone = backbone
        self.ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        self.mse = nn.MSELoss()
        self.cls_weight, self.reg_weight = cls_weight, reg_weight

    def construct(self, x, extra, label, target):
        logits, value = self.backbone(x, extra)
        ce, mse = self.ce(logits, label), self.mse(value, target)
        return self.cls_weight * ce + self.reg_weight * mse, ce, mse


class TotalOnly(nn.Cell):
    """nn.TrainOneStepCell differentiates a single output: keep only the total."""

    def __init__(self, net_with_loss):
        super().__init__(auto_prefix=False)
        self.net_with_loss = net_with_loss

    def construct(self, *inputs):
        return self.net_with_loss(*inputs)[0]


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    rs = np.random.RandomState(0)
    x, extra = rs.randn(64, 6).astype(np.float32), rs.randn(64, 2).astype(np.float32)
    label = ((x[:, 0] + extra[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32))
    target = (0.5 * x[:, 2:3] - extra[:, 1:2]).astype(np.float32)
    data = [Tensor(v) for v in (x, extra, label, target)]

    backbone = TwoHeadNet()
    net_with_loss = NetWithLoss(backbone)
    total, ce, mse = (float(t.asnumpy()) for t in net_with_loss(*data))
    logits, value = (t.asnumpy() for t in backbone(data[0], data[1]))
    shifted = logits - logits.max(axis=1, keepdims=True)
    expected_ce = float(np.mean(np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(64), label]))
    expected_mse = float(np.mean((value - target) ** 2))
    check(np.isclose(ce, expected_ce, rtol=1e-5) and np.isclose(mse, expected_mse, rtol=1e-5),
          f"CE {ce} / MSE {mse} != numpy {expected_ce} / {expected_mse}")
    check(np.isclose(total, expected_ce + 0.5 * expected_mse, rtol=1e-5), f"total {total} != CE + 0.5 * MSE")

    train_step = nn.TrainOneStepCell(TotalOnly(net_with_loss), nn.Momentum(backbone.trainable_params(), 0.05, 0.9))
    train_step.set_train()
    for _ in range(100):
        train_step(*data)
    _, ce_after, mse_after = (float(t.asnumpy()) for t in net_with_loss(*data))
    check(ce_after < 0.5 * ce and mse_after < 0.5 * mse,
          f"training did not halve both losses: CE {ce} -> {ce_after}, MSE {mse} -> {mse_after}")
    print(f"loss value matches numpy; after 100 steps CE {ce:.3f} -> {ce_after:.3f}, MSE {mse:.3f} -> {mse_after:.3f}")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
