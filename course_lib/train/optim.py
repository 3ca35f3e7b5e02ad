"""Optimizer parameter groups: weight decay on weights, none on BatchNorm gamma/beta and biases.

Decaying a BatchNorm scale or a bias pulls it towards 0 without any regularising benefit, so ResNet recipes
exclude them (the migration guide's ResNet-50 example does). That example tests ``'beta' in param.name`` (a
substring); here the *last* part of the name is compared, so a weight inside a cell called e.g. ``debias_proj``
still gets decay. In plain MindSpore the same groups are
``[{"params": decayed, "weight_decay": wd}, {"params": others, "weight_decay": 0.0}, {"order_params": params}]``.
"""

from mindspore import nn

from course_lib.i18n import _
from course_lib.validation import check_real, check_type, wrong_type

__all__ = ["NO_DECAY_NAMES", "split_weight_decay_params", "param_groups"]

#: Last name component of parameters that get no weight decay: BatchNorm/LayerNorm scale and shift, biases.
NO_DECAY_NAMES = ("gamma", "beta", "bias")


def _check_net(net):
    check_type("net", net, nn.Cell, _("a mindspore.nn.Cell"),
               _("pass the network itself, e.g. course_lib.models.lenet5()"))
    params = net.trainable_params()
    if not params:
        raise ValueError(_("{type} has no trainable parameters, so there is nothing to optimize. Fix: check that "
                           "the network has layers and that they are not frozen (requires_grad).").format(
            type=type(net).__name__))
    return params


def split_weight_decay_params(net, no_decay_names=NO_DECAY_NAMES):
    """Return ``(decayed, not_decayed)`` lists of the trainable parameters of ``net``, in network order.

    A parameter goes to ``not_decayed`` when the last dot-separated part of its name is in ``no_decay_names``
    (``layer1.0.bn1.gamma`` -> ``gamma``).
    """
    params = _check_net(net)
    if (isinstance(no_decay_names, str) or not isinstance(no_decay_names, (tuple, list, set, frozenset))
            or not all(isinstance(n, str) and n for n in no_decay_names)):
        raise wrong_type("no_decay_names", no_decay_names, _("a tuple of non-empty names"),
                         _("e.g. ('gamma', 'beta', 'bias')"))
    skip = set(no_decay_names)
    decayed, not_decayed = [], []
    for param in params:
        (not_decayed if param.name.rsplit(".", 1)[-1] in skip else decayed).append(param)
    return decayed, not_decayed


def param_groups(net, weight_decay, no_decay_names=NO_DECAY_NAMES):
    """MindSpore group parameters: ``weight_decay`` on weights, 0 on gamma/beta/bias, plus ``order_params``.

    ``order_params`` keeps the optimizer's parameter order equal to ``net.trainable_params()`` (checkpoints
    and gradient tuples rely on it). Empty groups are left out, because MindSpore rejects a group without
    parameters. Use as ``nn.Momentum(param_groups(net, 1e-4), learning_rate=0.1, momentum=0.9)``.

    Taught in lesson 07 (notebooks/07_migrate_resnet_from_pytorch.ipynb).
    Copy held equal by tests/test_technique_agreement.py: recipes/warmup_cosine_no_decay_bn_bias.py.
    """
    weight_decay = check_real("weight_decay", weight_decay, 0, fix=_("pass e.g. 1e-4 (0 disables weight decay)"))
    decayed, not_decayed = split_weight_decay_params(net, no_decay_names)
    groups = []
    if decayed:
        groups.append({"params": decayed, "weight_decay": float(weight_decay)})
    if not_decayed:
        groups.append({"params": not_decayed, "weight_decay": 0.0})
    groups.append({"order_params": net.trainable_params()})
    return groups
