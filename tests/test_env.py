import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import mindspore as ms
import pytest

from course_lib.run.config import load_config
from course_lib.run.env import device_available, init_env


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
    ({"device_num": 0}, ValueError,
     r"device_num must be an integer >= 1, got 0\. Fix: set the config key device_num to a whole number >= 1"),
    ({"seed": -1}, ValueError, r"seed must be an integer >= 0, got -1"),
    ({"seed": "1"}, TypeError, r"seed must be an integer \(>= 0\), got '1' \(str\)"),  # one vocabulary: wrong type
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
            "from course_lib.run.env import init_env\nfrom course_lib.run.config import load_config\n"
            "ms.run_check()\n"  # runs a kernel: ms.set_device would now raise
            "init_env(load_config()); init_env(load_config(context_mode='pynative'))\n"
            "print('mode', ms.get_context('mode'))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-1500:]
    assert "mode 1" in result.stdout


@pytest.mark.parametrize("fusion", [[[1, 2]], [2, 1], [1.5]])
def test_init_env_refuses_a_bad_all_reduce_fusion_config_even_from_a_dict(fusion):
    cfg = {"seed": 1, "device_target": "CPU", "context_mode": "graph", "device_num": 1, "device_id": 0,
           "all_reduce_fusion_config": fusion}
    with pytest.raises(ValueError, match=r"all_reduce_fusion_config.*Fix: fix the config key"):
        init_env(cfg)


LEFTOVER = {"MS_ROLE": "MS_WORKER", "MS_WORKER_NUM": "2", "MS_SCHED_HOST": "127.0.0.1", "RANK_ID": "1"}


def free_port() -> str:
    from course_lib.parallel.launch import find_free_port

    return str(find_free_port())  # nothing listens there: the scheduler of that msrun is gone


def test_leftover_msrun_variables_warn_in_a_standalone_run(monkeypatch):
    for key, value in {**LEFTOVER, "MS_SCHED_PORT": free_port()}.items():
        monkeypatch.setenv(key, value)
    with pytest.warns(RuntimeWarning, match=r"MS_ROLE=MS_WORKER.*left exported by an earlier msrun.*Fix: `unset "
                                            r"MS_ROLE MS_WORKER_NUM MS_SCHED_HOST MS_SCHED_PORT RANK_ID`"):
        cfg = init_env(load_config(device_target="CPU"))
    assert (cfg.device_num, cfg.rank_id) == (1, 0)


def test_leftover_msrun_variables_are_an_error_for_a_distributed_run(monkeypatch):
    from course_lib.parallel.worker import LeftoverMsrunEnvironment

    for key, value in {**LEFTOVER, "MS_SCHED_PORT": free_port()}.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(LeftoverMsrunEnvironment, match=r"not part of a running msrun job .*Fix: `unset"):
        init_env(load_config(device_target="CPU", device_num=2))
