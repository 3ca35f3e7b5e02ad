"""One benchmark participant: a process that holds one framework in one mode and times what it is asked to.

``run.py`` starts several of these (MindSpore graph mode, graph mode with another oneDNN ISA cap, @ms.jit,
MindSpore PyNative, PyTorch eager) and sends each the same tasks, one repeat at a time, taking turns, so that
a noisy neighbour on a shared machine slows every participant alike. Protocol: one JSON object per line on
stdin (a command), one JSON object per line back (``{"ok": true, ...}`` or ``{"ok": false, "error": ...}``).
Anything the frameworks print goes to stderr, never into the protocol.

Usage (run.py does this): ``python benchmarks/worker.py --framework mindspore --mode graph --threads 2``
"""
import argparse
import gc
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

#: Seconds one repeat of a short step should last at least; steps are grouped until they do.
DEFAULT_TARGET_SECONDS = 0.25
MAX_UNITS_PER_REPEAT = 200
NUM_CLASSES = 10
LEARNING_RATE = 0.01
MOMENTUM = 0.9

#: LeNet-5's parameters (name -> shape), identical in course_lib.models.LeNet5 and TorchLeNet5 below.
LENET_PARAMETER_SHAPES = {
    "conv1.weight": (6, 1, 5, 5), "conv1.bias": (6,),
    "conv2.weight": (16, 6, 5, 5), "conv2.bias": (16,),
    "fc1.weight": (120, 400), "fc1.bias": (120,),
    "fc2.weight": (84, 120), "fc2.bias": (84,),
    "fc3.weight": (10, 84), "fc3.bias": (10,),
}


def lenet_initial_weights(seed: int) -> dict:
    """The same LeNet-5 starting weights for both frameworks, drawn with numpy.

    Both frameworks' defaults are this scheme: weights HeUniform(a=sqrt(5)) and biases, i.e. uniform in
    +-1/sqrt(fan_in) (MindSpore 2.10 ``nn.Conv2d``/``nn.Dense``, PyTorch ``nn.Conv2d``/``nn.Linear``).
    """
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in LENET_PARAMETER_SHAPES.items():
        weight_shape = LENET_PARAMETER_SHAPES[name.rsplit(".", 1)[0] + ".weight"]
        fan_in = int(np.prod(weight_shape[1:]))
        bound = 1.0 / math.sqrt(fan_in)
        weights[name] = rng.uniform(-bound, bound, size=shape).astype(np.float32)
    return weights


def random_batch(batch_size, channels, image_size, seed):
    """A fixed random (images, labels) batch: float32 (N, C, S, S) and int32 (N,)."""
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((batch_size, channels, image_size, image_size)).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, batch_size).astype(np.int32)
    return images, labels


def units_for(seconds_per_unit, target_seconds):
    """How many steps/calls make one repeat last about ``target_seconds``."""
    if seconds_per_unit <= 0:
        return MAX_UNITS_PER_REPEAT
    return int(min(MAX_UNITS_PER_REPEAT, max(1, round(target_seconds / seconds_per_unit))))


# ---------------------------------------------------------------------------------------------- MindSpore
class MindSporeBackend:
    """Builds and times MindSpore tasks in the mode the worker was started with."""

    def __init__(self, mode, threads, host_blocking="course"):
        import course_lib  # noqa: F401  (environment defaults before mindspore)

        # MS_DEV_HOST_BLOCKING_RUN: "course" keeps what course_lib and the caller set; "on"/"off" force it.
        if host_blocking == "on":
            os.environ["MS_DEV_HOST_BLOCKING_RUN"] = "1"
        elif host_blocking == "off":
            os.environ.pop("MS_DEV_HOST_BLOCKING_RUN", None)
        import mindspore as ms

        self.ms = ms
        self.mode = mode
        ms.set_device("CPU")
        ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
        if threads:
            ms.device_context.cpu.op_tuning.threads_num(int(threads))
        self.threads = threads

    def info(self):
        import mindspore as ms

        return {"mindspore": ms.__version__, "mode": self.mode, "op_threads": self.threads or "default"}

    def lenet(self, seed):
        from course_lib.models import lenet5

        net = lenet5(num_classes=NUM_CLASSES)
        params = net.parameters_dict()
        if set(params) != set(LENET_PARAMETER_SHAPES):
            raise RuntimeError(f"LeNet-5 parameter names changed: {sorted(params)}; update LENET_PARAMETER_SHAPES.")
        for name, array in lenet_initial_weights(seed).items():
            params[name].set_data(self.ms.Tensor(array))
        return net

    def network(self, model, seed):
        from course_lib import models

        if model == "lenet5":
            return self.lenet(seed)
        self.ms.set_seed(seed)
        return getattr(models, model)(num_classes=NUM_CLASSES)

    def count_flops(self, model, image_size):
        """Forward FLOPs per sample of a course model (course_lib.perf.profiling.count_flops, conv + dense layers)."""
        from course_lib.perf.profiling import TRAINING_FLOPS_FACTOR, count_flops

        channels = 1 if model == "lenet5" else 3
        counted = count_flops(self.network(model, 1), (channels, image_size, image_size))
        return {"forward_flops": counted["forward_flops"], "training_flops": counted["training_flops"],
                "training_factor": TRAINING_FLOPS_FACTOR, "layers": len(counted["layers"])}

    def prepare_digits(self, path, batch_size, seed):
        """Read the digits training pipeline once and save its batches (the data every LeNet run trains on)."""
        import mindspore.dataset as ds

        from course_lib.data.datasets import create_mnist_dataset

        ds.config.set_seed(seed)
        images, labels = [], []
        for row in create_mnist_dataset(batch_size=batch_size, train=True).create_dict_iterator(
                num_epochs=1, output_numpy=True):
            images.append(row["image"])
            labels.append(row["label"])
        np.savez(path, images=np.stack(images), labels=np.stack(labels))
        return {"batches": len(images), "batch_shape": list(images[0].shape)}

    def make_task(self, spec):
        kind = spec["kind"]
        if kind == "lenet_epoch":
            return MindSporeLeNetEpoch(self, spec)
        if kind == "train_step":
            return MindSporeJitStep(self, spec) if spec.get("api") == "jit" else MindSporeTrainStep(self, spec)
        if kind == "infer":
            return MindSporeInference(self, spec)
        if kind == "pipeline":
            return PipelineTask(spec)
        raise ValueError(f"unknown task kind {kind!r} for MindSpore")


class _EpochTimer:
    """Callback factory: times one Model.train epoch from its first step to the end of its last (synced)."""

    @staticmethod
    def create(steps):
        from mindspore.train import Callback

        class EpochTimer(Callback):
            def on_train_epoch_begin(self, run_context):
                self.start = time.perf_counter()
                self.done = 0
                self.first_step = self.seconds = None

            def on_train_step_end(self, run_context):
                self.done += 1
                if self.first_step is None or self.done == steps:
                    run_context.original_args().net_outputs.asnumpy()
                    now = time.perf_counter() - self.start
                    if self.first_step is None:
                        self.first_step = now
                    if self.done == steps:
                        self.seconds = now

        return EpochTimer()


class MindSporeLeNetEpoch:
    """One epoch of LeNet-5 on the pre-read digits batches, through ``Model.train`` or lesson 06's Trainer."""

    def __init__(self, backend, spec):
        import mindspore.dataset as ds
        from mindspore import nn

        self.api = spec["api"]
        data = np.load(spec["data"])
        images, labels = data["images"][: spec["batches"]], data["labels"][: spec["batches"]]
        self.steps = len(images)
        self.samples = int(images.shape[0] * images.shape[1])
        # Rows are whole batches already: the pipeline only hands them over (no decoding, no transforms).
        self.dataset = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False)
        net = backend.lenet(spec["seed"])
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        optimizer = nn.Momentum(net.trainable_params(), learning_rate=LEARNING_RATE, momentum=MOMENTUM)
        if self.api == "Model.train":
            from mindspore.train import Model

            self.model = Model(net, loss_fn=loss, optimizer=optimizer)
            self.timer = _EpochTimer.create(self.steps)
        elif self.api == "Trainer":
            from course_lib.train.trainer import Trainer

            self.trainer = Trainer(net, loss, optimizer, self.dataset, jit=bool(spec.get("jit", True)),
                                   progress=False)
        else:
            raise ValueError(f"api must be 'Model.train' or 'Trainer', got {self.api!r}")

    def _epoch(self):
        if self.api == "Model.train":
            self.model.train(1, self.dataset, callbacks=[self.timer], dataset_sink_mode=False)
            return self.timer.seconds, self.timer.first_step
        self.trainer.train(1)
        return self.trainer.epoch_seconds[-1], None

    def setup(self):
        first_epoch, first_step = self._epoch()
        self._epoch()  # warm-up, not timed
        result = {"first_seconds": first_epoch, "steps_per_repeat": self.steps}
        if first_step is not None:
            result["first_step_seconds"] = first_step
        return result

    def measure(self):
        seconds, _ = self._epoch()
        return {"seconds": seconds, "steps": self.steps, "samples": self.samples}


class MindSporeTrainStep:
    """``nn.TrainOneStepCell(WithLossCell(net, CE), Momentum)`` on one fixed random batch (as in
    course_lib.perf.timing)."""

    def __init__(self, backend, spec):
        from mindspore import nn

        images, labels, net, loss, optimizer = self._fixed_batch(backend, spec)
        self.step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), optimizer)
        self.step.set_train()
        self.target = spec.get("target_seconds", DEFAULT_TARGET_SECONDS)
        self.units = 1

    def _fixed_batch(self, backend, spec):
        """One fixed random batch (kept as ``self.x``/``self.y``), the network, loss and Momentum optimizer."""
        from mindspore import nn

        self.batch_size = spec["batch_size"]
        channels = 1 if spec["model"] == "lenet5" else 3
        images, labels = random_batch(self.batch_size, channels, spec["image_size"], spec["seed"])
        self.x, self.y = backend.ms.Tensor(images), backend.ms.Tensor(labels)
        net = backend.network(spec["model"], spec["seed"])
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        optimizer = nn.Momentum(net.trainable_params(), learning_rate=LEARNING_RATE, momentum=MOMENTUM)
        return images, labels, net, loss, optimizer

    def _run(self, count):
        start = time.perf_counter()
        for _ in range(count):
            self.step(self.x, self.y).asnumpy()
        return time.perf_counter() - start

    def setup(self):
        first = self._run(1)
        self.units = units_for(self._run(1), self.target)  # the warm-up step, timed to size the repeats
        return {"first_seconds": first, "steps_per_repeat": self.units}

    def measure(self):
        return {"seconds": self._run(self.units), "steps": self.units, "samples": self.units * self.batch_size}


class MindSporeJitStep(MindSporeTrainStep):
    """The 2.x idiom on one fixed batch: lesson 06's Trainer step, ``ms.value_and_grad`` + optimizer under
    ``@ms.jit`` (``course_lib.train.trainer.Trainer(jit=True).train_step``), in a PyNative-mode process."""

    def __init__(self, backend, spec):
        import mindspore.dataset as ds

        from course_lib.train.trainer import Trainer

        images, labels, net, loss, optimizer = self._fixed_batch(backend, spec)
        dataset = ds.NumpySlicesDataset({"image": images[None], "label": labels[None]}, shuffle=False)
        trainer = Trainer(net, loss, optimizer, dataset, jit=True, progress=False,
                          overflow_check=spec.get("overflow_check"))
        net.set_train(True)
        self.step = lambda x, y: trainer.train_step(x, y)[0]
        self.target = spec.get("target_seconds", DEFAULT_TARGET_SECONDS)
        self.units = 1


class _TimedInference:
    """Shared timing of the inference tasks: subclasses set net, x, batch_size, target and ``_run(count)``."""

    def setup(self):
        first = self._run(1)
        self._run(3)
        self.units = units_for(self._run(3) / 3, self.target)
        return {"first_seconds": first, "steps_per_repeat": self.units}

    def measure(self):
        return {"seconds": self._run(self.units), "steps": self.units, "samples": self.units * self.batch_size}


class MindSporeInference(_TimedInference):
    """LeNet-5 forward passes in inference mode: the Cell itself (eager/graph) or its exported MindIR GraphCell."""

    def __init__(self, backend, spec):
        ms = backend.ms
        self.batch_size = spec["batch_size"]
        images, _ = random_batch(self.batch_size, 1, 32, spec["seed"])
        self.x = ms.Tensor(images)
        net = backend.lenet(spec["seed"])
        net.set_train(False)
        if spec["impl"] == "mindir":
            from course_lib.inference import export_mindir, load_mindir

            path = export_mindir(net, images, Path(spec["dir"]) / f"lenet5_b{self.batch_size}.mindir")
            self.net = load_mindir(path)
        elif spec["impl"] == "cell":
            self.net = net
        else:
            raise ValueError(f"impl must be 'cell' or 'mindir', got {spec['impl']!r}")
        self.target = spec.get("target_seconds", DEFAULT_TARGET_SECONDS)
        self.units = 1

    def _run(self, count):
        start = time.perf_counter()
        for _ in range(count):
            self.net(self.x).asnumpy()
        return time.perf_counter() - start


# ---------------------------------------------------------------------------------------------- pipelines
def _bilinear_matrix(size_in, size_out):
    """(size_out, size_in) weights of half-pixel-centre bilinear resizing (OpenCV INTER_LINEAR, MindData Resize)."""
    scale = size_in / size_out
    matrix = np.zeros((size_out, size_in), np.float32)
    for i in range(size_out):
        src = max((i + 0.5) * scale - 0.5, 0.0)
        low = min(int(math.floor(src)), size_in - 1)
        high = min(low + 1, size_in - 1)
        frac = src - low
        matrix[i, low] += 1.0 - frac
        matrix[i, high] += frac
    return matrix


class NumpyDigits:
    """The programming guide's MNIST transforms as a plain per-image numpy loop: Resize, Rescale x2, HWC2CHW, batch."""

    def __init__(self, batch_size, image_size, seed):
        from course_lib.data.datasets import MNIST_MEAN, MNIST_STD
        from course_lib.paths import DATA_DIR

        folder = DATA_DIR / "digits_mnist"
        raw = (folder / "train-images-idx3-ubyte").read_bytes()
        count, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
        self.images = np.frombuffer(raw, np.uint8, offset=16).reshape(count, rows, cols)
        self.labels = np.frombuffer((folder / "train-labels-idx1-ubyte").read_bytes(), np.uint8, offset=8)
        self.rows = _bilinear_matrix(rows, image_size)
        self.cols = _bilinear_matrix(cols, image_size).T.copy()
        self.mean, self.std = MNIST_MEAN, MNIST_STD
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)

    def transform(self, image):
        resized = np.clip(np.rint(self.rows @ image.astype(np.float32) @ self.cols), 0, 255)  # uint8 like MindData
        rescaled = resized * np.float32(1.0 / 255.0)
        normalised = rescaled * np.float32(1.0 / self.std) + np.float32(-self.mean / self.std)
        return normalised.astype(np.float32)[None]  # HWC2CHW of a one-channel image

    def batches(self, shuffle=True):
        order = self.rng.permutation(len(self.images)) if shuffle else np.arange(len(self.images))
        for start in range(0, len(order) - self.batch_size + 1, self.batch_size):
            index = order[start:start + self.batch_size]
            yield (np.stack([self.transform(self.images[i]) for i in index]),
                   self.labels[index].astype(np.int32))


class NumpyImageFolder:
    """The migration guide's ImageFolder transforms as a per-image loop: PIL decode + bilinear resize, numpy
    crop/normalise."""

    def __init__(self, batch_size, image_size, seed):
        from course_lib.data.datasets import IMAGENET_MEAN, IMAGENET_STD
        from course_lib.paths import DATA_DIR

        root = DATA_DIR / "digits_png" / "train"
        classes = sorted(p.name for p in root.iterdir() if p.is_dir())
        self.files = [(path, label) for label, name in enumerate(classes)
                      for path in sorted((root / name).iterdir()) if path.suffix.lower() == ".png"]
        self.resize_to = int(round(image_size / 0.875))
        self.crop = image_size
        self.mean = np.array([m * 255 for m in IMAGENET_MEAN], np.float32)
        self.std = np.array([s * 255 for s in IMAGENET_STD], np.float32)
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)

    def transform(self, path):
        from PIL import Image

        with Image.open(path) as image:
            image = image.convert("RGB")
            width, height = image.size
            scale = self.resize_to / min(width, height)
            size = (max(1, int(round(width * scale))), max(1, int(round(height * scale))))
            array = np.asarray(image.resize(size, Image.BILINEAR))
        top = int(round((array.shape[0] - self.crop) / 2.0))
        left = int(round((array.shape[1] - self.crop) / 2.0))
        array = array[top:top + self.crop, left:left + self.crop]
        return ((array - self.mean) / self.std).astype(np.float32).transpose(2, 0, 1)

    def batches(self, shuffle=True):
        order = self.rng.permutation(len(self.files)) if shuffle else np.arange(len(self.files))
        for start in range(0, len(order) - self.batch_size + 1, self.batch_size):
            index = order[start:start + self.batch_size]
            yield (np.stack([self.transform(self.files[i][0]) for i in index]),
                   np.array([self.files[i][1] for i in index], np.int32))


class PipelineTask:
    """Images/s of a data pipeline without a model: MindData with N workers, or the numpy loop doing the same."""

    def __init__(self, spec):
        self.spec = spec
        self.max_batches = spec["max_batches"]
        self.batch_size = spec["batch_size"]
        if spec["impl"] == "numpy":
            cls = NumpyDigits if spec["pipeline"] == "digits" else NumpyImageFolder
            self.loop = cls(spec["batch_size"], spec["image_size"], spec["seed"])
        else:
            self.dataset = self._minddata(spec.get("workers"), shuffle=True)

    def _minddata(self, workers, shuffle):
        import mindspore.dataset as ds

        from course_lib.data.datasets import create_imagefolder_dataset, create_mnist_dataset

        ds.config.set_seed(self.spec["seed"])
        create = create_mnist_dataset if self.spec["pipeline"] == "digits" else create_imagefolder_dataset
        return create(batch_size=self.batch_size, train=True, image_size=self.spec["image_size"],
                      num_parallel_workers=workers, shuffle=shuffle)

    def max_difference(self):
        """Largest |numpy loop - MindData| over the first unshuffled batch: proof the two compute the same."""
        reference = next(self._minddata(1, shuffle=False).create_tuple_iterator(num_epochs=1, output_numpy=True))
        mine = next(self.loop.batches(shuffle=False))
        if reference[0].shape != mine[0].shape or not np.array_equal(reference[1], mine[1]):
            raise RuntimeError(f"numpy loop and MindData disagree on shapes/labels: {mine[0].shape} vs "
                               f"{reference[0].shape}")
        return float(np.abs(reference[0] - mine[0]).max())

    def measure(self):
        if self.spec["impl"] == "numpy":
            iterator = self.loop.batches()
            next(iterator)  # warm-up batch, as measure_throughput skips one
            start, samples, batches = time.perf_counter(), 0, 0
            for images, _ in iterator:
                samples += len(images)
                batches += 1
                if batches >= self.max_batches:
                    break
            return {"seconds": time.perf_counter() - start, "steps": batches, "samples": samples}
        from course_lib.data.stats import measure_throughput

        result = measure_throughput(self.dataset, max_batches=self.max_batches, warmup_batches=1, column="image")
        return {"seconds": result.seconds, "steps": result.batches, "samples": result.samples}

    def setup(self):
        start = time.perf_counter()
        first = self.measure()
        result = {"first_seconds": time.perf_counter() - start, "steps_per_repeat": first["steps"]}
        if self.spec["impl"] == "numpy":
            result["max_abs_difference_vs_minddata"] = self.max_difference()
        return result


# ---------------------------------------------------------------------------------------------- PyTorch
class TorchBackend:
    """PyTorch eager (CPU) with a fixed thread count."""

    def __init__(self, threads):
        # course_lib (imported for build_torch_resnet) would cap PyTorch's own oneDNN at AVX2 too: PyTorch runs
        # with the environment it was given (run.py passes the one `make bench` started with).
        given = os.environ.get("ONEDNN_MAX_CPU_ISA")
        import torch

        import course_lib  # noqa: F401

        if given is None:
            os.environ.pop("ONEDNN_MAX_CPU_ISA", None)
        self.torch = torch
        if threads:
            torch.set_num_threads(int(threads))
        self.threads = torch.get_num_threads()

    def info(self):
        torch = self.torch
        return {"torch": torch.__version__, "num_threads": torch.get_num_threads(),
                "num_interop_threads": torch.get_num_interop_threads(),
                "mkldnn_enabled": bool(torch.backends.mkldnn.is_available())}

    def lenet(self, seed):
        from torch import nn

        torch = self.torch

        class TorchLeNet5(nn.Module):
            """course_lib.models.LeNet5 in PyTorch: same layers, same parameter names and shapes."""

            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 6, 5)
                self.conv2 = nn.Conv2d(6, 16, 5)
                self.fc1 = nn.Linear(400, 120)
                self.fc2 = nn.Linear(120, 84)
                self.fc3 = nn.Linear(84, NUM_CLASSES)
                self.relu = nn.ReLU()
                self.pool = nn.MaxPool2d(2, 2)
                self.flatten = nn.Flatten()

            def forward(self, x):
                x = self.pool(self.relu(self.conv1(x)))
                x = self.pool(self.relu(self.conv2(x)))
                x = self.flatten(x)
                x = self.relu(self.fc1(x))
                x = self.relu(self.fc2(x))
                return self.fc3(x)

        net = TorchLeNet5()
        state = {name: torch.from_numpy(array) for name, array in lenet_initial_weights(seed).items()}
        net.load_state_dict(state, strict=True)
        return net

    def network(self, model, seed):
        self.torch.manual_seed(seed)
        if model == "lenet5":
            return self.lenet(seed)
        from course_lib.migrate.torch_resnet import build_torch_resnet

        return build_torch_resnet(int(model.replace("resnet", "")), num_classes=NUM_CLASSES)

    def sgemm(self, size, repeats):
        """Best GFLOP/s of ``size`` x ``size`` fp32 matrix products (torch.matmul: MKL) with this process's threads."""
        torch = self.torch
        a = torch.randn(size, size)
        b = torch.randn(size, size)
        out = torch.empty(size, size)
        for _ in range(3):
            torch.matmul(a, b, out=out)
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            torch.matmul(a, b, out=out)
            best = min(best, time.perf_counter() - start)
        return {"size": size, "repeats": repeats, "best_seconds": best, "gflops": 2 * size ** 3 / best / 1e9}

    def make_task(self, spec):
        kind = spec["kind"]
        if kind in ("lenet_epoch", "train_step"):
            return TorchTraining(self, spec)
        if kind == "infer":
            return TorchInference(self, spec)
        raise ValueError(f"unknown task kind {kind!r} for PyTorch")


class TorchTraining:
    """PyTorch eager training: zero_grad, forward, CrossEntropyLoss, backward, SGD(momentum) step, loss.item()."""

    def __init__(self, backend, spec):
        torch = backend.torch
        self.kind = spec["kind"]
        if self.kind == "lenet_epoch":
            data = np.load(spec["data"])
            images, labels = data["images"][: spec["batches"]], data["labels"][: spec["batches"]]
            # Pre-converted once (PyTorch wants int64 labels), so the timed loop only trains.
            self.batches = [(torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))) for x, y in zip(images, labels)]
            self.net = backend.lenet(spec["seed"])
        else:
            channels = 1 if spec["model"] == "lenet5" else 3
            images, labels = random_batch(spec["batch_size"], channels, spec["image_size"], spec["seed"])
            self.batches = [(torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64)))]
            self.net = backend.network(spec["model"], spec["seed"])
        self.samples_per_pass = sum(len(x) for x, _ in self.batches)
        self.net.train()
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
        self.loss = torch.nn.CrossEntropyLoss()
        self.target = spec.get("target_seconds", DEFAULT_TARGET_SECONDS)
        self.units = 1

    def _pass(self):
        for x, y in self.batches:
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss(self.net(x), y)
            loss.backward()
            self.optimizer.step()
            loss.item()

    def _run(self, count):
        start = time.perf_counter()
        for _ in range(count):
            self._pass()
        return time.perf_counter() - start

    def setup(self):
        if self.kind == "lenet_epoch":
            first = self._run(1)
            self._run(1)
            return {"first_seconds": first, "steps_per_repeat": len(self.batches)}
        first = self._run(1)
        self.units = units_for(self._run(1), self.target)  # the warm-up step, timed to size the repeats
        return {"first_seconds": first, "steps_per_repeat": self.units}

    def measure(self):
        count = 1 if self.kind == "lenet_epoch" else self.units
        seconds = self._run(count)
        return {"seconds": seconds, "steps": count * len(self.batches), "samples": count * self.samples_per_pass}


class TorchInference(_TimedInference):
    """PyTorch eager inference: ``net.eval()`` under ``torch.inference_mode()``."""

    def __init__(self, backend, spec):
        self.torch = backend.torch
        self.batch_size = spec["batch_size"]
        images, _ = random_batch(self.batch_size, 1, 32, spec["seed"])
        self.x = self.torch.from_numpy(images)
        self.net = backend.lenet(spec["seed"]).eval()
        self.target = spec.get("target_seconds", DEFAULT_TARGET_SECONDS)
        self.units = 1

    def _run(self, count):
        start = time.perf_counter()
        with self.torch.inference_mode():
            for _ in range(count):
                self.net(self.x).numpy()
        return time.perf_counter() - start


# ---------------------------------------------------------------------------------------------- main loop
def serve(backend, protocol):
    tasks = {}

    def reply(**payload):
        protocol.write(json.dumps(payload) + "\n")
        protocol.flush()

    info = {"pid": os.getpid(), "python": platform.python_version(), "numpy": np.__version__,
            "env": {key: os.environ.get(key) for key in ("ONEDNN_MAX_CPU_ISA", "GLOG_v", "OMP_NUM_THREADS",
                                                          "OMP_WAIT_POLICY", "MS_DEV_HOST_BLOCKING_RUN",
                                                          "MKL_ENABLE_INSTRUCTIONS")},
            **backend.info()}
    reply(ok=True, ready=True, info=info)
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        op = command.get("op")
        try:
            if op == "exit":
                reply(ok=True)
                return
            if op == "prepare_digits":
                reply(ok=True, **backend.prepare_digits(command["path"], command["batch_size"], command["seed"]))
            elif op == "count_flops":
                reply(ok=True, **backend.count_flops(command["model"], command["image_size"]))
            elif op == "sgemm":
                reply(ok=True, **backend.sgemm(command["size"], command["repeats"]))
            elif op == "setup":
                task = backend.make_task(command["task"])
                tasks[command["name"]] = task
                reply(ok=True, **task.setup())
            elif op == "measure":
                reply(ok=True, **tasks[command["name"]].measure())
            elif op == "release":
                tasks.pop(command["name"], None)
                gc.collect()
                reply(ok=True)
            else:
                raise ValueError(f"unknown op {op!r}")
        except Exception as error:  # reported to run.py, which stops the run with this message
            traceback.print_exc(file=sys.stderr)
            reply(ok=False, error=f"{type(error).__name__}: {error}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("mindspore", "torch"), required=True)
    parser.add_argument("--mode", choices=("graph", "pynative", "eager"), default="graph")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--host-blocking", choices=("course", "on", "off"), default="course",
                        help="MS_DEV_HOST_BLOCKING_RUN: as course_lib sets it, forced to 1, or removed")
    args = parser.parse_args(argv)
    # The protocol keeps the real stdout; everything printed by Python or C++ code goes to stderr.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    if args.framework == "mindspore":
        backend = MindSporeBackend(args.mode, args.threads, args.host_blocking)
    else:
        backend = TorchBackend(args.threads)
    serve(backend, protocol)


if __name__ == "__main__":
    main()
