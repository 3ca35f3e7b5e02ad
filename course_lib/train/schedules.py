"""Learning-rate schedules as per-step lists (Taught in lesson 06; A5 shows the old traps).

A MindSpore ``nn`` optimizer takes a dynamic learning rate (动态学习率) as a list or a 1-D Tensor with one rate
per step: it stores it as a Parameter and reads entry ``global_step`` at every step. That form is plain data and
works in every 2.x release, so the course uses it. The alternatives are on their way out in MindSpore 2.10:

- the list functions of ``nn/dynamic_lr.py`` (``nn.cosine_decay_lr``, ``nn.warmup_lr``, ...) and the cells
  ``nn.WarmUpLR``, ``nn.ExponentialDecayLR``, ... are "deprecated and will be removed after version 2.9.0"
  (their docstrings);
- ``nn.CosineDecayLR``: "Non-backward-compatible change after version 2.9.0: this interface will be changed to a
  scheduler object form, instead of being called with `global_step`".

For a PyTorch-style scheduler object use ``mindspore.experimental.optim`` optimizers with
``mindspore.experimental.optim.lr_scheduler`` (lesson 06 shows both paths).

The migration guide's "Network Migration Debugging Example" calls ``nn.cosine_decay_lr(lr_end, lr, total,
step_size, config.warmup)``: the fifth argument is ``decay_epoch`` (how many epochs the cosine spans), not a warmup
length, so the learning rate reaches its minimum after ``warmup`` epochs and stays there. :func:`cosine_lr` takes
the warmup and the decay length separately.
"""
import math

from course_lib.i18n import _
from course_lib.validation import check_int, check_real, check_type

__all__ = ["cosine_lr", "linear_warmup_lr", "cosine_decay_steps", "optimizer_lr_values"]


def linear_warmup_lr(lr_max, warmup_steps):
    """Per-step linear warmup ``lr_max * (i + 1) / warmup_steps``: rises every step and ends at ``lr_max``.

    Unlike ``nn.warmup_lr`` (constant within an epoch and exactly 0 for the whole first epoch), no step is
    wasted at learning rate 0.
    """
    lr_max = check_real("lr_max", lr_max, 0, low_open=True, fix=_("pass the peak learning rate, e.g. 0.1"))
    warmup_steps = check_int("warmup_steps", warmup_steps, 0, fix=_("pass a step count such as 100 (0 = no warmup)"))
    return [lr_max * (step + 1) / warmup_steps for step in range(warmup_steps)]


def _check_lr_pair(lr_max, lr_min):
    lr_max = check_real("lr_max", lr_max, 0, low_open=True, fix=_("pass the peak learning rate, e.g. 0.1"))
    lr_min = check_real("lr_min", lr_min, 0, fix=_("pass the final learning rate, e.g. 0.0"))
    if not 0 <= lr_min < lr_max:
        raise ValueError(_("lr_min must satisfy 0 <= lr_min < lr_max, got lr_min={lr_min}, lr_max={lr_max}. Fix: "
                           "the argument order is (lr_max, lr_min, ...); for a constant rate pass a float "
                           "learning_rate to the optimizer instead.").format(lr_min=lr_min, lr_max=lr_max))
    return lr_max, lr_min


def cosine_decay_steps(lr_max, lr_min, decay_steps):
    """Per-step cosine from ``lr_max`` towards ``lr_min``: ``nn.CosineDecayLR(lr_min, lr_max, decay_steps)``
    evaluated at steps ``0 … decay_steps - 1``, in float64.

    ``lr[i] = lr_min + 0.5 * (lr_max - lr_min) * (1 + cos(pi * i / decay_steps))`` (the same float64 arithmetic,
    in the same order, as the deprecated ``nn.cosine_decay_lr(lr_min, lr_max, decay_steps, 1, decay_steps)``, so
    results are bit-identical to what the course computed with it before).
    """
    lr_max, lr_min = _check_lr_pair(lr_max, lr_min)
    decay_steps = check_int("decay_steps", decay_steps, 1,
                            fix=_("pass the number of steps to decay over, e.g. 1000"))
    delta = 0.5 * (lr_max - lr_min)
    return [lr_min + delta * (1 + math.cos(math.pi * step / decay_steps)) for step in range(decay_steps)]


def cosine_lr(lr_max, lr_min, total_steps, steps_per_epoch, warmup_epochs=0):
    """Linear warmup for ``warmup_epochs`` epochs, then a per-step cosine decay from ``lr_max`` to ``lr_min``.

    Returns a list of ``total_steps`` floats, one per optimizer step, ready for
    ``nn.Momentum(params, learning_rate=cosine_lr(...), momentum=0.9)``. With
    ``w = warmup_epochs * steps_per_epoch`` and ``d = total_steps - w``:
    ``lr[i] = lr_max * (i + 1) / w`` for ``i < w``, else
    ``lr_min + 0.5 * (lr_max - lr_min) * (1 + cos(pi * (i - w) / d))``.

    Taught in lesson 06 (notebooks/06_functional_training.ipynb).
    Copy held equal by tests/test_technique_agreement.py: recipes/warmup_cosine_no_decay_bn_bias.py.
    """
    lr_max, lr_min = _check_lr_pair(lr_max, lr_min)
    total_steps, warmup_steps = _check_lengths(total_steps, steps_per_epoch, warmup_epochs)
    schedule = linear_warmup_lr(lr_max, warmup_steps) if warmup_steps else []
    schedule += cosine_decay_steps(lr_max, lr_min, total_steps - warmup_steps)
    return schedule


def _check_lengths(total_steps, steps_per_epoch, warmup_epochs):
    total_steps = check_int("total_steps", total_steps, 1, fix=_("pass epochs * steps_per_epoch, e.g. 10 * 44"))
    steps_per_epoch = check_int("steps_per_epoch", steps_per_epoch, 1,
                                fix=_("pass dataset.get_dataset_size() of the training set"))
    warmup_epochs = check_int("warmup_epochs", warmup_epochs, 0, fix=_("pass a number of epochs such as 1 (0 = none)"))
    warmup_steps = warmup_epochs * steps_per_epoch
    if warmup_steps >= total_steps:
        raise ValueError(_("warmup_epochs * steps_per_epoch = {warmup_steps} must be smaller than total_steps = "
                           "{total_steps}, so that some steps are left for the cosine decay. Fix: use fewer warmup "
                           "epochs or train longer.").format(warmup_steps=warmup_steps, total_steps=total_steps))
    return total_steps, warmup_steps


def optimizer_lr_values(optimizer):
    """The per-step learning rates an ``nn`` optimizer holds, as a list of floats (one per step).

    For an optimizer built with ``learning_rate=`` a list or a 1-D Tensor: MindSpore wraps it in a schedule cell
    whose Parameter ``learning_rate`` holds the values (``mindspore/nn/optim/optimizer.py``,
    ``_IteratorLearningRate``). A float or a ``LearningRateSchedule`` cell holds no per-step values: TypeError.
    """
    from mindspore import nn

    check_type("optimizer", optimizer, nn.Optimizer, _("an nn optimizer such as nn.Momentum"),
               _("pass the optimizer you built with learning_rate=<list or 1-D Tensor>"))
    schedule = optimizer.learning_rate
    values = getattr(schedule, "learning_rate", None) if optimizer.dynamic_lr else None
    if values is None or getattr(values, "ndim", 0) != 1:
        kind = type(schedule).__name__ if optimizer.dynamic_lr else _("a fixed learning rate")
        raise TypeError(_("the optimizer holds no per-step learning rates (it has {kind}). Fix: pass "
                          "learning_rate=<a list or 1-D Tensor with one rate per step>.").format(kind=kind))
    return [float(v) for v in values.asnumpy()]
