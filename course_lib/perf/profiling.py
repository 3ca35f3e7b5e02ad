"""Profile a few training or inference steps on CPU with ``mindspore.profiler`` and read the op-time table.

MindSpore 2.10 keeps the ``mindspore.Profiler`` of the migration guide's ResNet-50 example but logs that it "will be
deprecated" in favour of ``mindspore.profiler.profile``; both work on CPU (measured in lesson 09). The CPU results
land in ``<output_dir>/<host>_<pid>_<time>_ascend_ms/FRAMEWORK/cpu_op_type_info_0.csv`` (one row per op type).
"""
import contextlib
import csv
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from course_lib.i18n import _
from course_lib.paths import relative
from course_lib.validation import check_int, is_int

__all__ = ["OpTime", "profile_steps", "op_time_table", "format_op_table", "PROFILE_SUFFIX", "OP_TYPE_FILE",
           "LayerFlops", "count_flops", "TRAINING_FLOPS_FACTOR"]

#: Every profiling run writes one folder whose name ends like this.
PROFILE_SUFFIX = "_ascend_ms"
#: Per-op-type totals of the CPU profiler, relative to a result folder.
OP_TYPE_FILE = Path("FRAMEWORK") / "cpu_op_type_info_0.csv"
#: What the profiler prints while it parses (its progress bar and absolute paths) goes here, in output_dir.
CONSOLE_LOG = "profiler_console.log"


@dataclass(frozen=True)
class OpTime:
    """Time spent in one op type over the profiled steps."""

    op_type: str
    calls: int
    total_ms: float
    avg_ms: float
    share: float  # fraction of all op time, 0..1


@contextlib.contextmanager
def _console_to(path: Path):
    """Send stdout/stderr (Python objects and file descriptors 1, 2, used by child processes) into ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "a") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            log.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _wait(result):
    """Block until the Tensors a step returned are computed (``ms.runtime.synchronize`` is a no-op on CPU)."""
    for item in result if isinstance(result, (tuple, list)) else (result,):
        if hasattr(item, "asnumpy"):
            item.asnumpy()


def profile_steps(step, num_steps, output_dir, warmup_steps=1) -> Path:
    """Call ``step()`` ``warmup_steps`` times (compilation, not profiled), then ``num_steps`` times under the
    CPU profiler; parse the data and return the new result folder inside ``output_dir``.

    ``step`` should return its output Tensor(s) (e.g. the loss): they are read back after each call, so the
    asynchronously launched ops of a step are finished (and counted) before the next step or the end.

    Earlier ``*_ascend_ms`` result folders in ``output_dir`` are removed first, so it holds one profile.
    """
    if not callable(step):
        raise TypeError(_("step must be a function that runs one step (no arguments), got {step_type}. Fix: e.g. "
                          "step = lambda: train_step(images, labels).").format(step_type=type(step).__name__))
    num_steps = check_int("num_steps", num_steps, 1, fix=_("a few steps are enough, e.g. num_steps=5"))
    warmup_steps = check_int("warmup_steps", warmup_steps, 0, fix=_("e.g. warmup_steps=2"))
    if not isinstance(output_dir, (str, os.PathLike)):
        raise TypeError(_("output_dir must be a folder path, got {output_dir!r}. Fix: e.g. "
                          "course_lib.paths.lesson_dir('09') / 'profiler'.").format(output_dir=output_dir))
    from mindspore.profiler import ProfilerActivity, profile, tensorboard_trace_handler

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    for old in output_dir.glob(f"*{PROFILE_SUFFIX}"):
        shutil.rmtree(old)
    (output_dir / CONSOLE_LOG).unlink(missing_ok=True)

    # PyNative launches ops asynchronously: wait for the warm-up ops before profiling starts, and for the
    # profiled ones before it stops, so the table counts exactly num_steps steps.
    for _step in range(warmup_steps):
        _wait(step())
    with _console_to(output_dir / CONSOLE_LOG):
        with profile(activities=[ProfilerActivity.CPU],
                     on_trace_ready=tensorboard_trace_handler(dir_name=str(output_dir))):
            for _step in range(num_steps):
                _wait(step())
    results = sorted(output_dir.glob(f"*{PROFILE_SUFFIX}"))
    if len(results) != 1 or not (results[0] / OP_TYPE_FILE).is_file():
        raise RuntimeError(_("the profiler wrote no op table under {output_dir} (found {found}). "
                             "See {console_log} for what it printed.").format(
                                 output_dir=relative(output_dir), found=[p.name for p in results],
                                 console_log=relative(output_dir / CONSOLE_LOG)))
    return results[0]


def op_time_table(result_dir, top=10) -> list:
    """The ``top`` op types by total time from a profiler result folder, slowest first, as ``OpTime`` rows."""
    top = check_int("top", top, 1, fix=_("e.g. top=10"))
    if not isinstance(result_dir, (str, os.PathLike)):
        raise TypeError(_("result_dir must be a folder path, got {result_dir!r}. Fix: pass what profile_steps "
                          "returned.").format(result_dir=result_dir))
    table = Path(result_dir) / OP_TYPE_FILE
    if not table.is_file():
        raise FileNotFoundError(_("{table} does not exist: {result_dir} is not a finished CPU profile. Fix: pass "
                                  "the *{profile_suffix} folder that profile_steps returned.").format(
                                      table=relative(table), result_dir=relative(result_dir),
                                      profile_suffix=PROFILE_SUFFIX))
    rows = []
    with open(table, newline="") as file:
        for record in csv.DictReader(file):
            rows.append(OpTime(op_type=record["op_type"], calls=int(record["type_occurrences"]),
                               total_ms=float(record["total_compute_time"]), avg_ms=float(record["avg_time(ms)"]),
                               share=float(record["percent"])))
    rows.sort(key=lambda row: (-row.total_ms, row.op_type))
    return rows[:int(top)]


def format_op_table(rows) -> str:
    """A fixed-width text table of ``OpTime`` rows (op type, calls, total ms, average ms, share of op time)."""
    lines = [f"{'op type':<36} {'calls':>6} {'total ms':>10} {'avg ms':>9} {'share':>7}"]
    for row in rows:
        if not isinstance(row, OpTime):
            raise TypeError(_("rows must be OpTime entries from op_time_table, got {row_type}.").format(
                row_type=type(row).__name__))
        lines.append(f"{row.op_type:<36} {row.calls:>6} {row.total_ms:>10.2f} {row.avg_ms:>9.3f} "
                     f"{row.share:>7.1%}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ FLOP counting
#: Convention of the roofline numbers: a training step (forward, backward for activations and weights, update)
#: costs about 3x the forward pass's FLOPs (the two backward matrix products each cost as much as the forward one).
TRAINING_FLOPS_FACTOR = 3


@dataclass(frozen=True)
class LayerFlops:
    """Multiply-accumulates of one ``nn.Conv2d`` or ``nn.Dense`` call for ONE input sample."""

    name: str
    kind: str  # "conv2d" or "dense"
    output_shape: tuple  # without the batch dimension
    macs: int

    @property
    def flops(self) -> int:
        return 2 * self.macs  # one multiply-accumulate = 2 floating-point operations


def count_flops(net, input_shape) -> dict:
    """Forward FLOPs per sample of ``net`` counted from its ``nn.Conv2d`` and ``nn.Dense`` layers.

    ``input_shape`` is one sample's shape, e.g. ``(3, 224, 224)``. The network runs once on zeros (batch 1) in
    PyNative mode with forward hooks that read each layer's output shape; the mode is restored afterwards.
    Convention: a multiply-accumulate is 2 FLOPs; a convolution costs ``output elements x (in_channels / group)
    x kernel height x kernel width`` MACs, a dense layer ``outputs x in_channels``. Biases, batch norm,
    activations, pooling and the loss are not counted (they are a few % of a ResNet's FLOPs).
    Returns ``{"layers": [LayerFlops, ...], "macs": int, "forward_flops": int,
    "training_flops": int}`` (training = ``TRAINING_FLOPS_FACTOR`` x forward).
    """
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    if not isinstance(net, nn.Cell):
        raise TypeError(_("net must be a mindspore.nn.Cell, got {net_type}.").format(net_type=type(net).__name__))
    if not isinstance(input_shape, (tuple, list)) or not all(is_int(n) for n in input_shape):
        raise TypeError(_("input_shape must be one sample's shape as positive ints, e.g. (3, 224, 224), got "
                          "{input_shape!r}.").format(input_shape=input_shape))
    shape = tuple(int(n) for n in input_shape)
    if not shape or not all(n > 0 for n in shape):
        raise ValueError(_("input_shape must be one sample's shape as positive ints, e.g. (3, 224, 224), got "
                           "{input_shape!r}.").format(input_shape=input_shape))
    layers, handles = [], []

    def hook(name, kind):
        def record(cell, args, output):
            out_shape = tuple(int(n) for n in output.shape[1:])
            out_elements = int(np.prod(out_shape))
            if kind == "conv2d":
                kernel_h, kernel_w = cell.kernel_size
                macs = out_elements * (cell.in_channels // cell.group) * kernel_h * kernel_w
            else:
                macs = out_elements * cell.in_channels
            layers.append(LayerFlops(name, kind, out_shape, int(macs)))
        return record

    for name, cell in net.cells_and_names():
        if isinstance(cell, nn.Conv2d):
            handles.append(cell.register_forward_hook(hook(name, "conv2d")))
        elif isinstance(cell, nn.Dense):
            handles.append(cell.register_forward_hook(hook(name, "dense")))
    mode, training = ms.get_context("mode"), net.training
    try:
        ms.set_context(mode=ms.PYNATIVE_MODE)
        net.set_train(False)
        net(ms.Tensor(np.zeros((1, *shape), np.float32)))
    finally:
        for handle in handles:
            handle.remove()
        net.set_train(training)
        ms.set_context(mode=mode)
    macs = sum(layer.macs for layer in layers)
    return {"layers": layers, "macs": macs, "forward_flops": 2 * macs,
            "training_flops": TRAINING_FLOPS_FACTOR * 2 * macs}
