"""Exercises of lesson 01 (MindData pipelines: augmentation, shards, a pipeline builder for compare_workers)."""
import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_type

NUM_SHARDS_01_2 = 4


def _nodes_source_first(pipeline) -> list:
    """The nodes of a (linear) MindData pipeline, from the source to the last node."""
    nodes, pending = [], [pipeline]
    while pending:
        node = pending.pop()
        nodes.append(node)
        pending.extend(node.children)
    return nodes[::-1]


def _flat_operations(operations) -> list:
    """The operations of a ``map``, with ``transforms.Compose`` opened up."""
    operations = operations if isinstance(operations, (list, tuple)) else [operations]
    flat = []
    for operation in operations:
        inner = getattr(operation, "transforms", None)
        flat.extend(_flat_operations(inner) if type(operation).__name__ == "Compose" and inner else [operation])
    return flat


def _image_operations(pipeline) -> list:
    """Every operation applied to the ``image`` column, in the order the samples go through them."""
    import mindspore.dataset as ds

    ops = []
    for node in _nodes_source_first(pipeline):
        if isinstance(node, ds.MapDataset):
            columns = node.input_columns if isinstance(node.input_columns, list) else [node.input_columns]
            if "image" in columns:
                ops.extend(_flat_operations(node.operations))
    return ops


def _first_batch(pipeline, what, what_zh):
    try:
        return next(pipeline.create_tuple_iterator(num_epochs=1, output_numpy=True))
    except Exception as error:  # noqa: BLE001 - show the learner what failed
        raise Incorrect(f"{what} fails when iterated: {type(error).__name__}: "
                        f"{str(error).strip().splitlines()[0]}",
                        zh=f"{what_zh}在迭代时出错：{type(error).__name__}: "
                           f"{str(error).strip().splitlines()[0]}") from None


def _shuffles(pipeline) -> bool:
    import mindspore.dataset as ds

    for node in _nodes_source_first(pipeline):
        if isinstance(node, ds.ShuffleDataset):
            return True
        sampler = getattr(node, "sampler", None)  # a source's own shuffle=True is a RandomSampler
        if isinstance(sampler, ds.RandomSampler) or str(getattr(sampler, "shuffle", "")) == "Shuffle.GLOBAL":
            return True
    return False


@exercise("01.1", "The lesson's MNIST training chain with vision.RandomRotation(10) first, shuffled, batches of 32 "
                  "(drop the partial one): give the pipeline.",
           difficulty=1, minutes=10,
           why=("Tm8uIFJhbmRvbVJvdGF0aW9uIGNoYW5nZXMgdGhlIHBpeGVscywgbm90IHRoZSBudW1iZXIgb2YgaW1hZ2VzOiBhZnRlciBi"
                "YXRjaCgzMiwgZHJvcF9yZW1haW5kZXI9VHJ1ZSkgdGhlcmUgYXJlIHN0aWxsIDE0MzcgLy8gMzIgPSA0NCBiYXRjaGVzIHBl"
                "ciBlcG9jaC4gUmFuZG9tIGF1Z21lbnRhdGlvbiBnaXZlcyBhIGRpZmZlcmVudCB2ZXJzaW9uIG9mIGVhY2ggaW1hZ2UgYXQg"
                "ZXZlcnkgZXBvY2gsIG5vdCBtb3JlIGltYWdlczsgc2h1ZmZsZSBkb2VzIG5vdCBjaGFuZ2UgdGhlIGNvdW50IGVpdGhlci4="),
           task_zh="在本课的 MNIST 训练处理链最前面加上 vision.RandomRotation(10)，打乱顺序，batch 大小为 32（丢弃"
                   "不完整的 batch）：给出这个数据管道。",
           why_zh=("5LiN5Lya44CCUmFuZG9tUm90YXRpb24g5pS55Y+Y55qE5piv5YOP57Sg77yM6ICM5LiN5piv5Zu+5YOP55qE5pWw6YeP77ya"
                   "YmF0Y2goMzIsIGRyb3BfcmVtYWluZGVyPVRydWUpIOS5i+WQju+8jOavj+S4qiBlcG9jaCDku43nhLbmmK8gMTQzNyAvLyAz"
                   "MiA9IDQ0IOS4qiBiYXRjaOOAgumaj+acuuaVsOaNruWinuW8uuiuqeavj+W8oOWbvuWDj+WcqOavj+S4qiBlcG9jaCDlkYjn"
                   "jrDkuI3lkIznmoTmoLflrZDvvIzkvYbkuI3kvJrlop7liqDlm77lg4/vvJtzaHVmZmxlIOS5n+S4jeS8muaUueWPmOaVsOmH"
                   "j+OAgg=="))
def check_augmented_pipeline(answer):
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision

    from course_lib.data.datasets import create_mnist_dataset

    expect_type(answer, ds.Dataset, "Your answer (the pipeline object)", "你的答案（数据管道对象）")
    ops = _image_operations(answer)
    kinds = [type(op).__name__ for op in ops]
    rotations = [i for i, op in enumerate(ops) if isinstance(op, vision.RandomRotation)]
    expect(rotations, "No vision.RandomRotation is mapped on the 'image' column. Add vision.RandomRotation(10) to "
                      "the image operations of the map.",
                      zh="'image' 列上没有映射 vision.RandomRotation。请把 vision.RandomRotation(10) 加入 map 的图"
                         "像操作中。")
    rotation = ops[rotations[0]]
    expect(list(rotation.degrees) == [-10, 10],
           f"Your rotation draws angles from {list(rotation.degrees)} degrees; RandomRotation(10) means up to "
           f"10 degrees either way.",
           zh=f"你的旋转角度取自 {list(rotation.degrees)} 度；RandomRotation(10) 表示向两个方向各旋转至多 10 度。")
    expect("Resize" in kinds, "The image operations have no Resize: keep the lesson's chain (Resize to 32×32, "
                              "two Rescale, HWC2CHW) after the rotation.",
                              zh="图像操作中没有 Resize：在旋转之后保留本课的处理链（Resize 到 32×32、两个 Rescale"
                                 "、HWC2CHW）。")
    expect(rotations[0] < kinds.index("Resize"),
           "Put RandomRotation first, before Resize: it expects an (H, W, C) image and fills the corners it "
           "uncovers with 0, which is the black background only before Rescale/normalisation.",
           zh="把 RandomRotation 放在最前面、Resize 之前：它要求 (H, W, C) 格式的图像，并用 0 填充旋转后露出的角落"
              "，而 0 只有在 Rescale/归一化之前才是黑色背景。")
    expect(_shuffles(answer), "A training pipeline shuffles: add .shuffle(...) (or shuffle=True in the source).",
                              zh="训练数据管道需要打乱顺序：加上 .shuffle(...)（或在数据源中设置 shuffle=True）。")
    truth_steps = create_mnist_dataset(batch_size=32, train=True).get_dataset_size()
    steps = answer.get_dataset_size()
    if steps == truth_steps + 1:
        raise Incorrect(f"{steps} steps per epoch: one too many. Training drops the last partial batch "
                        f"(drop_remainder=True).",
                        zh=f"每个 epoch {steps} 步：多了一步。训练时会丢弃最后一个不完整的 batch（"
                           "drop_remainder=True）。")
    expect(steps == truth_steps, f"Your pipeline yields {steps} rows per epoch. A training pipeline batches by 32 "
                                 f"and drops the last partial batch; augmentation adds no samples.",
                                 zh=f"你的数据管道每个 epoch 产生 {steps} 行。训练数据管道按 32 个样本组成 batch，并"
                                    "丢弃最后一个不完整的 batch；数据增强不会增加样本。")
    batch = _first_batch(answer, "Your pipeline", "你的数据管道")
    expect(len(batch) == 2, f"Your pipeline has the columns {answer.get_col_names()}; keep just image and label.",
                            zh=f"你的数据管道有这些列：{answer.get_col_names()}；只保留 image 和 label。")
    images, labels = batch
    expect(images.shape == (32, 1, 32, 32) and images.dtype == np.float32,
           f"A batch of images should be float32 of shape (32, 1, 32, 32); yours is {images.dtype} {images.shape}.",
           zh=f"一个 batch 的图像应为 float32、形状为 (32, 1, 32, 32)；你的是 {images.dtype} {images.shape}。")
    expect(labels.dtype == np.int32, f"The labels should be int32 (TypeCast), yours are {labels.dtype}.",
                                     zh=f"标签应为 int32（TypeCast），你的是 {labels.dtype}。")
    background = -0.1307 / 0.3081
    expect(abs(float(images.min()) - background) < 1e-3,
           "The pixel values are not normalised like the lesson's chain: the black background should become "
           "(0 - 0.1307) / 0.3081 after the two Rescale steps.",
           zh="像素值没有像本课的处理链那样归一化：经过两个 Rescale 步骤后，黑色背景应变为 (0 - 0.1307) / 0.3081。")


@exercise("01.2", "MindDataset(..., num_shards=4, shard_id=k) on the digits: (list of the 4 shard sizes, "
                  "number of images on more than one shard).",
           difficulty=2, minutes=10,
           why=("RXZlcnkgc2hhcmQgZ2V0cyB0aGUgc2FtZSBudW1iZXIgb2Ygc2FtcGxlcywgY2VpbCgxNDM3IC8gNCkgPSAzNjAsIHNvIHRo"
                "YXQgZXZlcnkgcHJvY2VzcyBydW5zIHRoZSBzYW1lIG51bWJlciBvZiBzdGVwcy4gNCB4IDM2MCA9IDE0NDAgPSAxNDM3ICsg"
                "MzogdGhlIHNob3J0IHNoYXJkcyBhcmUgcGFkZGVkIHdpdGggMyBzYW1wbGVzIGZyb20gdGhlIHN0YXJ0IG9mIHRoZSBmaWxl"
                "LCBhbmQgdGhlc2UgMyBpbWFnZXMgbGFuZCBvbiB0d28gc2hhcmRzLg=="),
           task_zh="在数字数据集上使用 MindDataset(..., num_shards=4, shard_id=k)：（4 个分片大小组成的列表，出现在"
                   "多个分片上的图像数）。",
           why_zh=("5q+P5Liq5YiG54mH5b6X5Yiw55qE5qC35pys5pWw55u45ZCM77yM6YO95pivIGNlaWwoMTQzNyAvIDQpID0gMzYw77yM6L+Z"
                   "5qC35q+P5Liq6L+b56iL6L+Q6KGM55qE5q2l5pWw6YO955u45ZCM44CCNCB4IDM2MCA9IDE0NDAgPSAxNDM3ICsgM++8mui+"
                   "g+efreeahOWIhueJh+eUqOaWh+S7tuW8gOWktOeahCAzIOS4quagt+acrOihpem9kO+8jOWboOatpOi/mSAzIOW8oOWbvuWD"
                   "j+S8muWHuueOsOWcqOS4pOS4quWIhueJh+S4iuOAgg=="))
def check_four_shards(answer):
    from collections import Counter

    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.data.stats import sample_fingerprints

    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           "Answer with a pair: (a list with the size of each shard, the number of images seen by more than "
           "one shard).",
           zh="请用一个二元组作答：（每个分片的大小组成的列表，被多个分片读到的图像数）。")
    sizes, shared = answer
    expect(isinstance(sizes, (list, tuple)) and all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                                   for s in sizes),
           f"The first item should be a list of ints (one size per shard), got {sizes!r}.",
           zh=f"第一项应为 int 列表（每个分片一个大小），你给的是 {sizes!r}。")
    expect(len(sizes) == NUM_SHARDS_01_2, f"You gave {len(sizes)} shard sizes; there are {NUM_SHARDS_01_2} shards.",
                                          zh=f"你给出了 {len(sizes)} 个分片大小；分片共有 {NUM_SHARDS_01_2} 个。")
    expect_type(shared, (int, np.integer), "The number of images on more than one shard",
                "出现在多个分片上的图像数")
    # MindDataset and MnistDataset shard alike (sample i -> shard i % num_shards, short shards padded from the
    # start), so the embedded MNIST files give the truth without needing the lesson's MindRecord file.
    shards = [sample_fingerprints(create_mnist_dataset(batch_size=512, train=True, shuffle=False,
                                                       drop_remainder=False, num_shards=NUM_SHARDS_01_2, shard_id=k))
              for k in range(NUM_SHARDS_01_2)]
    truth_sizes = [len(shard) for shard in shards]
    counts = Counter(fingerprint for shard in shards for fingerprint in shard)
    truth_shared = sum(1 for count in counts.values() if count > 1)
    if list(sizes) != truth_sizes:
        if sum(sizes) == len(counts):
            raise Incorrect("Your sizes add up to exactly the number of images, but MindData gives every shard the "
                            "same number of samples (it pads the short shards). Predict with "
                            "expected_steps(1437, 1, num_shards=4), then check with sample_fingerprints.",
                            zh="你的分片大小加起来正好等于图像数，但 MindData 会让每个分片的样本数相同（它会补齐较"
                               "短的分片）。先用 expected_steps(1437, 1, num_shards=4) 预测，再用 "
                               "sample_fingerprints 验证。")
        raise Incorrect("The shard sizes are not right. Predict them with expected_steps(1437, 1, num_shards=4), "
                        "then measure: len(sample_fingerprints(shard k)).",
                        zh="分片大小不对。先用 expected_steps(1437, 1, num_shards=4) 预测，再测量："
                           "len(sample_fingerprints(shard k))。")
    if int(shared) != truth_shared:
        direction = "too many" if shared > truth_shared else "too few"
        raise Incorrect(f"The shard sizes are right, but {shared} is {direction} images on more than one shard. "
                        f"The shared images are the padding: how many samples beyond the 1,437 do 4 equal shards "
                        f"hold?",
                        zh=f"分片大小是对的，但出现在多个分片上的图像数 {shared} "
                           f"{'偏多' if shared > truth_shared else '偏少'}。共享的图像来自补齐：4 个大小相同的分片比"
                           " 1,437 多容纳了多少个样本？")


@exercise("01.3", "A function build(num_parallel_workers) giving the ImageFolder training pipeline at image_size=64, "
                  "batch 32, with that many workers (for compare_workers).",
           difficulty=1, minutes=10,
           task_zh="函数 build(num_parallel_workers)：返回 image_size=64、batch 大小 32、使用给定工作线程数的 "
                   "ImageFolder 训练数据管道（供 compare_workers 使用）。")
def check_worker_builder(answer):
    import mindspore.dataset as ds

    from course_lib.data.datasets import default_num_workers

    expect(callable(answer) and not isinstance(answer, ds.Dataset),
           f"Answer with a function of num_parallel_workers that builds the pipeline (like the lambdas passed to "
           f"compare_workers in section 8), not a {type(answer).__name__}.",
           zh="请用一个以 num_parallel_workers 为参数、构建数据管道的函数作答（就像第 8 节传给 compare_workers 的 "
              f"lambda），而不是 {type(answer).__name__}。")
    for workers in sorted({1, min(2, default_num_workers())}):
        try:
            pipeline = answer(num_parallel_workers=workers)
        except TypeError as error:
            raise Incorrect(f"compare_workers calls build_dataset(num_parallel_workers=w); your function fails on "
                            f"that: TypeError: {str(error).splitlines()[0]}",
                            zh="compare_workers 会调用 build_dataset(num_parallel_workers=w)；你的函数在这里出错："
                               f"TypeError: {str(error).splitlines()[0]}") from None
        expect_type(pipeline, ds.Dataset, "What your function returns", "你的函数的返回值")
        decode_maps = [node for node in _nodes_source_first(pipeline) if isinstance(node, ds.MapDataset)
                       and any(type(op).__name__ == "Decode" for op in _flat_operations(node.operations))]
        expect(decode_maps, "Your pipeline has no map with vision.Decode: build the ImageFolder chain "
                            "(create_imagefolder_dataset does it for you).",
                            zh="你的数据管道中没有带 vision.Decode 的 map：请构建 ImageFolder 处理链（"
                               "create_imagefolder_dataset 会替你完成）。")
        used = decode_maps[0].num_parallel_workers or ds.config.get_num_parallel_workers()
        expect(used == workers, f"Called with num_parallel_workers={workers}, your pipeline decodes with {used} "
                                f"worker(s): pass the argument on, or compare_workers compares nothing.",
                                zh=f"以 num_parallel_workers={workers} 调用时，你的数据管道用 {used} 个工作线程解码"
                                   "：请把这个参数传下去，否则 compare_workers 什么也比较不了。")
        images, _ = _first_batch(pipeline, "The pipeline your function builds", "你的函数构建的数据管道")
        expect(images.shape == (32, 3, 64, 64),
               f"A batch should have shape (32, 3, 64, 64) (batch 32, image_size=64); yours is {images.shape}.",
               zh=f"一个 batch 的形状应为 (32, 3, 64, 64)（batch 大小 32，image_size=64）；你的是 {images.shape}。")
