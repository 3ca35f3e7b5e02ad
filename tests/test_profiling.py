import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

from course_lib.perf.profiling import (
    OP_TYPE_FILE,
    PROFILE_SUFFIX,
    OpTime,
    format_op_table,
    op_time_table,
    profile_steps,
)


def small_step():
    ms.set_seed(1)
    net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 4)])
    x = Tensor(np.ones((4, 8), np.float32))
    return lambda: net(x)


def test_profile_counts_exactly_the_profiled_steps_and_replaces_old_results(tmp_path, capfd):
    step = small_step()
    first = profile_steps(step, 3, tmp_path, warmup_steps=1)
    assert first.name.endswith(PROFILE_SUFFIX) and (first / OP_TYPE_FILE).is_file()
    rows = op_time_table(first)
    calls = {row.op_type: row.calls for row in rows}
    assert calls["MatMul"] == 6 and calls["ReLU"] == 3  # 2 Dense and 1 ReLU per step, 3 steps
    assert [r.total_ms for r in rows] == sorted((r.total_ms for r in rows), reverse=True)
    assert 0.99 < sum(r.share for r in rows) < 1.01
    out, err = capfd.readouterr()
    assert "Parsing" not in out + err and "ascend_ms" not in out + err  # the profiler's chatter went to the log

    second = profile_steps(step, 2, tmp_path, warmup_steps=0)
    assert sorted(p.name for p in tmp_path.glob(f"*{PROFILE_SUFFIX}")) == [second.name]
    assert {r.op_type: r.calls for r in op_time_table(second)}["MatMul"] == 4
    assert len(op_time_table(second, top=1)) == 1


def test_format_op_table():
    rows = [OpTime("MatMul", 6, 1.5, 0.25, 0.75), OpTime("ReLU", 3, 0.5, 0.1667, 0.25)]
    lines = format_op_table(rows).splitlines()
    assert lines[0].split() == ["op", "type", "calls", "total", "ms", "avg", "ms", "share"]
    assert lines[1].split() == ["MatMul", "6", "1.50", "0.250", "75.0%"]
    with pytest.raises(TypeError, match="rows must be OpTime entries"):
        format_op_table([("MatMul", 6)])


@pytest.mark.parametrize("args,error,message", [
    (("not callable", 3), TypeError, "step must be a function"),
    ((lambda: None, 0), ValueError, "num_steps must be an integer >= 1, got 0"),
    ((lambda: None, 2.5), TypeError, r"num_steps must be an integer \(>= 1\), got 2\.5"),
    ((lambda: None, 2, 42), TypeError, "output_dir must be a folder path"),
])
def test_profile_steps_rejects_bad_arguments(tmp_path, args, error, message):
    if len(args) == 2:
        args = (*args, tmp_path)
    with pytest.raises(error, match=message):
        profile_steps(*args)


def test_op_time_table_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a finished CPU profile"):
        op_time_table(tmp_path)
    with pytest.raises(ValueError, match="top must be an integer >= 1, got 0"):
        op_time_table(tmp_path, top=0)
