"""Solutions of lesson 03's exercises (the notebook's cells tagged `solution` show the same code)."""


def solve_03_1():
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Model

    from course_lib.callbacks import EvalCallback
    from course_lib.data import create_mnist_dataset
    from course_lib.models import lenet5

    ms.set_seed(1)
    net = lenet5()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9), metrics={"accuracy"})
    # Two batches per epoch and a one-batch test set: we only want to see *when* it evaluates.
    evaluator = EvalCallback(model, create_mnist_dataset(train=False).take(1), "accuracy", every=3, verbose=False)
    model.train(8, create_mnist_dataset(train=True).take(2), callbacks=[evaluator], dataset_sink_mode=False)
    return [epoch for epoch, _ in evaluator.scores]


def with_top5(net):
    """Model for evaluation that reports plain and top-5 accuracy."""
    from mindspore import nn
    from mindspore.train import Model

    return Model(net, loss_fn=nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                 metrics={"accuracy", "top_5_accuracy"})


def solve_03_2():
    return with_top5


def solve_03_3():
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    from course_lib.data import create_mnist_dataset
    from course_lib.models import lenet5

    images, labels = next(create_mnist_dataset(batch_size=32, train=False).create_tuple_iterator(num_epochs=1))
    ms.set_seed(1)
    net = lenet5(init="seed")
    before = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), nn.Adam(net.trainable_params(), learning_rate=0.001))
    step.set_train()
    step(images, labels)
    return {p.name: float(np.abs(p.asnumpy() - before[p.name]).mean()) for p in net.trainable_params()
            if p.name.endswith("weight")}


def _wrong_03():
    from mindspore import nn
    from mindspore.train import Model, Top1CategoricalAccuracy, TopKCategoricalAccuracy

    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    momentum_sized = {"conv1.weight": 4.2e-07, "conv2.weight": 8.2e-08, "fc1.weight": 9.6e-09,
                      "fc2.weight": 6.0e-08, "fc3.weight": 2.8e-06}
    return {
        "03.1": [[3, 6], [2, 5, 7], [0, 3, 6], "3, 6, 8"],
        "03.2": [
            lambda net: Model(net, loss_fn=loss_fn, metrics={"accuracy"}),
            lambda net: Model(net, loss_fn=loss_fn, metrics={"accuracy": Top1CategoricalAccuracy(),
                                                             "top5": TopKCategoricalAccuracy(3)}),
            lambda net: Model(net, metrics={"accuracy", "top_5_accuracy"}),
            with_top5(nn.Dense(2, 2)),
        ],
        "03.3": [momentum_sized, {name: 0.001 * 10 for name in momentum_sized}, [0.001] * 5,
                 {"conv1.weight": 0.001}],
    }


WRONG = _wrong_03
