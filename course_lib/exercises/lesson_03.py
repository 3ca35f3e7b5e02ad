"""Exercises of lesson 03 (Model, callbacks, what Model trains)."""
import math
from types import SimpleNamespace

import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, first_line
from course_lib.i18n import N_, _

#: Rank of the true class in each row of the 03.2 logits (0 = highest score): 3 of 12 rows are right at top-1,
#: 5 at top-3, 8 at top-5, so each k gives a different score.
_LABEL_RANKS = (0, 0, 0, 1, 2, 4, 4, 5, 6, 9, 3, 7)


def _eval_epochs(every: int, epochs: int) -> list:
    """The epochs at which course_lib's EvalCallback evaluates: its own hook, driven without any training."""
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Model

    from course_lib.train.callbacks import EvalCallback

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
    return [epoch for epoch, _score in callback.scores]


@exercise("03.1", N_("Train 8 epochs with EvalCallback(..., every=3): the list of epochs at which it evaluated."),
           difficulty=1, minutes=10,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("RXZhbENhbGxiYWNrIGV2YWx1YXRlcyBldmVyeSBgZXZlcnlgIGVwb2NocyAoaGVyZSBhZnRlciBlcG9jaHMgMyBhbmQgNikg"
                   "YW5kIGFsc28gYWZ0ZXIgdGhlIGxhc3QgZXBvY2gsIGV2ZW4gd2hlbiA4IGlzIG5vdCBhIG11bHRpcGxlIG9mIDMuIFNvIHRo"
                   "ZSBuZXR3b3JrIHlvdSBlbmQgdXAgd2l0aCBhbHdheXMgZ2V0cyBhIHNjb3JlLCBhbmQgYSBrZWVwLXRoZS1iZXN0IHJ1bGUg"
                   "bmV2ZXIgbWlzc2VzIHRoZSBmaW5hbCB3ZWlnaHRzLg=="))
def check_eval_epochs(answer):
    expect(isinstance(answer, (list, tuple)) and all(isinstance(e, int) and not isinstance(e, bool) for e in answer),
           _("Answer with a list of epoch numbers (ints), e.g. [2, 4]; EvalCallback.scores holds (epoch, score) "
             "pairs."))
    answer = list(answer)
    truth = _eval_epochs(every=3, epochs=8)
    expect(answer == sorted(answer) and len(set(answer)) == len(answer), _("List each epoch once, in order."))
    expect(min(answer, default=1) >= 1 and [e + 1 for e in answer] != truth,
           _("Epochs are counted from 1 (cur_epoch_num), not from 0."))
    expect(all(e in answer for e in truth[:-1]), _("Some of the epochs that are multiples of `every` are missing."))
    expect(truth[-1] in answer, _("One evaluation is missing: look at what EvalCallback does after the last epoch "
                                  "(is_last in on_train_epoch_end)."))
    expect(answer == truth, _("Your list has epochs at which EvalCallback did not evaluate: it evaluates when the "
                              "epoch number is a multiple of `every`, and after the last epoch."))


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


@exercise("03.2", N_("A function net -> Model(net, loss_fn, metrics=...) that reports accuracy and top-5 accuracy."),
           difficulty=1, minutes=10,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("V2l0aCAxMCBjbGFzc2VzLCB0b3AtNSBhY2N1cmFjeSBvbmx5IGFza3Mgd2hldGhlciB0aGUgdHJ1ZSBjbGFzcyBpcyBpbiB0"
                   "aGUgYmV0dGVyIGhhbGYgb2YgdGhlIHJhbmtpbmcuIEEgcmFuZG9tIHJhbmtpbmcgYWxyZWFkeSBzY29yZXMgNS8xMCA9IDAu"
                   "NSwgYW5kIGEgYmFyZWx5IHRyYWluZWQgbmV0d29yayBzY29yZXMgY2xvc2UgdG8gMS4wLiBUb3AtNSB3YXMgbWFkZSBmb3Ig"
                   "SW1hZ2VOZXQncyAxLDAwMCBjbGFzc2VzLCB3aGVyZSA1IGd1ZXNzZXMgYXJlIDAuNSUgb2YgdGhlIGNob2ljZXM7IG9uIDEw"
                   "IGNsYXNzZXMsIHJlcG9ydCB0aGUgdG9wLTEgYWNjdXJhY3ku"))
def check_top5_model(answer):
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Accuracy, Model, TopKCategoricalAccuracy

    class Identity(nn.Cell):
        def construct(self, x):
            return x

    expect(not isinstance(answer, Model), _("Give the *function* that builds the Model (def with_top5(net): ...), "
                                            "not a Model: the check calls it with a network of its own."))
    expect(callable(answer), _("Answer with a function that takes a network and returns a Model; yours is a {kind}.")
                             .format(kind=type(answer).__name__))
    try:
        model = answer(Identity())
    except Exception as error:  # noqa: BLE001 - show the learner what failed
        raise Incorrect(_("Calling your function with a network fails: {error_type}: {message}")
                        .format(error_type=type(error).__name__, message=first_line(error))) from None
    expect(isinstance(model, Model), _("Your function should return a mindspore.train.Model, it returned a {kind}.")
                                     .format(kind=type(model).__name__))
    metrics = dict(getattr(model, "_metric_fns", None) or {})
    expect(metrics, _("The Model has no metrics: pass metrics=... when you build it."))
    top5 = [name for name, m in metrics.items() if isinstance(m, TopKCategoricalAccuracy) and m.k == 5]
    top1 = [name for name, m in metrics.items() if isinstance(m, Accuracy)
            or isinstance(m, TopKCategoricalAccuracy) and m.k == 1]
    other_k = sorted(m.k for m in metrics.values() if isinstance(m, TopKCategoricalAccuracy) and m.k not in (1, 5))
    expect(top5 or not other_k, _("Your top-k metric uses k = {other_k}; top-5 means k = 5.").format(other_k=other_k))
    expect(top5, _("None of your metrics {metrics} is a top-5 accuracy: add 'top_5_accuracy' (or a "
                   "Top5CategoricalAccuracy instance under a name of your choice).").format(metrics=sorted(metrics)))
    expect(top1, _("Keep the plain accuracy next to the top-5 one: your metrics are {metrics}.")
                 .format(metrics=sorted(metrics)))

    logits, labels = _logits_and_labels()
    data = ds.NumpySlicesDataset({"logits": logits, "label": labels}, shuffle=False).batch(4)
    try:
        results = model.eval(data, dataset_sink_mode=False)
    except Exception as error:  # noqa: BLE001
        raise Incorrect(_("model.eval fails with your Model: {error_type}: {message}. Does it have a loss_fn for "
                          "integer labels (sparse=True)?")
                        .format(error_type=type(error).__name__, message=first_line(error))) from None
    ranks = np.asarray(_LABEL_RANKS)
    for names, k in ((top1, 1), (top5, 5)):
        truth = float(np.mean(ranks < k))
        for name in names:
            expect(math.isclose(float(results[name]), truth, abs_tol=1e-6),
                   _("model.eval reported {name!r} = {reported:.4f} on the check's logits, which is not the top-{k} "
                     "accuracy: check which metric you registered under that name.")
                   .format(name=name, reported=float(results[name]), k=k))


def _four_models():
    """Four small Models and whether Model.train updates their weights (measured, not assumed)."""
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Model

    cases = []
    for kind in ("loss+optimizer", "loss only", "own TrainOneStepCell", "own WithLossCell"):
        ms.set_seed(1)
        net = nn.Dense(2, 2)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
        if kind == "loss+optimizer":
            model = Model(net, loss_fn=loss_fn, optimizer=opt)
        elif kind == "loss only":
            model = Model(net, loss_fn=loss_fn)
        elif kind == "own TrainOneStepCell":
            model = Model(nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt))
        else:
            model = Model(nn.WithLossCell(net, loss_fn))
        before = net.weight.asnumpy().copy()
        data = ds.NumpySlicesDataset({"x": np.ones((4, 2), np.float32), "y": np.zeros(4, np.int32)},
                                     shuffle=False).batch(4)  # a Model binds the dataset it trains on: one each
        model.train(1, data, dataset_sink_mode=False)
        cases.append((kind, model, not np.array_equal(before, net.weight.asnumpy())))
    return cases


@exercise("03.3", N_("A function trains(model) -> bool: does model.train update the weights?"),
           difficulty=2, minutes=10,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("VGhlIHdlaWdodHMgY2hhbmdlIGluc2lkZSBgVHJhaW5PbmVTdGVwQ2VsbGA6IGl0IGNvbXB1dGVzIHRoZSBncmFkaWVudHMg"
                   "YW5kIGNhbGxzIHRoZSBvcHRpbWl6ZXIuIGBNb2RlbGAgb25seSB3cmFwcyB3aGF0IGl0IGlzIGdpdmVuLiBXaXRoIGBvcHRp"
                   "bWl6ZXI9YCBpdCBidWlsZHMgdGhlIGBUcmFpbk9uZVN0ZXBDZWxsYCBpdHNlbGY7IGEgYE1vZGVsYCBidWlsdCBvbiB5b3Vy"
                   "IG93biBgVHJhaW5PbmVTdGVwQ2VsbGAgdHJhaW5zIHdpdGggbm8gYG9wdGltaXplcj1gIGFyZ3VtZW50LCBhbmQgYE1vZGVs"
                   "KG5ldCwgbG9zc19mbilgIHdpdGhvdXQgYW4gb3B0aW1pemVyIHJ1bnMgZm9yd2FyZCBwYXNzZXMgdGhhdCBuZXZlciB1cGRh"
                   "dGUgYW55dGhpbmcuIFNvIGxvb2sgYXQgYG1vZGVsLnRyYWluX25ldHdvcmtgLCBub3QgYXQgdGhlIGFyZ3VtZW50cy4="))
def check_trains(answer):
    expect(callable(answer), _("Answer with a function that takes a Model and returns True or False; yours is a "
                               "{kind}.").format(kind=type(answer).__name__))
    for kind, model, truth in _four_models():
        try:
            said = answer(model)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(_("Your function fails on the Model '{kind}': {error_type}: {message}")
                            .format(kind=kind, error_type=type(error).__name__, message=first_line(error))) from None
        expect(isinstance(said, (bool, np.bool_)), _("Return True or False; for '{kind}' your function returned a "
                                                     "{returned}.").format(kind=kind, returned=type(said).__name__))
        if kind == "own TrainOneStepCell":
            expect(said == truth, _("A Model built on your own TrainOneStepCell trains although no optimizer was "
                                    "passed to Model: look at model.train_network, not at Model's arguments."))
        elif kind == "own WithLossCell":
            expect(said == truth, _("A Model built on a WithLossCell (no optimizer anywhere) does not train: look at "
                                    "the type of model.train_network."))
        elif kind == "loss only":
            expect(said == truth, _("Model(net, loss_fn) without an optimizer does not train (section 2): its train "
                                    "network is a WithLossCell."))
        else:
            expect(said == truth, _("Model(net, loss_fn, optimizer) does train: its train network is a "
                                    "TrainOneStepCell."))
