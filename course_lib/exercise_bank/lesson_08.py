"""Exercises of lesson 08 (data parallelism), all answered in-process: no msrun job is started by a check."""
import numpy as np

from ..exercises import Incorrect, exercise, expect, expect_type

#: 08.1: the worker's seed is 1; the copy seeds rank r with 1 + r.
BASE_SEED = 1
#: 08.3: the stages of resnet18 that get one AllReduce group each (by parameter-name prefix).
RESNET18_STAGES = (("conv1.", "bn1.", "layer1."), ("layer2.",), ("layer3.",), ("layer4.", "end_point."))


def _rank_fingerprints(seed, rank, num_shards=2):
    """The samples rank ``rank`` trains on when its process seeded the data with ``seed`` (no process started)."""
    import mindspore.dataset as ds

    from ..data import create_mnist_dataset
    from ..distributed import dataset_fingerprints

    previous = ds.config.get_seed()
    ds.config.set_seed(seed)  # read when the pipeline is built, as in each worker after ms.set_seed
    try:
        pipeline = create_mnist_dataset(batch_size=32, train=True, num_shards=num_shards, shard_id=rank)
    finally:
        ds.config.set_seed(previous)
    return dataset_fingerprints(pipeline)


@exercise("08.1", "Rank r seeds with 1 + r (2 ranks, batch 32, training pipeline): (images per rank, images on "
                  "both ranks, training images no rank sees).")
def check_different_seeds(answer):
    from ..data import create_mnist_dataset
    from ..distributed import dataset_fingerprints

    expect(isinstance(answer, (tuple, list)) and len(answer) == 3,
           "Answer with three numbers: (images each rank trains on, images on both ranks, images no rank sees).")
    for value, what in zip(answer, ("images per rank", "images on both ranks", "images no rank sees")):
        expect_type(value, (int, np.integer), f"The number of {what}")
    per_rank, on_both, unseen = (int(value) for value in answer)
    whole = set(dataset_fingerprints(create_mnist_dataset(batch_size=256, train=True, shuffle=False,
                                                          drop_remainder=False)))
    shards = [_rank_fingerprints(BASE_SEED + rank, rank) for rank in (0, 1)]
    truth = (len(shards[0]), len(set(shards[0]) & set(shards[1])), len(whole - set(shards[0]) - set(shards[1])))
    if per_rank != truth[0]:
        if per_rank == -(-len(whole) // 2):  # ceil(1437 / 2): every image kept, shards padded
            raise Incorrect(f"{per_rank} is the padded shard of a pipeline that keeps every image; the training "
                            f"pipeline drops the last partial batch of 32.")
        raise Incorrect(f"Images per rank: {per_rank} is {'too many' if per_rank > truth[0] else 'too few'}. "
                        f"Count the samples of one rank's pipeline (batches of 32, last partial batch dropped).")
    if on_both == 0:
        raise Incorrect("No image on both ranks is what the SAME seed gives (section 2). Seed each rank's "
                        "pipeline with its own seed (1 + rank) right before building it: the seed is read then.")
    expect(2 * per_rank - on_both + unseen == len(whole),
           f"Your three numbers do not add up: 2 × images per rank − images on both + images no rank sees should be "
           f"the {len(whole):,} training images.")
    if on_both != truth[1]:
        raise Incorrect(f"Images on both ranks: {on_both} is {'too many' if on_both > truth[1] else 'too few'}. "
                        f"Compare the two ranks' fingerprints as sets.")


@exercise("08.2", "resnet18(num_classes=10) trained data-parallel: the sorted names of the parameters that are "
                  "not averaged across ranks.")
def check_not_averaged(answer):
    from ..models import resnet18

    expect(isinstance(answer, (list, tuple)) and all(isinstance(name, str) for name in answer),
           "Answer with a list of parameter names (strings), e.g. ['bn1.moving_mean', ...].")
    net = resnet18(num_classes=10)
    trainable = {p.name for p in net.trainable_params()}
    truth = sorted(p.name for p in net.get_parameters() if p.name not in trainable)
    expect(answer, "An empty list says every parameter stays identical. But not every parameter has a gradient: "
                   "compare net.get_parameters() with net.trainable_params().")
    unknown = [name for name in answer if name not in trainable and name not in truth]
    if unknown:
        raise Incorrect(f"{len(unknown)} of your names are not parameters of resnet18(num_classes=10), e.g. "
                        f"{unknown[0]!r}: take the names from net.get_parameters().")
    averaged = [name for name in answer if name in trainable]
    if averaged:
        raise Incorrect(f"{len(averaged)} of your names are trainable parameters (e.g. {averaged[0]!r}): the reducer "
                        f"is built from the optimizer's parameters, so their gradients are averaged and every rank "
                        f"applies the same update to them.")
    expect(len(set(answer)) == len(answer), "Your list names some parameters twice.")
    missing = len(truth) - len(set(answer))
    expect(missing == 0, f"{missing} parameters that are not averaged are missing from your list: look at every "
                         f"BatchNorm layer, the shortcuts' (down_sample_layer) too.")


def _fusion_groups(num_gradients, split_indices) -> list:
    """The gradient indices of each AllReduce, by MindSpore's own rule for ``all_reduce_fusion_config``."""
    from mindspore.nn.wrap.grad_reducer import _init_allreduce_operators  # private: the rule itself

    groups = {}
    for index, op in enumerate(_init_allreduce_operators(num_gradients, list(split_indices))):
        groups.setdefault(op.attrs["fusion"], []).append(index)
    return [groups[key] for key in sorted(groups)]


@exercise("08.3", "resnet18(num_classes=10): the all_reduce_fusion_config list giving 4 AllReduces: stem + layer1, "
                  "layer2, layer3, layer4 + end_point.")
def check_fusion_config(answer):
    from ..models import resnet18

    expect(isinstance(answer, list),
           f"all_reduce_fusion_config is a list of gradient indices (like seed 003's [85, 160]); yours is a "
           f"{type(answer).__name__}.")
    expect(answer and all(isinstance(i, int) and not isinstance(i, bool) for i in answer),
           "The list must hold ints, at least one (MindSpore refuses anything else).")
    expect(len(set(answer)) == len(answer) and sorted(answer) == answer,
           "MindSpore wants the indices distinct and in ascending order.")
    names = [p.name for p in resnet18(num_classes=10).trainable_params()]
    truth = [[i for i, name in enumerate(names) if name.startswith(prefixes)] for prefixes in RESNET18_STAGES]
    groups = _fusion_groups(len(names), answer)
    beyond = (f" (indices from {len(names)} on split nothing: there are only {len(names)} gradients)"
              if max(answer) >= len(names) else "")
    expect(len(groups) == len(truth), f"Your list makes {len(groups)} AllReduce group(s) of the {len(names)} "
                                      f"gradients{beyond}; the task asks for {len(truth)}.")
    ends, truth_ends = [group[-1] for group in groups[:-1]], [group[-1] for group in truth[:-1]]
    if all(end == true_end + 1 for end, true_end in zip(ends, truth_ends)):
        raise Incorrect("Each of your groups ends one gradient too late: a split index is the index of the LAST "
                        "gradient of a group (seed 003's [85, 160] makes 0–85 and 86–160).")
    if all(end == true_end - 1 for end, true_end in zip(ends, truth_ends)):
        raise Incorrect("Each of your groups ends one gradient too early: a split index is the index of the last "
                        "gradient of a group, not the first of the next.")
    for number, (group, true_group) in enumerate(zip(groups, truth), start=1):
        expect(group == true_group, f"AllReduce group {number} holds gradients {names[group[0]]!r} to "
                                    f"{names[group[-1]]!r}; it should hold the whole stage "
                                    f"{' + '.join(p.rstrip('.') for p in RESNET18_STAGES[number - 1])} and nothing "
                                    f"else.")
