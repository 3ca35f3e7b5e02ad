# SPDX-License-Identifier: Apache-2.0
"""A functional training step: value_and_grad(has_aux=True) + @ms.jit + dynamic loss scaling + all_finite.

What: `forward` returns (scaled loss, logits); `ms.value_and_grad(..., has_aux=True)` differentiates only the
  loss and passes the logits through; the step unscales the gradients, skips the update when `all_finite` says
  they overflowed, and lets `DynamicLossScaler` shrink the scale. The script checks that the scaled run gives
  the same losses and weights as an unscaled one, and that a batch with an inf skips the update.
When to use it: custom training loops (several networks, GANs, anything beyond Model.train), and mixed
  precision, where float16 gradients can overflow.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/06_functional_training.ipynb
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn
from mindspore.amp import DynamicLossScaler, all_finite

ms.set_device("CPU")
ms.set_context(mode=ms.GRAPH_MODE)


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def build(seed=0):
    ms.set_seed(seed)
    net = nn.SequentialCell(nn.Dense(4, 16), nn.ReLU(), nn.Dense(16, 2))
    return net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), learning_rate=0.1)


net, loss_fn, optimizer = build()
scaler = DynamicLossScaler(scale_value=1024.0, scale_factor=2, scale_window=50)


def forward(x, y):
    logits = net(x)
    return scaler.scale(loss_fn(logits, y)), logits  # aux output: logits (no gradient)


grad_fn = ms.value_and_grad(forward, None, optimizer.parameters, has_aux=True)


@ms.jit
def train_step(x, y):
    (scaled_loss, logits), grads = grad_fn(x, y)
    loss = scaler.unscale(scaled_loss)
    grads = scaler.unscale(grads)
    finite = all_finite(grads)
    scaler.adjust(finite)  # halve the scale on overflow, grow it after scale_window good steps
    if finite:
        optimizer(grads)
    return loss, logits, finite


def weights(net):
    return np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])


def main():
    rs = np.random.RandomState(0)
    x = rs.randn(5, 32, 4).astype(np.float32)
    y = (x[..., 0] > x[..., 1]).astype(np.int32)

    # Reference: the same network and data, plain gradients, no scaling, no jit.
    ref_net, ref_loss_fn, ref_optimizer = build()

    def ref_forward(a, b):
        return ref_loss_fn(ref_net(a), b)

    ref_grad_fn = ms.value_and_grad(ref_forward, None, ref_optimizer.parameters)
    losses, ref_losses = [], []
    for i in range(5):
        losses.append(float(train_step(Tensor(x[i]), Tensor(y[i]))[0].asnumpy()))
        ref_loss, ref_grads = ref_grad_fn(Tensor(x[i]), Tensor(y[i]))
        ref_optimizer(ref_grads)
        ref_losses.append(float(ref_loss.asnumpy()))
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(weights(net), weights(ref_net), rtol=1e-5, atol=1e-6)
    check(losses[-1] < losses[0] and float(scaler.scale_value.asnumpy()) == 1024.0,
          f"loss did not fall ({losses}) or the scale moved ({scaler.scale_value})")

    # Overflow: an inf in the batch makes the gradients non-finite -> no update, scale halved.
    bad = x[0].copy()
    bad[0, 0] = np.inf
    before = weights(net)
    _, logits, finite = train_step(Tensor(bad), Tensor(y[0]))
    check(not bool(finite.asnumpy()) and logits.shape == (32, 2), "an inf batch gave finite gradients")
    np.testing.assert_array_equal(weights(net), before)
    check(float(scaler.scale_value.asnumpy()) == 512.0, f"scale after an overflow {scaler.scale_value}, expected 512")
    _, _, finite = train_step(Tensor(x[0]), Tensor(y[0]))
    check(bool(finite.asnumpy()) and not np.array_equal(weights(net), before),
          "a good batch after the overflow did not update")
    print(f"loss scale 1024 matches unscaled training over 5 steps (loss {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}); an inf batch skipped the update and halved the scale to 512")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
