"""Facts about a MindData pipeline that you can measure or predict: samples per second, steps per epoch,
which samples each shard sees, and what its errors actually say (lesson 01).
"""
import hashlib
import math
import numbers
import time
from dataclasses import dataclass

import mindspore.dataset as ds
import numpy as np

from course_lib.i18n import _
from course_lib.paths import scrub_paths
from course_lib.validation import check_bool, check_choice, check_count, check_type, wrong_type

__all__ = ["Throughput", "measure_throughput", "compare_workers", "expected_steps", "is_batched",
           "sample_fingerprints", "pipeline_error_lines", "pipeline_error_message"]

_PIPELINE_SECTION = "Dataset Pipeline Error Message"


def _check_dataset(dataset):
    check_type("dataset", dataset, ds.Dataset, _("a mindspore.dataset pipeline (e.g. ds.MnistDataset(...).batch(32))"),
               _("pass the pipeline object itself, not an iterator or a list of batches"))


def is_batched(dataset) -> bool:
    """Whether the pipeline ends in (or contains) a ``batch`` step, so each row holds several samples."""
    _check_dataset(dataset)
    pending = [dataset]
    while pending:
        node = pending.pop()
        if isinstance(node, ds.BatchDataset):
            return True
        pending.extend(node.children)
    return False


@dataclass(frozen=True)
class Throughput:
    """What one pass over a pipeline delivered: ``samples`` in ``batches`` rows within ``seconds``."""

    samples: int
    batches: int
    seconds: float

    @property
    def samples_per_second(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else math.inf

    def __str__(self) -> str:
        return (f"{self.samples:,} samples in {self.seconds:.2f} s = {self.samples_per_second:,.0f} samples/s "
                f"({self.batches} batches)")


def measure_throughput(dataset, max_batches=None, warmup_batches=1, column=0) -> Throughput:
    """Iterate ``dataset`` once without a model and time how fast it delivers samples (numpy output).

    The first ``warmup_batches`` rows are read but not timed (they include starting the worker threads and
    filling the prefetch queues). ``max_batches`` stops early (None = the whole epoch). Samples are counted
    from the leading axis of ``column`` (index or name) if the pipeline is batched, else one per row.
    """
    _check_dataset(dataset)
    if max_batches is not None:
        max_batches = check_count("max_batches", max_batches, 1, _("pass None for the whole epoch, or e.g. 20"))
    warmup_batches = check_count("warmup_batches", warmup_batches, 0, _("use 0 to time everything, 1 to "
                                                                        "skip start-up"))
    if not isinstance(column, (str, numbers.Integral)) or isinstance(column, bool):
        raise wrong_type("column", column, _("a column index (int) or name (str)"), _("e.g. 'image'"))
    names = dataset.get_col_names()
    if isinstance(column, str):
        check_choice("column", column, names, _("pass one of the pipeline's column names"))
    if not isinstance(column, str) and not 0 <= column < len(names):
        raise ValueError(_("column index {column} is out of range for the columns {names}. Fix: use "
                           "0..{last} or a column name.").format(column=column, names=names, last=len(names) - 1))

    batched = is_batched(dataset)
    if isinstance(column, str):
        iterator = dataset.create_dict_iterator(num_epochs=1, output_numpy=True)
    else:
        iterator = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    samples = batches = 0
    start = None
    for index, row in enumerate(iterator):
        if index == warmup_batches:
            start = time.perf_counter()
        if index >= warmup_batches:
            samples += len(row[column]) if batched else 1
            batches += 1
            if max_batches is not None and batches >= max_batches:
                break
    if start is None or batches == 0:
        raise ValueError(_("the pipeline yielded no rows after the {warmup_batches} warm-up batch(es), so nothing "
                           "was timed. Fix: lower warmup_batches, or use a pipeline with more batches (smaller "
                           "batch_size).").format(warmup_batches=warmup_batches))
    seconds = time.perf_counter() - start
    iterator.stop()
    return Throughput(samples=samples, batches=batches, seconds=seconds)


def compare_workers(build_dataset, workers=(1, 2), repeats=2, **measure_kwargs) -> dict:
    """Measure the pipeline ``build_dataset(num_parallel_workers=w)`` for each ``w`` in ``workers``.

    Each setting runs ``repeats`` times, interleaved (1, 2, 1, 2, ...) so that a busy neighbour on a shared
    machine slows all settings alike; the fastest run of each is kept. Returns ``{workers: Throughput}``.
    """
    if not callable(build_dataset):
        raise wrong_type("build_dataset", build_dataset,
                         _("a function taking num_parallel_workers and returning a pipeline"),
                         _("e.g. lambda num_parallel_workers: "
                           "create_mnist_dataset(num_parallel_workers=num_parallel_workers)"))
    workers = tuple(workers)
    if not workers:
        raise ValueError(_("workers is empty. Fix: pass the worker counts to compare, e.g. (1, 2)."))
    for value in workers:
        check_count("each entry of workers", value, 1, _("worker counts are positive ints such as 1 or 2"))
    repeats = check_count("repeats", repeats, 1, _("e.g. repeats=2 (best of two runs)"))
    best = {}
    for _repeat in range(repeats):
        for count in workers:
            result = measure_throughput(build_dataset(num_parallel_workers=count), **measure_kwargs)
            if count not in best or result.samples_per_second > best[count].samples_per_second:
                best[count] = result
    return {count: best[count] for count in workers}


def expected_steps(num_samples, batch_size, drop_remainder=False, repeat_count=1, num_shards=1) -> int:
    """The number of rows ``get_dataset_size()`` reports for ``num_samples`` samples after shard, batch, repeat.

    MindData gives every shard ``ceil(num_samples / num_shards)`` samples (short shards are padded from the
    start of the data, so all ranks run the same number of steps); ``batch`` then makes ``floor`` (dropping the
    last partial batch) or ``ceil`` batches, and ``repeat`` multiplies.
    """
    num_samples = check_count("num_samples", num_samples, 0, _("pass the number of samples in the data set"))
    batch_size = check_count("batch_size", batch_size, 1, _("e.g. 32"))
    repeat_count = check_count("repeat_count", repeat_count, 1, _("e.g. 1 (one pass)"))
    num_shards = check_count("num_shards", num_shards, 1, _("1 for one process, the group size for data parallel"))
    drop_remainder = check_bool("drop_remainder", drop_remainder)
    per_shard = math.ceil(num_samples / num_shards)
    batches = per_shard // batch_size if drop_remainder else math.ceil(per_shard / batch_size)
    return batches * repeat_count


def sample_fingerprints(dataset, column="image") -> list:
    """A short sha1 of each sample's ``column`` bytes, in pipeline order (one per sample, also when batched).

    Use it to check which samples a shard saw, or that two pipelines deliver the same data.
    """
    _check_dataset(dataset)
    names = dataset.get_col_names()
    check_choice("column", column, names, _("pass one of the pipeline's column names"))
    batched = is_batched(dataset)
    prints = []
    for row in dataset.create_dict_iterator(num_epochs=1, output_numpy=True):
        values = row[column] if batched else [row[column]]
        for value in values:
            prints.append(hashlib.sha1(np.ascontiguousarray(value).tobytes(), usedforsecurity=False).hexdigest()[:16])
    return prints


def pipeline_error_lines(text: str) -> list | None:
    """The lines under the "Dataset Pipeline Error Message" heading of a MindData error text, stripped, up to the
    C++ call stack or the next ``----`` rule; ``None`` if the text has no such heading. The one parser of that
    text: ``pipeline_error_message`` and the scripts' ``course_lib.run.cli.describe_pipeline_error`` use it."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("- " + _PIPELINE_SECTION)), None)
    if start is None:
        return None
    body = []
    for line in lines[start + 1:]:
        if "C++ Call Stack" in line or (body and line.startswith("----")):
            break
        if line.strip() and not line.startswith("----"):
            body.append(line.strip())
    return body


def pipeline_error_message(error: BaseException, max_lines: int = 3) -> str:
    """``"TypeName: message"`` for a MindData error, taking the lines under its "Dataset Pipeline Error Message"
    heading (the first line only says "Exception thrown from dataset pipeline"); local paths are scrubbed.
    """
    body = pipeline_error_lines(str(error))
    if body is None:
        body = [line for line in str(error).splitlines() if line.strip()][:1]
    body = [scrub_paths(line) for line in body]
    if len(body) > max_lines:
        body = body[:max_lines] + ["…"]
    return f"{type(error).__name__}: " + "\n    ".join(body)
