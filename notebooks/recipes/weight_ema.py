# SPDX-License-Identifier: Apache-2.0
"""Weight EMA: keep an exponential moving average of the weights and evaluate with it.

What: `WeightEMA(net, decay)` holds a copy of every trainable parameter. After each optimizer step,
  `update()` sets `ema = decay * ema + (1 - decay) * weight` (one jitted function). `swap_in()` puts the EMA
  values into the network for evaluation and `swap_out()` restores the training weights bit for bit. The
  script checks the EMA against the formula computed in numpy from the recorded weights, that evaluation
  inside swap_in/swap_out uses the EMA weights, and that training resumes from the exact training weights.
  With BatchNorm, average the moving mean and variance too (pass them in `params`) or re-estimate them.
When to use it: smoother, often better final weights (image classifiers, detectors, diffusion models).
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/06_functional_training.ipynb
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Parameter, ParameterTuple, Tensor, nn, ops


class WeightEMA(nn.Cell):
    def __init__(self, net, decay=0.9, params=None):
        super().__init__()
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must be in (0, 1), got {decay}")
        self.params = ParameterTuple(params if params is not None else net.trainable_params())
        self.decay = decay
        self.shadow = ParameterTuple([Parameter(p.value().copy(), name=f"ema.{p.name}", requires_grad=False)
                                      for p in self.params])
        self.backup = None

    def construct(self):
        for ema, weight in zip(self.shadow, self.params):
            ops.assign(ema, self.decay * ema + (1.0 - self.decay) * weight)
        return True

    def update(self):
        self()

    def swap_in(self):
        """Evaluation: the network gets the EMA weights; the training weights are kept aside."""
        self.backup = [p.value().copy() for p in self.params]
        for p, ema in zip(self.params, self.shadow):
            p.set_data(ema.value().copy())

    def swap_out(self):
        """Back to training: the exact training weights return."""
        for p, saved in zip(self.params, self.backup):
            p.set_data(saved)
        self.backup = None


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def numpy_forward(weights, x):
    w1, b1, w2, b2 = weights
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    rs = np.random.RandomState(0)
    x = rs.randn(8, 32, 6).astype(np.float32)
    y = rs.randint(0, 3, (8, 32)).astype(np.int32)
    net = nn.SequentialCell(nn.Dense(6, 16), nn.ReLU(), nn.Dense(16, 3))
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def forward(a, b):
        return loss_fn(net(a), b)

    grad_fn = ms.jit(ms.value_and_grad(forward, None, optimizer.parameters))
    decay = 0.8
    ema = WeightEMA(net, decay)

    reference = [p.asnumpy().copy() for p in net.trainable_params()]  # the EMA starts at the initial weights
    for step_x, step_y in zip(x, y):
        optimizer(grad_fn(Tensor(step_x), Tensor(step_y))[1])
        ema.update()
        reference = [decay * r + (1 - decay) * p.asnumpy() for r, p in zip(reference, net.trainable_params())]
    for shadow, expected in zip(ema.shadow, reference):
        np.testing.assert_allclose(shadow.asnumpy(), expected, rtol=1e-5, atol=1e-6, err_msg=shadow.name)
    training = [p.asnumpy().copy() for p in net.trainable_params()]
    check(max(np.abs(t - r).max() for t, r in zip(training, reference)) > 1e-3,
          "the EMA equals the training weights: the check would not see a missing swap")

    test_x = rs.randn(16, 6).astype(np.float32)
    ema.swap_in()
    evaluated = net(Tensor(test_x)).asnumpy()
    ema.swap_out()
    np.testing.assert_allclose(evaluated, numpy_forward(reference, test_x), rtol=1e-4, atol=1e-5,
                               err_msg="evaluation inside swap_in() did not use the EMA weights")
    for p, saved in zip(net.trainable_params(), training):
        check(np.array_equal(p.asnumpy(), saved), f"{p.name} differs from the training weights after swap_out()")
    print(f"EMA (decay {decay}) over 8 steps follows ema = decay*ema + (1-decay)*w (numpy reference); evaluation "
          f"used the EMA weights; the training weights came back bit for bit")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
