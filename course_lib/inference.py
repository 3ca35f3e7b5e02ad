"""Inference with a trained network: predict labels and probabilities, export to MindIR and load it back.

``predict`` checks the images (shape, dtype, channel count) before MindSpore sees them, so a wrong input gives
a clear ``ValueError`` instead of a C++ shape-inference error deep inside a convolution or matmul.
``export_mindir`` writes the MindIR file atomically (temporary name in the same folder, then rename), with a
sha256 digest beside it (``NAME.mindir.sha256``) that ``load_mindir`` checks: MindIR has no checksum of its own.
Both work from folders whose path has spaces or Chinese characters, which ``ms.export`` itself refuses.
"""
import hashlib
import numbers
import os
import re
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

from course_lib.i18n import _
from course_lib.locks import clean_stale_temp_files, temp_name
from course_lib.paths import relative
from course_lib.validation import check_bool, check_int, check_ndim, check_path, check_type, wrong_type

__all__ = ["Predictions", "predict", "expected_input_shape", "export_mindir", "load_mindir", "mindir_input_shapes",
           "MindIRCell", "softmax", "GraphEvalCell", "MINDIR_SINGLE_FILE_LIMIT", "digest_path",
           "verify_mindir_digest", "file_sha256", "MINDSPORE_FILE_NAME"]

#: ``ms.export`` writes parameters above this size (1 GiB) into a separate ``<name>_variables/`` folder; such
#: a multi-file export cannot be renamed into place as one file, so ``export_mindir`` refuses it.
MINDIR_SINGLE_FILE_LIMIT = 1024 ** 3

#: Temporary files of ``export_mindir`` (``.export.tmp-p<pid>-<8 hex>.mindir`` and its ``.sha256``; older
#: versions wrote ``.<stem>.tmp-<8 hex>.mindir``).
_TEMP_FILE = re.compile(r"^\..+\.tmp-(p\d+-)?[0-9a-f]{8}\.(mindir|sha256)$")


def clean_temp_files(folder) -> list:
    """Delete the temporary files that killed ``export_mindir`` calls left in ``folder``, only those whose
    writer is provably gone. Returns the names removed."""
    return clean_stale_temp_files(folder, _TEMP_FILE)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of (N, C) logits, computed stably (max subtracted) in float64, returned as float32."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32)


@dataclass(frozen=True)
class Predictions:
    """Predictions for N images: ``labels`` (N,) int64, ``probabilities`` (N, C) float32 (softmax of logits).

    ``class_names`` (length C) turns labels into ``names``; ``top_k(k)`` gives the k best classes per image.
    """

    labels: np.ndarray
    probabilities: np.ndarray
    class_names: tuple | None = None

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def confidences(self) -> np.ndarray:
        """Probability of the predicted class, per image (N,)."""
        return self.probabilities[np.arange(len(self)), self.labels]

    @property
    def names(self) -> tuple:
        """The predicted class of each image as a name (``class_names``) or, without names, its number as str."""
        if self.class_names is None:
            return tuple(str(int(label)) for label in self.labels)
        return tuple(self.class_names[int(label)] for label in self.labels)

    def top_k(self, k: int = 5):
        """``(classes, probabilities)``, both (N, k), best first. ``k`` may not exceed the number of classes."""
        num_classes = self.probabilities.shape[1]
        k = check_int("k", k, 1, num_classes, fix=_("pass a k from 1 to the number of classes, e.g. k=5"))
        order = np.argsort(-self.probabilities, axis=1, kind="stable")[:, :k]
        return order, np.take_along_axis(self.probabilities, order, axis=1)

    def summary(self, limit: int = 10) -> str:
        """One line per image (at most ``limit``): index, predicted class and its probability."""
        lines = [f"{i:>3}: {name:<10} p={conf:.3f}"
                 for i, (name, conf) in enumerate(zip(self.names[:limit], self.confidences[:limit]))]
        if len(self) > limit:
            lines.append(f"… {len(self) - limit} more")
        return "\n".join(lines)


def _check_net(net):
    check_type("net", net, nn.Cell, _("a MindSpore network (nn.Cell, or nn.GraphCell from a MindIR file)"),
               _("pass the network object, e.g. lenet5() after loading its checkpoint"))


def expected_input_shape(net):
    """What a single input image must look like, as (C, H, W) with ``None`` for sizes the network accepts freely.

    Read from the network: a ``LeNet5`` needs (in_channels, 32, 32); another network with a first ``Conv2d``
    needs its ``in_channels``; a ``MindIRCell`` (from ``load_mindir``) has the shape it was exported with; a plain
    ``nn.GraphCell`` cannot tell, so the result is ``None``.
    """
    _check_net(net)
    if isinstance(net, MindIRCell):
        shape = net.input_shapes[0] if len(net.input_shapes) == 1 else None
        if shape is None or len(shape) != 4:
            return None
        return tuple(None if d < 0 else d for d in shape[1:])
    from course_lib.models.lenet import LENET_INPUT_SIZE, LeNet5  # local import: models import mindspore.nn only

    if isinstance(net, LeNet5):
        return (net.conv1.in_channels, LENET_INPUT_SIZE, LENET_INPUT_SIZE)
    for _name, cell in net.cells_and_names():
        if isinstance(cell, nn.Conv2d):
            if cell.data_format != "NCHW":
                return None
            return (cell.in_channels, None, None)
    return None


def _check_shape_spec(input_shape):
    if input_shape is None:
        return None
    if not isinstance(input_shape, (tuple, list)):
        raise wrong_type("input_shape", input_shape, _("a tuple (C, H, W)"),
                         _("e.g. input_shape=(1, 32, 32) for LeNet-5"))
    if len(input_shape) != 3 or not all(d is None or (isinstance(d, numbers.Integral) and not isinstance(d, bool)
                                                      and d > 0) for d in input_shape):
        raise ValueError(_("input_shape must be (C, H, W) with positive ints (or None for 'any size'), got "
                           "{input_shape!r}. Fix: e.g. input_shape=(1, 32, 32) for LeNet-5.").format(
            input_shape=input_shape))
    return tuple(None if d is None else int(d) for d in input_shape)


def _as_image_batch(images, input_shape) -> np.ndarray:
    """Return float32 (N, C, H, W); a single (C, H, W) image gets a batch axis. Raise ValueError on bad input."""
    if isinstance(images, Tensor):
        images = images.asnumpy()
    elif not isinstance(images, np.ndarray):
        raise wrong_type("images", images, _("a numpy array or a mindspore Tensor shaped (N, C, H, W) or (C, H, W)"),
                         _("e.g. np.stack(list_of_images)"))
    if images.dtype.kind not in "f":
        raise ValueError(
            _("images must be floating-point (float32), preprocessed like the training data, got dtype "
              "{dtype}. Fix: run raw pixels through the evaluation pipeline (e.g. "
              "create_mnist_dataset(train=False)), or at least images.astype(np.float32) after the same "
              "rescale/normalise.").format(dtype=images.dtype))
    check_ndim("images", images.shape, {3: "(C, H, W)", 4: "(N, C, H, W)"},
               _("for grey images add the channel axis, e.g. x[:, None]"))
    if images.ndim == 3:
        images = images[None]
    if images.shape[0] == 0:
        raise ValueError(_("images is an empty batch (N = 0). Fix: pass at least one image."))
    if input_shape is not None:
        for axis, (got, want) in enumerate(zip(images.shape[1:], input_shape)):
            if want is not None and got != want:
                shown = "(" + ", ".join(_("any") if d is None else str(d) for d in input_shape) + ")"
                raise ValueError(
                    _("each image must have shape (C, H, W) = {shown}, got {shape} ({axis} is {got}, "
                      "expected {want}). Fix: resize/convert with the same pipeline as in training (e.g. "
                      "Resize(32) and HWC2CHW for LeNet-5 on MNIST).").format(
                    shown=shown, shape=tuple(images.shape[1:]), axis="CHW"[axis], got=got, want=want))
    if not np.all(np.isfinite(images)):
        raise ValueError(_("images contain NaN or Inf values. Fix: check the preprocessing (division by zero?)."))
    return np.ascontiguousarray(images, dtype=np.float32)


def _check_class_names(class_names):
    if class_names is None:
        return None
    if isinstance(class_names, str) or not hasattr(class_names, "__len__"):
        raise wrong_type("class_names", class_names, _("a list/tuple of names, one per class"),
                         _("e.g. class_names=('0', '1', ..., '9')"))
    return tuple(str(name) for name in class_names)


def predict(net, images, class_names=None, input_shape=None, batch_size=256) -> Predictions:
    """Classify ``images`` with ``net`` (which returns logits): labels, probabilities and optional names.

    ``images``: float (N, C, H, W) or one (C, H, W) image, numpy or Tensor, preprocessed like the training
    data. ``input_shape`` (C, H, W) overrides what ``expected_input_shape(net)`` reads from the network. The
    network runs in inference mode (``set_train(False)``) in chunks of ``batch_size``; its mode is restored.
    """
    _check_net(net)
    batch_size = check_int("batch_size", batch_size, 1, fix=_("e.g. batch_size=256"))
    shape = _check_shape_spec(input_shape) if input_shape is not None else expected_input_shape(net)
    batch = _as_image_batch(images, shape)
    class_names = _check_class_names(class_names)

    was_training = net.training
    net.set_train(False)
    try:
        chunks = [net(Tensor(batch[start:start + batch_size])) for start in range(0, len(batch), batch_size)]
    finally:
        net.set_train(was_training)
    outputs = [chunk[0] if isinstance(chunk, (tuple, list)) else chunk for chunk in chunks]
    logits = np.concatenate([o.asnumpy() for o in outputs], axis=0)
    if logits.ndim != 2 or logits.shape[0] != len(batch):
        raise ValueError(_("net must return logits shaped (N, num_classes) = ({count}, C), got {shape}. "
                           "Fix: predict is for classifiers; call the network directly for other outputs.").format(
            count=len(batch), shape=tuple(logits.shape)))
    if class_names is not None and len(class_names) != logits.shape[1]:
        raise ValueError(_("class_names has {names} names but the network outputs {classes} "
                           "classes. Fix: pass one name per output class, in label order.").format(
            names=len(class_names), classes=logits.shape[1]))
    probabilities = softmax(logits)
    labels = probabilities.argmax(axis=1).astype(np.int64)
    return Predictions(labels=labels, probabilities=probabilities, class_names=class_names)


def _mindir_path(path, must_exist: bool) -> Path:
    path = check_path("path", path, _("pass the MindIR file's path, e.g. 'outputs/lenet.mindir'")).expanduser()
    if path.suffix != ".mindir":
        raise ValueError(_("a MindIR file name must end with .mindir, got {name!r}. Fix: e.g. {example!r}.").format(
            name=path.name, example=path.with_suffix(".mindir").name))
    if must_exist and not path.is_file():
        raise FileNotFoundError(_("MindIR file {path} does not exist. Fix: check the path, or export the network "
                                  "first with export_mindir(net, example_input, path).").format(path=relative(path)))
    return path


def export_mindir(net, example_input, path, dynamic_batch=False) -> Path:
    """Export ``net`` (inference mode) to a MindIR file at ``path``, atomically; return the path.

    ``example_input`` (numpy or Tensor, e.g. one batch) fixes the input dtype and shape; with
    ``dynamic_batch=True`` the batch axis is left free, so the exported graph accepts any batch size.

    Taught in lesson 09 (notebooks/09_inference_and_export.ipynb).
    Copy held equal by tests/test_technique_agreement.py: recipes/export_mindir_graphcell.py.
    """
    _check_net(net)
    if isinstance(example_input, Tensor):
        example_input = example_input.asnumpy()
    if not isinstance(example_input, np.ndarray):
        raise wrong_type("example_input", example_input, _("a numpy array or Tensor shaped like one real input batch"),
                         _("e.g. np.zeros((1, 1, 32, 32), np.float32)"))
    if example_input.ndim < 1 or example_input.size == 0:
        raise ValueError(_("example_input must be a non-empty array shaped like one real input batch, got shape "
                           "{shape}. Fix: e.g. np.zeros((1, 1, 32, 32), np.float32).").format(
            shape=example_input.shape))
    dynamic_batch = check_bool("dynamic_batch", dynamic_batch)
    if example_input.ndim == 4:  # an image batch: same checks as predict, float64 becomes float32
        example_input = _as_image_batch(example_input, expected_input_shape(net))
    path = _mindir_path(path, must_exist=False)
    total_bytes = sum(p.data.nbytes for p in net.get_parameters())
    if total_bytes > MINDIR_SINGLE_FILE_LIMIT:
        raise ValueError(_("the network has {size:.1f} GiB of parameters; ms.export would write them "
                           "to a separate folder, which export_mindir cannot write atomically. Fix: call "
                           "ms.export(net, input, file_name=..., file_format='MINDIR') directly.").format(
            size=total_bytes / 1024 ** 3))
    if dynamic_batch:
        dtype = Tensor(example_input.reshape(-1)[:1]).dtype
        spec = Tensor(shape=[None, *example_input.shape[1:]], dtype=dtype)
    else:
        spec = Tensor(example_input)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_temp_files(path.parent)  # what earlier, killed exports left here (only provably stale files)
    temp = path.parent / temp_name("export", ".mindir")  # an ASCII name whatever the model's name is
    digest_temp = path.parent / temp_name("export", ".sha256")
    was_training = net.training
    net.set_train(False)
    try:
        _export_to(net, spec, temp)
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        digest = file_sha256(temp)
        with open(digest_temp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(f"{digest}  {path.name}\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
        os.replace(digest_temp, digest_path(path))
    finally:
        net.set_train(was_training)
        for leftover in (temp, digest_temp):
            if leftover.exists():
                os.chmod(leftover, 0o600)
                leftover.unlink()
    return path


#: The file names ``ms.export`` accepts (``Validator.check_file_name_by_regular`` in mindspore/_checkparam.py,
#: called by ``export`` in mindspore/train/serialization.py, MindSpore 2.10): no spaces, no non-ASCII letters.
MINDSPORE_FILE_NAME = re.compile(r"^[0-9a-zA-Z@\_\-\.\:\/\\]+$")
_CWD_LOCK = threading.Lock()


def _export_to(net, spec, temp: Path):
    """``ms.export`` into ``temp``. MindSpore 2.10 refuses a file name with a space or a non-ASCII character
    (``C:\\Users\\Li Wei\\...``, ``/home/李/...``) before it writes anything; for such a folder the export runs
    from inside it, with the plain relative name of the temporary file (MindSpore checks the name as given,
    then resolves it)."""
    if MINDSPORE_FILE_NAME.match(str(temp)):
        ms.export(net, spec, file_name=str(temp), file_format="MINDIR")
        return
    with _CWD_LOCK:
        try:
            before = os.getcwd()
        except OSError:  # the working folder was deleted: nothing to go back to
            before = None
        os.chdir(temp.parent)
        try:
            ms.export(net, spec, file_name=temp.name, file_format="MINDIR")
        finally:
            if before is not None:
                os.chdir(before)


def digest_path(path) -> Path:
    """Where ``export_mindir`` writes the sha256 digest of a MindIR file: ``NAME.mindir.sha256`` beside it, in
    the format of ``sha256sum`` (check it by hand with ``sha256sum -c NAME.mindir.sha256`` in that folder)."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_DIGEST_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def verify_mindir_digest(path) -> bool:
    """Compare a MindIR file with its ``NAME.mindir.sha256``: True if it matches, False if there is no digest
    file; ValueError if the file changed since export (flipped bytes, a partial copy, an edit) or the digest
    file is malformed."""
    path = Path(path)
    sidecar = digest_path(path)
    if not sidecar.exists():
        return False
    try:
        line = sidecar.read_text(encoding="utf-8").strip().splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        line = ""
    match = _DIGEST_LINE.match(line)
    if not match:
        raise ValueError(_("The digest file {sidecar} is malformed: expected one line '<64 hex digits>  "
                           "{name}' (the sha256sum format), got {line!r}. Fix: export the model again "
                           "with export_mindir, which rewrites both files.").format(
            sidecar=relative(sidecar), name=path.name, line=line[:100]))
    if file_sha256(path) != match.group(1).lower():
        raise ValueError(_("MindIR file {path} does not match its digest {digest}: the file changed after it "
                           "was exported (damaged bytes, an interrupted copy or an edit), and a changed MindIR can "
                           "load and predict different numbers without any error. Fix: export it again with "
                           "export_mindir (or copy both files again from where they were exported).").format(
            path=relative(path), digest=sidecar.name))
    return True


def load_mindir(path, check_digest=True) -> nn.GraphCell:
    """Load a MindIR file as an ``nn.GraphCell`` you can call like the network (inference only).

    With ``check_digest`` the file is first compared with the ``NAME.mindir.sha256`` that ``export_mindir``
    wrote beside it: a changed file is refused (ValueError); a file without a digest loads with a warning.

    Only load MindIR files you or someone you trust produced: a model file is untrusted input.

    Taught in lesson 09 (notebooks/09_inference_and_export.ipynb).
    """
    path = _mindir_path(path, must_exist=True)
    if check_digest and not verify_mindir_digest(path):
        warnings.warn(_("MindIR file {path} has no digest file {name} beside it, so its integrity cannot "
                        "be checked: a changed or damaged MindIR can load and predict different numbers "
                        "without any error. Fix: export it with course_lib.inference.export_mindir, "
                        "which writes the digest.").format(
            path=relative(path), name=digest_path(path).name), UserWarning, stacklevel=2)
    try:
        graph = ms.load(str(path))
    except RuntimeError as error:
        raise ValueError(_("MindIR file {path} could not be loaded: it is corrupted, truncated, encrypted or not a "
                           "MindIR file. Fix: export it again with export_mindir.").format(
            path=relative(path))) from error
    return MindIRCell(graph, mindir_input_shapes(path), relative(path))


def mindir_input_shapes(path) -> list:
    """The input shapes a MindIR file was exported with, e.g. ``[(1, 1, 32, 32)]``; -1 marks a free axis
    (``dynamic_batch=True``). Read from the file's protobuf header; ``[]`` if it cannot be read."""
    from mindspore.train.mind_ir_pb2 import ModelProto

    model = ModelProto()
    try:
        model.ParseFromString(Path(path).read_bytes())
    except Exception:  # noqa: BLE001 - an unreadable header only means "shape unknown"; ms.load judges the file
        return []
    return [tuple(int(d) for d in item.tensor[0].dims) for item in model.graph.input if item.tensor]


class MindIRCell(nn.GraphCell):
    """An ``nn.GraphCell`` that knows the input shapes it was exported with and checks every call against them,
    so a wrong input names both shapes instead of failing deep inside an operator (MatMul's
    "x1_col 256 vs x2_row 400" for a 28x28 image fed to LeNet-5's 32x32 graph). Every axis but the batch axis
    is checked."""

    def __init__(self, graph, input_shapes, source="the MindIR graph"):
        super().__init__(graph)
        self.input_shapes = [tuple(shape) for shape in input_shapes]
        self.source = str(source)

    def __call__(self, *args, **kwargs):
        if self.input_shapes and not kwargs:
            _check_graph_inputs(self.source, self.input_shapes, args)
        return super().__call__(*args, **kwargs)


def _check_graph_inputs(source, expected, args):
    if len(args) != len(expected):
        raise ValueError(_("{source} takes {count} input(s) (exported shapes {expected}), got {given}. Fix: "
                           "call it with exactly the inputs it was exported with.").format(
            source=source, count=len(expected), expected=expected, given=len(args)))
    for index, (arg, want) in enumerate(zip(args, expected)):
        got = tuple(getattr(arg, "shape", ()))
        # The batch axis is not checked: MindSpore 2.10 runs a graph exported for batch 1 on any batch size.
        if len(got) != len(want) or any(w >= 0 and g != w for g, w in list(zip(got, want))[1:]):
            shown = "(N, " + ", ".join(_("any") if w < 0 else str(w) for w in want[1:]) + ")"
            raise ValueError(_("input {index} of {source} must have shape {shown} (exported as {want}), got {got}. "
                               "Fix: preprocess like the exported input (same rank, image size and channels).").format(
                index=index, source=source, shown=shown, want=want, got=got))


class GraphEvalCell(nn.Cell):
    """Evaluate a loaded MindIR graph with ``Model.eval``: ``(image, label) -> (logits, label)``.

    ``Model(graph, eval_network=graph, metrics=...)`` fails in 2.10: the eval network receives the label too,
    which the one-input graph rejects. Wrap it: ``Model(graph, eval_network=GraphEvalCell(graph), metrics=...)``.
    The wrapper runs as plain Python (``__call__``), never compiled: in graph mode, compiling a Cell that calls a
    GraphCell which already ran on its own fails in MindSpore 2.10 ("The pointer[context] is null"), and the
    GraphCell is a compiled graph anyway.
    """

    def __init__(self, graph):
        super().__init__(auto_prefix=False)
        check_type("graph", graph, nn.Cell, _("an nn.GraphCell (from load_mindir)"),
                   _("graph = course_lib.inference.load_mindir('net.mindir')"))
        self.graph = graph

    def construct(self, image, label):
        return self.graph(image), label

    def __call__(self, image, label):
        return self.construct(image, label)
