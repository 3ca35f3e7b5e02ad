# SPDX-License-Identifier: Apache-2.0
"""Gradient clipping by global norm, in the right place relative to loss scaling and the all-reduce.

What: `clip_by_global_norm(grads, max_norm)` rescales all gradients together so that their global L2 norm is
  at most `max_norm`. It is written out here (4 lines) because `mindspore.ops.clip_by_global_norm` is deprecated
  in 2.10 (its docstring: "will be removed after version 2.9.0"); the script checks that both agree while the
  old one exists. The order of the steps matters:
    1. all-reduce the gradients across ranks (the mean; `nn.DistributedGradReducer` under msrun),
    2. unscale them (divide by the loss scale),
    3. clip them,
    4. let the optimizer apply them.
  Clipping before the all-reduce bounds each rank's gradient, not the gradient the optimizer applies, and the
  result depends on how the batch was split; clipping before unscaling compares `loss_scale * norm` with
  `max_norm`, so nearly every step is clipped far too hard. The script runs the steps with two simulated
  ranks (`all_reduce_mean` stands for the all-reduce; with msrun, use `nn.DistributedGradReducer`) and a loss
  scale of 1024, and checks that the result equals the clipped gradient of the whole batch computed in one
  process without scaling, that the global norm is then `max_norm`, and that a small gradient is unchanged.
When to use it: recurrent networks, transformers, large learning rates, mixed precision: any training whose
  loss sometimes spikes.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/06_functional_training.ipynb (the all-reduce: notebooks/08_distributed_data_parallel.ipynb)
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

LOSS_SCALE = 1024.0


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def clip_by_global_norm(grads, max_norm):
    """Scale every gradient by max_norm / max(global norm, max_norm): the direction is kept, the norm bounded."""
    norm = ops.sqrt(sum(ops.sum(g * g) for g in grads))
    factor = max_norm / ops.maximum(norm, max_norm)
    return tuple(g * factor for g in grads)


def global_norm(grads):
    return float(np.sqrt(sum(float((g.asnumpy().astype(np.float64) ** 2).sum()) for g in grads)))


def all_reduce_mean(rank_grads):
    """Stands for the all-reduce of data parallel: the mean over ranks of each gradient."""
    size = len(rank_grads)
    return tuple(sum(per_rank) / size for per_rank in zip(*rank_grads))


def unscale(grads, scale):
    return tuple(g / scale for g in grads)


def process_gradients(rank_grads, scale, max_norm):
    """What a data-parallel, loss-scaled training step does with its gradients before the optimizer."""
    grads = all_reduce_mean(rank_grads)  # 1. all-reduce: every rank now holds the same mean gradient
    grads = unscale(grads, scale)  # 2. unscale: the true gradient
    grads = clip_by_global_norm(grads, max_norm)  # 3. clip the gradient the optimizer will apply
    return grads


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = nn.SequentialCell(nn.Dense(6, 16), nn.ReLU(), nn.Dense(16, 3))
    loss_fn = nn.CrossEntropyLoss()
    params = net.trainable_params()

    def forward(x, y, scale):
        return loss_fn(net(x), y) * scale

    grad_fn = ms.jit(ms.value_and_grad(forward, None, params))
    rs = np.random.RandomState(0)
    x = (rs.randn(32, 6) * np.linspace(0.2, 5, 32)[:, None]).astype(np.float32)  # the two halves differ a lot
    y = rs.randint(0, 3, 32).astype(np.int32)
    one = Tensor(1.0, ms.float32)
    full = grad_fn(Tensor(x), Tensor(y), one)[1]  # the whole batch, one process, no loss scale
    halves = [grad_fn(Tensor(x[i * 16:(i + 1) * 16]), Tensor(y[i * 16:(i + 1) * 16]), Tensor(LOSS_SCALE))[1]
              for i in range(2)]  # two ranks, half the batch each, loss-scaled
    norm = global_norm(full)

    for max_norm in (norm / 4, norm * 2):  # clipped, and not clipped
        expected = clip_by_global_norm(full, max_norm)
        if hasattr(ops, "clip_by_global_norm"):  # deprecated, still in 2.10: the same numbers
            for ours, old in zip(expected, ops.clip_by_global_norm(full, max_norm)):
                np.testing.assert_allclose(ours.asnumpy(), old.asnumpy(), rtol=1e-5, atol=1e-8)
        got = process_gradients(halves, LOSS_SCALE, max_norm)
        for g, e, p in zip(got, expected, params):
            np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-4, atol=1e-7, err_msg=p.name)
        check(np.isclose(global_norm(got), min(norm, max_norm), rtol=1e-4),
              f"global norm after clipping {global_norm(got)}, expected min({norm}, {max_norm})")
    small = process_gradients(halves, LOSS_SCALE, norm * 2)
    for g, f in zip(small, full):
        np.testing.assert_allclose(g.asnumpy(), f.asnumpy(), rtol=1e-4, atol=1e-7,
                                   err_msg="a gradient under max_norm must not change")
    print(f"global norm {norm:.3f}: all-reduce -> unscale (x1/{LOSS_SCALE:.0f}) -> clip gives the clipped "
          f"whole-batch gradient (norm {norm / 4:.3f} at max_norm = norm/4; unchanged at max_norm = 2*norm)")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
