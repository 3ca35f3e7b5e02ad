# SPDX-License-Identifier: Apache-2.0
"""Data-parallel training with msrun on one machine: the script launches itself on 2 workers.

What: run directly, the script starts `msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1
  --master_port=<free port> --join=True` with itself as the worker script. Each worker calls `init()`, sets
  `DATA_PARALLEL` with `gradients_mean=True`, reads its own shard of the data (`num_shards`, `shard_id`) and
  trains with `Model.train`. The launcher checks that the shards were disjoint and that both ranks ended with
  identical weights. Everything stays on 127.0.0.1, and every process of the job is gone at the end.
When to use it: to train on several devices (or to try data parallel on a CPU laptop).
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/08_distributed_data_parallel.ipynb
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid

import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.train import Model


def worker(out_dir):
    from mindspore.communication import get_group_size, get_rank, init
    init()  # msrun's scheduler process runs this script too and ends inside init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    rank, size = get_rank(), get_group_size()
    ms.set_seed(0)  # same seed on every rank: same initial weights
    rs = np.random.RandomState(0)
    x = rs.randn(128, 8).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int32)
    ids = np.arange(128, dtype=np.int32)  # to record which samples each rank saw
    data = ds.NumpySlicesDataset({"x": x, "y": y, "id": ids}, shuffle=False, num_shards=size, shard_id=rank)
    seen = np.array([int(row["id"]) for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)])
    data = data.project(["x", "y"]).batch(16)
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 2))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.05, 0.9), metrics={"accuracy"})
    model.train(3, data, dataset_sink_mode=False)
    accuracy = model.eval(ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(32),
                          dataset_sink_mode=False)["accuracy"]
    weights = np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), weights=weights, seen=seen, accuracy=accuracy)


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
    env = dict(os.environ, PATH=log_dir + os.pathsep + os.environ.get("PATH", ""), RECIPE_LAUNCH_ID=tag)
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run",  # the `msrun` command
               f"--worker_num={workers}", f"--local_worker_num={workers}", "--master_addr=127.0.0.1",
               f"--master_port={port}", "--join=True", f"--log_dir={log_dir}", f"--cluster_time_out={timeout}",
               os.path.abspath(__file__), out_dir]
    try:
        done = subprocess.run(command, cwd=log_dir, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            logs = "".join(open(os.path.join(log_dir, n)).read()[-2000:] for n in sorted(os.listdir(log_dir))
                           if n.startswith("worker_"))
            raise RuntimeError(f"msrun failed with code {done.returncode}:\n{done.stdout[-2000:]}\n{logs}")
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
    out_dir = tempfile.mkdtemp(prefix="recipe-out-")
    try:
        launch_self_with_msrun(out_dir)
        ranks = [np.load(os.path.join(out_dir, f"rank{r}.npz")) for r in (0, 1)]
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    seen0, seen1 = set(ranks[0]["seen"].tolist()), set(ranks[1]["seen"].tolist())
    assert len(seen0) == len(seen1) == 64 and not seen0 & seen1  # two disjoint halves of the data
    np.testing.assert_array_equal(ranks[0]["weights"], ranks[1]["weights"])
    assert float(ranks[0]["accuracy"]) > 0.8
    print(f"2 ranks trained on disjoint halves (64 + 64 samples) and ended with identical weights; "
          f"accuracy {float(ranks[0]['accuracy']):.3f}")


if __name__ == "__main__":
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    if "MS_ROLE" in os.environ:  # started by msrun
        worker(sys.argv[1])
    else:
        main()
