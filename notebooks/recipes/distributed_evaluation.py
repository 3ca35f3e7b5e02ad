# SPDX-License-Identifier: Apache-2.0
"""Distributed evaluation: each rank scores its shard, the results are gathered, every sample counts once.

What: the evaluation set is sharded like the training set (`num_shards`, `shard_id`). 101 samples do not
  split evenly over 2 ranks: MindData pads the shorter shard with a sample from the start, so both ranks
  run the same number of batches (an all-gather needs equal sizes) and one sample is scored twice. Each rank
  therefore returns per-sample results with the sample's index; after the gather, `np.unique` keeps each index
  once. The script simulates 2 ranks in one process (`gather` stands for the all-gather; under msrun use
  `mindspore.communication.comm_func.all_gather_into_tensor`, or `ops.AllGather`, on each array) and checks
  that accuracy and mean loss equal a single-process evaluation of the whole set, with 101 samples counted.
  Averaging the ranks' accuracies instead, or summing their counts, counts the padded sample twice.
When to use it: evaluation on a large validation set during data-parallel training.
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/08_distributed_data_parallel.ipynb (shard padding: notebooks/A6_distributed_details.ipynb)
"""
import argparse

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import Tensor, nn


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def evaluate_shard(net, loss_fn, x, y, num_shards, shard_id, batch_size=16):
    """One rank: (sample indices, correct 0/1, per-sample loss) over this rank's shard."""
    index = np.arange(len(x), dtype=np.int32)
    data = ds.NumpySlicesDataset({"x": x, "y": y, "index": index}, shuffle=False,
                                 num_shards=num_shards, shard_id=shard_id).batch(batch_size)
    indices, correct, losses = [], [], []
    for batch in data.create_dict_iterator(num_epochs=1):
        logits = net(batch["x"])
        indices.append(batch["index"].asnumpy())
        correct.append((logits.asnumpy().argmax(axis=1) == batch["y"].asnumpy()).astype(np.float64))
        losses.append(loss_fn(logits, batch["y"]).asnumpy().astype(np.float64))
    return np.concatenate(indices), np.concatenate(correct), np.concatenate(losses)


def gather(per_rank):
    """Stands for the all-gather: every rank receives every rank's array, in rank order."""
    return np.concatenate(per_rank)


def merge(indices, correct, losses):
    """Each sample once: the padding duplicates are dropped by index."""
    _, first = np.unique(indices, return_index=True)
    return float(correct[first].mean()), float(losses[first].mean()), len(first)


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    rs = np.random.RandomState(0)
    samples = 101
    x = rs.randn(samples, 6).astype(np.float32)
    y = (x[:, 0] + 0.3 * rs.randn(samples) > 0).astype(np.int32)
    net = nn.SequentialCell(nn.Dense(6, 16), nn.ReLU(), nn.Dense(16, 2))
    net.set_train(False)
    loss_fn = nn.CrossEntropyLoss(reduction="none")

    ranks = [evaluate_shard(net, loss_fn, x, y, num_shards=2, shard_id=rank) for rank in range(2)]
    check(len(ranks[0][0]) == len(ranks[1][0]), "the shards differ in size: an all-gather would fail")
    indices, correct, losses = (gather([r[i] for r in ranks]) for i in range(3))
    accuracy, mean_loss, counted = merge(indices, correct, losses)

    logits = net(Tensor(x))  # the reference: one process, the whole set
    expected_accuracy = float(np.mean(logits.asnumpy().argmax(axis=1) == y))
    expected_loss = float(loss_fn(logits, Tensor(y)).asnumpy().astype(np.float64).mean())
    check(counted == samples, f"{counted} samples counted, the set has {samples}")
    check(accuracy == expected_accuracy, f"distributed accuracy {accuracy} != single-process {expected_accuracy}")
    check(np.isclose(mean_loss, expected_loss, rtol=1e-6), f"distributed loss {mean_loss} != {expected_loss}")
    naive = float(np.mean([r[1].mean() for r in ranks]))
    print(f"2 ranks x {len(ranks[0][0])} samples ({2 * len(ranks[0][0]) - samples} padded): accuracy "
          f"{accuracy:.4f} and loss {mean_loss:.4f} over {counted} samples equal the single-process evaluation "
          f"(the mean of the ranks' accuracies would give {naive:.4f})")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
