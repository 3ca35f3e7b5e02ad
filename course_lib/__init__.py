"""course_lib: the tested library behind the course "MindSpore, from training loop to inference".

Importing it first matters: it sets environment defaults (``course_lib.ENV_DEFAULTS``, notebook 00). MindSpore
reads ``GLOG_v`` and ``MS_SUBMODULE_LOG_v`` when it is imported; oneDNN reads ``ONEDNN_MAX_CPU_ISA`` later, at the
first CPU kernel (appendix A1 shows both). Every notebook does ``import course_lib`` before anything from
``mindspore``.
"""
import os as _os
import sys as _sys
import warnings as _warnings

#: Set before ``import mindspore``; a value already in the environment wins.
ENV_DEFAULTS = {
    # MindSpore's C++/Python log level (0 debug, 1 info, 2 warning, 3 error), read when mindspore is imported
    # (mindspore/log.py). 2 keeps MindSpore's warnings visible, deprecation notes included: they teach.
    "GLOG_v": "2",
    # oneDNN is one of MindSpore's two CPU kernel libraries (beside nnacl). It reads this lazily, at the first
    # CPU kernel, not at import. On AVX-512 CPUs it otherwise picks, for some convolutions, kernels that are
    # slower than its AVX2 ones here (appendix A1 shows the kernels it picks and measures both; benchmarks/).
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    # Graph compilation of a Cell defined in a notebook logs a harmless CORE "realpath failed" error, and a
    # failed compilation logs (ANALYZER) a copy of the exception it raises anyway; both print local paths.
    "MS_SUBMODULE_LOG_v": "{CORE:4,ANALYZER:4}",
    # Run each compiled graph to its end before Python goes on (MindSpore's runtime reads it when a graph runs,
    # so it also works when set after `import mindspore`). Without it, an @ms.jit train step in PyNative mode
    # (lesson 00's loop, the Trainer) ran about 2x slower (ResNet-18) than with it on a 2-core Xeon, and LeNet-5's
    # steps stalled for 90-170 ms now and then (median up to 23x slower), while graph mode did not change
    # (`make bench-host-blocking`, benchmarks/README.md).
    "MS_DEV_HOST_BLOCKING_RUN": "1",
}

for _key, _value in ENV_DEFAULTS.items():
    _os.environ.setdefault(_key, _value)

#: MindSpore 2.10 refuses, at ``import mindspore``, a log folder (GLOG_log_dir, used when GLOG_logtostderr=0) whose
#: path has a space or a non-ASCII character (``_check_directory_by_regular`` in mindspore/log.py).
_MINDSPORE_DIRECTORY = r"^[\/0-9a-zA-Z@\_\-\.\:\\]+$"


def _check_mindspore_log_dir(environ=_os.environ):
    import re

    from course_lib.i18n import _

    folder = environ.get("GLOG_log_dir")
    if environ.get("GLOG_logtostderr") == "0" and folder and re.match(_MINDSPORE_DIRECTORY, folder, re.ASCII) is None:
        # S108 below: /tmp/ms_logs is an example in the message, not a file this code writes.
        raise ValueError(
            _("GLOG_log_dir is {folder!r}: MindSpore 2.10 accepts only a log folder path made of ASCII letters, "
              "digits and @ _ - . : / \\ (no spaces, no Chinese characters), so `import mindspore` would fail. Fix: "
              "set GLOG_log_dir to such a folder (e.g. {example}), or unset GLOG_logtostderr to log to the "
              "terminal.").format(folder=folder, example="C:/ms_logs" if _os.name == "nt" else "/tmp/ms_logs"))  # noqa: S108


def _warn_if_mindspore_came_first(modules=_sys.modules):
    from course_lib.i18n import _

    if "mindspore" in modules:
        _warnings.warn(
            _("mindspore was imported before course_lib, so GLOG_v set by course_lib has no effect in this process "
              "(and ONEDNN_MAX_CPU_ISA none once a CPU kernel has run). Fix: restart the kernel and run `import "
              "course_lib` first."),
            RuntimeWarning,
            stacklevel=3,
        )


_check_mindspore_log_dir()
_warn_if_mindspore_came_first()

__version__ = "2.10.0.post1"
