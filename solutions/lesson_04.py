"""Solutions of lesson 04's exercises (the notebook's cells tagged `solution` show the same code)."""
import itertools


def _clipped_class(per_tensor=False):
    """The solution of 04.1; ``per_tensor=True`` builds a typical wrong version (each gradient clipped alone)."""
    from mindspore import nn, ops

    class ClippedTrainOneStepCell(nn.Cell):
        """The lesson's MyTrainOneStepCell, with the gradients' global norm clipped to max_norm."""

        def __init__(self, network, optimizer, max_norm):
            super().__init__(auto_prefix=False)
            self.network, self.optimizer, self.sens, self.max_norm = network, optimizer, 1.0, max_norm
            self.weights = optimizer.parameters
            self.grad = ops.GradOperation(get_by_list=True, sens_param=True)

        def construct(self, data, label):
            loss = self.network(data, label)
            grads = self.grad(self.network, self.weights)(data, label, ops.full_like(loss, self.sens))
            if per_tensor:
                clipped = ()
                for grad in grads:
                    clipped = clipped + (ops.clip_by_norm(grad, self.max_norm),)
                grads = clipped
            else:
                grads = ops.clip_by_global_norm(grads, self.max_norm)
            return ops.depend(loss, self.optimizer(grads))

    return ClippedTrainOneStepCell


def solve_04_1():
    return _clipped_class()


def solve_04_2():
    stream = itertools.cycle(range(10))  # Ascend: one endless stream of the 10 batches, 3 per epoch
    return [[next(stream) for _ in range(3)] for _ in range(4)]


def _wrong_04():
    from mindspore import nn

    class Unclipped(nn.TrainOneStepCell):
        def __init__(self, network, optimizer, max_norm):
            super().__init__(network, optimizer)

    return {
        "04.1": [Unclipped, _clipped_class(per_tensor=True), nn.TrainOneStepCell, "ClippedTrainOneStepCell"],
        "04.2": [([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 0, 1]], 2), [[0, 1, 2]] * 4,
                 [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]], [list(range(10))] * 4, [[0, 1, 2], [3, 4, 5]]],
    }


WRONG = _wrong_04
