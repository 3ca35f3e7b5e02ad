"""course_lib: the tested library behind the course "MindSpore, from training loop to inference".

Importing it first matters: it sets environment defaults that MindSpore only reads at import time
(see notebook 00 and ``course_lib.env.ENV_DEFAULTS``). Every notebook does ``import course_lib``
before anything from ``mindspore``.
"""
import os as _os
import sys as _sys
import warnings as _warnings

#: Read by MindSpore only when it is imported; a value already in the environment wins.
ENV_DEFAULTS = {
    # MindSpore's C++/Python log level (0 debug, 1 info, 2 warning, 3 error), read when mindspore is imported
    # (mindspore/log.py). 2 keeps MindSpore's warnings visible, deprecation notes included: they teach.
    "GLOG_v": "2",
    # oneDNN picks a reference-speed path for 3x3/7x7 convolutions on some AVX-512 CPUs; capping the
    # instruction set at AVX2 selects the fast JIT kernels (measured: benchmarks/, notebook 00).
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    # Graph compilation of a Cell defined in a notebook logs a harmless CORE "realpath failed" error, and a
    # failed compilation logs (ANALYZER) a copy of the exception it raises anyway; both print local paths.
    "MS_SUBMODULE_LOG_v": "{CORE:4,ANALYZER:4}",
}

for _key, _value in ENV_DEFAULTS.items():
    _os.environ.setdefault(_key, _value)

if "mindspore" in _sys.modules:
    _warnings.warn(
        "mindspore was imported before course_lib, so GLOG_v and ONEDNN_MAX_CPU_ISA set by course_lib "
        "have no effect in this process. Fix: restart the kernel and run `import course_lib` first.",
        RuntimeWarning,
        stacklevel=2,
    )

__version__ = "2.10.0.post1"
