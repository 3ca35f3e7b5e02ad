"""Solutions of lesson 00's exercises (the notebook's cells tagged `solution` show the same code)."""


def solve_00_1():
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    return ms.get_context("mode")


def solve_00_2():
    from course_lib.data.datasets import create_mnist_dataset

    return create_mnist_dataset(batch_size=64, train=True).get_dataset_size()


def solve_00_3():
    import mindspore as ms
    import numpy as np

    @ms.jit(fullgraph=True)
    def strict_scale_by_sum(x):
        return x * float(np.sum(x.asnumpy()))

    try:
        strict_scale_by_sum(ms.Tensor(np.ones(3, np.float32)))
    except Exception as error:  # noqa: BLE001 - the class of the error is the answer
        return type(error)
    return None


WRONG = {"00.1": [0, "pynative"], "00.2": [23, 22.0, "22"], "00.3": [None, RuntimeError, TypeError, "AttributeError"]}
