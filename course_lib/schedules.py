"""Learning-rate schedules: per-step lists, or MindSpore ``LearningRateSchedule`` cells built from the built-ins.

MindSpore optimizers accept both as a dynamic learning rate: a list (one float per step, stored as a Parameter)
or a ``nn.LearningRateSchedule`` cell that computes the rate from the optimizer's global step. The cells here are
MindSpore's own ``nn.WarmUpLR`` and ``nn.CosineDecayLR``; :func:`warmup_cosine_schedule` joins them. The lists
are the same curves written out in Python float64 (``nn.CosineDecayLR`` computes in float32), which
``scripts/train.py`` and the lessons use and the tests check against the closed form.

The functions of ``nn/dynamic_lr.py`` (``nn.cosine_decay_lr``, ``nn.warmup_lr``, ...) are "deprecated and will be
removed after version 2.9.0" (their docstrings), so nothing here uses them. The migration guide's "Network
Migration Debugging Example" calls ``nn.cosine_decay_lr(lr_end, lr, total, step_size, config.warmup)``: the fifth
argument is ``decay_epoch`` (how many epochs the cosine spans), not a warmup length, so the learning rate reaches
its minimum after ``warmup`` epochs and stays there. :func:`cosine_lr` takes the warmup and the decay length
separately.
"""
import math

import mindspore as ms
from mindspore import nn, ops
from mindspore.nn.learning_rate_schedule import LearningRateSchedule
from .validation import check_int, check_real

__all__ = ["cosine_lr", "linear_warmup_lr", "cosine_decay_steps", "warmup_cosine_schedule", "WarmupCosineDecayLR",
           "schedule_values"]


def _check_real(name, value, fix):
    return check_real(name, value, fix=fix, message="{name} must be a finite real number, got {value!r} ({type}). "
                                                    "Fix: {fix}")


def _check_int(name, value, minimum, fix):
    return check_int(name, value, minimum, fix=fix,
                     message=("{name} must be an int, got {value!r} ({type}). Fix: {fix}",
                              "{name} must be >= {low}, got {value}. Fix: {fix}"))


def linear_warmup_lr(lr_max, warmup_steps):
    """Per-step linear warmup ``lr_max * (i + 1) / warmup_steps``: rises every step and ends at ``lr_max``.

    Unlike ``nn.warmup_lr`` (constant within an epoch and exactly 0 for the whole first epoch), no step is
    wasted at learning rate 0.
    """
    lr_max = _check_real("lr_max", lr_max, "pass the peak learning rate, e.g. 0.1.")
    if lr_max <= 0:
        raise ValueError(f"lr_max must be > 0, got {lr_max}. Fix: pass the peak learning rate, e.g. 0.1.")
    warmup_steps = _check_int("warmup_steps", warmup_steps, 0, "pass a step count such as 100 (0 = no warmup).")
    return [lr_max * (step + 1) / warmup_steps for step in range(warmup_steps)]


def _check_lr_pair(lr_max, lr_min):
    lr_max = _check_real("lr_max", lr_max, "pass the peak learning rate, e.g. 0.1.")
    lr_min = _check_real("lr_min", lr_min, "pass the final learning rate, e.g. 0.0.")
    if lr_max <= 0:
        raise ValueError(f"lr_max must be > 0, got {lr_max}. Fix: pass the peak learning rate, e.g. 0.1.")
    if not 0 <= lr_min < lr_max:
        raise ValueError(f"lr_min must satisfy 0 <= lr_min < lr_max, got lr_min={lr_min}, lr_max={lr_max}. "
                         "Fix: the argument order is (lr_max, lr_min, ...); for a constant rate pass a float "
                         "learning_rate to the optimizer instead.")
    return lr_max, lr_min


def cosine_decay_steps(lr_max, lr_min, decay_steps):
    """Per-step cosine from ``lr_max`` towards ``lr_min``: ``nn.CosineDecayLR(lr_min, lr_max, decay_steps)``
    evaluated at steps ``0 … decay_steps - 1``, in float64.

    ``lr[i] = lr_min + 0.5 * (lr_max - lr_min) * (1 + cos(pi * i / decay_steps))`` (the same float64 arithmetic,
    in the same order, as the deprecated ``nn.cosine_decay_lr(lr_min, lr_max, decay_steps, 1, decay_steps)``, so
    results are bit-identical to what the course computed with it before).
    """
    lr_max, lr_min = _check_lr_pair(lr_max, lr_min)
    decay_steps = _check_int("decay_steps", decay_steps, 1, "pass the number of steps to decay over, e.g. 1000.")
    delta = 0.5 * (lr_max - lr_min)
    return [lr_min + delta * (1 + math.cos(math.pi * step / decay_steps)) for step in range(decay_steps)]


def cosine_lr(lr_max, lr_min, total_steps, steps_per_epoch, warmup_epochs=0):
    """Linear warmup for ``warmup_epochs`` epochs, then a per-step cosine decay from ``lr_max`` to ``lr_min``.

    Returns a list of ``total_steps`` floats, one per optimizer step, ready for
    ``nn.Momentum(params, learning_rate=cosine_lr(...), momentum=0.9)``. With
    ``w = warmup_epochs * steps_per_epoch`` and ``d = total_steps - w``:
    ``lr[i] = lr_max * (i + 1) / w`` for ``i < w``, else
    ``lr_min + 0.5 * (lr_max - lr_min) * (1 + cos(pi * (i - w) / d))``.
    """
    lr_max, lr_min = _check_lr_pair(lr_max, lr_min)
    total_steps, warmup_steps = _check_lengths(total_steps, steps_per_epoch, warmup_epochs)
    schedule = linear_warmup_lr(lr_max, warmup_steps) if warmup_steps else []
    schedule += cosine_decay_steps(lr_max, lr_min, total_steps - warmup_steps)
    return schedule


def _check_lengths(total_steps, steps_per_epoch, warmup_epochs):
    total_steps = _check_int("total_steps", total_steps, 1, "pass epochs * steps_per_epoch, e.g. 10 * 44.")
    steps_per_epoch = _check_int("steps_per_epoch", steps_per_epoch, 1,
                                 "pass dataset.get_dataset_size() of the training set.")
    warmup_epochs = _check_int("warmup_epochs", warmup_epochs, 0, "pass a number of epochs such as 1 (0 = none).")
    warmup_steps = warmup_epochs * steps_per_epoch
    if warmup_steps >= total_steps:
        raise ValueError(f"warmup_epochs * steps_per_epoch = {warmup_steps} must be smaller than total_steps = "
                         f"{total_steps}, so that some steps are left for the cosine decay. "
                         "Fix: use fewer warmup epochs or train longer.")
    return total_steps, warmup_steps


class WarmupCosineDecayLR(LearningRateSchedule):
    """``nn.WarmUpLR`` for ``warmup_steps`` steps, then ``nn.CosineDecayLR`` over the remaining ``decay_steps``.

    At global step ``i``: ``WarmUpLR(lr_max, warmup_steps)(i + 1)`` while ``i < warmup_steps`` (so the first step
    trains at ``lr_max / warmup_steps``, not at 0), then ``CosineDecayLR(lr_min, lr_max, decay_steps)(i -
    warmup_steps)``. Works on a scalar step (what an optimizer passes) and on a vector of steps.
    """

    def __init__(self, lr_max, lr_min, warmup_steps, decay_steps):
        super().__init__()
        self.warmup_steps = warmup_steps
        self.warmup = nn.WarmUpLR(lr_max, max(warmup_steps, 1))
        self.decay = nn.CosineDecayLR(lr_min, lr_max, decay_steps)

    def construct(self, global_step):
        in_warmup = global_step < self.warmup_steps
        warm = self.warmup(global_step + 1)
        cosine = self.decay(ops.maximum(global_step - self.warmup_steps, 0))
        return ops.select(in_warmup, warm, cosine)


def warmup_cosine_schedule(lr_max, lr_min, total_steps, steps_per_epoch, warmup_epochs=0):
    """The schedule of :func:`cosine_lr` as a ``LearningRateSchedule`` cell made of MindSpore's built-ins.

    Same arguments and checks as :func:`cosine_lr`; pass the result as ``learning_rate=`` to any ``nn``
    optimizer. Its values equal :func:`cosine_lr`'s to float32 precision (the cells compute in float32).
    """
    lr_max, lr_min = _check_lr_pair(lr_max, lr_min)
    total_steps, warmup_steps = _check_lengths(total_steps, steps_per_epoch, warmup_epochs)
    return WarmupCosineDecayLR(lr_max, lr_min, warmup_steps, total_steps - warmup_steps)


def schedule_values(schedule, steps):
    """Evaluate a ``LearningRateSchedule`` cell at global steps ``0 … steps - 1``; returns a list of floats."""
    if not isinstance(schedule, LearningRateSchedule):
        raise TypeError(f"schedule must be a LearningRateSchedule cell, got {type(schedule).__name__}. "
                        "Fix: pass e.g. nn.CosineDecayLR(0.0, 0.1, 100) or warmup_cosine_schedule(...).")
    steps = _check_int("steps", steps, 1, "pass the number of steps to evaluate, e.g. 100.")
    values = schedule(ms.Tensor(list(range(steps)), ms.int32)).asnumpy()
    return [float(v) for v in values.reshape(-1)]
