"""Minimal data-parallel worker (lesson 08). Start it with msrun; every rank runs this file."""
import hashlib

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn
from mindspore.communication import get_group_size, get_rank, init

ms.set_device("CPU")
ms.set_context(mode=ms.GRAPH_MODE)
init()  # join the job; msrun's scheduler process runs this file too and ends inside init()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
rank, size = get_rank(), get_group_size()
ms.set_seed(0)  # the same seed on every rank: the same initial weights

rng = np.random.default_rng(0)  # the same 256 samples on every rank; each rank reads its own shard
x = rng.normal(size=(256, 8)).astype(np.float32)
y = (x[:, :3].sum(axis=1) > 0).astype(np.int32)
data = ds.NumpySlicesDataset({"x": x, "y": y, "id": np.arange(256)}, shuffle=False,
                             num_shards=size, shard_id=rank).batch(32)

net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 2))
optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
train_step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), optimizer)
train_step.set_train()  # in DATA_PARALLEL mode, TrainOneStepCell averages gradients across ranks

for _epoch in range(3):  # 3 epochs
    seen = []
    for batch in data.create_dict_iterator():
        loss = train_step(batch["x"], batch["y"])
        seen += batch["id"].asnumpy().tolist()

weights = np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])
print(f"rank {rank} of {size}: {type(train_step.grad_reducer).__name__}, {len(seen)} samples, "
      f"ids {seen[:4]}..., last loss {loss.asnumpy():.4f}, "
      f"weights sha256 {hashlib.sha256(weights.tobytes()).hexdigest()[:12]}")
