"""Exercises of lesson 06 (functional training: schedules, parameter groups, loss scaling)."""
import math

from ..exercises import Incorrect, exercise, expect, expect_type


@exercise("06.1", "Per-step LR list: 2 warm-up epochs then cosine from 0.1 to 0.0, 10 epochs of 44 steps.")
def check_schedule(answer):
    from ..schedules import cosine_lr

    expect(isinstance(answer, (list, tuple)), "Answer with the list of per-step learning rates (one float per step).")
    truth = cosine_lr(0.1, 0.0, total_steps=440, steps_per_epoch=44, warmup_epochs=2)
    expect(len(answer) == len(truth), f"Your schedule has {len(answer)} steps; 10 epochs of 44 steps have "
                                      f"{len(truth)} (one value per optimizer step, not per epoch).")
    values = [float(v) for v in answer]
    expect(all(math.isfinite(v) and v >= 0 for v in values), "Every learning rate must be a finite number >= 0.")
    expect(math.isclose(max(values), 0.1, rel_tol=1e-6), "The schedule should reach lr_max = 0.1 exactly once "
                                                         "the warm-up ends.")
    if values[0] >= 0.05:
        raise Incorrect("The first steps should be small: a warm-up rises linearly over the first 2 epochs.")
    wrong = sum(not math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9) for a, b in zip(values, truth))
    expect(wrong == 0, f"{wrong} of {len(truth)} steps differ: warm up for 2 × 44 steps, then decay over the "
                       f"remaining 352 steps (not over all 440).")


@exercise("06.2", "Which trainable parameters of resnet18(10) get NO weight decay (seed 003's rule)? Sorted names.")
def check_no_decay(answer):
    from ..models import resnet18

    expect(isinstance(answer, (list, tuple)) and all(isinstance(a, str) for a in answer),
           "Answer with a list of parameter names (strings).")
    names = [p.name for p in resnet18(10).trainable_params()]
    truth = sorted(n for n in names if any(key in n for key in ("beta", "gamma", "bias")))
    answer = sorted(answer)
    extra = [n for n in answer if n not in truth]
    expect(not [n for n in extra if n not in names], "Some of your names are not trainable parameters of "
                                                     "resnet18(10): list names from net.trainable_params().")
    expect(not extra, f"{len(extra)} of your names are weights that should be decayed (convolution or dense "
                      f"weights): only BN gamma/beta and biases are exempt.")
    expect(len(answer) == len(truth), f"You listed {len(answer)} names; {len(truth)} parameters are exempt "
                                      f"(every BN has gamma and beta, and the classifier has a bias).")


@exercise("06.3", "With StaticLossScaler(2**20): the scaled loss of an unscaled loss 0.5, "
                  "and the factor grads are divided by.")
def check_scaler(answer):
    expect(isinstance(answer, tuple) and len(answer) == 2, "Answer with a tuple (scaled_loss, divide_grads_by).")
    scaled, factor = answer
    expect_type(scaled, (int, float), "The scaled loss")
    expect_type(factor, (int, float), "The factor")
    expect(math.isclose(float(factor), 2.0 ** 20), "Gradients are divided by the same scale the loss was "
                                                   "multiplied by (unscale undoes scale).")
    expect(math.isclose(float(scaled), 0.5 * 2.0 ** 20), "scale() multiplies the loss by the loss scale.")
