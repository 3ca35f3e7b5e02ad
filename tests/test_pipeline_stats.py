import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import math

import mindspore.dataset as ds
import numpy as np
import pytest

from course_lib.data.stats import (
    Throughput,
    compare_workers,
    expected_steps,
    is_batched,
    measure_throughput,
    sample_fingerprints,
)


def numbers(count, shuffle=False, **kwargs):
    """A pipeline of ``count`` distinct 2x2 float 'images' and int labels."""
    images = np.arange(count * 4, dtype=np.float32).reshape(count, 2, 2)
    return ds.NumpySlicesDataset({"image": images, "label": np.arange(count, dtype=np.int32)},
                                 shuffle=shuffle, **kwargs)


@pytest.mark.parametrize("count,batch,drop,repeat,shards", [
    (10, 3, False, 1, 1), (10, 3, True, 1, 1), (10, 3, True, 2, 1), (10, 4, False, 3, 1),
    (10, 3, False, 1, 2), (9, 2, True, 1, 2), (7, 2, False, 2, 3), (5, 8, True, 1, 1),
])
def test_expected_steps_matches_mindata(count, batch, drop, repeat, shards):
    sizes = []
    for shard in range(shards):
        kwargs = {"num_shards": shards, "shard_id": shard} if shards > 1 else {}
        sizes.append(numbers(count, **kwargs).batch(batch, drop_remainder=drop).repeat(repeat).get_dataset_size())
    assert sizes == [expected_steps(count, batch, drop, repeat, shards)] * shards


@pytest.mark.parametrize("args,error,message", [
    ((10, 0), ValueError, "batch_size must be an integer >= 1, got 0"),
    ((-1, 2), ValueError, "num_samples must be an integer >= 0"),
    ((10, 2.0), TypeError, r"batch_size must be an integer \(>= 1\), got 2.0 \(float\)"),
    ((10, 2, "yes"), TypeError, "drop_remainder must be True or False"),
    ((10, 2, False, 0), ValueError, "repeat_count must be an integer >= 1"),
    ((10, 2, False, 1, 0), ValueError, "num_shards must be an integer >= 1"),
])
def test_expected_steps_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        expected_steps(*args)


def test_is_batched_finds_batch_below_repeat_and_map():
    assert is_batched(numbers(6).batch(2).repeat(2).map(lambda x: x, input_columns="label"))
    assert not is_batched(numbers(6).repeat(2))
    with pytest.raises(TypeError, match=r"must be a mindspore.dataset pipeline .*got \[1, 2, 3\] \(list\)"):
        is_batched([1, 2, 3])


def test_measure_throughput_counts_samples_after_warmup():
    result = measure_throughput(numbers(20).batch(4), warmup_batches=1)
    assert (result.samples, result.batches) == (16, 4)
    assert result.seconds > 0 and math.isclose(result.samples_per_second, 16 / result.seconds)
    assert measure_throughput(numbers(20).batch(4), warmup_batches=0, max_batches=2).samples == 8
    last_partial = measure_throughput(numbers(10).batch(4), warmup_batches=0, column="label")
    assert (last_partial.samples, last_partial.batches) == (10, 3)
    unbatched = measure_throughput(numbers(7), warmup_batches=2)
    assert (unbatched.samples, unbatched.batches) == (5, 5)


def test_throughput_text():
    text = str(Throughput(samples=2000, batches=10, seconds=0.5))
    assert text == "2,000 samples in 0.50 s = 4,000 samples/s (10 batches)"


@pytest.mark.parametrize("kwargs,message", [
    ({"warmup_batches": 5}, "yielded no rows after the 5 warm-up batch"),
    ({"column": "pixels"}, r"column must be one of \('image', 'label'\), got 'pixels'"),
    ({"column": 2}, "column index 2 is out of range"),
    ({"max_batches": 0}, "max_batches must be an integer >= 1"),
    ({"warmup_batches": -1}, "warmup_batches must be an integer >= 0"),
])
def test_measure_throughput_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        measure_throughput(numbers(8).batch(2), **kwargs)


def test_measure_throughput_needs_a_pipeline():
    with pytest.raises(TypeError, match="not an iterator"):
        measure_throughput(iter([np.zeros(3)]))
    with pytest.raises(TypeError, match=r"column must be a column index \(int\) or name \(str\), got 1.5"):
        measure_throughput(numbers(8).batch(2), column=1.5)


def test_compare_workers_builds_each_setting_and_keeps_order():
    built = []

    def build(num_parallel_workers):
        built.append(num_parallel_workers)
        return numbers(12, num_parallel_workers=num_parallel_workers).batch(3)

    results = compare_workers(build, workers=(2, 1), repeats=2, warmup_batches=0)
    assert list(results) == [2, 1] and built == [2, 1, 2, 1]
    assert all(isinstance(r, Throughput) and r.samples == 12 for r in results.values())


@pytest.mark.parametrize("args,kwargs,error,message", [
    (("not callable",), {}, TypeError, "build_dataset must be a function"),
    ((lambda num_parallel_workers: None,), {"workers": ()}, ValueError, "workers is empty"),
    ((lambda num_parallel_workers: None,), {"workers": (1, 0)}, ValueError,
     "each entry of workers must be an integer >= 1"),
    ((lambda num_parallel_workers: None,), {"repeats": 0}, ValueError, "repeats must be an integer >= 1"),
])
def test_compare_workers_rejects_bad_arguments(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        compare_workers(*args, **kwargs)


def test_fingerprints_show_shards_partition_or_pad():
    everything = sample_fingerprints(numbers(10))
    assert len(set(everything)) == 10
    assert sample_fingerprints(numbers(10).batch(4)) == everything  # one fingerprint per sample when batched
    halves = [sample_fingerprints(numbers(10, num_shards=2, shard_id=s)) for s in range(2)]
    assert not set(halves[0]) & set(halves[1]) and set(halves[0]) | set(halves[1]) == set(everything)
    # 5 samples on 2 shards: each shard gets ceil(5/2) = 3, the short one is padded with the first sample
    odd = [sample_fingerprints(numbers(5, num_shards=2, shard_id=s)) for s in range(2)]
    assert [len(o) for o in odd] == [3, 3] and len(set(odd[0]) | set(odd[1])) == 5
    assert set(odd[0]) & set(odd[1]) == {sample_fingerprints(numbers(5))[0]}
    with pytest.raises(ValueError, match=r"column must be one of \('image', 'label'\), got 'pixels'"):
        sample_fingerprints(numbers(3), column="pixels")


def test_pipeline_error_message_reads_the_useful_section(capsys):
    from course_lib.data.stats import pipeline_error_message
    from course_lib.lab.lesson import show_pipeline_error

    ragged = ds.NumpySlicesDataset({"n": np.arange(1, 4)}, shuffle=False).map(lambda n: np.zeros(n), input_columns="n")
    with show_pipeline_error():
        next(ragged.batch(3).create_dict_iterator())
    printed = capsys.readouterr().out
    assert printed.startswith("RuntimeError: [ERROR] Cannot batch tensors with different shapes")
    assert "Exception thrown from dataset pipeline" not in printed and "C++ Call Stack" not in printed
    fake = RuntimeError("Exception thrown.\n\n----\n- Dataset Pipeline Error Message: \n----\n"
                        "[ERROR] Invalid file /work/main/outputs/01/x.mindrecord\n\n----\n"
                        "- C++ Call Stack:\n----\nx.cc")
    assert pipeline_error_message(fake) == "RuntimeError: [ERROR] Invalid file …/x.mindrecord"
    assert pipeline_error_message(ValueError("plain message\nsecond")) == "ValueError: plain message"
    with pytest.raises(AssertionError, match="expected to raise"):
        with show_pipeline_error():
            pass


def test_the_scripts_read_mindata_errors_with_the_same_parser(monkeypatch):
    import course_lib.data.stats as stats
    from course_lib.run.cli import describe_pipeline_error

    text = ("Exception thrown from dataset pipeline. Refer to 'Dataset Pipeline Error Message'.\n----\n"
            "- Dataset Pipeline Error Message: \n----\n[ERROR] map operation: [Resize] failed.\nBad size.\n----\n"
            "- C++ Call Stack: (For framework developers) \n----\nimage_utils.cc(1).\n")
    assert stats.pipeline_error_lines(text) == ["[ERROR] map operation: [Resize] failed.", "Bad size."]
    assert stats.pipeline_error_lines("ValueError: plain message") is None
    monkeypatch.setattr(stats, "pipeline_error_lines", lambda _: ["[ERROR] read by the one parser"])
    assert "Resize step: read by the one parser" in describe_pipeline_error(text)
    assert stats.pipeline_error_message(RuntimeError(text)) == "RuntimeError: [ERROR] read by the one parser"
