"""Exercises of lesson 03 (Model, callbacks, what Model trains)."""
import math
from types import SimpleNamespace

import numpy as np

from course_lib.exercises import Incorrect, exercise, expect

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
    return [epoch for epoch, _ in callback.scores]


@exercise("03.1", "Train 8 epochs with EvalCallback(..., every=3): the list of epochs at which it evaluated.",
           difficulty=1, minutes=10,
           why=("RXZhbENhbGxiYWNrIGV2YWx1YXRlcyBldmVyeSBgZXZlcnlgIGVwb2NocyAoaGVyZSBhZnRlciBlcG9jaHMgMyBhbmQgNikg"
                "YW5kIGFsc28gYWZ0ZXIgdGhlIGxhc3QgZXBvY2gsIGV2ZW4gd2hlbiA4IGlzIG5vdCBhIG11bHRpcGxlIG9mIDMuIFNvIHRo"
                "ZSBuZXR3b3JrIHlvdSBlbmQgdXAgd2l0aCBhbHdheXMgZ2V0cyBhIHNjb3JlLCBhbmQgYSBrZWVwLXRoZS1iZXN0IHJ1bGUg"
                "bmV2ZXIgbWlzc2VzIHRoZSBmaW5hbCB3ZWlnaHRzLg=="),
           task_zh="用 EvalCallback(..., every=3) 训练 8 个 epoch：进行了评估的 epoch 组成的列表。",
           why_zh=("RXZhbENhbGxiYWNrIOavj+malCBgZXZlcnlgIOS4qiBlcG9jaCDor4TkvLDkuIDmrKHvvIjov5nph4zmmK/nrKwgMyDlkozn"
                   "rKwgNiDkuKogZXBvY2gg5LmL5ZCO77yJ77yM5bm25LiU5Zyo5pyA5ZCO5LiA5LiqIGVwb2NoIOS5i+WQjuS5n+S8muivhOS8"
                   "sO+8jOWNs+S9vyA4IOS4jeaYryAzIOeahOWAjeaVsOOAgui/meagt++8jOacgOe7iOW+l+WIsOeahOe9kee7nOaAu+acieS4"
                   "gOS4quWIhuaVsO+8jOKAnOS/neeVmeacgOWlveaooeWei+KAneeahOinhOWImeS5n+S4jeS8mua8j+aOieacgOWQjueahOad"
                   "g+mHjeOAgg=="))
def check_eval_epochs(answer):
    expect(isinstance(answer, (list, tuple)) and all(isinstance(e, int) and not isinstance(e, bool) for e in answer),
           "Answer with a list of epoch numbers (ints), e.g. [2, 4]; EvalCallback.scores holds (epoch, score) pairs.",
           zh="请用 epoch 编号（int）组成的列表作答，例如 [2, 4]；EvalCallback.scores 保存的是 (epoch, score) 对。")
    answer = list(answer)
    truth = _eval_epochs(every=3, epochs=8)
    expect(answer == sorted(answer) and len(set(answer)) == len(answer), "List each epoch once, in order.",
                                                                         zh="每个 epoch 只列一次，并按顺序排列。")
    expect(min(answer, default=1) >= 1 and [e + 1 for e in answer] != truth,
           "Epochs are counted from 1 (cur_epoch_num), not from 0.",
           zh="epoch 从 1 开始计数（cur_epoch_num），而不是从 0 开始。")
    expect(all(e in answer for e in truth[:-1]), "Some of the epochs that are multiples of `every` are missing.",
                                                 zh="缺少一些编号是 `every` 倍数的 epoch。")
    expect(truth[-1] in answer, "One evaluation is missing: look at what EvalCallback does after the last epoch "
                                "(is_last in on_train_epoch_end).",
                                zh="少了一次评估：看看 EvalCallback 在最后一个 epoch 之后做了什么（"
                                   "on_train_epoch_end 中的 is_last）。")
    expect(answer == truth, "Your list has epochs at which EvalCallback did not evaluate: it evaluates when the "
                            "epoch number is a multiple of `every`, and after the last epoch.",
                            zh="你的列表中有 EvalCallback 并未评估的 epoch：它在 epoch 编号是 `every` 的倍数时评估"
                               "，另外在最后一个 epoch 之后评估。")


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


@exercise("03.2", "A function net -> Model(net, loss_fn, metrics=...) that reports accuracy and top-5 accuracy.",
           difficulty=1, minutes=10,
           why=("V2l0aCAxMCBjbGFzc2VzLCB0b3AtNSBhY2N1cmFjeSBvbmx5IGFza3Mgd2hldGhlciB0aGUgdHJ1ZSBjbGFzcyBpcyBpbiB0"
                "aGUgYmV0dGVyIGhhbGYgb2YgdGhlIHJhbmtpbmcuIEEgcmFuZG9tIHJhbmtpbmcgYWxyZWFkeSBzY29yZXMgNS8xMCA9IDAu"
                "NSwgYW5kIGEgYmFyZWx5IHRyYWluZWQgbmV0d29yayBzY29yZXMgY2xvc2UgdG8gMS4wLiBUb3AtNSB3YXMgbWFkZSBmb3Ig"
                "SW1hZ2VOZXQncyAxLDAwMCBjbGFzc2VzLCB3aGVyZSA1IGd1ZXNzZXMgYXJlIDAuNSUgb2YgdGhlIGNob2ljZXM7IG9uIDEw"
                "IGNsYXNzZXMsIHJlcG9ydCB0aGUgdG9wLTEgYWNjdXJhY3ku"),
           task_zh="一个函数 net -> Model(net, loss_fn, metrics=...)，同时报告准确率和 top-5 准确率。",
           why_zh=("5a+5IDEwIOS4quexu+WIq+adpeivtO+8jHRvcC01IOWHhuehrueOh+WPqumXruecn+Wunuexu+WIq+aYr+WQpuaOkuWcqOWJ"
                   "jeS4gOWNiuOAgumaj+acuuaOkuW6j+WwseiDveW+l+WIsCA1LzEwID0gMC4177yM5LiA5Liq5Yeg5LmO5rKh5pyJ6K6t57uD"
                   "55qE572R57uc5bCx6IO95o6l6L+RIDEuMOOAgnRvcC01IOaYr+S4uiBJbWFnZU5ldCDnmoQgMSwwMDAg5Liq57G75Yir6K6+"
                   "6K6h55qE77yM5Zyo6YKj6YeMIDUg5qyh54yc5rWL5Y+q5Y2g5YWo6YOo6YCJ6aG555qEIDAuNSXvvJvlr7kgMTAg5Liq57G7"
                   "5Yir77yM6K+35oql5ZGKIHRvcC0xIOWHhuehrueOh+OAgg=="))
def check_top5_model(answer):
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Accuracy, Model, TopKCategoricalAccuracy

    class Identity(nn.Cell):
        def construct(self, x):
            return x

    expect(not isinstance(answer, Model), "Give the *function* that builds the Model (def with_top5(net): ...), "
                                          "not a Model: the check calls it with a network of its own.",
                                          zh="请给出构建 Model 的*函数*（def with_top5(net): ...），而不是一个 "
                                             "Model：检查程序会用它自己的网络调用这个函数。")
    expect(callable(answer), f"Answer with a function that takes a network and returns a Model; yours is a "
                             f"{type(answer).__name__}.",
                             zh=f"请用一个接收网络、返回 Model 的函数作答；你的答案是 {type(answer).__name__}。")
    try:
        model = answer(Identity())
    except Exception as error:  # noqa: BLE001 - show the learner what failed
        raise Incorrect(f"Calling your function with a network fails: {type(error).__name__}: "
                        f"{str(error).splitlines()[0] if str(error) else ''}",
                        zh=f"用一个网络调用你的函数时出错：{type(error).__name__}: "
                           f"{str(error).splitlines()[0] if str(error) else ''}") from None
    expect(isinstance(model, Model), f"Your function should return a mindspore.train.Model, it returned a "
                                     f"{type(model).__name__}.",
                                     zh=f"你的函数应返回 mindspore.train.Model，但它返回的是 {type(model).__name__}"
                                        "。")
    metrics = dict(getattr(model, "_metric_fns", None) or {})
    expect(metrics, "The Model has no metrics: pass metrics=... when you build it.",
                    zh="该 Model 没有评价指标：构建时请传入 metrics=...。")
    top5 = [name for name, m in metrics.items() if isinstance(m, TopKCategoricalAccuracy) and m.k == 5]
    top1 = [name for name, m in metrics.items() if isinstance(m, Accuracy)
            or isinstance(m, TopKCategoricalAccuracy) and m.k == 1]
    other_k = sorted(m.k for m in metrics.values() if isinstance(m, TopKCategoricalAccuracy) and m.k not in (1, 5))
    expect(top5 or not other_k, f"Your top-k metric uses k = {other_k}; top-5 means k = 5.",
                                zh=f"你的 top-k 指标使用的是 k = {other_k}；top-5 指的是 k = 5。")
    expect(top5, f"None of your metrics {sorted(metrics)} is a top-5 accuracy: add 'top_5_accuracy' "
                 f"(or a Top5CategoricalAccuracy instance under a name of your choice).",
                 zh=f"你的评价指标 {sorted(metrics)} 中没有 top-5 准确率：请添加 'top_5_accuracy'（或用你自选的名称"
                    "添加一个 Top5CategoricalAccuracy 实例）。")
    expect(top1, f"Keep the plain accuracy next to the top-5 one: your metrics are {sorted(metrics)}.",
                 zh=f"除了 top-5 准确率，还要保留普通的准确率：你的评价指标是 {sorted(metrics)}。")

    logits, labels = _logits_and_labels()
    data = ds.NumpySlicesDataset({"logits": logits, "label": labels}, shuffle=False).batch(4)
    try:
        results = model.eval(data, dataset_sink_mode=False)
    except Exception as error:  # noqa: BLE001
        raise Incorrect(f"model.eval fails with your Model: {type(error).__name__}: "
                        f"{str(error).splitlines()[0] if str(error) else ''}. Does it have a loss_fn for integer "
                        f"labels (sparse=True)?",
                        zh=f"用你的 Model 执行 model.eval 时出错：{type(error).__name__}: "
                           f"{str(error).splitlines()[0] if str(error) else ''}。它是否有适用于整数标签（sparse=True"
                           "）的 loss_fn？") from None
    ranks = np.asarray(_LABEL_RANKS)
    for names, k in ((top1, 1), (top5, 5)):
        truth = float(np.mean(ranks < k))
        for name in names:
            expect(math.isclose(float(results[name]), truth, abs_tol=1e-6),
                   f"model.eval reported {name!r} = {float(results[name]):.4f} on the check's logits, which is "
                   f"not the top-{k} accuracy: check which metric you registered under that name.",
                   zh=f"model.eval 在检查用的 logits 上报告 {name!r} = {float(results[name]):.4f}，这不是 top-{k} 准"
                      "确率：请检查你以这个名称注册的是哪个评价指标。")


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


@exercise("03.3", "A function trains(model) -> bool: does model.train update the weights?",
           difficulty=2, minutes=10,
           why=("VGhlIHdlaWdodHMgY2hhbmdlIGluc2lkZSBgVHJhaW5PbmVTdGVwQ2VsbGA6IGl0IGNvbXB1dGVzIHRoZSBncmFkaWVudHMg"
                "YW5kIGNhbGxzIHRoZSBvcHRpbWl6ZXIuIGBNb2RlbGAgb25seSB3cmFwcyB3aGF0IGl0IGlzIGdpdmVuLiBXaXRoIGBvcHRp"
                "bWl6ZXI9YCBpdCBidWlsZHMgdGhlIGBUcmFpbk9uZVN0ZXBDZWxsYCBpdHNlbGY7IGEgYE1vZGVsYCBidWlsdCBvbiB5b3Vy"
                "IG93biBgVHJhaW5PbmVTdGVwQ2VsbGAgdHJhaW5zIHdpdGggbm8gYG9wdGltaXplcj1gIGFyZ3VtZW50LCBhbmQgYE1vZGVs"
                "KG5ldCwgbG9zc19mbilgIHdpdGhvdXQgYW4gb3B0aW1pemVyIHJ1bnMgZm9yd2FyZCBwYXNzZXMgdGhhdCBuZXZlciB1cGRh"
                "dGUgYW55dGhpbmcuIFNvIGxvb2sgYXQgYG1vZGVsLnRyYWluX25ldHdvcmtgLCBub3QgYXQgdGhlIGFyZ3VtZW50cy4="),
           task_zh="一个函数 trains(model) -> bool：model.train 会更新权重吗？",
           why_zh=("5p2D6YeN5piv5ZyoIGBUcmFpbk9uZVN0ZXBDZWxsYCDlhoXpg6jmlLnlj5jnmoTvvJrlroPorqHnrpfmoq/luqblubbosIPn"
                   "lKjkvJjljJblmajjgIJgTW9kZWxgIOWPquaYr+WMheijheWug+W+l+WIsOeahOS4nOilv+OAguS8oOWFpSBgb3B0aW1pemVy"
                   "PWAg5pe277yM5a6D6Ieq5bex5p6E5bu6IGBUcmFpbk9uZVN0ZXBDZWxsYO+8m+WfuuS6juS9oOiHquW3seeahCBgVHJhaW5P"
                   "bmVTdGVwQ2VsbGAg5p6E5bu655qEIGBNb2RlbGAg5LiN6ZyA6KaBIGBvcHRpbWl6ZXI9YCDlj4LmlbDkuZ/kvJrorq3nu4Pv"
                   "vJvogIzmsqHmnInkvJjljJblmajnmoQgYE1vZGVsKG5ldCwgbG9zc19mbilgIOWPquaJp+ihjOato+WQkeiuoeeul++8jOS7"
                   "juS4jeabtOaWsOS7u+S9leWPguaVsOOAguaJgOS7peimgeeciyBgbW9kZWwudHJhaW5fbmV0d29ya2DvvIzogIzkuI3mmK/n"
                   "nIvkvKDnu5kgTW9kZWwg55qE5Y+C5pWw44CC"))
def check_trains(answer):
    expect(callable(answer), f"Answer with a function that takes a Model and returns True or False; yours is a "
                             f"{type(answer).__name__}.",
                             zh="请用一个接收 Model、返回 True 或 False 的函数作答；你的答案是 "
                                f"{type(answer).__name__}。")
    for kind, model, truth in _four_models():
        try:
            said = answer(model)
        except Exception as error:  # noqa: BLE001 - show the learner what failed
            raise Incorrect(f"Your function fails on the Model '{kind}': {type(error).__name__}: "
                            f"{str(error).splitlines()[0] if str(error) else ''}",
                            zh=f"你的函数在 Model '{kind}' 上出错：{type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else ''}") from None
        expect(isinstance(said, (bool, np.bool_)), f"Return True or False; for '{kind}' your function returned "
                                                   f"a {type(said).__name__}.",
                                                   zh=f"请返回 True 或 False；对于 '{kind}'，你的函数返回的是 "
                                                      f"{type(said).__name__}。")
        if kind == "own TrainOneStepCell":
            expect(said == truth, "A Model built on your own TrainOneStepCell trains although no optimizer was "
                                  "passed to Model: look at model.train_network, not at Model's arguments.",
                                  zh="基于你自己的 TrainOneStepCell 构建的 Model 会训练，尽管没有向 Model 传入优化"
                                     "器：要看 model.train_network，而不是 Model 的参数。")
        elif kind == "own WithLossCell":
            expect(said == truth, "A Model built on a WithLossCell (no optimizer anywhere) does not train: "
                                  "look at the type of model.train_network.",
                                  zh="基于 WithLossCell 构建的 Model（任何地方都没有优化器）不会训练：看一看 "
                                     "model.train_network 的类型。")
        elif kind == "loss only":
            expect(said == truth, "Model(net, loss_fn) without an optimizer does not train (section 2): its "
                                  "train network is a WithLossCell.",
                                  zh="没有优化器的 Model(net, loss_fn) 不会训练（第 2 节）：它的训练网络是 "
                                     "WithLossCell。")
        else:
            expect(said == truth, "Model(net, loss_fn, optimizer) does train: its train network is a "
                                  "TrainOneStepCell.",
                                  zh="Model(net, loss_fn, optimizer) 会训练：它的训练网络是 TrainOneStepCell。")
