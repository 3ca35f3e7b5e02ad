"""Solutions of lesson 08's exercises (the notebook's cells tagged `solution` show the same code)."""


def solve_08_1():
    import mindspore as ms
    import mindspore.dataset as ds
    import numpy as np

    previous, shards = ds.config.get_seed(), []
    for rank in (0, 1):
        ms.set_seed(1 + rank)  # what rank `rank` of the copied worker does before building its dataset
        data = ds.NumpySlicesDataset({"id": np.arange(100)}, shuffle=True, num_shards=2, shard_id=rank)
        shards.append({int(row["id"]) for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)})
    ms.set_seed(previous)
    return len(shards[0]), len(shards[0] & shards[1]), 100 - len(shards[0] | shards[1])


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
        "08.1": [(50, 0, 0), (100, 26, 26), (50, 26, 20), (50, 20, 30), "50, 26, 26"],
        "08.2": [[], [name for name in not_trainable if "down_sample" not in name],
                 sorted(p.name for p in net.trainable_params() if p.name.endswith(("gamma", "beta"))),
                 ["moving_mean", "moving_variance"]],
        "08.3": [[15, 30, 45], [13, 28, 43], [14, 29], [85, 160], [29, 14, 44], (14, 29, 44), [14, 30, 44]],
    }


WRONG = _wrong_08
