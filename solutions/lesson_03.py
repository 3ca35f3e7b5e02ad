"""Solutions of lesson 03's exercises (the notebook's cells tagged `solution` show the same code)."""


def solve_03_1():
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Model

    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.models import lenet5
    from course_lib.train.callbacks import EvalCallback

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


def trains(model):
    """Does model.train update the weights? Only if its train network is a TrainOneStepCell."""
    from mindspore import nn

    return isinstance(model.train_network, nn.TrainOneStepCell)


def solve_03_3():
    return trains


def _wrong_03():
    from mindspore import nn
    from mindspore.train import Model, Top1CategoricalAccuracy, TopKCategoricalAccuracy

    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return {
        "03.1": [[3, 6], [2, 5, 7], [0, 3, 6], "3, 6, 8"],
        "03.2": [
            lambda net: Model(net, loss_fn=loss_fn, metrics={"accuracy"}),
            lambda net: Model(net, loss_fn=loss_fn, metrics={"accuracy": Top1CategoricalAccuracy(),
                                                             "top5": TopKCategoricalAccuracy(3)}),
            lambda net: Model(net, metrics={"accuracy", "top_5_accuracy"}),
            with_top5(nn.Dense(2, 2)),
        ],
        "03.3": [lambda model: True, lambda model: model._optimizer is not None,
                 lambda model: model._loss_fn is not None, lambda model: "yes", 42],
    }


WRONG = _wrong_03
