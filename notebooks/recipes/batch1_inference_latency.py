# SPDX-License-Identifier: Apache-2.0
"""Batch-size-1 inference latency: warm up first, then report the median and the 90th percentile.

What: a small convolutional network in eval mode, compiled once (graph mode), is called on one image at a time.
  The first calls compile the graph and fill caches, so they are timed apart and left out; then each of 50 calls
  is timed with `time.perf_counter` after `asnumpy()` (which waits for the result), and the script prints the
  median and 90th-percentile latency, and the throughput at batch 1 and at batch 32 for comparison. It checks
  that each batch-1 output equals the same image's row of the batch-32 output (eval mode: BatchNorm uses its
  moving statistics, so a sample's result does not depend on its batch), that the warm-up calls are not among
  the timed ones, and that the numbers are well formed. It asserts no speed: the machine may be shared.
When to use it: sizing an online service (one request at a time) or comparing export formats.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/09_inference_and_export.ipynb (performance on CPU: notebooks/A7_performance_tuning.ipynb)
"""
import argparse
import time

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

WARMUP, REPEATS = 3, 50


class SmallConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.features = nn.SequentialCell(
            nn.Conv2d(3, 16, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(16, 32, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.head = nn.SequentialCell(nn.Flatten(), nn.Dense(32 * 8 * 8, 10))

    def construct(self, x):
        return self.head(self.features(x))


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def time_calls(net, inputs, warmup, repeats):
    """(warm-up times, timed times) in milliseconds; each call waits for its result (asnumpy)."""
    warm, timed = [], []
    for i in range(warmup + repeats):
        start = time.perf_counter()
        net(inputs[i % len(inputs)]).asnumpy()
        (warm if i < warmup else timed).append((time.perf_counter() - start) * 1000)
    return warm, timed


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = SmallConvNet()
    for bn in (net.features[1], net.features[5]):  # non-trivial moving statistics, as after training
        bn.moving_mean.set_data(Tensor(np.linspace(-0.2, 0.2, bn.num_features).astype(np.float32)))
        bn.moving_variance.set_data(Tensor(np.linspace(0.5, 1.5, bn.num_features).astype(np.float32)))
    net.set_train(False)  # inference: moving statistics, no Dropout
    images = np.random.RandomState(0).randn(32, 3, 32, 32).astype(np.float32)
    singles = [Tensor(images[i:i + 1]) for i in range(32)]

    warm, timed = time_calls(net, singles, WARMUP, REPEATS)  # the first warm-up call compiles the graph
    check(len(warm) == WARMUP and len(timed) == REPEATS, f"{len(warm)} warm-up and {len(timed)} timed calls")
    check(all(t > 0 for t in warm + timed), "a call took no time: the timer did not wait for the result")
    p50, p90 = np.percentile(timed, [50, 90])
    check(p50 <= p90, f"median {p50} > p90 {p90}")
    _, batch_timed = time_calls(net, [Tensor(images)], 1, 10)

    batch_out = net(Tensor(images)).asnumpy()
    single_out = np.concatenate([net(x).asnumpy() for x in singles])
    np.testing.assert_allclose(single_out, batch_out, rtol=1e-4, atol=1e-5,
                               err_msg="a sample's output depends on its batch: is the network in eval mode?")
    batch_ms = float(np.median(batch_timed))
    print(f"batch 1: first call {warm[0]:.1f} ms (compile, left out), then median {p50:.2f} ms, p90 {p90:.2f} ms "
          f"over {REPEATS} calls ({1000 / p50:.0f} images/s); batch 32: {batch_ms:.2f} ms "
          f"({32 * 1000 / batch_ms:.0f} images/s); batch-1 outputs equal the batch-32 rows")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
