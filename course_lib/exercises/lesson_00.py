"""Exercises of lesson 00 (environment, graph vs PyNative mode, ``ms.jit``, the first pipeline)."""
from course_lib.exercises import Incorrect, exercise, expect, expect_type
from course_lib.i18n import N_, _


@exercise("00.1", N_("Switch to graph mode and back to PyNative (ms.set_context or init_env): what is "
                     "ms.get_context('mode')?"),
           difficulty=1, minutes=5)
def check_mode(answer):
    import mindspore as ms

    expect_type(answer, int, _("The mode"))
    if answer == ms.GRAPH_MODE:
        raise Incorrect(_("That is GRAPH_MODE (0): switch back with ms.set_context(mode=ms.PYNATIVE_MODE) (or "
                          "init_env(load_config(context_mode='pynative'))) before reading the mode."))
    expect(answer == ms.PYNATIVE_MODE, _("Read the mode with ms.get_context('mode') right after switching back."))


@exercise("00.2", N_("How many optimizer steps does one epoch of create_mnist_dataset(batch_size=64) take?"),
           difficulty=1, minutes=5)
def check_steps(answer):
    from course_lib.data.datasets import create_mnist_dataset

    expect_type(answer, int, _("The number of steps"))
    truth = create_mnist_dataset(batch_size=64, train=True).get_dataset_size()
    if answer == truth + 1:
        raise Incorrect(_("One step too many: in training the last partial batch is dropped (drop_remainder)."))
    expect(answer == truth, _("Count the full batches of 64 in the 1,437 training digits (or ask the dataset: "
                              "get_dataset_size())."))


@exercise("00.3", N_("@ms.jit(fullgraph=True) on a function that calls x.asnumpy(): the class of the error it raises."),
           difficulty=1, minutes=10)
def check_strict_jit_error(answer):
    if answer is None:
        raise Incorrect(_("None means no error was caught. Decorate with @ms.jit(fullgraph=True) (not plain @ms.jit, "
                          "whose JIT Fallback runs the numpy code), call the function, and store type(error)."))
    expect(isinstance(answer, type) and issubclass(answer, BaseException),
           _("Store the class of the error, type(error), not {kind} {answer!r}.")
           .format(kind=type(answer).__name__, answer=answer))
    expect(answer is not RuntimeError and issubclass(answer, AttributeError),
           _("{name} is not what strict mode raises here. Read the message: the compiler cannot find an attribute of "
             "a Tensor in graph mode.").format(name=answer.__name__))
