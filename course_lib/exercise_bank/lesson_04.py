"""Exercises of lesson 04 (TrainOneStepCell, NetWithLoss, hand-written loops, data sink)."""
import contextlib
import io
import math

import numpy as np

from ..exercises import Incorrect, exercise, expect

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
            for _ in range(count)]


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


def _one_big_step(start: np.ndarray, groups, learning_rate: float = 0.1):
    """Weights of the Dense(4, 3) after one plain SGD step per group of batches (each group concatenated into
    one batch), computed in NumPy: the gradient of the mean cross-entropy is (softmax - one_hot) / N."""
    weight, bias = start[:12].reshape(3, 4).astype(np.float64), start[12:].astype(np.float64)
    after = []
    for group in groups:
        x = np.concatenate([x for x, _ in group]).astype(np.float64)
        y = np.concatenate([y for _, y in group])
        logits = x @ weight.T + bias
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        dlogits = (probs - np.eye(3)[y]) / len(y)
        weight, bias = weight - learning_rate * dlogits.T @ x, bias - learning_rate * dlogits.sum(axis=0)
        after.append(np.concatenate([weight.ravel(), bias]))
    return after


@exercise("04.1", "A gradient-accumulation cell (network, optimizer, k): k calls with SGD = one step on k batches.")
def check_grad_accumulation(answer):
    from mindspore import Tensor, nn

    expect(isinstance(answer, type) and issubclass(answer, nn.Cell),
           f"Answer with the class itself (a subclass of nn.Cell, e.g. of course_lib.cells.TrainOneStepCell), "
           f"not {type(answer).__name__ if not isinstance(answer, type) else answer.__name__}.")
    for k in (2, 3):
        batches = _tiny_batches(2 * k)
        with _graph_mode():
            net, loss_net, optimizer = _tiny_setup()
            start = _weights(net)
            try:
                cell = answer(loss_net, optimizer, k)
                cell.set_train()
                after = []
                for x, y in batches:
                    cell(Tensor(x), Tensor(y))
                    after.append(_weights(net))
            except Exception as error:  # noqa: BLE001 - show the learner what failed
                raise Incorrect(f"With k={k}, building your cell as {answer.__name__}(loss_network, optimizer, k) "
                                f"or calling it on a batch fails: {_first_line(error)}") from None
        truth = _one_big_step(start, [batches[:k], batches[k:]])
        early = [i + 1 for i in range(k - 1) if not np.array_equal(after[i], start)]
        if early:
            raise Incorrect(f"With k={k}, the weights changed after call {early[0]}: the optimizer may run only on "
                            f"every k-th call (count the calls, and call it when the count reaches a multiple of k).")
        update, expected_update = after[k - 1] - start, truth[0] - start
        expect(np.abs(update).max() > 0, f"With k={k}, the weights did not change after {k} calls: on the k-th "
                                         f"call, pass the accumulated gradients to the optimizer.")
        if not np.allclose(update, expected_update, rtol=1e-4, atol=1e-6):
            scale = float(np.dot(update, expected_update) / np.dot(expected_update, expected_update))
            expect(not math.isclose(scale, k, rel_tol=0.02),
                   f"With k={k}, the update is {k}x too large: the loss is a *mean* over its batch, so the "
                   f"gradient of the big batch is the mean of the k gradients, not their sum.")
            raise Incorrect(f"With k={k}, the update after {k} calls is not one SGD step on the {k} batches "
                            f"together: accumulate the gradients of every call (the first included).")
        later = [k + i + 1 for i in range(k - 1) if not np.array_equal(after[k + i], after[k - 1])]
        if later:
            raise Incorrect(f"With k={k}, the weights changed again at call {later[0]}: the second round must "
                            f"wait for call {2 * k}.")
        expect(np.allclose(after[2 * k - 1], truth[1], rtol=1e-4, atol=1e-6),
               f"With k={k}, the first update is right but the second is not: reset the accumulated gradients "
               f"to zero after each optimizer step.")


def _step_recorder():
    """Reference callback: every step's net_outputs, as floats, grouped by epoch (in ``.epochs``)."""
    from mindspore.train import Callback

    class StepRecorder(Callback):
        def __init__(self):
            super().__init__()
            self.epochs = []

        def on_train_epoch_begin(self, run_context):
            self.epochs.append([])

        def on_train_step_end(self, run_context):
            outputs = run_context.original_args().net_outputs
            self.epochs[-1].append([float(t.asnumpy()) for t in outputs])

    return StepRecorder()


def _two_loss_model():
    """Model(TrainOneStepCell(NetWithLoss(two heads, two losses, return_terms=True), SGD)) and 4-column data."""
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Model

    from ..cells import NetWithLoss, TrainOneStepCell

    class TwoHeads(nn.Cell):
        def __init__(self):
            super().__init__()
            self.classify, self.regress = nn.Dense(4, 3), nn.Dense(4, 1)

        def construct(self, x):
            return self.classify(x), self.regress(x)

    ms.set_seed(0)
    backbone = TwoHeads()
    loss_net = NetWithLoss(backbone, {"cls": nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                                      "reg": nn.MSELoss()}, loss_weights={"cls": 1.0, "reg": 0.5},
                           num_inputs=1, return_terms=True)
    model = Model(TrainOneStepCell(loss_net, nn.SGD(backbone.trainable_params(), learning_rate=0.1)))
    rng = np.random.default_rng(5)
    columns = {"x": rng.standard_normal((12, 4)).astype(np.float32),
               "cls": rng.integers(0, 3, 12).astype(np.int32),
               "reg": rng.standard_normal((12, 1)).astype(np.float32)}
    return model, ds.NumpySlicesDataset(columns, shuffle=False).batch(4)


@exercise("04.2", "A callback for Model(train_cell) that keeps epoch_terms: per epoch, the mean of each loss term.")
def check_terms_callback(answer):
    from mindspore.train import Callback

    expect(isinstance(answer, type) and issubclass(answer, Callback),
           "Answer with the callback class itself (a subclass of mindspore.train.Callback), not an instance.")
    try:
        callback = answer()
    except Exception as error:  # noqa: BLE001
        raise Incorrect(f"{answer.__name__}() with no arguments fails: {_first_line(error)}") from None
    model, data = _two_loss_model()
    recorder = _step_recorder()
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            model.train(2, data, callbacks=[recorder, callback], dataset_sink_mode=False)
    except Exception as error:  # noqa: BLE001
        raise Incorrect(f"Model.train with your callback fails: {_first_line(error)}") from None
    expect(hasattr(callback, "epoch_terms"), "After training, your callback has no attribute `epoch_terms`.")
    terms = callback.epoch_terms
    expect(isinstance(terms, (list, tuple)) and len(terms) == 2,
           f"`epoch_terms` should hold one entry per epoch (the check trains 2 epochs), yours has "
           f"{len(terms) if hasattr(terms, '__len__') else type(terms).__name__}.")
    steps = [np.array(epoch) for epoch in recorder.epochs]  # (steps, 1 + number of terms) per epoch
    for epoch, (entry, outputs) in enumerate(zip(terms, steps), start=1):
        try:
            values = np.array([float(v.asnumpy()) if hasattr(v, "asnumpy") else float(v) for v in entry])
        except (TypeError, ValueError):
            raise Incorrect(f"Entry {epoch} of `epoch_terms` should be a tuple of numbers, yours is "
                            f"{entry!r}.") from None
        num_terms = outputs.shape[1] - 1
        expect(len(values) != num_terms + 1, "Your entries include the total: net_outputs is (total, term_1, "
                                             "term_2); keep only the terms.")
        expect(len(values) == num_terms, f"Each entry should have one number per loss term ({num_terms} here), "
                                         f"yours has {len(values)}.")
        if np.allclose(values, outputs[-1, 1:], rtol=1e-5, atol=1e-7):
            raise Incorrect("Your values are the terms of the *last* step of each epoch: average every step "
                            "of the epoch (collect them in on_train_step_end).")
        if epoch == 2 and np.allclose(values, np.concatenate(steps)[:, 1:].mean(axis=0), rtol=1e-5, atol=1e-7):
            raise Incorrect("Your second entry averages the steps of *both* epochs: start a new list at the "
                            "beginning of each epoch.")
        expect(np.allclose(values, outputs[:, 1:].mean(axis=0), rtol=1e-5, atol=1e-7),
               f"Entry {epoch} is not the mean of the loss terms over that epoch's steps.")
    expect(printed.getvalue().strip(), "The values are right; now also print them at the end of each epoch.")


def _sink_schedule(epochs: int, sink_size: int, dataset_batches: int):
    """Ascend's sink_size semantics: one stream of batches, pass after pass; each epoch takes sink_size of them."""
    passes = math.ceil(epochs * sink_size / dataset_batches)
    stream = [batch for _ in range(passes) for batch in range(dataset_batches)]
    return [stream[e * sink_size:(e + 1) * sink_size] for e in range(epochs)], passes


@exercise("04.3", "Ascend sink semantics, epoch=4, sink_size=3, 10 batches: (batches of each epoch, passes).")
def check_sink_schedule(answer):
    expect(isinstance(answer, tuple) and len(answer) == 2,
           "Answer with a tuple (batches_per_epoch, passes): a list of 4 lists of batch numbers, and an int.")
    batches, passes = answer
    truth_batches, truth_passes = _sink_schedule(SINK_EPOCHS, SINK_SIZE, SINK_DATASET_BATCHES)
    expect(isinstance(batches, (list, tuple)) and all(isinstance(b, (list, tuple)) for b in batches),
           "The first item should be a list with one list of batch numbers per epoch.")
    batches = [list(b) for b in batches]
    expect(len(batches) == SINK_EPOCHS, f"There should be one list per epoch ({SINK_EPOCHS}), yours has "
                                        f"{len(batches)}.")
    sizes = [len(b) for b in batches]
    expect(all(size == SINK_SIZE for size in sizes),
           f"Your epochs have {sizes} batches: on Ascend every epoch sinks exactly sink_size batches, even "
           f"when the data set's end falls inside an epoch (the next pass continues the stream).")
    expect(batches[0] == truth_batches[0], "Epoch 1 starts with the first batches of the data set.")
    expect(batches[1] != batches[0], "Each epoch continues where the previous one stopped; it does not restart "
                                     "the data set.")
    expect(batches == truth_batches, "Some epochs get the wrong batches: follow one stream of batches that "
                                     "starts a new pass over the data set as soon as the previous one ends.")
    expect(isinstance(passes, int) and not isinstance(passes, bool),
           f"The number of passes should be an int, yours is a {type(passes).__name__}.")
    expect(passes == truth_passes, f"{passes} is not the number of passes Model prepares (dataset_sink_num): "
                                   f"read the line that computes it in Model._train_dataset_sink_process.")
