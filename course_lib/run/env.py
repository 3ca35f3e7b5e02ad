"""The run-environment template (``init_env``) of the migration guide's training script ("Training and Inference
Process", 训练及推理流程, r2.3) in MindSpore 2.10 spelling.

What changed since that guide: ``ms.set_context(device_target=...)`` is deprecated in favour of
``ms.set_device(...)``; the parallel mode enum is ``ms.ParallelMode``; distributed jobs are launched with
``msrun`` (lesson 08) instead of rank tables or mpirun.
"""
import os

import mindspore as ms
from mindspore.communication import get_group_size, get_rank, init

from course_lib.i18n import _
from course_lib.validation import check_all_reduce_fusion_config, check_int

DEVICE_TARGETS = ("CPU", "GPU", "Ascend")
#: What a GPU or Ascend plugin of the wheel needs on the machine before it can load.
RUNTIMES = {"GPU": "CUDA (and cuDNN)", "Ascend": "CANN"}
CONTEXT_MODES = {"graph": ms.GRAPH_MODE, "pynative": ms.PYNATIVE_MODE}


def _get(cfg, key, default=None):
    return cfg.get(key, default) if isinstance(cfg, dict) else getattr(cfg, key, default)


def _set(cfg, key, value):
    if isinstance(cfg, dict):
        cfg[key] = value
    else:
        setattr(cfg, key, value)


def device_available(target: str) -> bool:
    """Whether this MindSpore install can run on ``target``.

    The 2.10 wheel ships GPU and Ascend plugins (``mindspore/lib/plugin/``); they load only where the CUDA or
    CANN runtime is installed, so on a plain CPU machine only "CPU" is available.
    """
    if target == "CPU":
        return True
    backend = getattr(ms.device_context, target.lower(), None)
    try:
        return bool(backend is not None and backend.is_available())
    except Exception:  # noqa: BLE001 - a missing driver library means "not available"
        return False


def _fix_key(key, low):
    return _("set the config key {key} to a whole number >= {low}").format(key=key, low=low)


def _check_cfg(cfg):
    """``cfg`` must be a Config, a dict or a config object (argparse Namespace, ...): checked before any global
    state (seed, mode, device) is touched."""
    if isinstance(cfg, (str, bytes, os.PathLike)):
        raise TypeError(_("init_env takes a loaded config, not a file path: got {path!r}. Fix: "
                          "init_env(load_config({path!r})).").format(path=os.fspath(cfg)))
    if isinstance(cfg, dict) or (hasattr(cfg, "__dict__") and not isinstance(cfg, type)):
        return
    raise TypeError(_("init_env needs a config (course_lib.run.config.Config or a dict), got {cfg!r} ({cfg_type}). "
                      "Fix: init_env(load_config()) for the defaults, or init_env(load_config('my.yaml')).").format(
                          cfg=cfg, cfg_type=type(cfg).__name__))


def _runtime_started() -> bool:
    from mindspore.device_manager import DeviceContextManager

    current = ms.get_context("device_target")
    context = DeviceContextManager.get_instance().get_device_context(current)
    return context is not None and context.initialized()


def _set_device_once(target: str, device_id: int):
    """``ms.set_device`` raises once a kernel has run; calling init_env again on the same device is fine."""
    if _runtime_started():
        current = ms.get_context("device_target")
        if current != target:
            raise RuntimeError(_("MindSpore already runs on {current} in this process; the device cannot change to "
                                 "{target} once a kernel has executed. Fix: restart the Python process (kernel) "
                                 "and call init_env before running any operator.").format(
                                     current=current, target=target))
        return
    ms.set_device(target, device_id)


def init_env(cfg):
    """Seed, device target, graph/PyNative mode and standalone vs data-parallel set-up, from a config.

    ``cfg`` is a ``course_lib.run.config.Config`` (or a dict) with keys seed, device_target, context_mode,
    device_num, device_id and optionally all_reduce_fusion_config. Like the migration guide's version it writes
    back the resolved device_target, device_num and rank_id. Returns ``cfg``.
    """
    _check_cfg(cfg)
    seed = check_int("seed", _get(cfg, "seed", 1), 0, fix=_fix_key("seed", 0))
    ms.set_seed(seed)

    target = _get(cfg, "device_target")
    if target in (None, "None", "none", "auto"):
        target = next(t for t in ("Ascend", "GPU", "CPU") if device_available(t))
    if target not in DEVICE_TARGETS:
        raise ValueError(_("Invalid device_target: {target!r}, should be in [None, 'Ascend', 'GPU', 'CPU']. Fix "
                           "the config key device_target (None picks the best available device).").format(
                               target=target))
    if not device_available(target):
        runtime = RUNTIMES[target]
        raise RuntimeError(_("device_target {target!r} is not available in this MindSpore install "
                             "({version}): the wheel carries a {target} plugin (mindspore/lib/plugin/), but "
                             "it cannot load because the {runtime} runtime libraries are missing on this machine. "
                             "Fix: set device_target to 'CPU' or None, or run on a machine with a {target} device "
                             "and {runtime} installed.").format(
                                 target=target, version=ms.__version__, runtime=runtime))
    mode = _get(cfg, "context_mode", "graph")
    if mode not in CONTEXT_MODES:
        raise ValueError(_("Invalid context_mode: {mode!r}, should be in ['graph', 'pynative']. Fix the config key "
                           "context_mode.").format(mode=mode))
    device_num = check_int("device_num", _get(cfg, "device_num", 1), 1, fix=_fix_key("device_num", 1))
    fusion = check_all_reduce_fusion_config(_get(cfg, "all_reduce_fusion_config"),
                                            fix="fix the config key all_reduce_fusion_config: a flat list of "
                                                "increasing gradient indices, e.g. [85, 160], or null")
    device_id = check_int("device_id", _get(cfg, "device_id", 0), 0, fix=_fix_key("device_id", 0))

    ms.set_context(mode=CONTEXT_MODES[mode])
    if target == "CPU":
        device_id = 0
    _set_device_once(target, device_id)
    _set(cfg, "device_target", target)
    _set(cfg, "device_id", device_id)

    from course_lib.parallel.worker import msrun_role

    # msrun variables left exported by an earlier msrun: a warning for a standalone run; an error for a
    # distributed one, whose init() would otherwise wait for a scheduler that is gone.
    msrun_role(on_leftover="raise" if device_num > 1 else "warn")
    if device_num > 1:
        # init() works the same on Ascend, GPU and CPU; get_rank/get_group_size are only valid after it.
        init()
        group_size = get_group_size()
        if device_num != group_size:
            raise ValueError(_("the setting device_num: {device_num} not equal to the real group_size: "
                               "{group_size}. Fix: launch with msrun --worker_num={device_num} or set device_num "
                               "to {group_size}.").format(device_num=device_num, group_size=group_size))
        _set(cfg, "rank_id", get_rank())
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
        if fusion:
            ms.set_auto_parallel_context(all_reduce_fusion_config=list(fusion))
        print(_("run distribute! rank {rank} of {group_size}").format(
            rank=get_rank(), group_size=group_size), flush=True)
    else:
        _set(cfg, "device_num", 1)
        _set(cfg, "rank_id", 0)
        ms.reset_auto_parallel_context()
        print(_("run standalone!"), flush=True)
    return cfg
