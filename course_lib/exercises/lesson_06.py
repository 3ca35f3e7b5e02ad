"""Exercises of lesson 06 (functional training: per-step learning rates, parameter groups, loss scaling)."""
import math

from course_lib.exercises import Incorrect, exercise, expect, expect_type

def _truth_06_1(step, warmup_from_zero):
    warmup_steps, decay_steps = 88, 352
    if step < warmup_steps:
        return 0.1 * (step if warmup_from_zero else step + 1) / warmup_steps
    return 0.05 * (1 + math.cos(math.pi * (step - warmup_steps) / decay_steps))


@exercise("06.1", "nn.Momentum with per-step learning rates (a list or 1-D Tensor): 2 warm-up epochs rising "
                  "linearly to 0.1, then a cosine from 0.1 to 0.0 over the other 8 epochs; 44 steps per epoch.",
           difficulty=2, minutes=15,
           task_zh="使用逐步学习率（列表或一维 Tensor）的 nn.Momentum：前 2 个 epoch 线性预热到 0.1，之后 8 个 "
                   "epoch 按余弦从 0.1 衰减到 0.0；每个 epoch 44 步。")
def check_per_step_schedule(answer):
    from mindspore import nn

    from course_lib.train.schedules import optimizer_lr_values

    expect(isinstance(answer, nn.Optimizer), f"Answer with the optimizer (an nn.Momentum), got "
                                             f"{type(answer).__name__}.",
                                             zh=f"请用优化器（一个 nn.Momentum）作答，你的是 {type(answer).__name__}"
                                                "。")
    expect(isinstance(answer, nn.Momentum), f"The task asks for nn.Momentum, got {type(answer).__name__}.",
                                            zh=f"题目要求的是 nn.Momentum，你的是 {type(answer).__name__}。")
    try:
        values = optimizer_lr_values(answer)
    except TypeError:
        raise Incorrect("The optimizer holds no per-step learning rates. Pass learning_rate= a list (or a 1-D "
                        "Tensor) with one rate for each of the 440 steps.",
                        zh="优化器中没有逐步学习率。请给 learning_rate= 传入一个列表（或一维 Tensor），为 440 步中的"
                           "每一步给出一个学习率。") from None
    expect(len(values) == 440, f"Your schedule has {len(values)} rates; 10 epochs × 44 steps need 440, one per step.",
                               zh=f"你的调度有 {len(values)} 个学习率；10 个 epoch × 44 步需要 440 个，每步一个。")
    expect(all(math.isfinite(v) for v in values), "Your schedule holds a non-finite learning rate.",
                                                  zh="你的调度中有非有限值（inf 或 NaN）的学习率。")
    expect(math.isclose(values[88], 0.1, rel_tol=1e-5), f"At step 88 (the first step after 2 × 44 warm-up steps) "
                                                         f"the rate should be the peak 0.1, got {values[88]:.6g}.",
                                                         zh="第 88 步（2 × 44 个预热步之后的第一步）的学习率应为峰"
                                                            f"值 0.1，你的是 {values[88]:.6g}。")
    if values[0] > 0.01:
        raise Incorrect("Step 0 should train with a small rate: the warm-up rises linearly over the first 88 steps.",
                        zh="第 0 步应以很小的学习率训练：预热阶段的学习率在前 88 步内线性上升。")
    warmups = [all(math.isclose(values[s], _truth_06_1(s, from_zero), rel_tol=1e-5, abs_tol=1e-7)
                   for s in range(88)) for from_zero in (True, False)]
    expect(any(warmups), "The warm-up is wrong: it should rise linearly to 0.1 over 88 steps "
                         "(0.1 * step / 88, or 0.1 * (step + 1) / 88 to start above 0).",
                         zh="预热不对：学习率应在 88 步内线性上升到 0.1（0.1 * step / 88，或 0.1 * (step + 1) / 88，"
                            "使其从大于 0 的值开始）。")
    wrong = [s for s in range(88, 440)
             if not math.isclose(values[s], _truth_06_1(s, True), rel_tol=1e-5, abs_tol=1e-7)]
    first = wrong[0] if wrong else 0
    expect(not wrong, f"The cosine part differs at {len(wrong)} steps (e.g. step {first}): decay over the "
                      "remaining 352 steps, counting from the end of the warm-up (step - 88).",
                      zh=f"余弦部分在 {len(wrong)} 步上不对（例如第 {first} 步）：应在剩余的 352 步内衰减，"
                         "并从预热结束时开始计数（step - 88）。")


@exercise("06.2", "nn.Momentum for resnet18(10): weight decay 1e-4 on weights, 0.0 on BN gamma/beta and biases, "
                  "by filtering trainable_params() names; network order kept (order_params).",
           difficulty=1, minutes=10,
           task_zh="为 resnet18(10) 构建 nn.Momentum：按 trainable_params() 的名称筛选，权重使用权重衰减 1e-4，BN "
                   "的 gamma/beta 和偏置使用 0.0；保持网络中的参数顺序（order_params）。")
def check_param_groups(answer):
    from mindspore import nn

    expect(isinstance(answer, nn.Momentum), f"Answer with the nn.Momentum optimizer, got {type(answer).__name__}.",
                                            zh=f"请用 nn.Momentum 优化器作答，你的是 {type(answer).__name__}。")
    names = [p.name for p in answer.parameters]
    expect(len(names) == 62, f"Your optimizer holds {len(names)} parameters; resnet18(10) has 62 trainable ones. "
                             "Put every trainable parameter in exactly one group.",
                             zh=f"你的优化器包含 {len(names)} 个参数；resnet18(10) 有 62 个可训练参数。请把每个可训"
                                f"练参数恰好放进一个参数组。")
    expect(answer.is_group, "The optimizer has one weight decay for all parameters. Pass a list of groups: "
                            "[{'params': ..., 'weight_decay': 1e-4}, {'params': ..., 'weight_decay': 0.0}, ...].",
                            zh="优化器对所有参数使用同一个权重衰减。请传入一个参数组列表："
                               "[{'params': ..., 'weight_decay': 1e-4}, {'params': ..., 'weight_decay': 0.0}, ...]"
                               "。")
    from course_lib.models import resnet18

    expect(names == [p.name for p in resnet18(10).trainable_params()],
           "The parameters are not in the network's order. Add {'order_params': net.trainable_params()} as the "
           "last group (checkpoints and gradient tuples rely on that order).",
           zh="参数没有按网络中的顺序排列。请把 {'order_params': net.trainable_params()} 作为最后一个参数组（检查点"
              "和梯度元组都依赖这个顺序）。")
    decays = dict(zip(names, (float(wd) for wd in answer.group_weight_decay)))
    exempt = [n for n in names if n.rsplit(".", 1)[-1] in ("gamma", "beta", "bias")]
    decayed_exempt = [n for n in exempt if decays[n] != 0.0]
    expect(not decayed_exempt, f"{len(decayed_exempt)} BatchNorm or bias parameters still get weight decay, "
                               f"e.g. {decayed_exempt[:1]}: their group needs 'weight_decay': 0.0.",
                               zh=f"有 {len(decayed_exempt)} 个 BatchNorm 或偏置参数仍然使用了权重衰减，例如 "
                                  f"{decayed_exempt[:1]}：它们所在的参数组需要 'weight_decay': 0.0。")
    wrong = [n for n in names if n not in exempt and not math.isclose(decays[n], 1e-4, rel_tol=1e-6)]
    expect(not wrong, f"{len(wrong)} convolution or dense weights do not get weight decay 1e-4, e.g. {wrong[:1]}.",
                      zh=f"有 {len(wrong)} 个卷积或全连接层的权重没有使用权重衰减 1e-4，例如 {wrong[:1]}。")


@exercise("06.3", "With StaticLossScaler(2**20): the scaled loss of an unscaled loss 0.5, "
                  "and the factor grads are divided by.",
           difficulty=1, minutes=5,
           task_zh="使用 StaticLossScaler(2**20)：未缩放的损失 0.5 缩放后的值，以及梯度要除以的因子。")
def check_scaler(answer):
    expect(isinstance(answer, tuple) and len(answer) == 2, "Answer with a tuple (scaled_loss, divide_grads_by).",
                                                           zh="请用一个元组 (scaled_loss, divide_grads_by) 作答。")
    scaled, factor = answer
    expect_type(scaled, (int, float), "The scaled loss", "缩放后的损失")
    expect_type(factor, (int, float), "The factor", "该因子")
    expect(math.isclose(float(factor), 2.0 ** 20), "Gradients are divided by the same scale the loss was "
                                                   "multiplied by (unscale undoes scale).",
                                                   zh="梯度要除以的正是损失所乘的那个缩放系数（unscale 抵消 scale）"
                                                      "。")
    expect(math.isclose(float(scaled), 0.5 * 2.0 ** 20), "scale() multiplies the loss by the loss scale.",
                                                         zh="scale() 把损失乘以损失缩放系数。")
