"""Solutions of lesson 00's exercises (the notebook's cells tagged `solution` show the same code)."""


def solve_00_1():
    import mindspore as ms

    from course_lib.config import load_config
    from course_lib.env import init_env

    init_env(load_config(context_mode="pynative"))
    mode = ms.get_context("mode")
    init_env(load_config())  # back to graph mode
    return mode


def solve_00_2():
    from course_lib.data import create_mnist_dataset

    return create_mnist_dataset(batch_size=64, train=True).get_dataset_size()


def solve_00_3():
    from course_lib.config import load_config

    cfg = load_config(argv=["--lr", "0.1", "--epochs", "2"])
    return (type(cfg.lr), type(cfg.epochs))


WRONG = {"00.1": [0, "pynative"], "00.2": [23, 22.0, "22"], "00.3": [(str, str), (float, float), [float, int]]}
