# SPDX-License-Identifier: Apache-2.0
"""Gradient accumulation: k micro-batches, one optimizer step, the same update as one k-times batch.

What: for each micro-batch, `ms.value_and_grad` gives the gradients of the mean loss; they are added to an
  accumulator, and after k micro-batches the optimizer gets `accumulated / k` and the accumulator is zeroed.
  With a mean-reduced loss and equal micro-batches, that is exactly the gradient of the mean loss over the
  k-times batch. The script checks it: 3 accumulated steps (4 micro-batches of 8) end with the same weights as
  3 steps with batches of 32, with a momentum optimizer. Not equal with BatchNorm: it normalises each
  micro-batch with that micro-batch's statistics (use GroupNorm/LayerNorm, or accept the difference).
When to use it: the batch you want does not fit in memory (large images, long sequences).
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/06_functional_training.ipynb
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def build():
    ms.set_seed(0)
    net = nn.SequentialCell(nn.Dense(6, 16), nn.ReLU(), nn.Dense(16, 3))
    return net, nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)


def make_grad_fn(net, optimizer):
    loss_fn = nn.CrossEntropyLoss()  # reduction="mean"

    def forward(x, y):
        return loss_fn(net(x), y)

    return ms.jit(ms.value_and_grad(forward, None, optimizer.parameters))


def train_accumulated(x, y, k):
    """x: (steps, batch, 6). Each step: k micro-batches of batch/k, one optimizer update."""
    net, optimizer = build()
    grad_fn = make_grad_fn(net, optimizer)
    accumulated = [ops.zeros_like(p) for p in optimizer.parameters]
    for step_x, step_y in zip(x, y):
        for micro_x, micro_y in zip(np.split(step_x, k), np.split(step_y, k)):
            _, grads = grad_fn(Tensor(micro_x), Tensor(micro_y))
            accumulated = [a + g for a, g in zip(accumulated, grads)]
        optimizer(tuple(a / k for a in accumulated))  # the mean of the k micro-batch gradients
        accumulated = [ops.zeros_like(a) for a in accumulated]  # start the next step from zero
    return np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])


def train_big_batch(x, y):
    net, optimizer = build()
    grad_fn = make_grad_fn(net, optimizer)
    for step_x, step_y in zip(x, y):
        optimizer(grad_fn(Tensor(step_x), Tensor(step_y))[1])
    return np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    rs = np.random.RandomState(0)
    x = rs.randn(3, 32, 6).astype(np.float32)
    y = rs.randint(0, 3, (3, 32)).astype(np.int32)
    start = build()[0]
    start = np.concatenate([p.asnumpy().ravel() for p in start.trainable_params()])
    big = train_big_batch(x, y)
    accumulated = train_accumulated(x, y, k=4)
    check(not np.allclose(big, start), "training did not move the weights")
    difference = np.abs(accumulated - big).max()
    check(np.allclose(accumulated, big, rtol=1e-5, atol=1e-6),
          f"4 x 8 accumulated != one batch of 32 (max |diff| {difference:.2e})")
    print(f"3 steps of 4 accumulated micro-batches of 8 = 3 steps with batches of 32 "
          f"(max |diff| {difference:.1e} over {big.size} weights)")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
