# SPDX-License-Identifier: Apache-2.0
"""Data-parallel training with msrun on one machine: the script launches itself on 2 workers.

What: run directly, the script starts `msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1
  --master_port=<free port> --join=True` with itself as the worker script. Each worker calls `init()`, sets
  `DATA_PARALLEL` with `gradients_mean=True`, reads its own shard of the data (`num_shards`, `shard_id`) and
  trains with `Model.train`. 131 samples do not split evenly: MindData pads the shorter shard with a sample from
  the start, so both ranks run the same number of steps and one sample is trained on twice per epoch (evaluate
  with de-duplication: distributed_evaluation.py). The launcher checks the shards, that both ranks end with
  identical weights, and that these equal one process averaging the two ranks' batch losses (this catches
  `gradients_mean=False`, which doubles every step). BatchNorm: each rank normalises with its own batch and
  keeps its own moving mean and variance; data parallel all-reduces gradients only, so the ranks' moving
  statistics differ (the script checks it). Save the rank-0 network, or use `nn.SyncBatchNorm` (batch statistics
  over all ranks; its 2.10 docstring lists Ascend as the only platform). Everything stays on 127.0.0.1, every
  process of the job is gone at the end, and a variable left exported by an earlier msrun (`MS_ROLE`, ...) is
  reported and ignored.
When to use it: to train on several devices (or to try data parallel on a CPU laptop).
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/08_distributed_data_parallel.ipynb
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
import mindspore.dataset as ds
import numpy as np
from mindspore import nn
from mindspore.train import Model

MSRUN_VARIABLES = ("MS_ROLE", "MS_WORKER_NUM", "MS_SCHED_HOST", "MS_SCHED_PORT", "MS_NODE_ID", "MS_TOPO_TIMEOUT",
                   "MS_SIMULATION_LEVEL", "MS_ENABLE_RECOVERY", "RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "DEVICE_ID")
SAMPLES, BATCH, EPOCHS = 131, 16, 3  # 131 samples on 2 ranks: uneven on purpose


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def make_data():
    rs = np.random.RandomState(0)
    x = rs.randn(SAMPLES, 8).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int32)
    return x, y


def make_net():
    ms.set_seed(0)  # same seed on every rank: same initial weights
    return nn.SequentialCell(nn.Dense(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dense(16, 2))


def worker(out_dir):
    from mindspore.communication import get_group_size, get_rank, init
    init()  # msrun's scheduler process runs this script too and ends inside init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    rank, size = get_rank(), get_group_size()
    x, y = make_data()
    ids = np.arange(SAMPLES, dtype=np.int32)  # to record which samples each rank saw, batch by batch
    data = ds.NumpySlicesDataset({"x": x, "y": y, "id": ids}, shuffle=False, num_shards=size, shard_id=rank)
    data = data.batch(BATCH)
    batches = [row["id"] for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]
    net = make_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.05, 0.9), metrics={"accuracy"})
    model.train(EPOCHS, data.project(["x", "y"]), dataset_sink_mode=False)
    accuracy = model.eval(ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(32),
                          dataset_sink_mode=False)["accuracy"]
    weights = np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), weights=weights, ids=np.concatenate(batches),
             sizes=[len(b) for b in batches], accuracy=accuracy, moving_mean=net[1].moving_mean.asnumpy())


def train_reference(rank_batches):
    """One process, same steps: each step's loss is the mean of the ranks' batch losses, each with BatchNorm over
    its own rank's batch (what data parallel computes with gradients_mean=True and a plain BatchNorm)."""
    x, y = make_data()
    net = make_net()
    net.set_train(True)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), 0.05, 0.9)

    def forward(*halves):
        losses = [loss_fn(net(halves[i]), halves[i + 1]) for i in range(0, len(halves), 2)]
        return sum(losses) / len(losses)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    for _ in range(EPOCHS):
        for step in zip(*rank_batches):
            inputs = [ms.Tensor(a) for ids in step for a in (x[ids], y[ids])]
            optimizer(grad_fn(*inputs)[1])
    return np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])


def launch_self_with_msrun(out_dir, workers=2, timeout=240):
    """msrun on a free loopback port; every process of the job is gone when this returns."""
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
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run",  # the `msrun` command
               f"--worker_num={workers}", f"--local_worker_num={workers}", "--master_addr=127.0.0.1",
               f"--master_port={port}", "--join=True", f"--log_dir={log_dir}", f"--cluster_time_out={timeout}",
               os.path.abspath(__file__), "--recipe-worker-out", out_dir]
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
    out_dir = tempfile.mkdtemp(prefix="recipe-out-")
    try:
        launch_self_with_msrun(out_dir)
        ranks = [dict(np.load(os.path.join(out_dir, f"rank{r}.npz"))) for r in (0, 1)]
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    # Uneven data: MindData pads the shorter shard with samples from the start, so both ranks run the same
    # number of steps (a rank with one step fewer would leave the other waiting in the all-reduce).
    seen0, seen1 = ranks[0]["ids"].tolist(), ranks[1]["ids"].tolist()
    duplicates = sorted(set(seen0) & set(seen1))
    check(len(seen0) == len(seen1) == (SAMPLES + 1) // 2, f"shard sizes {len(seen0)}, {len(seen1)}")
    check(set(seen0) | set(seen1) == set(range(SAMPLES)), "some samples were seen by no rank")
    check(len(duplicates) == 2 * len(seen0) - SAMPLES, f"samples seen by both ranks: {duplicates}")
    check(ranks[0]["sizes"].tolist() == ranks[1]["sizes"].tolist(), "the ranks ran different batch sizes")
    # Trainable weights: identical on both ranks, and equal to one process averaging the ranks' batch losses.
    np.testing.assert_array_equal(ranks[0]["weights"], ranks[1]["weights"])
    splits = [np.split(r["ids"], np.cumsum(r["sizes"])[:-1]) for r in ranks]
    np.testing.assert_allclose(ranks[0]["weights"], train_reference(splits), rtol=1e-4, atol=1e-5)
    # BatchNorm statistics are NOT all-reduced: each rank keeps the moving mean of its own batches.
    check(not np.allclose(ranks[0]["moving_mean"], ranks[1]["moving_mean"]),
          "the ranks' BatchNorm moving means are equal, but nothing synchronises them")
    accuracy = float(ranks[0]["accuracy"])
    check(accuracy > 0.8, f"accuracy {accuracy} after training is too low")
    print(f"2 ranks, {SAMPLES} samples: shards of {len(seen0)} (sample {duplicates} padded onto both), "
          f"identical weights, equal to the one-process mean of the ranks' losses; BatchNorm moving means differ "
          f"by up to {np.abs(ranks[0]['moving_mean'] - ranks[1]['moving_mean']).max():.3f} "
          f"(each rank's own batches); accuracy {accuracy:.3f}")


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
