"""Exercises of lesson 08 (data parallelism), all answered in-process: no msrun job is started by a check."""
import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_type, too_many_or_few
from course_lib.i18n import N_, _

#: 08.1: rank r seeds with 1 + r and shuffles the ids 0..NUM_SAMPLES-1 over 2 shards.
BASE_SEED = 1
NUM_SAMPLES = 100
#: 08.3: the stages of resnet18 that get one AllReduce group each (by parameter-name prefix).
RESNET18_STAGES = (("conv1.", "bn1.", "layer1."), ("layer2.",), ("layer3.",), ("layer4.", "end_point."))


def _rank_ids(seed, rank, num_shards=2):
    """The sample ids rank ``rank`` reads when its process seeded the data with ``seed`` (no process started)."""
    import mindspore.dataset as ds

    previous = ds.config.get_seed()
    ds.config.set_seed(seed)  # what ms.set_seed(seed) does for the data pipeline
    try:
        data = ds.NumpySlicesDataset({"id": np.arange(NUM_SAMPLES)}, shuffle=True, num_shards=num_shards,
                                     shard_id=rank)
        return [int(row["id"]) for row in data.create_dict_iterator(num_epochs=1, output_numpy=True)]
    finally:
        ds.config.set_seed(previous)


@exercise("08.1", N_("Rank r seeds with 1 + r, then shuffles the ids 0..99 over 2 shards: (ids per rank, ids on "
                     "both ranks, ids no rank sees)."),
           difficulty=1, minutes=5,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("Tm8uIGBtcy5zZXRfc2VlZGAgYWxzbyBmaXhlcyB0aGUgaW5pdGlhbCB3ZWlnaHRzLCBzbyB3aXRoIHNlZWRzIDEgYW5kIDIg"
                   "dGhlIHJhbmtzIHN0YXJ0IGZyb20gZGlmZmVyZW50IHdlaWdodHMuIEFsbFJlZHVjZSBnaXZlcyBldmVyeSByYW5rIHRoZSBz"
                   "YW1lIGF2ZXJhZ2VkIGdyYWRpZW50cywgYW5kIGVhY2ggcmFuayBhcHBsaWVzIHRoYXQgc2FtZSB1cGRhdGUgdG8gaXRzIG93"
                   "biB3ZWlnaHRzLCBzbyB0aGV5IHN0YXkgYXBhcnQuIFRoZSBkYXRhIGdvIHdyb25nIHRvbzogZWFjaCByYW5rIHNodWZmbGVz"
                   "IGluIGl0cyBvd24gb3JkZXIgYmVmb3JlIHRha2luZyBpdHMgc2hhcmQsIHNvIHNvbWUgc2FtcGxlcyBhcmUgcmVhZCBieSBi"
                   "b3RoIHJhbmtzIGFuZCBzb21lIGJ5IG5vbmUu"))
def check_different_seeds(answer):
    expect(isinstance(answer, (tuple, list)) and len(answer) == 3,
           _("Answer with three numbers: (ids each rank reads, ids on both ranks, ids no rank reads)."))
    for value, what in zip(answer, (_("The number of ids per rank"), _("The number of ids on both ranks"),
                                    _("The number of ids no rank reads"))):
        expect_type(value, (int, np.integer), what)
    per_rank, on_both, unseen = (int(value) for value in answer)
    shards = [set(_rank_ids(BASE_SEED + rank, rank)) for rank in (0, 1)]
    truth = (len(shards[0]), len(shards[0] & shards[1]), NUM_SAMPLES - len(shards[0] | shards[1]))
    expect(per_rank == truth[0], _("Ids per rank: {per_rank} is {direction}. Each of the 2 shards holds an equal "
                                   "part of the {samples} ids.")
                                 .format(per_rank=per_rank, direction=too_many_or_few(per_rank, truth[0]),
                                         samples=NUM_SAMPLES))
    if on_both == 0:
        raise Incorrect(_("No id on both ranks is what the SAME seed gives (section 2). Seed each rank with its own "
                          "seed (1 + rank) right before building its dataset: the seed is read then."))
    expect(2 * per_rank - on_both + unseen == NUM_SAMPLES,
           _("Your three numbers do not add up: 2 × ids per rank − ids on both + ids no rank reads should be "
             "{samples}.").format(samples=NUM_SAMPLES))
    if on_both != truth[1]:
        raise Incorrect(_("Ids on both ranks: {on_both} is {direction}. Compare the two ranks' ids as sets.")
                        .format(on_both=on_both, direction=too_many_or_few(on_both, truth[1])))


@exercise("08.2", N_("resnet18(num_classes=10) trained data-parallel: the sorted names of the parameters that are "
                     "not averaged across ranks."),
           difficulty=2, minutes=10)
def check_not_averaged(answer):
    from course_lib.models import resnet18

    expect(isinstance(answer, (list, tuple)) and all(isinstance(name, str) for name in answer),
           _("Answer with a list of parameter names (strings), e.g. ['bn1.moving_mean', ...]."))
    net = resnet18(num_classes=10)
    trainable = {p.name for p in net.trainable_params()}
    truth = sorted(p.name for p in net.get_parameters() if p.name not in trainable)
    expect(answer, _("An empty list says every parameter stays identical. But not every parameter has a gradient: "
                     "compare net.get_parameters() with net.trainable_params()."))
    unknown = [name for name in answer if name not in trainable and name not in truth]
    if unknown:
        raise Incorrect(_("{n_unknown} of your names are not parameters of resnet18(num_classes=10), e.g. "
                          "{unknown!r}: take the names from net.get_parameters().")
                        .format(n_unknown=len(unknown), unknown=unknown[0]))
    averaged = [name for name in answer if name in trainable]
    if averaged:
        raise Incorrect(_("{n_averaged} of your names are trainable parameters (e.g. {averaged!r}): the reducer is "
                          "built from the optimizer's parameters, so their gradients are averaged and every rank "
                          "applies the same update to them.").format(n_averaged=len(averaged), averaged=averaged[0]))
    expect(len(set(answer)) == len(answer), _("Your list names some parameters twice."))
    missing = len(truth) - len(set(answer))
    expect(missing == 0, _("{missing} parameters that are not averaged are missing from your list: look at every "
                           "BatchNorm layer, the shortcuts' (down_sample_layer) too.").format(missing=missing))


def _fusion_groups(num_gradients, split_indices) -> list:
    """The gradient indices of each AllReduce, by MindSpore's own rule for ``all_reduce_fusion_config``."""
    from mindspore.nn.wrap.grad_reducer import _init_allreduce_operators  # private: the rule itself

    groups = {}
    for index, op in enumerate(_init_allreduce_operators(num_gradients, list(split_indices))):
        groups.setdefault(op.attrs["fusion"], []).append(index)
    return [groups[key] for key in sorted(groups)]


@exercise("08.3", N_("resnet18(num_classes=10): the all_reduce_fusion_config list giving 4 fusion ids: stem + layer1, "
                     "layer2, layer3, layer4 + end_point."),
           difficulty=2, minutes=10)
def check_fusion_config(answer):
    from course_lib.models import resnet18

    expect(isinstance(answer, list),
           _("all_reduce_fusion_config is a list of gradient indices (like the migration guide's [85, 160]); yours "
             "is a {kind}.").format(kind=type(answer).__name__))
    expect(answer and all(isinstance(i, int) and not isinstance(i, bool) for i in answer),
           _("The list must hold ints, at least one (MindSpore refuses anything else)."))
    expect(len(set(answer)) == len(answer) and sorted(answer) == answer,
           _("MindSpore wants the indices distinct and in ascending order."))
    names = [p.name for p in resnet18(num_classes=10).trainable_params()]
    truth = [[i for i, name in enumerate(names) if name.startswith(prefixes)] for prefixes in RESNET18_STAGES]
    groups = _fusion_groups(len(names), answer)
    beyond = (_(" (indices from {n_names} on split nothing: there are only {n_names} gradients)")
              .format(n_names=len(names)) if max(answer) >= len(names) else "")
    expect(len(groups) == len(truth), _("Your list makes {n_groups} fusion group(s) of the {n_names} "
                                        "gradients{beyond}; the task asks for {n_truth}.")
                                      .format(n_groups=len(groups), n_names=len(names), beyond=beyond,
                                              n_truth=len(truth)))
    ends, truth_ends = [group[-1] for group in groups[:-1]], [group[-1] for group in truth[:-1]]
    if all(end == true_end + 1 for end, true_end in zip(ends, truth_ends)):
        raise Incorrect(_("Each of your groups ends one gradient too late: a split index is the index of the LAST "
                          "gradient of a group (the migration guide's [85, 160] makes 0–85 and 86–160)."))
    if all(end == true_end - 1 for end, true_end in zip(ends, truth_ends)):
        raise Incorrect(_("Each of your groups ends one gradient too early: a split index is the index of the last "
                          "gradient of a group, not the first of the next."))
    for number, (group, true_group) in enumerate(zip(groups, truth), start=1):
        expect(group == true_group, _("Fusion group {number} holds gradients {first_name!r} to {last_name!r}; it "
                                      "should hold the whole stage {stage} and nothing else.")
                                    .format(number=number, first_name=names[group[0]], last_name=names[group[-1]],
                                            stage=" + ".join(p.rstrip(".") for p in RESNET18_STAGES[number - 1])))
