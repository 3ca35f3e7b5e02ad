import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import mindspore as ms
import pytest
from mindspore import nn
from mindspore.train import Model

from course_lib.data.datasets import create_mnist_dataset
from course_lib.models import lenet5
from course_lib.train.callbacks import EvalCallback, LossRecorder
from course_lib.train.schedules import cosine_lr

# Lesson 03's recipe. Measured test accuracy on the embedded digits (360 images) for seeds 1, 2, 3:
# 5 epochs 97.8 / 96.9 / 97.2 %, 6 epochs 97.5 / 97.5 / 98.3 %, 8 epochs 98.6 / 98.9 / 98.6 %.
EPOCHS, LR_MAX, MOMENTUM, BATCH_SIZE = 8, 0.02, 0.9, 32


@pytest.mark.slow
def test_lenet_reaches_97_percent_on_the_digits_test_split(graph):
    ms.set_seed(2)  # the notebook uses seed 1; seed 2 was the weakest of 1..3 at 5 epochs
    train_set = create_mnist_dataset(batch_size=BATCH_SIZE, train=True)
    test_set = create_mnist_dataset(batch_size=BATCH_SIZE, train=False)
    steps = train_set.get_dataset_size()
    net = lenet5()
    optimizer = nn.Momentum(net.trainable_params(), cosine_lr(LR_MAX, 0.0, EPOCHS * steps, steps), MOMENTUM)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), optimizer,
                  metrics={"accuracy"})
    history = LossRecorder()
    evaluator = EvalCallback(model, test_set, "accuracy", every=EPOCHS, history=history, verbose=False)

    model.train(EPOCHS, train_set, callbacks=[history, evaluator], dataset_sink_mode=False)

    assert history.epochs == list(range(1, EPOCHS + 1))
    assert history.epoch_loss[0] > 1.5 and history.epoch_loss[-1] < 0.1
    assert [epoch for epoch, _ in evaluator.scores] == [EPOCHS]
    assert evaluator.best_score >= 0.97, f"LeNet-5 reached only {evaluator.best_score:.4f}"
