# SPDX-License-Identifier: Apache-2.0
"""Keep the best checkpoint by validation score, written atomically and CRC-checked.

What: `KeepBestCheckpoint`, a `Callback`. Under `Model.fit(..., valid_dataset, valid_frequency)` it reads the
  scores that fit has just computed (`cb_params.metrics`, or `cb_params.eval_results` when fit adds
  `eval_loss`) and evaluates nothing itself, so `valid_frequency` decides when a checkpoint can change. Under
  `Model.train` give it `model` and `eval_dataset` and it evaluates every `valid_frequency` epochs. When the
  score improves ("max": higher wins, e.g. accuracy; "min": lower wins, e.g. loss) it saves the network to a
  temporary file in the same folder (with a CRC), flushes it to disk and renames it over the old best file
  (`os.replace` is atomic), so a crash never leaves a half-written best file. The script runs both modes and
  checks that the file holds the best epoch's weights and that a flipped byte fails the CRC check.
When to use it: any `Model.train`/`Model.fit` run whose best epoch you want to keep (MindSpore's
  `ModelCheckpoint` saves by step count, not by validation score).
Tested with: MindSpore 2.10.0 (CPU).
Lesson: notebooks/03_model_train_eval.ipynb
"""
import argparse
import os
import tempfile

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
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
    def __init__(self, metric_name, path, mode="max", model=None, eval_dataset=None, valid_frequency=1):
        super().__init__()
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' (higher wins) or 'min' (lower wins), got {mode!r}")
        if (model is None) != (eval_dataset is None):
            raise ValueError("give both model and eval_dataset (Model.train), or neither (Model.fit's scores)")
        self.metric_name, self.path, self.mode = metric_name, path, mode
        self.model, self.eval_dataset, self.valid_frequency = model, eval_dataset, valid_frequency
        self.best_score, self.best_epoch, self.scores, self.own_evaluations = None, None, [], 0

    def is_better(self, score):
        if self.best_score is None:
            return True
        return score > self.best_score if self.mode == "max" else score < self.best_score

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        epoch = cb_params.cur_epoch_num
        results = cb_params.get("eval_results") or cb_params.get("metrics")  # set by Model.fit when it evaluated
        if results is None and self.model is not None and epoch % self.valid_frequency == 0:
            results = self.model.eval(self.eval_dataset, dataset_sink_mode=False)
            self.own_evaluations += 1
        if results is None:
            return  # not a validation epoch
        if self.metric_name not in results:
            raise KeyError(f"metric {self.metric_name!r} not in the evaluation results {sorted(results)}")
        score = float(results[self.metric_name])
        self.scores.append((epoch, score))
        if self.is_better(score):
            self.best_score, self.best_epoch = score, epoch
            save_atomically(cb_params.network, self.path, {"epoch": epoch, self.metric_name: score})
            print(f"epoch {epoch}: {self.metric_name} = {score:.4f} (new best, saved)")
        else:
            print(f"epoch {epoch}: {self.metric_name} = {score:.4f} (best {self.best_score:.4f} at {self.best_epoch})")


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def make_dataset(seed, n=256):
    rs = np.random.RandomState(seed)
    x = rs.randn(n, 8).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(32)


def make_net():
    return nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 2))


def check_best_file(keep_best, path, loss_fn, expected_epochs):
    """The file holds the best epoch of the recorded scores and reloads to that score."""
    epochs = [epoch for epoch, _ in keep_best.scores]
    check(epochs == expected_epochs, f"validated epochs {epochs}, expected {expected_epochs}")
    sign = 1 if keep_best.mode == "max" else -1
    best_epoch, best = max(keep_best.scores, key=lambda s: (sign * s[1], -s[0]))  # first epoch among ties
    check(os.listdir(os.path.dirname(path)) == ["best.ckpt"], "a temporary file was left behind")
    saved = ms.load_checkpoint(path, crc_check=True)
    check(int(saved["epoch"].asnumpy()) == best_epoch == keep_best.best_epoch,
          f"saved epoch {int(saved['epoch'].asnumpy())}, best epoch {best_epoch} ({keep_best.mode} wins)")
    fresh = make_net()
    ms.load_param_into_net(fresh, saved, strict_load=False)
    reloaded = Model(fresh, loss_fn, metrics={"accuracy", "loss"}).eval(make_dataset(seed=1), dataset_sink_mode=False)
    check(np.isclose(reloaded[keep_best.metric_name], best, rtol=1e-6),
          f"the reloaded checkpoint scores {reloaded[keep_best.metric_name]}, the best epoch scored {best}")
    return best_epoch, best


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    folder_a, folder_b = tempfile.mkdtemp(prefix="recipe-best-"), tempfile.mkdtemp(prefix="recipe-best-")

    # 1. Model.train: the callback evaluates itself every epoch; higher accuracy wins.
    ms.set_seed(0)
    net = make_net()
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.2, 0.9), metrics={"accuracy"})
    path_a = os.path.join(folder_a, "best.ckpt")
    keep_best = KeepBestCheckpoint("accuracy", path_a, "max", model=model, eval_dataset=make_dataset(seed=1))
    model.train(6, make_dataset(seed=0), callbacks=[keep_best], dataset_sink_mode=False)
    best_epoch, best = check_best_file(keep_best, path_a, loss_fn, [1, 2, 3, 4, 5, 6])
    check(best > 0.8, f"best accuracy {best} is too low: training failed")
    print(f"Model.train, highest accuracy wins: epoch {best_epoch} ({best:.4f}) saved and reloaded")

    # 2. Model.fit(valid_frequency=2): the callback reuses fit's scores (no second evaluation); lowest loss wins.
    ms.set_seed(0)
    net = make_net()
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.5, 0.9), metrics={"accuracy", "loss"})
    path_b = os.path.join(folder_b, "best.ckpt")
    keep_low = KeepBestCheckpoint("loss", path_b, "min")
    model.fit(8, make_dataset(seed=0), make_dataset(seed=1), valid_frequency=2, callbacks=[keep_low],
              dataset_sink_mode=False, valid_dataset_sink_mode=False)
    low_epoch, low = check_best_file(keep_low, path_b, loss_fn, [2, 4, 6, 8])
    check(keep_low.own_evaluations == 0, f"the callback evaluated {keep_low.own_evaluations} times under fit")
    check(low_epoch != 8 or len(set(s for _, s in keep_low.scores)) > 1, "all validation losses are equal")
    print(f"Model.fit(valid_frequency=2), lowest loss wins: epochs {[e for e, _ in keep_low.scores]} validated, "
          f"epoch {low_epoch} ({low:.4f}) saved, no extra evaluation")

    data = bytearray(open(path_a, "rb").read())  # flip one byte in the middle: the CRC check must notice
    data[len(data) // 2] ^= 0xFF
    open(path_a, "wb").write(bytes(data))
    try:
        ms.load_checkpoint(path_a, crc_check=True)
        corrupted_loaded = True
    except ValueError:
        corrupted_loaded = False
    check(not corrupted_loaded, "a corrupted checkpoint loaded without error")
    for folder in (folder_a, folder_b):
        os.remove(os.path.join(folder, "best.ckpt"))
        os.rmdir(folder)
    print("a flipped byte fails the CRC check (MindSpore also logs an ERROR line for it)")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
