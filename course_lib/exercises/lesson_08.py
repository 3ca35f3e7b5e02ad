"""Exercises of lesson 08 (data parallelism), all answered in-process: no msrun job is started by a check."""
import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_type

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


@exercise("08.1", "Rank r seeds with 1 + r, then shuffles the ids 0..99 over 2 shards: (ids per rank, ids on "
                  "both ranks, ids no rank sees).",
           difficulty=1, minutes=5,
           why=("Tm8uIGBtcy5zZXRfc2VlZGAgYWxzbyBmaXhlcyB0aGUgaW5pdGlhbCB3ZWlnaHRzLCBzbyB3aXRoIHNlZWRzIDEgYW5kIDIg"
                "dGhlIHJhbmtzIHN0YXJ0IGZyb20gZGlmZmVyZW50IHdlaWdodHMuIEFsbFJlZHVjZSBnaXZlcyBldmVyeSByYW5rIHRoZSBz"
                "YW1lIGF2ZXJhZ2VkIGdyYWRpZW50cywgYW5kIGVhY2ggcmFuayBhcHBsaWVzIHRoYXQgc2FtZSB1cGRhdGUgdG8gaXRzIG93"
                "biB3ZWlnaHRzLCBzbyB0aGV5IHN0YXkgYXBhcnQuIFRoZSBkYXRhIGdvIHdyb25nIHRvbzogZWFjaCByYW5rIHNodWZmbGVz"
                "IGluIGl0cyBvd24gb3JkZXIgYmVmb3JlIHRha2luZyBpdHMgc2hhcmQsIHNvIHNvbWUgc2FtcGxlcyBhcmUgcmVhZCBieSBi"
                "b3RoIHJhbmtzIGFuZCBzb21lIGJ5IG5vbmUu"),
           task_zh="第 r 个 rank 使用种子 1 + r，然后把 id 0..99 打乱并分成 2 个分片：（每个 rank 的 id 数，两个 "
                   "rank 都读到的 id 数，没有 rank 读到的 id 数）。",
           why_zh=("5LiN6KGM44CCYG1zLnNldF9zZWVkYCDkuZ/kvJrlm7rlrprliJ3lp4vmnYPph43vvIzmiYDku6Xnp43lrZDliIbliKvkuLog"
                   "MSDlkowgMiDml7bvvIzlkIQgcmFuayDku47kuI3lkIznmoTmnYPph43lvIDlp4vjgIJBbGxSZWR1Y2Ug6K6p5q+P5LiqIHJh"
                   "bmsg5b6X5Yiw55u45ZCM55qE5bmz5Z2H5qKv5bqm77yM5q+P5LiqIHJhbmsg5YaN5oqK5ZCM5qC355qE5pu05paw5bqU55So"
                   "5Yiw6Ieq5bex55qE5p2D6YeN5LiK77yM5Zug5q2k5a6D5Lus5aeL57uI5LiN5LiA6Ie044CC5pWw5o2u5Lmf5Ye65LqG6Zeu"
                   "6aKY77ya5q+P5LiqIHJhbmsg5Zyo5Y+W6Ieq5bex55qE5YiG54mH5LmL5YmN5oyJ5ZCE6Ieq55qE6aG65bqP5omT5Lmx77yM"
                   "5omA5Lul5pyJ5Lqb5qC35pys6KKr5Lik5LiqIHJhbmsg6YO96K+75Yiw77yM5pyJ5Lqb5YiZ5rKh5pyJ5Lu75L2VIHJhbmsg"
                   "6K+75Yiw44CC"))
def check_different_seeds(answer):
    expect(isinstance(answer, (tuple, list)) and len(answer) == 3,
           "Answer with three numbers: (ids each rank reads, ids on both ranks, ids no rank reads).",
           zh="请用三个数作答：（每个 rank 读取的 id 数，两个 rank 都读到的 id 数，没有任何 rank 读到的 id 数）。")
    for value, what, what_zh in zip(answer, ("ids per rank", "ids on both ranks", "ids no rank reads"),
                                    ("每个 rank 的 id 数", "两个 rank 都读到的 id 数", "没有 rank 读到的 id 数")):
        expect_type(value, (int, np.integer), f"The number of {what}", what_zh)
    per_rank, on_both, unseen = (int(value) for value in answer)
    shards = [set(_rank_ids(BASE_SEED + rank, rank)) for rank in (0, 1)]
    truth = (len(shards[0]), len(shards[0] & shards[1]), NUM_SAMPLES - len(shards[0] | shards[1]))
    expect(per_rank == truth[0], f"Ids per rank: {per_rank} is {'too many' if per_rank > truth[0] else 'too few'}. "
                                 f"Each of the 2 shards holds an equal part of the {NUM_SAMPLES} ids.",
                                 zh=f"每个 rank 的 id 数：{per_rank} {'偏多' if per_rank > truth[0] else '偏少'}。2 "
                                    f"个分片各自持有 {NUM_SAMPLES} 个 id 中相等的一份。")
    if on_both == 0:
        raise Incorrect("No id on both ranks is what the SAME seed gives (section 2). Seed each rank with its own "
                        "seed (1 + rank) right before building its dataset: the seed is read then.",
                        zh="两个 rank 没有共同的 id，这是相同种子的结果（第 2 节）。请在构建数据集之前为每个 rank "
                           "设置它自己的种子（1 + rank）：种子是在那时读取的。")
    expect(2 * per_rank - on_both + unseen == NUM_SAMPLES,
           f"Your three numbers do not add up: 2 × ids per rank − ids on both + ids no rank reads should be "
           f"{NUM_SAMPLES}.",
           zh="你的三个数对不上：2 × 每个 rank 的 id 数 − 两个 rank 都读到的 id 数 + 没有 rank 读到的 id 数，应等于"
              f" {NUM_SAMPLES}。")
    if on_both != truth[1]:
        raise Incorrect(f"Ids on both ranks: {on_both} is {'too many' if on_both > truth[1] else 'too few'}. "
                        f"Compare the two ranks' ids as sets.",
                        zh=f"两个 rank 都读到的 id 数：{on_both} {'偏多' if on_both > truth[1] else '偏少'}。请把两"
                           "个 rank 的 id 当作集合来比较。")


@exercise("08.2", "resnet18(num_classes=10) trained data-parallel: the sorted names of the parameters that are "
                  "not averaged across ranks.",
           difficulty=2, minutes=10,
           task_zh="数据并行训练 resnet18(num_classes=10)：不会在各 rank 之间求平均的参数的名称（排好序）。")
def check_not_averaged(answer):
    from course_lib.models import resnet18

    expect(isinstance(answer, (list, tuple)) and all(isinstance(name, str) for name in answer),
           "Answer with a list of parameter names (strings), e.g. ['bn1.moving_mean', ...].",
           zh="请用参数名（字符串）组成的列表作答，例如 ['bn1.moving_mean', ...]。")
    net = resnet18(num_classes=10)
    trainable = {p.name for p in net.trainable_params()}
    truth = sorted(p.name for p in net.get_parameters() if p.name not in trainable)
    expect(answer, "An empty list says every parameter stays identical. But not every parameter has a gradient: "
                   "compare net.get_parameters() with net.trainable_params().",
                   zh="空列表表示每个参数都保持一致。但并不是每个参数都有梯度：比较 net.get_parameters() 和 "
                      "net.trainable_params()。")
    unknown = [name for name in answer if name not in trainable and name not in truth]
    if unknown:
        raise Incorrect(f"{len(unknown)} of your names are not parameters of resnet18(num_classes=10), e.g. "
                        f"{unknown[0]!r}: take the names from net.get_parameters().",
                        zh=f"你的名称中有 {len(unknown)} 个不是 resnet18(num_classes=10) 的参数，例如 {unknown[0]!r}"
                           "：请从 net.get_parameters() 中取名称。")
    averaged = [name for name in answer if name in trainable]
    if averaged:
        raise Incorrect(f"{len(averaged)} of your names are trainable parameters (e.g. {averaged[0]!r}): the reducer "
                        f"is built from the optimizer's parameters, so their gradients are averaged and every rank "
                        f"applies the same update to them.",
                        zh=f"你的名称中有 {len(averaged)} 个是可训练参数（例如 {averaged[0]!r}）：梯度聚合器是根据优"
                           "化器的参数构建的，所以它们的梯度会被求平均，每个 rank 对它们应用相同的更新。")
    expect(len(set(answer)) == len(answer), "Your list names some parameters twice.",
                                            zh="你的列表中有些参数出现了两次。")
    missing = len(truth) - len(set(answer))
    expect(missing == 0, f"{missing} parameters that are not averaged are missing from your list: look at every "
                         f"BatchNorm layer, the shortcuts' (down_sample_layer) too.",
                         zh=f"你的列表中漏掉了 {missing} 个不求平均的参数：看一看每个 BatchNorm 层，包括 shortcut（"
                            "down_sample_layer）中的。")


def _fusion_groups(num_gradients, split_indices) -> list:
    """The gradient indices of each AllReduce, by MindSpore's own rule for ``all_reduce_fusion_config``."""
    from mindspore.nn.wrap.grad_reducer import _init_allreduce_operators  # private: the rule itself

    groups = {}
    for index, op in enumerate(_init_allreduce_operators(num_gradients, list(split_indices))):
        groups.setdefault(op.attrs["fusion"], []).append(index)
    return [groups[key] for key in sorted(groups)]


@exercise("08.3", "resnet18(num_classes=10): the all_reduce_fusion_config list giving 4 fusion ids: stem + layer1, "
                  "layer2, layer3, layer4 + end_point.",
           difficulty=2, minutes=10,
           task_zh="resnet18(num_classes=10)：得到 4 个融合编号的 all_reduce_fusion_config 列表：stem + layer1、"
                   "layer2、layer3、layer4 + end_point。")
def check_fusion_config(answer):
    from course_lib.models import resnet18

    expect(isinstance(answer, list),
           f"all_reduce_fusion_config is a list of gradient indices (like the migration guide's [85, 160]); yours is a "
           f"{type(answer).__name__}.",
           zh="all_reduce_fusion_config 是一个梯度索引列表（如迁移指南中的 [85, 160]）；你的是 "
              f"{type(answer).__name__}。")
    expect(answer and all(isinstance(i, int) and not isinstance(i, bool) for i in answer),
           "The list must hold ints, at least one (MindSpore refuses anything else).",
           zh="列表中必须是 int，并且至少有一个（其他情况 MindSpore 都会拒绝）。")
    expect(len(set(answer)) == len(answer) and sorted(answer) == answer,
           "MindSpore wants the indices distinct and in ascending order.",
           zh="MindSpore 要求索引互不相同，并按升序排列。")
    names = [p.name for p in resnet18(num_classes=10).trainable_params()]
    truth = [[i for i, name in enumerate(names) if name.startswith(prefixes)] for prefixes in RESNET18_STAGES]
    groups = _fusion_groups(len(names), answer)
    beyond = (f" (indices from {len(names)} on split nothing: there are only {len(names)} gradients)"
              if max(answer) >= len(names) else "")
    beyond_zh = (f"（从 {len(names)} 开始的索引不会分割任何梯度：总共只有 {len(names)} 个梯度）"
                 if max(answer) >= len(names) else "")
    expect(len(groups) == len(truth), f"Your list makes {len(groups)} fusion group(s) of the {len(names)} "
                                      f"gradients{beyond}; the task asks for {len(truth)}.",
                                      zh=f"你的列表把 {len(names)} 个梯度分成了 {len(groups)} 个融合组"
                                         f"{beyond_zh}；题目要求 {len(truth)} 个。")
    ends, truth_ends = [group[-1] for group in groups[:-1]], [group[-1] for group in truth[:-1]]
    if all(end == true_end + 1 for end, true_end in zip(ends, truth_ends)):
        raise Incorrect("Each of your groups ends one gradient too late: a split index is the index of the LAST "
                        "gradient of a group (the migration guide's [85, 160] makes 0–85 and 86–160).",
                        zh="你的每个组都晚结束了一个梯度：分割索引是一个组最后一个梯度的索引（迁移指南中的 "
                           "[85, 160] 分出 0–85 和 86–160）。")
    if all(end == true_end - 1 for end, true_end in zip(ends, truth_ends)):
        raise Incorrect("Each of your groups ends one gradient too early: a split index is the index of the last "
                        "gradient of a group, not the first of the next.",
                        zh="你的每个组都早结束了一个梯度：分割索引是一个组最后一个梯度的索引，而不是下一组第一个梯"
                           "度的索引。")
    for number, (group, true_group) in enumerate(zip(groups, truth), start=1):
        expect(group == true_group, f"Fusion group {number} holds gradients {names[group[0]]!r} to "
                                    f"{names[group[-1]]!r}; it should hold the whole stage "
                                    f"{' + '.join(p.rstrip('.') for p in RESNET18_STAGES[number - 1])} and nothing "
                                    f"else.",
                                    zh=f"第 {number} 个融合组包含从 {names[group[0]]!r} 到 {names[group[-1]]!r} "
                                       "的梯度；它应恰好包含整个阶段 "
                                       f"{' + '.join(p.rstrip('.') for p in RESNET18_STAGES[number - 1])}，不多也不"
                                       "少。")
