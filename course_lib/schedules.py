"""Learning-rate schedules as per-step lists, the form MindSpore optimizers accept as a dynamic learning rate.

Seed 003 builds its cosine schedule with ``nn.cosine_decay_lr(lr_end, lr, total, step_size, config.warmup)``:
the fifth argument is ``decay_epoch`` (how many epochs the cosine spans), not a warmup length, so the learning
rate reaches its minimum after ``warmup`` epochs and stays there. :func:`cosine_lr` takes the warmup and the
decay length separately.
"""
import math
import numbers

from mindspore import nn

__all__ = ["cosine_lr", "linear_warmup_lr", "cosine_decay_steps"]


def _check_real(name, value, fix):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite real number, got {value!r} ({type(value).__name__}). Fix: {fix}")
    return float(value)


def _check_int(name, value, minimum, fix):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__}). Fix: {fix}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}. Fix: {fix}")
    return int(value)


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
    """Per-step cosine from ``lr_max`` towards ``lr_min``, computed by ``nn.cosine_decay_lr``.

    ``nn.cosine_decay_lr`` holds the rate constant within an epoch; passing ``step_per_epoch=1`` and
    ``decay_epoch=decay_steps`` makes every step its own "epoch", i.e. a smooth per-step curve:
    ``lr[i] = lr_min + 0.5 * (lr_max - lr_min) * (1 + cos(pi * i / decay_steps))``.
    """
    lr_max, lr_min = _check_lr_pair(lr_max, lr_min)
    decay_steps = _check_int("decay_steps", decay_steps, 1, "pass the number of steps to decay over, e.g. 1000.")
    return nn.cosine_decay_lr(lr_min, lr_max, decay_steps, 1, decay_steps)


def cosine_lr(lr_max, lr_min, total_steps, steps_per_epoch, warmup_epochs=0):
    """Linear warmup for ``warmup_epochs`` epochs, then a per-step cosine decay from ``lr_max`` to ``lr_min``.

    Returns a list of ``total_steps`` floats, one per optimizer step, ready for
    ``nn.Momentum(params, learning_rate=cosine_lr(...), momentum=0.9)``. With
    ``w = warmup_epochs * steps_per_epoch`` and ``d = total_steps - w``:
    ``lr[i] = lr_max * (i + 1) / w`` for ``i < w``, else
    ``lr_min + 0.5 * (lr_max - lr_min) * (1 + cos(pi * (i - w) / d))``.
    """
    lr_max, lr_min = _check_lr_pair(lr_max, lr_min)
    total_steps = _check_int("total_steps", total_steps, 1, "pass epochs * steps_per_epoch, e.g. 10 * 44.")
    steps_per_epoch = _check_int("steps_per_epoch", steps_per_epoch, 1,
                                 "pass dataset.get_dataset_size() of the training set.")
    warmup_epochs = _check_int("warmup_epochs", warmup_epochs, 0, "pass a number of epochs such as 1 (0 = none).")
    warmup_steps = warmup_epochs * steps_per_epoch
    if warmup_steps >= total_steps:
        raise ValueError(f"warmup_epochs * steps_per_epoch = {warmup_steps} must be smaller than total_steps = "
                         f"{total_steps}, so that some steps are left for the cosine decay. "
                         "Fix: use fewer warmup epochs or train longer.")
    schedule = linear_warmup_lr(lr_max, warmup_steps) if warmup_steps else []
    schedule += cosine_decay_steps(lr_max, lr_min, total_steps - warmup_steps)
    return schedule
