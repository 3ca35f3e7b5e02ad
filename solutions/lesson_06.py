"""Solutions of lesson 06's exercises."""


def solve_06_1():
    from course_lib.schedules import cosine_lr

    return cosine_lr(0.1, 0.0, total_steps=10 * 44, steps_per_epoch=44, warmup_epochs=2)


def solve_06_2():
    from course_lib.models import resnet18
    from course_lib.optim import split_weight_decay_params

    decayed, not_decayed = split_weight_decay_params(resnet18(10))
    return sorted(p.name for p in not_decayed)


def solve_06_3():
    import mindspore as ms
    from mindspore.amp import StaticLossScaler

    scaler = StaticLossScaler(2.0 ** 20)
    scaled = float(scaler.scale(ms.Tensor(0.5, ms.float32)).asnumpy())
    return (scaled, 2.0 ** 20)


def _wrong_06():
    from course_lib.schedules import cosine_lr

    return {
        "06.1": [cosine_lr(0.1, 0.0, 440, 44), cosine_lr(0.1, 0.0, 10, 1, warmup_epochs=2), [0.1] * 440],
        "06.2": [["end_point.bias"], ["conv1.weight", "end_point.bias"], "gamma"],
        "06.3": [(0.5, 2.0 ** 20), (0.5 * 2.0 ** 20, 1.0), 0.5],
    }


WRONG = _wrong_06
