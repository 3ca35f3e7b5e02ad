"""Exercises of lesson 06 (functional training: per-step learning rates, parameter groups, loss scaling)."""
import math

from course_lib.exercises import Incorrect, exercise, expect, expect_type
from course_lib.i18n import N_, _


def _truth_06_1(step, warmup_from_zero):
    warmup_steps, decay_steps = 88, 352
    if step < warmup_steps:
        return 0.1 * (step if warmup_from_zero else step + 1) / warmup_steps
    return 0.05 * (1 + math.cos(math.pi * (step - warmup_steps) / decay_steps))


@exercise("06.1", N_("nn.Momentum with per-step learning rates (a list or 1-D Tensor): 2 warm-up epochs rising "
                     "linearly to 0.1, then a cosine from 0.1 to 0.0 over the other 8 epochs; 44 steps per epoch."),
           difficulty=2, minutes=15)
def check_per_step_schedule(answer):
    from mindspore import nn

    from course_lib.train.schedules import optimizer_lr_values

    expect(isinstance(answer, nn.Optimizer), _("Answer with the optimizer (an nn.Momentum), got {kind}.")
                                             .format(kind=type(answer).__name__))
    expect(isinstance(answer, nn.Momentum), _("The task asks for nn.Momentum, got {kind}.")
                                            .format(kind=type(answer).__name__))
    try:
        values = optimizer_lr_values(answer)
    except TypeError:
        raise Incorrect(_("The optimizer holds no per-step learning rates. Pass learning_rate= a list (or a 1-D "
                          "Tensor) with one rate for each of the 440 steps.")) from None
    expect(len(values) == 440, _("Your schedule has {n_values} rates; 10 epochs × 44 steps need 440, one per step.")
                               .format(n_values=len(values)))
    expect(all(math.isfinite(v) for v in values), _("Your schedule holds a non-finite learning rate."))
    expect(math.isclose(values[88], 0.1, rel_tol=1e-5), _("At step 88 (the first step after 2 × 44 warm-up steps) "
                                                          "the rate should be the peak 0.1, got {rate:.6g}.")
                                                        .format(rate=values[88]))
    if values[0] > 0.01:
        raise Incorrect(_("Step 0 should train with a small rate: the warm-up rises linearly over the first 88 steps."))
    warmups = [all(math.isclose(values[s], _truth_06_1(s, from_zero), rel_tol=1e-5, abs_tol=1e-7)
                   for s in range(88)) for from_zero in (True, False)]
    expect(any(warmups), _("The warm-up is wrong: it should rise linearly to 0.1 over 88 steps (0.1 * step / 88, or "
                           "0.1 * (step + 1) / 88 to start above 0)."))
    wrong = [s for s in range(88, 440)
             if not math.isclose(values[s], _truth_06_1(s, True), rel_tol=1e-5, abs_tol=1e-7)]
    first = wrong[0] if wrong else 0
    expect(not wrong, _("The cosine part differs at {n_wrong} steps (e.g. step {first}): decay over the remaining "
                        "352 steps, counting from the end of the warm-up (step - 88).")
                      .format(n_wrong=len(wrong), first=first))


@exercise("06.2", N_("nn.Momentum for resnet18(10): weight decay 1e-4 on weights, 0.0 on BN gamma/beta and biases, "
                     "by filtering trainable_params() names; network order kept (order_params)."),
           difficulty=1, minutes=10)
def check_param_groups(answer):
    from mindspore import nn

    expect(isinstance(answer, nn.Momentum), _("Answer with the nn.Momentum optimizer, got {kind}.")
                                            .format(kind=type(answer).__name__))
    names = [p.name for p in answer.parameters]
    expect(len(names) == 62, _("Your optimizer holds {n_names} parameters; resnet18(10) has 62 trainable ones. Put "
                               "every trainable parameter in exactly one group.").format(n_names=len(names)))
    expect(answer.is_group, _("The optimizer has one weight decay for all parameters. Pass a list of groups: "
                              "[{'params': ..., 'weight_decay': 1e-4}, {'params': ..., 'weight_decay': 0.0}, ...]."))
    from course_lib.models import resnet18

    expect(names == [p.name for p in resnet18(10).trainable_params()],
           _("The parameters are not in the network's order. Add {'order_params': net.trainable_params()} as the "
             "last group (checkpoints and gradient tuples rely on that order)."))
    decays = dict(zip(names, (float(wd) for wd in answer.group_weight_decay)))
    exempt = [n for n in names if n.rsplit(".", 1)[-1] in ("gamma", "beta", "bias")]
    decayed_exempt = [n for n in exempt if decays[n] != 0.0]
    expect(not decayed_exempt, _("{n_decayed_exempt} BatchNorm or bias parameters still get weight decay, e.g. "
                                 "{example}: their group needs 'weight_decay': 0.0.")
                               .format(n_decayed_exempt=len(decayed_exempt), example=decayed_exempt[:1]))
    wrong = [n for n in names if n not in exempt and not math.isclose(decays[n], 1e-4, rel_tol=1e-6)]
    expect(not wrong, _("{n_wrong} convolution or dense weights do not get weight decay 1e-4, e.g. {example}.")
                      .format(n_wrong=len(wrong), example=wrong[:1]))


@exercise("06.3", N_("With StaticLossScaler(2**20): the scaled loss of an unscaled loss 0.5, "
                     "and the factor grads are divided by."),
           difficulty=1, minutes=5)
def check_scaler(answer):
    expect(isinstance(answer, tuple) and len(answer) == 2, _("Answer with a tuple (scaled_loss, divide_grads_by)."))
    scaled, factor = answer
    expect_type(scaled, (int, float), _("The scaled loss"))
    expect_type(factor, (int, float), _("The factor"))
    expect(math.isclose(float(factor), 2.0 ** 20), _("Gradients are divided by the same scale the loss was "
                                                     "multiplied by (unscale undoes scale)."))
    expect(math.isclose(float(scaled), 0.5 * 2.0 ** 20), _("scale() multiplies the loss by the loss scale."))
