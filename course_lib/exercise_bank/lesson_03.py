"""Exercises of lesson 03 (Model.train/eval, callbacks, seed 001's initialisation)."""
import math
from types import SimpleNamespace

import numpy as np

from ..exercises import Incorrect, exercise, expect, expect_type

LENET_WEIGHTS = ("conv1.weight", "conv2.weight", "fc1.weight", "fc2.weight", "fc3.weight")
ADAM_LR = 0.001
#: Rank of the true class in each row of the 03.2 logits (0 = highest score): 3 of 12 rows are right at top-1,
#: 5 at top-3, 8 at top-5, so each k gives a different score.
_LABEL_RANKS = (0, 0, 0, 1, 2, 4, 4, 5, 6, 9, 3, 7)


def _eval_epochs(every: int, epochs: int) -> list:
    """The epochs at which course_lib's EvalCallback evaluates: its own hook, driven without any training."""
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Model

    from ..callbacks import EvalCallback

    class NoEvalCallback(EvalCallback):
        def evaluate(self):
            return 0.5

    model = Model(nn.Dense(2, 2), nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  metrics={"accuracy"})
    data = ds.NumpySlicesDataset({"x": np.zeros((2, 2), np.float32)}, shuffle=False).batch(2)
    callback = NoEvalCallback(model, data, "accuracy", every=every, verbose=False)
    run_context = SimpleNamespace(original_args=lambda: cb_params)
    callback.on_train_begin(run_context)
    for epoch in range(1, epochs + 1):
        cb_params = SimpleNamespace(cur_epoch_num=epoch, epoch_num=epochs, network=None)
        callback.on_train_epoch_end(run_context)
    return [epoch for epoch, _ in callback.scores]


@exercise("03.1", "Train 8 epochs with EvalCallback(..., every=3): the list of epochs at which it evaluated.")
def check_eval_epochs(answer):
    expect(isinstance(answer, (list, tuple)) and all(isinstance(e, int) and not isinstance(e, bool) for e in answer),
           "Answer with a list of epoch numbers (ints), e.g. [2, 4]; EvalCallback.scores holds (epoch, score) pairs.")
    answer = list(answer)
    truth = _eval_epochs(every=3, epochs=8)
    expect(answer == sorted(answer) and len(set(answer)) == len(answer), "List each epoch once, in order.")
    expect(min(answer, default=1) >= 1 and [e + 1 for e in answer] != truth,
           "Epochs are counted from 1 (cur_epoch_num), not from 0.")
    expect(all(e in answer for e in truth[:-1]), "Some of the epochs that are multiples of `every` are missing.")
    expect(truth[-1] in answer, "One evaluation is missing: look at what EvalCallback does after the last epoch "
                                "(is_last in on_train_epoch_end).")
    expect(answer == truth, "Your list has epochs at which EvalCallback did not evaluate: it evaluates when the "
                            "epoch number is a multiple of `every`, and after the last epoch.")


def _logits_and_labels():
    """12 rows of 10 logits whose true class sits at rank _LABEL_RANKS[i]."""
    rng = np.random.default_rng(3)
    logits = np.zeros((len(_LABEL_RANKS), 10), np.float32)
    labels = np.zeros(len(_LABEL_RANKS), np.int32)
    for row, rank in enumerate(_LABEL_RANKS):
        order = rng.permutation(10)  # order[0] gets the highest score
        labels[row] = order[rank]
        logits[row, order] = np.linspace(2.0, -2.0, 10, dtype=np.float32)
    return logits, labels


@exercise("03.2", "A function net -> Model(net, loss_fn, metrics=...) that reports accuracy and top-5 accuracy.")
def check_top5_model(answer):
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Accuracy, Model, TopKCategoricalAccuracy

    class Identity(nn.Cell):
        def construct(self, x):
            return x

    expect(not isinstance(answer, Model), "Give the *function* that builds the Model (def with_top5(net): ...), "
                                          "not a Model: the check calls it with a network of its own.")
    expect(callable(answer), f"Answer with a function that takes a network and returns a Model; yours is a "
                             f"{type(answer).__name__}.")
    try:
        model = answer(Identity())
    except Exception as error:  # noqa: BLE001 - show the learner what failed
        raise Incorrect(f"Calling your function with a network fails: {type(error).__name__}: "
                        f"{str(error).splitlines()[0] if str(error) else ''}") from None
    expect(isinstance(model, Model), f"Your function should return a mindspore.train.Model, it returned a "
                                     f"{type(model).__name__}.")
    metrics = dict(getattr(model, "_metric_fns", None) or {})
    expect(metrics, "The Model has no metrics: pass metrics=... when you build it.")
    top5 = [name for name, m in metrics.items() if isinstance(m, TopKCategoricalAccuracy) and m.k == 5]
    top1 = [name for name, m in metrics.items() if isinstance(m, Accuracy)
            or isinstance(m, TopKCategoricalAccuracy) and m.k == 1]
    other_k = sorted(m.k for m in metrics.values() if isinstance(m, TopKCategoricalAccuracy) and m.k not in (1, 5))
    expect(top5 or not other_k, f"Your top-k metric uses k = {other_k}; top-5 means k = 5.")
    expect(top5, f"None of your metrics {sorted(metrics)} is a top-5 accuracy: add 'top_5_accuracy' "
                 f"(or a Top5CategoricalAccuracy instance under a name of your choice).")
    expect(top1, f"Keep the plain accuracy next to the top-5 one: your metrics are {sorted(metrics)}.")

    logits, labels = _logits_and_labels()
    data = ds.NumpySlicesDataset({"logits": logits, "label": labels}, shuffle=False).batch(4)
    try:
        results = model.eval(data, dataset_sink_mode=False)
    except Exception as error:  # noqa: BLE001
        raise Incorrect(f"model.eval fails with your Model: {type(error).__name__}: "
                        f"{str(error).splitlines()[0] if str(error) else ''}. Does it have a loss_fn for integer "
                        f"labels (sparse=True)?") from None
    ranks = np.asarray(_LABEL_RANKS)
    for names, k in ((top1, 1), (top5, 5)):
        truth = float(np.mean(ranks < k))
        for name in names:
            expect(math.isclose(float(results[name]), truth, abs_tol=1e-6),
                   f"model.eval reported {name!r} = {float(results[name]):.4f} on the check's logits, which is "
                   f"not the top-{k} accuracy: check which metric you registered under that name.")


def _adam_step_sizes(seed: int = 1, learning_rate: float = ADAM_LR) -> dict:
    """Mean |change| of each LeNet-5 weight matrix after one Adam step from seed 001's initialisation."""
    import mindspore as ms
    from mindspore import nn

    from ..data import create_mnist_dataset
    from ..models import lenet5

    images, labels = next(create_mnist_dataset(batch_size=32, train=False).create_tuple_iterator(num_epochs=1))
    ms.set_seed(seed)
    net = lenet5(init="seed")
    before = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), nn.Adam(net.trainable_params(), learning_rate))
    step.set_train()
    step(images, labels)
    return {p.name: float(np.abs(p.asnumpy() - before[p.name]).mean()) for p in net.trainable_params()
            if p.name in LENET_WEIGHTS}


@exercise("03.3", "One Adam(lr=0.001) step on lenet5(init='seed'): mean |change| of each of the 5 weight matrices.")
def check_adam_step(answer):
    expect(isinstance(answer, dict), "Answer with a dict: weight name -> mean absolute change, e.g. "
                                     "{'conv1.weight': ..., ...}.")
    missing = [name for name in LENET_WEIGHTS if name not in answer]
    expect(not missing, f"Your dict lacks {missing}; give the five weight matrices {list(LENET_WEIGHTS)}.")
    extra = sorted(set(answer) - set(LENET_WEIGHTS))
    expect(not extra, f"Only the five weight matrices, please; remove {extra}.")
    for name in LENET_WEIGHTS:
        expect_type(answer[name], (int, float, np.floating), f"The value for {name!r}")
        expect(answer[name] >= 0, f"The value for {name!r} is negative: take the mean of the *absolute* change.")
    truth = _adam_step_sizes()
    values = np.array([float(answer[n]) for n in LENET_WEIGHTS])
    expected = np.array([truth[n] for n in LENET_WEIGHTS])
    if np.allclose(values, expected, rtol=1e-3, atol=1e-9):
        return
    expect(values.max() > 1e-5, "These changes are as tiny as lr x gradient — the size of a Momentum/SGD step. "
                                "Use nn.Adam(params, learning_rate=0.001) and compare again.")
    ratio = values / expected
    same_factor = np.allclose(ratio, ratio.mean(), rtol=0.05)
    expect(not (same_factor and abs(ratio.mean() - 1) > 0.3), "Every value is off by the same factor: check the "
           "learning rate (0.001) and that you took exactly one step.")
    expect(not np.allclose(values, expected, rtol=0.2), "Close, but not the same network or batch: call "
           "ms.set_seed(cfg.seed) right before lenet5(init='seed'), and use the batch `images, labels` of section 4.")
    raise Incorrect("Your values differ from one Adam step: start from a fresh lenet5(init='seed') after "
                    "ms.set_seed(cfg.seed), take one step on `images, labels`, and average |after - before| "
                    "per weight matrix.")
