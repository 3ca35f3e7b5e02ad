"""Exercises of lesson 00 (environment, config, first pipeline)."""
from ..exercises import Incorrect, exercise, expect, expect_type


@exercise("00.1", "Switch my_config.yaml to PyNative, reload it, run init_env: what is ms.get_context('mode')?")
def check_mode(answer):
    import mindspore as ms

    expect_type(answer, int, "The mode")
    if answer == ms.GRAPH_MODE:
        raise Incorrect("That is GRAPH_MODE (0): edit the YAML, then call load_config(...) again and pass the new "
                        "config to init_env before reading the mode.")
    expect(answer == ms.PYNATIVE_MODE, "Read the mode with ms.get_context('mode') right after init_env.")


@exercise("00.2", "How many optimizer steps does one epoch of create_mnist_dataset(batch_size=64) take?")
def check_steps(answer):
    from ..data import create_mnist_dataset

    expect_type(answer, int, "The number of steps")
    truth = create_mnist_dataset(batch_size=64, train=True).get_dataset_size()
    if answer == truth + 1:
        raise Incorrect("One step too many: in training the last partial batch is dropped (drop_remainder).")
    expect(answer == truth, "Count the full batches of 64 in the 1,437 training digits "
                            "(or ask the dataset: get_dataset_size()).")


@exercise("00.3", "load_config(argv=['--lr', '0.1', '--epochs', '2']): give (type(cfg.lr), type(cfg.epochs)).")
def check_types(answer):
    expect(isinstance(answer, tuple) and len(answer) == 2, "Answer with a tuple of two types, e.g. (str, str).")
    expect(all(isinstance(t, type) for t in answer), "Both items should be types, such as int or float.")
    expect(answer[0] is float, "cfg.lr: command-line values are read as YAML scalars, and '0.1' is a number.")
    expect(answer[1] is int, "cfg.epochs: '2' read as a YAML scalar is a whole number.")
