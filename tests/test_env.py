import course_lib  # noqa: F401  (sets env before mindspore)
import mindspore as ms
import pytest

from course_lib.config import load_config
from course_lib.env import device_available, init_env


def test_graph_and_pynative_modes_and_resolved_device():
    cfg = init_env(load_config(context_mode="pynative"))
    assert ms.get_context("mode") == ms.PYNATIVE_MODE
    assert (cfg.device_target, cfg.device_num, cfg.rank_id, cfg.device_id) == ("CPU", 1, 0, 0)
    init_env(load_config())
    assert ms.get_context("mode") == ms.GRAPH_MODE
    assert ms.get_context("device_target") == "CPU"


def test_accepts_a_plain_dict_and_the_seed_string_none():
    cfg = {"seed": 3, "device_target": "None", "context_mode": "graph", "device_num": 1, "device_id": 0}
    assert init_env(cfg)["device_target"] == "CPU"


def test_same_seed_same_random_numbers():
    init_env(load_config(seed=7))
    a = ms.ops.uniform((4,), ms.Tensor(0.0), ms.Tensor(1.0)).asnumpy()
    init_env(load_config(seed=7))
    b = ms.ops.uniform((4,), ms.Tensor(0.0), ms.Tensor(1.0)).asnumpy()
    assert (a == b).all()


def test_cpu_wheel_has_no_gpu_or_ascend():
    assert device_available("CPU") and not device_available("GPU") and not device_available("Ascend")


@pytest.mark.parametrize("overrides, error, message", [
    ({"device_target": "TPU"}, ValueError,
     r"Invalid device_target: 'TPU', should be in \[None, 'Ascend', 'GPU', 'CPU'\]"),
    ({"device_target": "GPU"}, RuntimeError,
     r"device_target 'GPU' is not available in this MindSpore install.*GPU plugin.*CUDA.*"
     r"runtime libraries are missing"),
    ({"device_target": "Ascend"}, RuntimeError,
     r"'Ascend' is not available.*Ascend plugin.*CANN runtime.*Fix: set device_target to 'CPU'"),
    ({"context_mode": "eager"}, ValueError, r"Invalid context_mode: 'eager', should be in \['graph', 'pynative'\]"),
    ({"device_num": 0}, ValueError, r"Invalid device_num: 0, should be an int >= 1"),
    ({"seed": -1}, ValueError, r"Invalid seed: -1"),
])
def test_bad_values_name_the_key_value_and_allowed(overrides, error, message):
    cfg = load_config().to_dict()
    cfg.update(overrides)  # bypass load_config's own checks: init_env must check too
    with pytest.raises(error, match=message):
        init_env(cfg)


def test_init_env_again_after_kernels_ran_in_a_fresh_process():
    import subprocess
    import sys
    code = ("import course_lib, mindspore as ms\n"
            "from course_lib.env import init_env\nfrom course_lib.config import load_config\n"
            "ms.run_check()\n"  # runs a kernel: ms.set_device would now raise
            "init_env(load_config()); init_env(load_config(context_mode='pynative'))\n"
            "print('mode', ms.get_context('mode'))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-1500:]
    assert "mode 1" in result.stdout
