"""Solutions of lesson 06's exercises."""


def solve_06_1():
    import math

    from mindspore import nn

    from course_lib.models import lenet5

    warmup_steps, decay_steps = 2 * 44, 8 * 44
    warmup = [0.1 * (step + 1) / warmup_steps for step in range(warmup_steps)]
    cosine = [0.05 * (1 + math.cos(math.pi * step / decay_steps)) for step in range(decay_steps)]
    return nn.Momentum(lenet5().trainable_params(), learning_rate=warmup + cosine, momentum=0.9)


def solve_06_2():
    from mindspore import nn

    from course_lib.models import resnet18

    net = resnet18(10)
    params = net.trainable_params()
    no_decay = [p for p in params if p.name.endswith((".gamma", ".beta", ".bias"))]
    decay = [p for p in params if not p.name.endswith((".gamma", ".beta", ".bias"))]
    groups = [{"params": decay, "weight_decay": 1e-4},
              {"params": no_decay, "weight_decay": 0.0},
              {"order_params": params}]
    return nn.Momentum(groups, learning_rate=0.1, momentum=0.9)


def solve_06_3():
    import mindspore as ms
    from mindspore.amp import StaticLossScaler

    scaler = StaticLossScaler(2.0 ** 20)
    scaled = float(scaler.scale(ms.Tensor(0.5, ms.float32)).asnumpy())
    return (scaled, 2.0 ** 20)


def _wrong_06():
    from mindspore import nn

    from course_lib.models import lenet5, resnet18
    from course_lib.train.schedules import cosine_lr

    lenet_params = lenet5().trainable_params()
    net = resnet18(10)
    params = net.trainable_params()
    no_decay = [p for p in params if p.name.endswith((".gamma", ".beta", ".bias"))]
    decay = [p for p in params if not p.name.endswith((".gamma", ".beta", ".bias"))]
    return {
        "06.1": [
            nn.Momentum(lenet_params, learning_rate=nn.CosineDecayLR(0.0, 0.1, 440), momentum=0.9),  # a cell
            nn.Momentum(lenet_params, learning_rate=cosine_lr(0.1, 0.0, 440, 44, 0), momentum=0.9),  # no warm-up
            nn.Momentum(lenet_params, learning_rate=cosine_lr(0.1, 0.0, 440, 44, 1), momentum=0.9),  # 1 epoch
            nn.Momentum(lenet_params, learning_rate=cosine_lr(0.1, 0.0, 400, 40, 2), momentum=0.9),  # 400 steps
            [0.1] * 440,
        ],
        "06.2": [
            nn.Momentum(params, learning_rate=0.1, momentum=0.9, weight_decay=1e-4),  # no groups
            nn.Momentum([{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": 1e-4}],
                        learning_rate=0.1, momentum=0.9),  # order lost
            nn.Momentum([{"params": decay, "weight_decay": 0.0}, {"params": no_decay, "weight_decay": 1e-4},
                         {"order_params": params}], learning_rate=0.1, momentum=0.9),  # swapped
            ["end_point.bias"],
        ],
        "06.3": [(0.5, 2.0 ** 20), (0.5 * 2.0 ** 20, 1.0), 0.5],
    }


WRONG = _wrong_06
