"""Exercises of lesson 04 (a hand-written TrainOneStepCell, sink_size)."""
import contextlib
import math

import numpy as np

from course_lib.exercises import Incorrect, exercise, expect
from course_lib.i18n import N_, _

SINK_EPOCHS, SINK_SIZE, SINK_DATASET_BATCHES = 4, 3, 10


def _first_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip() and not set(line.strip()) <= set("-=")]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


@contextlib.contextmanager
def _graph_mode():
    """Run the block in graph mode (the lesson's mode, where Python attributes are frozen at compile time)."""
    import mindspore as ms

    previous = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        yield
    finally:
        ms.set_context(mode=previous)


def _tiny_batches(count: int):
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((4, 4)).astype(np.float32), rng.integers(0, 3, 4).astype(np.int32))
            for _sample in range(count)]


def _tiny_setup(seed: int = 0):
    """A fresh Dense(4, 3) (same weights for the same seed), its mean-loss network and plain SGD(0.1)."""
    import mindspore as ms
    from mindspore import nn

    ms.set_seed(seed)
    net = nn.Dense(4, 3)
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    return net, loss_net, nn.SGD(net.trainable_params(), learning_rate=0.1)


def _weights(net) -> np.ndarray:
    return np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])


def _clipped_sgd_steps(start: np.ndarray, batches, max_norm: float, per_tensor: bool = False,
                       learning_rate: float = 0.1):
    """Weights of the Dense(4, 3) after each plain SGD step with clipped gradients, computed in NumPy.

    The gradient of the mean cross-entropy is (softmax - one_hot) / N; the gradients (weight, bias) are scaled by
    max_norm / max(norm, max_norm), with the norm of all of them together (or of each one, ``per_tensor``)."""
    weight, bias = start[:12].reshape(3, 4).astype(np.float64), start[12:].astype(np.float64)
    after = []
    for x, y in batches:
        x = x.astype(np.float64)
        logits = x @ weight.T + bias
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        dlogits = (probs - np.eye(3)[y]) / len(y)
        grads = [dlogits.T @ x, dlogits.sum(axis=0)]
        if per_tensor:
            grads = [g * max_norm / max(np.linalg.norm(g), max_norm) for g in grads]
        else:
            norm = np.sqrt(sum(float((g ** 2).sum()) for g in grads))
            grads = [g * max_norm / max(norm, max_norm) for g in grads]
        weight, bias = weight - learning_rate * grads[0], bias - learning_rate * grads[1]
        after.append(np.concatenate([weight.ravel(), bias]))
    return after


@exercise("04.1", N_("A train cell (network, optimizer, max_norm) clipping the global norm of the gradients."),
           difficulty=2, minutes=15)
def check_clipped_train_step(answer):
    from mindspore import Tensor, nn

    expect(isinstance(answer, type) and issubclass(answer, nn.Cell),
           _("Answer with the class itself (a subclass of nn.Cell, e.g. of MyTrainOneStepCell), not {value}.")
           .format(value=type(answer).__name__ if not isinstance(answer, type) else answer.__name__))
    batches = _tiny_batches(3)
    for max_norm in (0.05, 100.0):
        with _graph_mode():
            net, loss_net, optimizer = _tiny_setup()
            start = _weights(net)
            try:
                cell = answer(loss_net, optimizer, max_norm)
                cell.set_train()
                after = []
                for x, y in batches:
                    cell(Tensor(x), Tensor(y))
                    after.append(_weights(net))
            except Exception as error:  # noqa: BLE001 - show the learner what failed
                raise Incorrect(_("Building your cell as {name}(loss_network, optimizer, max_norm={max_norm}) or "
                                  "calling it on a batch fails: {error}")
                                .format(name=answer.__name__, max_norm=max_norm, error=_first_line(error))) from None
        expect(not np.array_equal(after[0], start), _("With max_norm={max_norm}, the weights did not change: call "
                                                      "the optimizer with the clipped gradients.")
                                                    .format(max_norm=max_norm))
        truth = _clipped_sgd_steps(start, batches, max_norm)
        if all(np.allclose(a, t, rtol=1e-4, atol=1e-6) for a, t in zip(after, truth)):
            continue
        if all(np.allclose(a, t, rtol=1e-4, atol=1e-6)
               for a, t in zip(after, _clipped_sgd_steps(start, batches, 1e9))):
            raise Incorrect(_("With max_norm={max_norm}, your updates are plain SGD steps: the gradients were not "
                              "clipped. Pass them through ops.clip_by_global_norm(grads, max_norm).")
                            .format(max_norm=max_norm))
        if all(np.allclose(a, t, rtol=1e-4, atol=1e-6)
               for a, t in zip(after, _clipped_sgd_steps(start, batches, max_norm, per_tensor=True))):
            raise Incorrect(_("You clipped each gradient on its own: clip the global norm of all gradients together "
                              "(one scale factor for the whole tuple)."))
        raise Incorrect(_("With max_norm={max_norm}, the weights after each step differ from SGD with clipped "
                          "gradients. Keep sens at 1.0 and clip the whole tuple of gradients once per step.")
                        .format(max_norm=max_norm))


def _sink_schedule(epochs: int, sink_size: int, dataset_batches: int):
    """Ascend's sink_size semantics: one stream of batches, pass after pass; each epoch takes sink_size of them."""
    passes = math.ceil(epochs * sink_size / dataset_batches)
    stream = [batch for _pass in range(passes) for batch in range(dataset_batches)]
    return [stream[e * sink_size:(e + 1) * sink_size] for e in range(epochs)], passes


@exercise("04.2", N_("Ascend sink semantics, Model.train(4, data, sink_size=3), 10 batches: the batches of each "
                     "epoch."),
           difficulty=1, minutes=5)
def check_sink_schedule(answer):
    truth, _stream = _sink_schedule(SINK_EPOCHS, SINK_SIZE, SINK_DATASET_BATCHES)
    expect(not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[1], int)),
           _("Answer with the list of epochs only (one list of batch numbers per epoch), not a tuple."))
    expect(isinstance(answer, (list, tuple)) and all(isinstance(b, (list, tuple)) for b in answer),
           _("Answer with a list that holds one list of batch numbers per epoch."))
    batches = [list(b) for b in answer]
    expect(len(batches) == SINK_EPOCHS, _("There should be one list per epoch ({epochs}), yours has {n_batches}.")
                                        .format(epochs=SINK_EPOCHS, n_batches=len(batches)))
    sizes = [len(b) for b in batches]
    expect(all(size == SINK_SIZE for size in sizes),
           _("Your epochs have {sizes} batches: on Ascend every epoch sinks exactly sink_size batches, even when the "
             "data set's end falls inside an epoch (the next pass continues the stream).").format(sizes=sizes))
    expect(batches[0] == truth[0], _("Epoch 1 starts with the first batches of the data set."))
    expect(batches[1] != batches[0], _("Each epoch continues where the previous one stopped; it does not restart the "
                                       "data set."))
    expect(batches == truth, _("Some epochs get the wrong batches: follow one stream of batches that starts a new "
                               "pass over the data set as soon as the previous one ends."))
