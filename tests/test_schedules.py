import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import ast
import inspect
import math

import mindspore as ms
import pytest
from mindspore import nn

from course_lib.train import schedules
from course_lib.train.schedules import cosine_decay_steps, cosine_lr, linear_warmup_lr, optimizer_lr_values


def closed_form(step, lr_max, lr_min, total_steps, warmup_steps):
    """The schedule written out: linear warmup, then a per-step cosine over the remaining steps."""
    if step < warmup_steps:
        return lr_max * (step + 1) / warmup_steps
    decay_steps = total_steps - warmup_steps
    return lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * (step - warmup_steps) / decay_steps))


@pytest.mark.parametrize("warmup_epochs", [0, 1, 3])
def test_cosine_lr_matches_closed_form_at_every_step(warmup_epochs):
    lr_max, lr_min, total, per_epoch = 0.1, 0.001, 50, 5
    schedule = cosine_lr(lr_max, lr_min, total, per_epoch, warmup_epochs)
    assert len(schedule) == total
    assert all(isinstance(value, float) for value in schedule)
    for step in range(total):
        assert schedule[step] == pytest.approx(closed_form(step, lr_max, lr_min, total, warmup_epochs * per_epoch),
                                               rel=1e-12, abs=1e-15)


def test_cosine_lr_key_values():
    schedule = cosine_lr(0.1, 0.0, total_steps=30, steps_per_epoch=5, warmup_epochs=2)
    assert schedule[0] == pytest.approx(0.01)  # warmup starts at lr_max / warmup_steps, not at 0
    assert schedule[4] == pytest.approx(0.05)
    assert schedule[9] == pytest.approx(0.1)  # warmup ends at the peak
    assert schedule[10] == pytest.approx(0.1)  # cosine starts at the peak
    assert schedule[15] == pytest.approx(0.05 * (1 + math.cos(math.pi * 5 / 20)))
    assert schedule[20] == pytest.approx(0.05)  # half-way through the decay: the mean of max and min
    assert schedule[-1] == pytest.approx(0.05 * (1 + math.cos(math.pi * 19 / 20)))
    assert max(schedule) == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(schedule[10:], schedule[11:]))  # decays monotonically


def test_cosine_decay_steps_is_the_built_in_cosine_decay_cell_per_step():
    ours = cosine_decay_steps(0.1, 0.01, 12)
    # nn.CosineDecayLR computes the same curve in float32
    built_in = nn.CosineDecayLR(0.01, 0.1, 12)(ms.Tensor(list(range(12)), ms.int32)).asnumpy().tolist()
    assert ours == pytest.approx(built_in, rel=1e-6, abs=1e-8)
    # and bit for bit what the deprecated nn.cosine_decay_lr gave (the course's numbers did not change)
    assert ours == nn.cosine_decay_lr(0.01, 0.1, 12, 1, 12)
    # accepts ints (nn.cosine_decay_lr itself raises TypeError for an int min_lr)
    assert cosine_decay_steps(1, 0, 4) == pytest.approx([1.0, 0.5 * (1 + math.cos(math.pi / 4)), 0.5,
                                                        0.5 * (1 + math.cos(3 * math.pi / 4))])


def test_seed_fifth_argument_is_decay_epoch_not_warmup():
    # The ResNet-50 migration example: cosine_decay_lr(lr_end, lr, epoch_size * step_size, step_size, config.warmup)
    epochs, steps_per_epoch, warmup = 10, 4, 2
    seed_schedule = nn.cosine_decay_lr(0.0, 0.1, epochs * steps_per_epoch, steps_per_epoch, warmup)
    # No warmup at all: the first epoch runs at the peak ...
    assert seed_schedule[:steps_per_epoch] == [0.1] * steps_per_epoch
    # ... epoch 1 is half-way down, and from epoch 2 (= the "warmup") on the rate is stuck at lr_end.
    assert seed_schedule[steps_per_epoch] == pytest.approx(0.05)
    assert seed_schedule[warmup * steps_per_epoch:] == pytest.approx([0.0] * (epochs - warmup) * steps_per_epoch,
                                                                     abs=1e-12)
    # With warmup = 0 the seed's line does not even run.
    with pytest.raises(ValueError, match="decay_epoch"):
        nn.cosine_decay_lr(0.0, 0.1, 40, 4, 0)
    # Ours spreads the decay over the whole run: still above lr_end in the last epoch.
    ours = cosine_lr(0.1, 0.0, epochs * steps_per_epoch, steps_per_epoch, warmup)
    assert ours[-steps_per_epoch] > 0.001


def test_nn_warmup_lr_wastes_the_first_epoch_ours_does_not():
    assert nn.warmup_lr(0.1, 6, 3, 2)[:3] == [0.0, 0.0, 0.0]
    assert linear_warmup_lr(0.1, 4) == pytest.approx([0.025, 0.05, 0.075, 0.1])
    assert linear_warmup_lr(0.1, 0) == []


@pytest.mark.parametrize("kwargs, error, message", [
    ({"lr_max": 0.0}, ValueError, "lr_max must be a finite number > 0, got 0.0"),
    ({"lr_max": "0.1"}, TypeError, r"lr_max must be a number \(> 0\), got '0.1' \(str\)"),
    ({"lr_max": True}, TypeError, "lr_max must be a number"),
    ({"lr_min": float("nan")}, ValueError, "lr_min must be a finite number >= 0, got nan"),
    ({"lr_min": 0.2}, ValueError, "0 <= lr_min < lr_max, got lr_min=0.2, lr_max=0.1"),
    ({"lr_min": -0.1}, ValueError, "lr_min must be a finite number >= 0, got -0.1"),
    ({"total_steps": 0}, ValueError, "total_steps must be an integer >= 1, got 0"),
    ({"total_steps": 10.0}, TypeError, r"total_steps must be an integer \(>= 1\), got 10.0 \(float\)"),
    ({"steps_per_epoch": 0}, ValueError, "steps_per_epoch must be an integer >= 1, got 0"),
    ({"warmup_epochs": -1}, ValueError, "warmup_epochs must be an integer >= 0, got -1"),
    ({"warmup_epochs": 5}, ValueError, "warmup_epochs \\* steps_per_epoch = 10 must be smaller than total_steps = 10"),
])
def test_cosine_lr_rejects_bad_arguments(kwargs, error, message):
    arguments = {"lr_max": 0.1, "lr_min": 0.0, "total_steps": 10, "steps_per_epoch": 2, "warmup_epochs": 0}
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        cosine_lr(**arguments)


def test_warmup_and_decay_helpers_reject_bad_arguments():
    with pytest.raises(ValueError, match="warmup_steps must be an integer >= 0, got -2"):
        linear_warmup_lr(0.1, -2)
    with pytest.raises(ValueError, match="decay_steps must be an integer >= 1, got 0"):
        cosine_decay_steps(0.1, 0.0, 0)


def test_schedule_drives_an_optimizer():
    schedule = cosine_lr(0.1, 0.0, 8, 4, 1)
    optimizer = nn.Momentum(nn.Dense(2, 2).trainable_params(), learning_rate=schedule, momentum=0.9)
    assert optimizer.dynamic_lr
    # MindSpore stores a list learning rate as a Parameter inside an _IteratorLearningRate cell
    assert optimizer.learning_rate.learning_rate.asnumpy().tolist() == pytest.approx(schedule, rel=1e-6)
    assert float(optimizer.get_lr().asnumpy()) == pytest.approx(schedule[0])


def test_no_deprecated_dynamic_lr_function_is_used():
    # nn/dynamic_lr.py: "This interface is deprecated and will be removed after version 2.9.0."
    deprecated = {"cosine_decay_lr", "warmup_lr", "piecewise_constant_lr", "exponential_decay_lr",
                  "natural_exp_decay_lr", "inverse_decay_lr", "polynomial_decay_lr"}
    called = {node.func.attr for node in ast.walk(ast.parse(inspect.getsource(schedules)))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    assert not called & deprecated


def test_no_deprecated_or_changing_schedule_cell_is_used():
    # nn.WarmUpLR is deprecated; nn.CosineDecayLR's call form changes after 2.9.0 (their docstrings)
    assert "deprecated" in inspect.getdoc(nn.WarmUpLR) and "scheduler object form" in inspect.getdoc(nn.CosineDecayLR)
    used = {node.attr for node in ast.walk(ast.parse(inspect.getsource(schedules))) if isinstance(node, ast.Attribute)}
    assert not used & {"WarmUpLR", "CosineDecayLR", "LearningRateSchedule"}


@pytest.mark.parametrize("as_tensor", [False, True])
def test_optimizer_lr_values_reads_a_list_or_a_tensor_back(as_tensor):
    schedule = cosine_lr(0.1, 0.0, 8, 4, 1)
    rates = ms.Tensor(schedule, ms.float32) if as_tensor else schedule
    optimizer = nn.Momentum(nn.Dense(2, 2).trainable_params(), learning_rate=rates, momentum=0.9)
    assert optimizer_lr_values(optimizer) == pytest.approx(schedule, rel=1e-6)
    seen = []
    for _ in range(3):  # the optimizer walks the list one entry per step
        seen.append(float(optimizer.get_lr().asnumpy()))
        optimizer(tuple(ms.ops.ones_like(p) for p in optimizer.parameters))
    assert seen == pytest.approx(schedule[:3], rel=1e-6)


def test_optimizer_lr_values_rejects_what_holds_no_per_step_rates():
    params = nn.Dense(2, 2).trainable_params()
    with pytest.raises(TypeError, match=r"a fixed learning rate\). Fix: pass learning_rate="):
        optimizer_lr_values(nn.Momentum(params, learning_rate=0.1, momentum=0.9))
    with pytest.raises(TypeError, match="it has CosineDecayLR"):
        optimizer_lr_values(nn.Momentum(params, learning_rate=nn.CosineDecayLR(0.0, 0.1, 4), momentum=0.9))
    with pytest.raises(TypeError, match=r"must be an nn optimizer such as nn.Momentum, got \[0.1, 0.2\] \(list\)"):
        optimizer_lr_values([0.1, 0.2])
