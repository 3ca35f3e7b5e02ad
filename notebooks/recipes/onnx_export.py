# SPDX-License-Identifier: Apache-2.0
"""Export a network to ONNX with MindSpore 2.10 and run it with onnxruntime (when installed).

What: in MindSpore 2.10 the ONNX exporter is `mindspore.onnx.export(net, example_input, file_name=...,
  input_names=[...], output_names=[...])`; it switches the network to eval mode itself. The older spelling
  `ms.export(net, x, file_name=..., file_format="ONNX")` still exists but logs that it "will be deleted" and,
  on a CPU build with a BatchNorm in the network, fails inside the graph compiler ("out of range ... BatchNorm");
  the script shows that error (or notes that it worked). When `onnxruntime` is installed
  (`pip install onnxruntime`), the script runs the ONNX file and checks that its outputs equal MindSpore's
  eval-mode outputs; without it, it checks that the file is an ONNX model holding the expected operators, and
  says that the numerical comparison was skipped. The export is written beside the target and renamed into
  place, so a failed export never leaves a half-written `.onnx` file.
When to use it: deploying to an ONNX runtime (onnxruntime, TensorRT, OpenVINO, browsers).
Tested with: MindSpore 2.10.0 (CPU); onnxruntime 1.32.0 from PyPI (optional).
Lesson: notebooks/09_inference_and_export.ipynb
"""
import argparse
import os
import shutil
import tempfile

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn


class SmallConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.features = nn.SequentialCell(
            nn.Conv2d(1, 8, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.head = nn.SequentialCell(nn.Flatten(), nn.Dropout(p=0.5), nn.Dense(8 * 4 * 4, 10))

    def construct(self, x):
        return self.head(self.features(x))


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def export_onnx(net, example, path):
    """mindspore.onnx.export to a temporary name in the same folder, then an atomic rename."""
    stem = f"{path[:-len('.onnx')]}.tmp-{os.getpid()}"
    try:
        ms.onnx.export(net, example, file_name=stem, input_names=["image"], output_names=["logits"])
        os.replace(stem + ".onnx", path)
    finally:
        if os.path.exists(stem + ".onnx"):
            os.remove(stem + ".onnx")


def main(require_onnxruntime):
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = SmallConvNet()
    bn = net.features[1]  # non-trivial moving statistics, as after training
    bn.moving_mean.set_data(Tensor(np.linspace(-0.5, 0.5, 8).astype(np.float32)))
    bn.moving_variance.set_data(Tensor(np.linspace(0.5, 2.0, 8).astype(np.float32)))
    x = np.random.RandomState(0).randn(4, 1, 8, 8).astype(np.float32)
    net.set_train(False)
    expected = net(Tensor(x)).asnumpy()

    folder = tempfile.mkdtemp(prefix="recipe-onnx-")
    try:
        path = os.path.join(folder, "small_convnet.onnx")
        export_onnx(net, Tensor(x), path)
        check(sorted(os.listdir(folder)) == ["small_convnet.onnx"], f"export left {os.listdir(folder)}")
        model_bytes = open(path, "rb").read()
        try:
            ms.export(net, Tensor(x), file_name=os.path.join(folder, "old_spelling"), file_format="ONNX")
            old = "ms.export(file_format='ONNX') worked here too"
        except RuntimeError as error:
            old = f"ms.export(file_format='ONNX') fails on this build: {str(error).splitlines()[0][:90]}"
        try:
            import onnxruntime
        except ImportError:
            onnxruntime = None
        if onnxruntime is None:
            check(not require_onnxruntime, "onnxruntime is not installed. Fix: pip install onnxruntime")
            for op in (b"Conv", b"BatchNormalization", b"Relu", b"MaxPool", b"Gemm", b"image", b"logits"):
                check(op in model_bytes, f"the ONNX file has no {op.decode()!r}")
            ran = "onnxruntime not installed: file checked for its operators, outputs not compared"
        else:
            session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            got = session.run(["logits"], {"image": x})[0]
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
            ran = f"onnxruntime {onnxruntime.__version__} output equals MindSpore's (max |diff| " \
                  f"{np.abs(got - expected).max():.1e})"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"mindspore.onnx.export wrote {len(model_bytes)} bytes; {ran}; {old}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--require-onnxruntime", action="store_true",
                        help="fail when onnxruntime is not installed instead of skipping the comparison")
    main(parser.parse_args().require_onnxruntime)
