"""Exercises of lesson 01 (MindData pipelines: augmentation, shards, a pipeline builder for compare_workers)."""
import numpy as np

from ..exercises import Incorrect, exercise, expect, expect_type

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


def _first_batch(pipeline, what):
    try:
        return next(pipeline.create_tuple_iterator(num_epochs=1, output_numpy=True))
    except Exception as error:  # noqa: BLE001 - show the learner what failed
        raise Incorrect(f"{what} fails when iterated: {type(error).__name__}: "
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


@exercise("01.1", "Seed 001's training chain with vision.RandomRotation(10) first, shuffled, batches of 32 "
                  "(drop the partial one): give the pipeline.")
def check_augmented_pipeline(answer):
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision

    from ..data import create_mnist_dataset

    expect_type(answer, ds.Dataset, "Your answer (the pipeline object)")
    ops = _image_operations(answer)
    kinds = [type(op).__name__ for op in ops]
    rotations = [i for i, op in enumerate(ops) if isinstance(op, vision.RandomRotation)]
    expect(rotations, "No vision.RandomRotation is mapped on the 'image' column. Add vision.RandomRotation(10) to "
                      "the image operations of the map.")
    rotation = ops[rotations[0]]
    expect(list(rotation.degrees) == [-10, 10],
           f"Your rotation draws angles from {list(rotation.degrees)} degrees; RandomRotation(10) means up to "
           f"10 degrees either way.")
    expect("Resize" in kinds, "The image operations have no Resize: keep seed 001's chain (Resize to 32×32, "
                              "two Rescale, HWC2CHW) after the rotation.")
    expect(rotations[0] < kinds.index("Resize"),
           "Put RandomRotation first, before Resize: it expects an (H, W, C) image and fills the corners it "
           "uncovers with 0, which is the black background only before Rescale/normalisation.")
    expect(_shuffles(answer), "A training pipeline shuffles: add .shuffle(...) (or shuffle=True in the source).")
    truth_steps = create_mnist_dataset(batch_size=32, train=True).get_dataset_size()
    steps = answer.get_dataset_size()
    if steps == truth_steps + 1:
        raise Incorrect(f"{steps} steps per epoch: one too many. Training drops the last partial batch "
                        f"(drop_remainder=True).")
    expect(steps == truth_steps, f"Your pipeline yields {steps} rows per epoch. A training pipeline batches by 32 "
                                 f"and drops the last partial batch; augmentation adds no samples.")
    batch = _first_batch(answer, "Your pipeline")
    expect(len(batch) == 2, f"Your pipeline has the columns {answer.get_col_names()}; keep just image and label.")
    images, labels = batch
    expect(images.shape == (32, 1, 32, 32) and images.dtype == np.float32,
           f"A batch of images should be float32 of shape (32, 1, 32, 32); yours is {images.dtype} {images.shape}.")
    expect(labels.dtype == np.int32, f"The labels should be int32 (TypeCast), yours are {labels.dtype}.")
    background = -0.1307 / 0.3081
    expect(abs(float(images.min()) - background) < 1e-3,
           "The pixel values are not normalised like seed 001's chain: the black background should become "
           "(0 - 0.1307) / 0.3081 after the two Rescale steps.")


@exercise("01.2", "MindDataset(..., num_shards=4, shard_id=k) on the digits: (list of the 4 shard sizes, "
                  "number of images on more than one shard).")
def check_four_shards(answer):
    from collections import Counter

    from ..data import create_mnist_dataset
    from ..pipeline_stats import sample_fingerprints

    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           "Answer with a pair: (a list with the size of each shard, the number of images seen by more than "
           "one shard).")
    sizes, shared = answer
    expect(isinstance(sizes, (list, tuple)) and all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                                   for s in sizes),
           f"The first item should be a list of ints (one size per shard), got {sizes!r}.")
    expect(len(sizes) == NUM_SHARDS_01_2, f"You gave {len(sizes)} shard sizes; there are {NUM_SHARDS_01_2} shards.")
    expect_type(shared, (int, np.integer), "The number of images on more than one shard")
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
                            "expected_steps(1437, 1, num_shards=4), then check with sample_fingerprints.")
        raise Incorrect("The shard sizes are not right. Predict them with expected_steps(1437, 1, num_shards=4), "
                        "then measure: len(sample_fingerprints(shard k)).")
    if int(shared) != truth_shared:
        direction = "too many" if shared > truth_shared else "too few"
        raise Incorrect(f"The shard sizes are right, but {shared} is {direction} images on more than one shard. "
                        f"The shared images are the padding: how many samples beyond the 1,437 do 4 equal shards "
                        f"hold?")


@exercise("01.3", "A function build(num_parallel_workers) giving the ImageFolder training pipeline at image_size=64, "
                  "batch 32, with that many workers (for compare_workers).")
def check_worker_builder(answer):
    import mindspore.dataset as ds

    from ..data import default_num_workers

    expect(callable(answer) and not isinstance(answer, ds.Dataset),
           f"Answer with a function of num_parallel_workers that builds the pipeline (like the lambdas passed to "
           f"compare_workers in section 9), not a {type(answer).__name__}.")
    for workers in sorted({1, min(2, default_num_workers())}):
        try:
            pipeline = answer(num_parallel_workers=workers)
        except TypeError as error:
            raise Incorrect(f"compare_workers calls build_dataset(num_parallel_workers=w); your function fails on "
                            f"that: TypeError: {str(error).splitlines()[0]}") from None
        expect_type(pipeline, ds.Dataset, "What your function returns")
        decode_maps = [node for node in _nodes_source_first(pipeline) if isinstance(node, ds.MapDataset)
                       and any(type(op).__name__ == "Decode" for op in _flat_operations(node.operations))]
        expect(decode_maps, "Your pipeline has no map with vision.Decode: build the ImageFolder chain "
                            "(create_imagefolder_dataset does it for you).")
        used = decode_maps[0].num_parallel_workers or ds.config.get_num_parallel_workers()
        expect(used == workers, f"Called with num_parallel_workers={workers}, your pipeline decodes with {used} "
                                f"worker(s): pass the argument on, or compare_workers compares nothing.")
        images, _ = _first_batch(pipeline, "The pipeline your function builds")
        expect(images.shape == (32, 3, 64, 64),
               f"A batch should have shape (32, 3, 64, 64) (batch 32, image_size=64); yours is {images.shape}.")
