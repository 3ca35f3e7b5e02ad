"""Solutions of lesson 08's exercises (the notebook's cells tagged `solution` show the same code)."""


def solve_08_1():
    import mindspore.dataset as ds

    from course_lib.data import create_mnist_dataset
    from course_lib.distributed import dataset_fingerprints

    whole = dataset_fingerprints(create_mnist_dataset(batch_size=256, train=True, shuffle=False, drop_remainder=False))
    previous, shards = ds.config.get_seed(), []
    for rank in (0, 1):
        ds.config.set_seed(1 + rank)  # the data part of rank `rank`'s ms.set_seed(cfg.seed + rank) in the copy
        shards.append(dataset_fingerprints(create_mnist_dataset(batch_size=32, train=True, num_shards=2,
                                                                shard_id=rank)))
    ds.config.set_seed(previous)
    on_both = set(shards[0]) & set(shards[1])
    return len(shards[0]), len(on_both), len(set(whole) - set(shards[0]) - set(shards[1]))


def solve_08_2():
    from course_lib.models import resnet18

    net = resnet18(num_classes=10)
    trainable = {p.name for p in net.trainable_params()}  # what the optimizer, hence the reducer, gets
    return sorted(p.name for p in net.get_parameters() if p.name not in trainable)


def solve_08_3():
    from course_lib.models import resnet18

    names = [p.name for p in resnet18(num_classes=10).trainable_params()]  # the order of the gradients
    return [max(i for i, name in enumerate(names) if name.startswith(stage)) for stage in ("layer1.", "layer2.",
                                                                                          "layer3.")]


def _wrong_08():
    from course_lib.models import resnet18

    net = resnet18(num_classes=10)
    not_trainable = sorted(p.name for p in net.get_parameters() if not p.requires_grad)
    return {
        "08.1": [(704, 0, 29), (719, 374, 373), (704, 359, 300), (704, 300, 329), "704, 359, 388"],
        "08.2": [[], [name for name in not_trainable if "down_sample" not in name],
                 sorted(p.name for p in net.trainable_params() if p.name.endswith(("gamma", "beta"))),
                 ["moving_mean", "moving_variance"]],
        "08.3": [[15, 30, 45], [13, 28, 43], [14, 29], [85, 160], [29, 14, 44], (14, 29, 44), [14, 30, 44]],
    }


WRONG = _wrong_08
