# SPDX-License-Identifier: Apache-2.0
"""A hand-written TrainOneStepCell with `sens`, standalone and under data parallel.

What: `TrainOneStepCell(net_with_loss, optimizer, sens)` differentiates `loss * sens`, averages the gradients
  across ranks with `nn.DistributedGradReducer` when the parallel mode is DATA_PARALLEL, and updates the weights.
  The script checks it step for step against the built-in `nn.TrainOneStepCell`: first in one process, then
  (it relaunches itself with `msrun --worker_num=2` on 127.0.0.1) on two ranks.
  `sens` as a static loss scale: the gradients come out `sens` times too large, so the optimizer must divide
  them back: build it with `loss_scale=sens` (e.g. `nn.Momentum(..., loss_scale=1024.0)`), as
  `nn.TrainOneStepCell`'s users must too. Without it the update is `sens` times too big; the script checks that
  `sens=1024` with `loss_scale=1024` trains exactly like `sens=1`, and that the update without it is 1024x.
  A variable left exported by an earlier msrun (`MS_ROLE`, ...) is reported and ignored; only processes that
  this script started (tagged `--recipe-worker-out`) act as workers.
When to use it: you need a training step the built-in cell does not give you (extra outputs, gradient
  clipping, a custom loss scale) and it must still work under msrun.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/04_train_one_step_and_sink.ipynb (data parallel: notebooks/08_distributed_data_parallel.ipynb).
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops


class TrainOneStepCell(nn.Cell):
    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens
        self.grad_reducer = nn.Identity()
        if ms.get_auto_parallel_context("parallel_mode") in (ms.ParallelMode.DATA_PARALLEL,
                                                             ms.ParallelMode.HYBRID_PARALLEL):
            from mindspore.communication import get_group_size
            mean = ms.get_auto_parallel_context("gradients_mean")
            self.grad_reducer = nn.DistributedGradReducer(self.weights, mean, get_group_size())

    def construct(self, *inputs):
        loss = self.network(*inputs)
        sens = ops.full_like(loss, self.sens)  # ops.fill is deprecated
        grads = self.grad(self.network, self.weights)(*inputs, sens)
        grads = self.grad_reducer(grads)  # all-reduce (mean) across ranks; identity on one device
        return ops.depend(loss, self.optimizer(grads))


MSRUN_VARIABLES = ("MS_ROLE", "MS_WORKER_NUM", "MS_SCHED_HOST", "MS_SCHED_PORT", "MS_NODE_ID", "MS_TOPO_TIMEOUT",
                   "MS_SIMULATION_LEVEL", "MS_ENABLE_RECOVERY", "RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "DEVICE_ID")


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def train(cell_class, x, y, sens, loss_scale=None):
    """4 steps from the same initial weights; returns the losses and the weights after every step.
    The optimizer divides the gradients by loss_scale (default: sens, which undoes the sens scaling)."""
    ms.set_seed(1)
    net = nn.Dense(6, 3)
    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9, loss_scale=sens if loss_scale is None else loss_scale)
    step = cell_class(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                      optimizer, sens=sens)
    step.set_train()
    losses, weights = [], []
    for i in range(len(x)):
        losses.append(float(step(Tensor(x[i]), Tensor(y[i])).asnumpy()))
        weights.append(np.concatenate([net.weight.asnumpy().ravel(), net.bias.asnumpy().ravel()]))
    return np.array(losses), np.array(weights)


def make_data():
    rs = np.random.RandomState(0)
    return rs.randn(4, 8, 6).astype(np.float32), rs.randint(0, 3, (4, 8)).astype(np.int32)


def worker(out_dir):
    """Runs on every msrun rank: each rank trains on its half of every batch."""
    from mindspore.communication import get_group_size, get_rank, init
    init()  # msrun's scheduler process runs this script too and ends inside init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    rank, size = get_rank(), get_group_size()
    x, y = make_data()
    half = slice(rank * 8 // size, (rank + 1) * 8 // size)
    _, ours = train(TrainOneStepCell, x[:, half], y[:, half], sens=1.0)
    _, builtin = train(nn.TrainOneStepCell, x[:, half], y[:, half], sens=1.0)
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), ours=ours, builtin=builtin)


def launch_self_with_msrun(out_dir, timeout=240):
    """msrun --worker_num=2 on a free loopback port; every process of the job is gone when this returns."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_dir = tempfile.mkdtemp(prefix="recipe-msrun-")
    shim = os.path.join(log_dir, "python")  # msrun starts `python <script>` from PATH: make it this interpreter
    with open(shim, "w") as f:
        f.write(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    os.chmod(shim, 0o755)
    tag = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k not in MSRUN_VARIABLES}  # msrun sets its own
    env.update(PATH=log_dir + os.pathsep + os.environ.get("PATH", ""), RECIPE_LAUNCH_ID=tag)
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run", "--worker_num=2", "--local_worker_num=2",
               "--master_addr=127.0.0.1", f"--master_port={port}", "--join=True", f"--log_dir={log_dir}",
               f"--cluster_time_out={timeout}", os.path.abspath(__file__), "--recipe-worker-out", out_dir]
    try:
        done = subprocess.run(command, cwd=log_dir, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            logs = "".join(open(os.path.join(log_dir, n)).read()[-2000:] for n in sorted(os.listdir(log_dir))
                           if n.startswith("worker_"))
            raise RuntimeError(f"msrun failed with code {done.returncode}:\n{done.stdout[-2000:]}\n"
                               f"{done.stderr[-2000:]}\n{logs}")
    finally:  # workers run in sessions of their own: find them by the tag in their environment
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if f"RECIPE_LAUNCH_ID={tag}".encode() in f.read():
                        os.kill(int(pid), 9)
            except OSError:
                pass
        shutil.rmtree(log_dir, ignore_errors=True)


def main():
    leftovers = sorted(k for k in MSRUN_VARIABLES if k in os.environ)
    if leftovers:
        print(f"note: ignoring {', '.join(leftovers)} left exported by an earlier msrun (not started by this script)")
    # 1. One process: same losses and weights as nn.TrainOneStepCell, for sens=1 and sens=1024.
    x, y = make_data()
    for sens in (1.0, 1024.0):
        ours_loss, ours_w = train(TrainOneStepCell, x, y, sens)
        builtin_loss, builtin_w = train(nn.TrainOneStepCell, x, y, sens)
        np.testing.assert_allclose(ours_loss, builtin_loss, rtol=1e-6)
        np.testing.assert_allclose(ours_w, builtin_w, rtol=1e-6, atol=1e-7)
    # sens=1024 with loss_scale=1024 trains like sens=1; without loss_scale the first update is 1024x too big.
    plain, scaled = train(TrainOneStepCell, x, y, 1.0)[1], train(TrainOneStepCell, x, y, 1024.0)[1]
    np.testing.assert_allclose(scaled, plain, rtol=1e-5, atol=1e-6)
    ms.set_seed(1)
    start = np.concatenate([p.asnumpy().ravel() for p in nn.Dense(6, 3).trainable_params()])
    unscaled_first = train(TrainOneStepCell, x[:1], y[:1], 1024.0, loss_scale=1.0)[1][0]
    ratio = np.abs(unscaled_first - start).sum() / np.abs(plain[0] - start).sum()
    check(np.isclose(ratio, 1024.0, rtol=1e-3), f"update ratio without loss_scale {ratio}, expected 1024")
    print("standalone: same losses and weights as nn.TrainOneStepCell at every step (sens=1 and sens=1024); "
          f"sens=1024 + loss_scale=1024 equals sens=1; without loss_scale the update is {ratio:.0f}x")

    # 2. Two ranks with msrun: ranks identical, equal to nn.TrainOneStepCell, equal to one process on the full batch.
    out_dir = tempfile.mkdtemp(prefix="recipe-out-")
    try:
        launch_self_with_msrun(out_dir)
        ranks = [np.load(os.path.join(out_dir, f"rank{r}.npz")) for r in (0, 1)]
        for rank in ranks:
            np.testing.assert_array_equal(rank["ours"], rank["builtin"])  # step for step
            np.testing.assert_array_equal(rank["ours"], ranks[0]["ours"])  # both ranks hold the same weights
        full_batch = train(TrainOneStepCell, x, y, 1.0)[1]  # the mean of two half-batch gradients
        np.testing.assert_allclose(ranks[0]["ours"], full_batch, rtol=1e-5, atol=1e-6)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    print("data parallel (2 ranks): ranks identical and equal to nn.TrainOneStepCell at every step; "
          "equal to one process on the full batch")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # --recipe-worker-out is set by this script's own msrun job only
    parser.add_argument("--recipe-worker-out", metavar="OUT_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    if args.recipe_worker_out and os.environ.get("RECIPE_LAUNCH_ID") and "MS_ROLE" in os.environ:
        worker(args.recipe_worker_out)  # started by launch_self_with_msrun: msrun's scheduler and workers
    elif args.recipe_worker_out:
        raise SystemExit("--recipe-worker-out is set by the script's own msrun launch; run the script without it")
    else:
        main()
