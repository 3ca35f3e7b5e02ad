"""Exercises of lesson 01 (MindData pipelines: augmentation, shards, a pipeline builder for compare_workers)."""
import numpy as np

from course_lib.exercises import Incorrect, exercise, expect, expect_type, too_many_or_few
from course_lib.i18n import N_, _

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
        raise Incorrect(_("{what} fails when iterated: {error_type}: {message}")
                        .format(what=what, error_type=type(error).__name__,
                                message=str(error).strip().splitlines()[0])) from None


def _shuffles(pipeline) -> bool:
    import mindspore.dataset as ds

    for node in _nodes_source_first(pipeline):
        if isinstance(node, ds.ShuffleDataset):
            return True
        sampler = getattr(node, "sampler", None)  # a source's own shuffle=True is a RandomSampler
        if isinstance(sampler, ds.RandomSampler) or str(getattr(sampler, "shuffle", "")) == "Shuffle.GLOBAL":
            return True
    return False


@exercise("01.1", N_("The lesson's MNIST training chain with vision.RandomRotation(10) first, shuffled, batches of 32 "
                     "(drop the partial one): give the pipeline."),
           difficulty=1, minutes=10,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("Tm8uIFJhbmRvbVJvdGF0aW9uIGNoYW5nZXMgdGhlIHBpeGVscywgbm90IHRoZSBudW1iZXIgb2YgaW1hZ2VzOiBhZnRlciBi"
                   "YXRjaCgzMiwgZHJvcF9yZW1haW5kZXI9VHJ1ZSkgdGhlcmUgYXJlIHN0aWxsIDE0MzcgLy8gMzIgPSA0NCBiYXRjaGVzIHBl"
                   "ciBlcG9jaC4gUmFuZG9tIGF1Z21lbnRhdGlvbiBnaXZlcyBhIGRpZmZlcmVudCB2ZXJzaW9uIG9mIGVhY2ggaW1hZ2UgYXQg"
                   "ZXZlcnkgZXBvY2gsIG5vdCBtb3JlIGltYWdlczsgc2h1ZmZsZSBkb2VzIG5vdCBjaGFuZ2UgdGhlIGNvdW50IGVpdGhlci4="))
def check_augmented_pipeline(answer):
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision

    from course_lib.data.datasets import create_mnist_dataset

    expect_type(answer, ds.Dataset, _("Your answer (the pipeline object)"))
    ops = _image_operations(answer)
    kinds = [type(op).__name__ for op in ops]
    rotations = [i for i, op in enumerate(ops) if isinstance(op, vision.RandomRotation)]
    expect(rotations, _("No vision.RandomRotation is mapped on the 'image' column. Add vision.RandomRotation(10) to "
                        "the image operations of the map."))
    rotation = ops[rotations[0]]
    expect(list(rotation.degrees) == [-10, 10],
           _("Your rotation draws angles from {degrees} degrees; RandomRotation(10) means up to 10 degrees either "
             "way.").format(degrees=list(rotation.degrees)))
    expect("Resize" in kinds, _("The image operations have no Resize: keep the lesson's chain (Resize to 32×32, two "
                                "Rescale, HWC2CHW) after the rotation."))
    expect(rotations[0] < kinds.index("Resize"),
           _("Put RandomRotation first, before Resize: it expects an (H, W, C) image and fills the corners it "
             "uncovers with 0, which is the black background only before Rescale/normalisation."))
    expect(_shuffles(answer), _("A training pipeline shuffles: add .shuffle(...) (or shuffle=True in the source)."))
    truth_steps = create_mnist_dataset(batch_size=32, train=True).get_dataset_size()
    steps = answer.get_dataset_size()
    if steps == truth_steps + 1:
        raise Incorrect(_("{steps} steps per epoch: one too many. Training drops the last partial batch "
                          "(drop_remainder=True).").format(steps=steps))
    expect(steps == truth_steps, _("Your pipeline yields {steps} rows per epoch. A training pipeline batches by 32 "
                                   "and drops the last partial batch; augmentation adds no samples.")
                                 .format(steps=steps))
    batch = _first_batch(answer, _("Your pipeline"))
    expect(len(batch) == 2, _("Your pipeline has the columns {columns}; keep just image and label.")
                            .format(columns=answer.get_col_names()))
    images, labels = batch
    expect(images.shape == (32, 1, 32, 32) and images.dtype == np.float32,
           _("A batch of images should be float32 of shape (32, 1, 32, 32); yours is {dtype} {shape}.")
           .format(dtype=images.dtype, shape=images.shape))
    expect(labels.dtype == np.int32, _("The labels should be int32 (TypeCast), yours are {dtype}.")
                                     .format(dtype=labels.dtype))
    background = -0.1307 / 0.3081
    expect(abs(float(images.min()) - background) < 1e-3,
           _("The pixel values are not normalised like the lesson's chain: the black background should become (0 - "
             "0.1307) / 0.3081 after the two Rescale steps."))


@exercise("01.2", N_("MindDataset(..., num_shards=4, shard_id=k) on the digits: (list of the 4 shard sizes, "
                     "number of images on more than one shard)."),
           difficulty=2, minutes=10,
           # Translators: base64 text. Read: python -m course_lib.exercises reveal MSGID. Write: ... hide "TEXT"
           why=N_("RXZlcnkgc2hhcmQgZ2V0cyB0aGUgc2FtZSBudW1iZXIgb2Ygc2FtcGxlcywgY2VpbCgxNDM3IC8gNCkgPSAzNjAsIHNvIHRo"
                   "YXQgZXZlcnkgcHJvY2VzcyBydW5zIHRoZSBzYW1lIG51bWJlciBvZiBzdGVwcy4gNCB4IDM2MCA9IDE0NDAgPSAxNDM3ICsg"
                   "MzogdGhlIHNob3J0IHNoYXJkcyBhcmUgcGFkZGVkIHdpdGggMyBzYW1wbGVzIGZyb20gdGhlIHN0YXJ0IG9mIHRoZSBmaWxl"
                   "LCBhbmQgdGhlc2UgMyBpbWFnZXMgbGFuZCBvbiB0d28gc2hhcmRzLg=="))
def check_four_shards(answer):
    from collections import Counter

    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.data.stats import sample_fingerprints

    expect(isinstance(answer, (tuple, list)) and len(answer) == 2,
           _("Answer with a pair: (a list with the size of each shard, the number of images seen by more than one "
             "shard)."))
    sizes, shared = answer
    expect(isinstance(sizes, (list, tuple)) and all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                                   for s in sizes),
           _("The first item should be a list of ints (one size per shard), got {sizes!r}.").format(sizes=sizes))
    expect(len(sizes) == NUM_SHARDS_01_2, _("You gave {n_sizes} shard sizes; there are {shards} shards.")
                                          .format(n_sizes=len(sizes), shards=NUM_SHARDS_01_2))
    expect_type(shared, (int, np.integer), _("The number of images on more than one shard"))
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
            raise Incorrect(_("Your sizes add up to exactly the number of images, but MindData gives every shard the "
                              "same number of samples (it pads the short shards). Predict with expected_steps(1437, "
                              "1, num_shards=4), then check with sample_fingerprints."))
        raise Incorrect(_("The shard sizes are not right. Predict them with expected_steps(1437, 1, num_shards=4), "
                          "then measure: len(sample_fingerprints(shard k))."))
    if int(shared) != truth_shared:
        raise Incorrect(_("The shard sizes are right, but {shared} is {direction} images on more than one shard. "
                          "The shared images are the padding: how many samples beyond the 1,437 do 4 equal shards "
                          "hold?").format(shared=shared, direction=too_many_or_few(shared, truth_shared)))


@exercise("01.3", N_("A function build(num_parallel_workers) giving the ImageFolder training pipeline at "
                     "image_size=64, batch 32, with that many workers (for compare_workers)."),
           difficulty=1, minutes=10)
def check_worker_builder(answer):
    import mindspore.dataset as ds

    from course_lib.data.datasets import default_num_workers

    expect(callable(answer) and not isinstance(answer, ds.Dataset),
           _("Answer with a function of num_parallel_workers that builds the pipeline (like the lambdas passed to "
             "compare_workers in section 8), not a {kind}.").format(kind=type(answer).__name__))
    for workers in sorted({1, min(2, default_num_workers())}):
        try:
            pipeline = answer(num_parallel_workers=workers)
        except TypeError as error:
            raise Incorrect(_("compare_workers calls build_dataset(num_parallel_workers=w); your function fails on "
                              "that: TypeError: {message}").format(message=str(error).splitlines()[0])) from None
        expect_type(pipeline, ds.Dataset, _("What your function returns"))
        decode_maps = [node for node in _nodes_source_first(pipeline) if isinstance(node, ds.MapDataset)
                       and any(type(op).__name__ == "Decode" for op in _flat_operations(node.operations))]
        expect(decode_maps, _("Your pipeline has no map with vision.Decode: build the ImageFolder chain "
                              "(create_imagefolder_dataset does it for you)."))
        used = decode_maps[0].num_parallel_workers or ds.config.get_num_parallel_workers()
        expect(used == workers, _("Called with num_parallel_workers={workers}, your pipeline decodes with {used} "
                                  "worker(s): pass the argument on, or compare_workers compares nothing.")
                                .format(workers=workers, used=used))
        images, _labels = _first_batch(pipeline, _("The pipeline your function builds"))
        expect(images.shape == (32, 3, 64, 64),
               _("A batch should have shape (32, 3, 64, 64) (batch 32, image_size=64); yours is {shape}.")
               .format(shape=images.shape))
