"""Pins and environment defaults that MindSpore 2.10 depends on, checked in fresh processes."""
import subprocess
import sys

import numpy as np

import course_lib


def run(code, env=None):
    import os
    full_env = {k: v for k, v in os.environ.items() if k not in course_lib.ENV_DEFAULTS}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=300)


def test_numpy_is_the_1_x_pin():
    # numpy 2.x breaks MindSpore 2.10: PyNative ops fail ("A module that was compiled using NumPy 1.x cannot be
    # run in NumPy 2.x", then SystemError from pyboost_reshape) and GeneratorDataset fails on scalar labels.
    assert np.__version__ == "1.26.4"


def test_pynative_op_and_generator_dataset_with_scalar_labels_work():
    code = (
        "import course_lib, numpy as np, mindspore as ms, mindspore.dataset as ds\n"
        "ms.set_context(mode=ms.PYNATIVE_MODE)\n"
        "print(ms.ops.reshape(ms.Tensor(np.arange(6, dtype=np.float32)), (2, 3)).shape)\n"
        "data = ds.GeneratorDataset([(np.ones(2, np.float32), 3) for _ in range(4)], ['x', 'y'])\n"
        "print(sum(1 for _ in data.create_tuple_iterator()))\n"
        "data = ds.NumpySlicesDataset({'x': np.ones((4, 2), np.float32), 'y': np.arange(4)}, shuffle=False)\n"
        "print([int(r['y']) for r in data.create_dict_iterator(output_numpy=True)])\n"
    )
    result = run(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["(2,", "3)", "4", "[0,", "1,", "2,", "3]"]


def test_importing_course_lib_sets_defaults_that_users_can_override():
    code = "import os, course_lib; print(os.environ['GLOG_v'], os.environ['ONEDNN_MAX_CPU_ISA'])"
    assert run(code).stdout.split() == ["2", "AVX2"]
    assert run(code, {"GLOG_v": "1", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}).stdout.split() == ["1", "AVX512_CORE"]
    assert course_lib.ENV_DEFAULTS["GLOG_v"] == "2" and course_lib.ENV_DEFAULTS["ONEDNN_MAX_CPU_ISA"] == "AVX2"


def test_host_blocking_run_is_a_default_that_users_can_override():
    code = "import os, course_lib; print(os.environ['MS_DEV_HOST_BLOCKING_RUN'])"
    assert run(code).stdout.split() == ["1"]
    assert run(code, {"MS_DEV_HOST_BLOCKING_RUN": "0"}).stdout.split() == ["0"]


def test_importing_mindspore_first_warns_that_defaults_have_no_effect():
    result = run("import mindspore, course_lib")
    assert "mindspore was imported before course_lib" in result.stderr
