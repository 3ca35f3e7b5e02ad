"""Migrating a ResNet from PyTorch (the migration guide's "Network Migration Debugging Example", r1.7): the
weight converter and the step-by-step comparison of the two frameworks' training steps.

``convert_torch_state_dict`` maps a torchvision ``state_dict`` onto ``course_lib.models.resnet18/34/50/101``,
checks every name and shape, and loads it. The PyTorch reference network is ``course_lib.migrate.torch_resnet``.

torch is optional for the course: this module imports it only inside the functions that need it.
"""
import numbers
import re
from collections.abc import Mapping

import numpy as np

from course_lib.i18n import _
from course_lib.validation import check_int, check_real

__all__ = [
    "RESNET_LAYOUTS", "torch_to_mindspore_name", "map_state_dict", "convert_torch_state_dict",
    "parameter_differences", "calibrate_batchnorm", "torch_param_groups",
    "make_torch_train_step",
]

#: torchvision leaf name of a BatchNorm tensor -> MindSpore ``nn.BatchNorm2d`` parameter name.
BATCHNORM_LEAF_NAMES = {
    "weight": "gamma",
    "bias": "beta",
    "running_mean": "moving_mean",
    "running_var": "moving_variance",
}

#: torchvision module name -> MindSpore cell name (applied to each dotted component).
MODULE_NAMES = {
    "downsample": "down_sample_layer",
    "fc": "end_point",
}

#: Buffers PyTorch keeps that have no MindSpore counterpart (BatchNorm's step counter).
SKIPPED_LEAF_NAMES = ("num_batches_tracked",)

#: Block type and blocks per stage for each depth, as in torchvision.
RESNET_LAYOUTS = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
}

_TENSOR_NAME = re.compile(r"^(?P<module>[A-Za-z_][\w.]*)\.(?P<leaf>[A-Za-z_]\w*)$")
_BATCHNORM_MODULE = re.compile(r"(^|\.)(bn\d*|downsample\.1)$")
_MAX_LISTED = 12


class OptionalInstallMissing(RuntimeError):
    """An optional package (PyTorch) is not installed; the message says how to add it.

    In a notebook, IPython shows only the message (``_render_traceback_``), not a traceback: the learner sees what
    is missing and the fix, and "Run All" stops there instead of failing further down.
    """

    def _render_traceback_(self):
        return [str(self)]


TORCH_INSTALL_HINT = ("Fix: add the CPU build of PyTorch with `python -m pip install -r requirements-torch.txt` "
                      "(or `python course.py install --full`), then restart the kernel.")


def require_torch(lesson="Lesson 07"):
    """Return the ``torch`` module, or raise :class:`OptionalInstallMissing` with the install command.

    PyTorch is not part of the default install (it is large); only the migration lesson, one recipe and the
    benchmarks need it.
    """
    try:
        import torch
    except ImportError:
        raise OptionalInstallMissing(
            _("{lesson} compares MindSpore with PyTorch, an optional install that this environment does not have. "
              "The cells below need it, so the run stops here. {torch_install_hint} Without it you can still read "
              "the lesson: its saved outputs show every result.").format(
                  lesson=lesson, torch_install_hint=TORCH_INSTALL_HINT)) from None
    return torch


def torch_to_mindspore_name(name: str):
    """Return the MindSpore parameter name for a torchvision ResNet tensor name, or None if it has none.

    ``layer1.0.bn1.running_var`` -> ``layer1.0.bn1.moving_variance``; ``layer2.0.downsample.0.weight`` ->
    ``layer2.0.down_sample_layer.0.weight``; ``fc.bias`` -> ``end_point.bias``; ``*.num_batches_tracked`` -> None.

    Taught in lesson 07 (notebooks/07_migrate_resnet_from_pytorch.ipynb).
    Copies held equal by tests/test_technique_agreement.py: the lesson's ``torch_name_to_mindspore`` (exercise
    solution, also in solutions/lesson_07.py), recipes/pytorch_resnet_to_mindspore.py.
    """
    if not isinstance(name, str):
        raise TypeError(_("name must be a str such as 'layer1.0.conv1.weight', got {name_type}.").format(
            name_type=type(name).__name__))
    match = _TENSOR_NAME.match(name)
    if match is None:
        raise ValueError(_("{name!r} is not a PyTorch tensor name of the form 'module.path.leaf'. Fix: pass keys "
                           "of model.state_dict(), e.g. 'layer1.0.conv1.weight'.").format(name=name))
    module, leaf = match["module"], match["leaf"]
    if leaf in SKIPPED_LEAF_NAMES:
        return None
    is_batchnorm = _BATCHNORM_MODULE.search(module) is not None or leaf in ("running_mean", "running_var")
    if is_batchnorm:
        if leaf not in BATCHNORM_LEAF_NAMES:
            raise ValueError(_("{name!r}: BatchNorm tensor {leaf!r} has no MindSpore counterpart; known: "
                               "{batchnorm_leaf_names} (and {skipped_leaf_names!r}, which is skipped).").format(
                                   name=name, leaf=leaf, batchnorm_leaf_names=sorted(BATCHNORM_LEAF_NAMES),
                                   skipped_leaf_names=SKIPPED_LEAF_NAMES[0]))
        leaf = BATCHNORM_LEAF_NAMES[leaf]
    ms_module = ".".join(MODULE_NAMES.get(part, part) for part in module.split("."))
    return f"{ms_module}.{leaf}"


def _to_numpy(value, name):
    """Accept numpy arrays and anything torch-like (``.detach().cpu().numpy()``) without importing torch."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    if hasattr(value, "asnumpy"):
        return value.asnumpy()
    raise TypeError(_("state_dict[{name!r}] must be a torch tensor or numpy array, got {value_type}. Fix: pass "
                      "model.state_dict() or torch.load(path, map_location='cpu').").format(
                          name=name, value_type=type(value).__name__))


def _listed(items):
    shown = [f"  - {item}" for item in items[:_MAX_LISTED]]
    if len(items) > _MAX_LISTED:
        shown.append(f"  … and {len(items) - _MAX_LISTED} more")
    return "\n".join(shown)


def map_state_dict(state_dict: Mapping, net) -> dict:
    """Check a torchvision state dict against ``net`` and return ``{mindspore_name: (torch_name, array)}``.

    Raises ValueError listing every unmapped torch key, missing MindSpore parameter and shape mismatch.

    Taught in lesson 07 (notebooks/07_migrate_resnet_from_pytorch.ipynb).
    Copy held equal by tests/test_technique_agreement.py: recipes/pytorch_resnet_to_mindspore.py.
    """
    if not isinstance(state_dict, Mapping):
        raise TypeError(_("state_dict must be a mapping of name -> tensor, got {state_dict_type}. Fix: pass "
                          "model.state_dict() or torch.load(path, map_location='cpu').").format(
                              state_dict_type=type(state_dict).__name__))
    if not hasattr(net, "parameters_dict"):
        raise TypeError(_("net must be a mindspore.nn.Cell such as course_lib.models.resnet50(10), got "
                          "{net_type}.").format(net_type=type(net).__name__))
    ms_params = net.parameters_dict()
    mapped, unmapped, mismatched, duplicates = {}, [], [], []
    mismatched_names = set()
    for torch_name, value in state_dict.items():
        try:
            ms_name = torch_to_mindspore_name(torch_name)
        except ValueError as error:
            unmapped.append(f"{torch_name} ({error})")
            continue
        if ms_name is None:
            continue
        if ms_name not in ms_params:
            unmapped.append(f"{torch_name} -> {ms_name} (no such MindSpore parameter)")
            continue
        if ms_name in mapped:
            duplicates.append(f"{torch_name} and {mapped[ms_name][0]} both map to {ms_name}")
            continue
        array = _to_numpy(value, torch_name)
        expected = tuple(ms_params[ms_name].shape)
        if tuple(array.shape) != expected:
            mismatched.append(f"{torch_name} {tuple(array.shape)} -> {ms_name} {expected}")
            mismatched_names.add(ms_name)
            continue
        mapped[ms_name] = (torch_name, array)
    missing = [name for name in ms_params if name not in mapped and name not in mismatched_names]
    problems = []
    if unmapped:
        problems.append(_("{count} PyTorch key(s) with no MindSpore parameter:\n{listed}").format(
            count=len(unmapped), listed=_listed(unmapped)))
    if missing:
        problems.append(_("{count} MindSpore parameter(s) not in the state dict:\n{listed}").format(
            count=len(missing), listed=_listed(missing)))
    if mismatched:
        problems.append(_("{count} shape mismatch(es) (PyTorch shape -> MindSpore shape):\n{listed}").format(
            count=len(mismatched), listed=_listed(mismatched)))
    if duplicates:
        problems.append(_("{count} duplicate mapping(s):\n{listed}").format(count=len(duplicates),
                                                                            listed=_listed(duplicates)))
    if problems:
        fix = _("build the MindSpore network with the same depth and num_classes as the PyTorch model, and pass "
                "its unmodified state_dict().")
        if state_dict and all(str(key).startswith("module.") for key in state_dict):
            fix = _("every key starts with 'module.' (saved from DataParallel/DistributedDataParallel): strip it, "
                    "e.g. {{k.removeprefix('module.'): v for k, v in state_dict.items()}}.").format()
        raise ValueError(_("Cannot convert the state dict into {net_type}:\n{problems}\nFix: {fix}").format(
            net_type=type(net).__name__, problems="\n".join(problems), fix=fix))
    return mapped


def convert_torch_state_dict(state_dict: Mapping, net, checkpoint_path=None) -> dict:
    """Load a torchvision-named ResNet ``state_dict`` (torch tensors or numpy arrays) into ``net``.

    Every name and shape is checked before anything is written (see :func:`map_state_dict`); if
    ``checkpoint_path`` is given the converted network is also saved there as a MindSpore checkpoint
    (atomic write, CRC). Returns ``{torch_name: mindspore_name}`` for the tensors loaded.

    Taught in lesson 07 (notebooks/07_migrate_resnet_from_pytorch.ipynb).
    """
    import mindspore as ms

    mapped = map_state_dict(state_dict, net)
    ms_params = net.parameters_dict()
    for ms_name, (_torch_name, array) in mapped.items():
        param = ms_params[ms_name]
        param.set_data(ms.Tensor(np.ascontiguousarray(array), dtype=param.dtype))
    if checkpoint_path is not None:
        from course_lib.train.checkpoint import save_checkpoint

        save_checkpoint(net, checkpoint_path)
    return {torch_name: ms_name for ms_name, (torch_name, _) in mapped.items()}


def parameter_differences(reference: Mapping, other) -> dict:
    """``{mindspore_name: max |reference - other|}`` for every tensor of a torchvision state dict ``reference``.

    ``other`` is a MindSpore network (compared after name mapping) or another torchvision state dict (e.g. a
    float64 copy of the same model). Differences are computed in float64.
    """
    if isinstance(other, Mapping):
        missing = sorted(set(reference) - set(other))
        if missing:
            raise ValueError(_("The two state dicts differ: {n_missing} key(s) only in the reference, e.g. "
                               "{missing}. Fix: compare two copies of the same model.").format(
                                   n_missing=len(missing), missing=missing[:3]))
        differences = {}
        for torch_name, value in reference.items():
            ms_name = torch_to_mindspore_name(torch_name)
            if ms_name is not None:
                a = _to_numpy(value, torch_name).astype(np.float64)
                b = _to_numpy(other[torch_name], torch_name).astype(np.float64)
                differences[ms_name] = float(np.max(np.abs(a - b))) if a.size else 0.0
        return differences
    mapped = map_state_dict(reference, other)
    ms_params = other.parameters_dict()
    return {name: float(np.max(np.abs(array.astype(np.float64) - ms_params[name].asnumpy().astype(np.float64))))
            for name, (_, array) in mapped.items()}


def calibrate_batchnorm(model, batches):
    """Give a (randomly initialised) PyTorch model's BatchNorms the running statistics of ``batches``.

    A trained checkpoint carries real running statistics; a fresh model's are mean 0 / variance 1, which makes
    eval-mode activations blow up in deep nets. This resets every ``BatchNorm2d``, averages the batch statistics
    over ``batches`` (train-mode forward passes without gradients, ``momentum=None``), restores each momentum and
    returns the model in eval mode. Weights are not changed.
    """
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        raise ValueError(_("{model_type} has no BatchNorm layer to calibrate.").format(model_type=type(model).__name__))
    momenta = [m.momentum for m in norms]
    dtype = next(model.parameters()).dtype
    model.train()
    try:
        with torch.no_grad():
            for norm in norms:
                norm.reset_running_stats()
                norm.momentum = None
            for images in batches:
                model(torch.as_tensor(np.asarray(images)).to(dtype))
    finally:
        for norm, momentum in zip(norms, momenta):
            norm.momentum = momentum
    return model.eval()


def _check_recipe(learning_rates, momentum, weight_decay, label_smoothing):
    if isinstance(learning_rates, (str, bytes, numbers.Number)) or not hasattr(learning_rates, "__len__"):
        raise TypeError(_("learning_rates must be a non-empty list with one rate per step, got {learning_rates!r}. "
                          "Fix: e.g. [0.01] * steps or course_lib.train.schedules.cosine_lr(...).").format(
                              learning_rates=learning_rates))
    if not len(learning_rates):
        raise ValueError(_("learning_rates must be a non-empty list with one rate per step, got "
                           "{learning_rates!r}. Fix: e.g. [0.01] * steps or "
                           "course_lib.train.schedules.cosine_lr(...).").format(learning_rates=learning_rates))
    learning_rates = [check_real(f"learning_rates[{i}]", lr, 0)
                      for i, lr in enumerate(learning_rates)]
    check_real("momentum", momentum, 0, 1, high_open=True, fix=_("e.g. momentum=0.9"))
    check_real("label_smoothing", label_smoothing, 0, 1, high_open=True, fix=_("e.g. label_smoothing=0.1"))
    check_real("weight_decay", weight_decay, 0, fix=_("e.g. weight_decay=1e-4 (0 = none)"))
    return learning_rates


class _StepCounter:
    """Counts calls of a train-step function and refuses to run past the end of the learning-rate list."""

    def __init__(self, learning_rates):
        self.learning_rates = learning_rates
        self.steps_done = 0

    def next_rate(self):
        if self.steps_done >= len(self.learning_rates):
            raise RuntimeError(_("All {n_learning_rates} learning rates are used up. Fix: create the step function "
                                 "with one learning rate per step you want to run.").format(
                                     n_learning_rates=len(self.learning_rates)))
        self.steps_done += 1
        return self.learning_rates[self.steps_done - 1]


def make_torch_train_step(model, learning_rates, momentum=0.9, weight_decay=0.0, label_smoothing=0.0):
    """Return ``step(images, labels) -> loss``: one PyTorch SGD step of the ResNet-50 migration example's recipe.

    ``torch.optim.SGD(momentum, weight_decay)`` over :func:`torch_param_groups` (no decay on BN/bias),
    ``CrossEntropyLoss(label_smoothing=...)``, learning rate ``learning_rates[i]`` at the i-th call, model in train
    mode. Inputs are cast to the model's dtype, so a ``copy.deepcopy(model).double()`` gives a float64 reference.
    """
    import torch

    counter = _StepCounter(_check_recipe(learning_rates, momentum, weight_decay, label_smoothing))
    dtype = next(model.parameters()).dtype
    optimizer = torch.optim.SGD(torch_param_groups(model, weight_decay), lr=counter.learning_rates[0],
                                momentum=momentum)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=label_smoothing)

    def step(images, labels) -> float:
        lr = counter.next_rate()
        for group in optimizer.param_groups:
            group["lr"] = lr
        model.train()
        optimizer.zero_grad()
        loss = loss_fn(model(torch.as_tensor(np.asarray(images)).to(dtype)),
                       torch.as_tensor(np.asarray(labels)).long())
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return step


def torch_param_groups(module, weight_decay: float) -> list:
    """torch.optim param groups that mirror ``course_lib.train.optim.param_groups``: no decay on BN gamma/beta and
    biases.

    A tensor is decided by the last part of its MindSpore name, exactly as the MindSpore groups are.
    """
    from course_lib.train.optim import NO_DECAY_NAMES

    decayed, not_decayed = [], []
    for name, param in module.named_parameters():
        leaf = torch_to_mindspore_name(name).rsplit(".", 1)[-1]
        (not_decayed if leaf in NO_DECAY_NAMES else decayed).append(param)
    return [{"params": decayed, "weight_decay": weight_decay}, {"params": not_decayed, "weight_decay": 0.0}]
