"""Same seed, same numbers: LeNet's loss sequence over one epoch is identical in two separate processes."""
import functools
import json
import subprocess
import sys

import pytest

import course_lib  # noqa: F401  (sets env before mindspore)

TRAIN_ONE_EPOCH = """
import json, course_lib
import mindspore as ms
from mindspore import nn
from mindspore.train import Callback, Model
from course_lib.run.config import load_config
from course_lib.data.datasets import create_mnist_dataset
from course_lib.run.env import init_env
from course_lib.models import lenet5

class Losses(Callback):
    def __init__(self):
        self.values = []
    def on_train_step_end(self, run_context):
        self.values.append(float(run_context.original_args().net_outputs.asnumpy()))

init_env(load_config(seed=SEED, context_mode="graph"))
net = lenet5()
model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
              nn.Momentum(net.trainable_params(), 0.01, 0.9))
losses = Losses()
model.train(1, create_mnist_dataset(batch_size=32, train=True), callbacks=[losses], dataset_sink_mode=False)
print("LOSSES", json.dumps(losses.values))
"""


def losses_in_a_fresh_process(seed):
    result = subprocess.run([sys.executable, "-c", TRAIN_ONE_EPOCH.replace("SEED", str(seed))],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(text for text in result.stdout.splitlines() if text.startswith("LOSSES "))
    return json.loads(line[len("LOSSES "):])


@functools.cache
def first_run(seed):
    return losses_in_a_fresh_process(seed)


@pytest.mark.slow
def test_same_seed_gives_identical_losses_in_two_processes():
    first, second = first_run(1), losses_in_a_fresh_process(1)
    assert len(first) == 1437 // 32
    assert first == second  # bit-for-bit, not approximately
    assert first[-1] < first[0]  # and it trained


@pytest.mark.slow
def test_another_seed_gives_other_numbers():
    assert losses_in_a_fresh_process(2)[:3] != first_run(1)[:3]
