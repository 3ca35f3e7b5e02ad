"""Solutions of lesson 06's exercises."""


def solve_06_1():
    from mindspore import nn, ops
    from mindspore.nn.learning_rate_schedule import LearningRateSchedule

    from course_lib.models import lenet5

    class WarmupCosine(LearningRateSchedule):
        def __init__(self, lr_max, lr_min, warmup_steps, decay_steps):
            super().__init__()
            self.warmup_steps = warmup_steps
            self.warmup = nn.WarmUpLR(lr_max, warmup_steps)
            self.decay = nn.CosineDecayLR(lr_min, lr_max, decay_steps)

        def construct(self, global_step):
            after = ops.maximum(global_step - self.warmup_steps, 0)  # steps since the warm-up ended
            return ops.select(global_step < self.warmup_steps, self.warmup(global_step), self.decay(after))

    net = lenet5()
    return nn.Momentum(net.trainable_params(), learning_rate=WarmupCosine(0.1, 0.0, 2 * 44, 8 * 44), momentum=0.9)


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
    from course_lib.schedules import cosine_lr, warmup_cosine_schedule

    lenet_params = lenet5().trainable_params()
    net = resnet18(10)
    params = net.trainable_params()
    no_decay = [p for p in params if p.name.endswith((".gamma", ".beta", ".bias"))]
    decay = [p for p in params if not p.name.endswith((".gamma", ".beta", ".bias"))]
    return {
        "06.1": [
            nn.Momentum(lenet_params, learning_rate=cosine_lr(0.1, 0.0, 440, 44, 2), momentum=0.9),  # a list
            nn.Momentum(lenet_params, learning_rate=nn.CosineDecayLR(0.0, 0.1, 440), momentum=0.9),  # no warm-up
            nn.Momentum(lenet_params, learning_rate=warmup_cosine_schedule(0.1, 0.0, 440, 44, 1), momentum=0.9),
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
