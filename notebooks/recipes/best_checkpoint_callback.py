# SPDX-License-Identifier: Apache-2.0
"""Evaluate during training and keep the best checkpoint, written atomically and CRC-checked.

What: `KeepBestCheckpoint`, a `Callback` whose `on_train_epoch_end` runs `model.eval` and, when the score
  improves, saves the network to a temporary file in the same folder (with a CRC), flushes it to disk and
  renames it over the old best file (`os.replace` is atomic), so a crash never leaves a half-written best file.
  The script checks that the file holds the best epoch's weights and that a flipped byte fails the CRC check.
When to use it: any `Model.train`/`Model.fit` run whose best epoch you want to keep (MindSpore's
  `ModelCheckpoint` saves by step count, not by validation score).
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/03_model_train_eval.ipynb
"""
import os
import tempfile

import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.train import Callback, Model


def save_atomically(net, path, append_dict):
    temp = f"{path}.tmp-{os.getpid()}.ckpt"
    try:
        ms.save_checkpoint(net, temp, append_dict=append_dict, crc_check=True)
        with open(temp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(temp, path)  # atomic on the same file system: readers see the old or the new file
    finally:
        if os.path.exists(temp):
            os.remove(temp)


class KeepBestCheckpoint(Callback):
    def __init__(self, model, eval_dataset, metric_name, path, mode="max"):
        super().__init__()
        self.model, self.eval_dataset, self.metric_name, self.path = model, eval_dataset, metric_name, path
        self.better = (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b)
        self.best_score, self.best_epoch, self.scores = None, None, []

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        score = float(self.model.eval(self.eval_dataset, dataset_sink_mode=False)[self.metric_name])
        epoch = cb_params.cur_epoch_num
        self.scores.append((epoch, score))
        if self.best_score is None or self.better(score, self.best_score):
            self.best_score, self.best_epoch = score, epoch
            save_atomically(cb_params.network, self.path, {"epoch": epoch, self.metric_name: score})
            print(f"epoch {epoch}: {self.metric_name} = {score:.4f} (new best, saved)")
        else:
            print(f"epoch {epoch}: {self.metric_name} = {score:.4f} (best {self.best_score:.4f} at {self.best_epoch})")


def make_dataset(seed, n=256):
    rs = np.random.RandomState(seed)
    x = rs.randn(n, 8).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(32)


def make_net():
    return nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 2))


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = make_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.2, 0.9), metrics={"accuracy"})
    folder = tempfile.mkdtemp(prefix="recipe-best-")
    path = os.path.join(folder, "best.ckpt")
    keep_best = KeepBestCheckpoint(model, make_dataset(seed=1), "accuracy", path)
    model.train(6, make_dataset(seed=0), callbacks=[keep_best], dataset_sink_mode=False)

    assert os.listdir(folder) == ["best.ckpt"]  # no temporary file left behind
    best_epoch, best = max(keep_best.scores, key=lambda s: (s[1], -s[0]))
    saved = ms.load_checkpoint(path, crc_check=True)
    assert int(saved["epoch"].asnumpy()) == best_epoch == keep_best.best_epoch
    fresh = make_net()
    ms.load_param_into_net(fresh, saved, strict_load=False)
    reloaded = Model(fresh, loss_fn, metrics={"accuracy"}).eval(make_dataset(seed=1), dataset_sink_mode=False)
    assert reloaded["accuracy"] == best > 0.8, (reloaded, best)
    final = model.eval(make_dataset(seed=1), dataset_sink_mode=False)["accuracy"]  # the last epoch's weights
    assert final == keep_best.scores[-1][1] and (best_epoch == 6 or final <= best)

    data = bytearray(open(path, "rb").read())  # flip one byte in the middle: the CRC check must notice
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    try:
        ms.load_checkpoint(path, crc_check=True)
        raise AssertionError("a corrupted checkpoint loaded without error")
    except ValueError:
        pass
    os.remove(path)
    os.rmdir(folder)
    print(f"best accuracy {best:.4f} at epoch {best_epoch} (last epoch {final:.4f}): the reloaded checkpoint scores "
          f"{best:.4f}; "
          f"a flipped byte fails the CRC check (MindSpore also logs an ERROR line for it)")


if __name__ == "__main__":
    main()
