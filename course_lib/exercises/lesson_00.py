"""Exercises of lesson 00 (environment, graph vs PyNative mode, ``ms.jit``, the first pipeline)."""
from course_lib.exercises import Incorrect, exercise, expect, expect_type


@exercise("00.1", "Switch to graph mode and back to PyNative (ms.set_context or init_env): what is "
                  "ms.get_context('mode')?",
           difficulty=1, minutes=5,
           task_zh="切换到图模式，再切回动态图（ms.set_context 或 init_env）：ms.get_context('mode') 的值是多少？")
def check_mode(answer):
    import mindspore as ms

    expect_type(answer, int, "The mode", "模式")
    if answer == ms.GRAPH_MODE:
        raise Incorrect("That is GRAPH_MODE (0): switch back with ms.set_context(mode=ms.PYNATIVE_MODE) (or "
                        "init_env(load_config(context_mode='pynative'))) before reading the mode.",
                        zh="这是 GRAPH_MODE (0)：读取模式之前，先用 ms.set_context(mode=ms.PYNATIVE_MODE)（或 "
                           "init_env(load_config(context_mode='pynative'))）切换回来。")
    expect(answer == ms.PYNATIVE_MODE, "Read the mode with ms.get_context('mode') right after switching back.",
                                       zh="切换回来之后，立即用 ms.get_context('mode') 读取模式。")


@exercise("00.2", "How many optimizer steps does one epoch of create_mnist_dataset(batch_size=64) take?",
           difficulty=1, minutes=5,
           task_zh="create_mnist_dataset(batch_size=64) 的一个 epoch 要执行多少步优化器更新？")
def check_steps(answer):
    from course_lib.data.datasets import create_mnist_dataset

    expect_type(answer, int, "The number of steps", "步数")
    truth = create_mnist_dataset(batch_size=64, train=True).get_dataset_size()
    if answer == truth + 1:
        raise Incorrect("One step too many: in training the last partial batch is dropped (drop_remainder).",
                        zh="多了一步：训练时最后一个不完整的 batch 会被丢弃（drop_remainder）。")
    expect(answer == truth, "Count the full batches of 64 in the 1,437 training digits "
                            "(or ask the dataset: get_dataset_size()).",
                            zh="数一数 1,437 张训练数字图像能组成多少个完整的 64 张 batch（或者直接问数据集："
                               "get_dataset_size()）。")


@exercise("00.3", "@ms.jit(fullgraph=True) on a function that calls x.asnumpy(): the class of the error it raises.",
           difficulty=1, minutes=10,
           task_zh="对调用了 x.asnumpy() 的函数使用 @ms.jit(fullgraph=True)：它抛出的错误是哪个类？")
def check_strict_jit_error(answer):
    if answer is None:
        raise Incorrect("None means no error was caught. Decorate with @ms.jit(fullgraph=True) (not plain @ms.jit, "
                        "whose JIT Fallback runs the numpy code), call the function, and store type(error).",
                        zh="None 表示没有捕获到错误。请用 @ms.jit(fullgraph=True) 装饰（而不是普通的 @ms.jit，它的 "
                           "JIT Fallback 会执行 numpy 代码），调用该函数，并保存 type(error)。")
    expect(isinstance(answer, type) and issubclass(answer, BaseException),
           f"Store the class of the error, type(error), not {type(answer).__name__} {answer!r}.",
           zh=f"请保存错误的类 type(error)，而不是 {type(answer).__name__} {answer!r}。")
    expect(answer is not RuntimeError and issubclass(answer, AttributeError),
           f"{answer.__name__} is not what strict mode raises here. Read the message: the compiler cannot find an "
           f"attribute of a Tensor in graph mode.",
           zh=f"{answer.__name__} 不是严格模式在这里抛出的错误。读一读报错信息：在图模式下，编译器找不到 Tensor 的某"
              "个属性。")
