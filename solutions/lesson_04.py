"""Solutions of lesson 04's exercises (the notebook's cells tagged `solution` show the same code)."""
import math


def _grad_accumulation_class(average=True, reset=True):
    """The solution of 04.1 (``average=reset=True``); the other settings build typical wrong versions."""
    import mindspore as ms
    from mindspore import Parameter, Tensor, ops

    from course_lib.cells import TrainOneStepCell

    class GradAccumulationCell(TrainOneStepCell):
        """Adds the gradients of k calls; every k-th call, one optimizer step with their mean."""

        def __init__(self, network, optimizer, k):
            super().__init__(network, optimizer)
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ValueError(f"k must be a positive int (calls per optimizer step), got {k!r}.")
            self.k = k
            self.accumulated = self.weights.clone(prefix="accumulated", init="zeros")
            # Kept in a Parameter, like the gradients: state that the compiled graph reads and updates.
            self.calls = Parameter(Tensor(0, ms.int32), name="accumulated_calls", requires_grad=False)

        def construct(self, *inputs):
            loss = self.network(*inputs)
            sens = ops.fill(loss.dtype, loss.shape, self._sens)
            grads = self.grad(self.network, self.weights)(*inputs, sens)
            for total, grad in zip(self.accumulated, grads):
                ops.assign_add(total, grad)
            ops.assign_add(self.calls, Tensor(1, ms.int32))
            if self.calls % self.k == 0:
                # Each loss is a mean over its batch, so the big batch's gradient is the mean of the k gradients.
                update = ()
                for total in self.accumulated:
                    update = update + ((total / self.k) if average else total,)
                self.optimizer(update)
                if reset:
                    for total in self.accumulated:
                        ops.assign(total, ops.zeros_like(total))
            return loss

    return GradAccumulationCell


def solve_04_1():
    return _grad_accumulation_class()


def _terms_logger_class(mean=True):
    from mindspore.train import Callback

    class TermsLogger(Callback):
        """Prints and keeps (in ``epoch_terms``) the epoch mean of each loss term that the train cell returns."""

        def __init__(self):
            super().__init__()
            self.epoch_terms = []
            self._steps = []

        def on_train_epoch_begin(self, run_context):
            self._steps = []

        def on_train_step_end(self, run_context):
            total, *terms = run_context.original_args().net_outputs
            self._steps.append([float(term.asnumpy()) for term in terms])

        def on_train_epoch_end(self, run_context):
            steps = self._steps if mean else self._steps[-1:]
            means = tuple(sum(column) / len(column) for column in zip(*steps))
            self.epoch_terms.append(means)
            epoch = run_context.original_args().cur_epoch_num
            print(f"epoch {epoch}: loss terms " + ", ".join(f"{value:.4f}" for value in means))

    return TermsLogger


def solve_04_2():
    return _terms_logger_class()


def solve_04_3():
    epochs, sink_size, dataset_batches = 4, 3, 10
    passes = math.ceil(epochs * sink_size / dataset_batches)  # Model's dataset_sink_num
    stream = [batch for _ in range(passes) for batch in range(dataset_batches)]
    return [stream[e * sink_size:(e + 1) * sink_size] for e in range(epochs)], passes


def _wrong_04():
    from mindspore.train import Callback

    from course_lib.cells import TrainOneStepCell

    class SilentTermsLogger(_terms_logger_class()):
        def on_train_epoch_end(self, run_context):
            self.epoch_terms.append(tuple(sum(c) / len(c) for c in zip(*self._steps)))

    class TotalsLogger(Callback):
        def __init__(self):
            super().__init__()
            self.epoch_terms = []

        def on_train_epoch_end(self, run_context):
            self.epoch_terms.append(tuple(float(t.asnumpy()) for t in run_context.original_args().net_outputs))

    return {
        "04.1": [TrainOneStepCell, _grad_accumulation_class(average=False), _grad_accumulation_class(reset=False),
                 "GradAccumulationCell"],
        "04.2": [_terms_logger_class(mean=False), SilentTermsLogger, TotalsLogger, _terms_logger_class()()],
        "04.3": [([[0, 1, 2]] * 4, 2), ([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]], 2),
                 ([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 0, 1]], 4), ([list(range(10))] * 4, 4), [[0, 1, 2]]],
    }


WRONG = _wrong_04
