"""One technique, several homes, one behaviour (issue 26, "one home per technique").

A technique often lives in up to three places: the lesson's own teaching version (a class or function defined in a
notebook cell), course_lib's tested version (or MindSpore's own, where the lesson rebuilds a MindSpore class) and a
standalone copy in recipes/. Each test below runs the versions on the same inputs and asserts that they agree.

- The lesson's version comes from the notebook itself: the cell that contains a marker (e.g. ``class SimpleMIoU``)
  is found with nbformat, its ``def``/``class`` statements (and literal constants) are written to a small module
  together with the notebook's import statements, and that module is imported. Nothing else of the notebook runs.
- A recipe is imported from its path (recipes/ is not a package).

``AGREEMENT`` lists every pair or triple and the test that holds it equal; docs/TECHNIQUES.md shows it as a table.
``test_no_untested_second_copy`` fails when a notebook defines a class or function whose name matches a public name
of course_lib or of a recipe and the pair is neither in ``AGREEMENT`` nor explained in ``NOT_A_COPY``.
"""
import ast
import importlib.util
import itertools
import re
import sys
from pathlib import Path
from unittest import mock

import mindspore as ms
import nbformat
import numpy as np
import pytest
from mindspore import Tensor, nn

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
RECIPES = ROOT / "recipes"
TECHNIQUES_DOC = ROOT / "docs" / "TECHNIQUES.md"

#: technique -> its homes. "lesson": (notebook stem, marker of the defining cell, name); "library": course_lib's
#: (or MindSpore's) version as "module:attribute"; "recipe": "recipes/file.py:attribute"; "solution": the copy of a
#: lesson's exercise solution in solutions/ ("module:attribute"), if any; "test": the test here.
AGREEMENT = {
    "hand-written TrainOneStepCell (sens, one update)": {
        "lesson": [("04_train_one_step_and_sink", "class MyTrainOneStepCell", "MyTrainOneStepCell")],
        "library": ["mindspore.nn:TrainOneStepCell"],
        "recipe": ["custom_train_one_step_cell.py:TrainOneStepCell"],
        "test": "test_train_one_step_cell_agrees",
    },
    "train step with gradients clipped by global norm": {
        "lesson": [("04_train_one_step_and_sink", "class ClippedTrainOneStepCell", "ClippedTrainOneStepCell")],
        "library": ["mindspore.ops:clip_by_global_norm"],
        "solution": ["solutions.lesson_04:solve_04_1"],
        "recipe": ["gradient_clipping.py:clip_by_global_norm"],
        "test": "test_clipped_train_step_agrees",
    },
    "mean IoU metric (ignore label, absent classes)": {
        "lesson": [("05_eval_indexes_miou", "class SimpleMIoU", "SimpleMIoU")],
        "library": ["course_lib.train.metrics:MIoU"],
        "recipe": ["miou_metric.py:MIoU"],
        "test": "test_miou_agrees",
    },
    "keep the best checkpoint by validation score": {
        "lesson": [("03_model_train_eval", "class KeepBestCheckpoint", "KeepBestCheckpoint")],
        "library": ["course_lib.train.callbacks:EvalCallback"],
        "recipe": ["best_checkpoint_callback.py:KeepBestCheckpoint"],
        "test": "test_keep_best_checkpoint_agrees",
    },
    "functional train step with dynamic loss scaling": {
        "lesson": [("06_functional_training", "def make_train_step", "make_train_step")],
        "library": ["course_lib.train.trainer:Trainer"],
        "recipe": ["functional_train_step.py:train_step"],
        "test": "test_functional_train_step_agrees",
    },
    "functional trainer with two losses (the migration guide's Trainer)": {
        "lesson": [("A5_mixed_precision_and_schedules", "class GuideTrainer", "GuideTrainer")],
        "library": ["course_lib.train.trainer:Trainer"],
        "recipe": [],
        "test": "test_guide_trainer_agrees",
    },
    "PyTorch ResNet names and weights to MindSpore": {
        "lesson": [("07_migrate_resnet_from_pytorch", 'leaf == "num_batches_tracked"', "torch_name_to_mindspore")],
        "library": ["course_lib.migrate.convert:torch_to_mindspore_name", "course_lib.migrate.convert:map_state_dict"],
        "solution": ["solutions.lesson_07:torch_name_to_mindspore"],
        "recipe": ["pytorch_resnet_to_mindspore.py:convert_state_dict"],
        "test": "test_torch_names_agree",
    },
    "LeNet-5": {
        "lesson": [("00_environment", "class LeNet5", "LeNet5"), ("02_cells_lenet_resnet", "class LeNet5", "LeNet5"),
                   ("02_cells_lenet_resnet", "class AnyBatchLeNet5", "AnyBatchLeNet5")],
        "library": ["course_lib.models.lenet:LeNet5"],
        "recipe": [],
        "test": "test_lenet_agrees",
    },
    "MNIST pipeline for LeNet-5": {
        "lesson": [("01_mindata_pipelines", "def mnist_pipeline", "mnist_pipeline")],
        "library": ["course_lib.data.datasets:create_mnist_dataset"],
        "recipe": [],
        "test": "test_mnist_pipeline_agrees",
    },
    "checkpoint CRC verification": {
        "lesson": [("09_inference_and_export", "def checkpoint_is_verified", "checkpoint_is_verified")],
        "library": ["course_lib.train.checkpoint:load_checkpoint", "course_lib.train.checkpoint:has_crc_record"],
        "recipe": [],
        "test": "test_checkpoint_crc_agrees",
    },
    "export to MindIR and run it as a graph": {
        "lesson": [],
        "library": ["course_lib.inference:export_mindir", "course_lib.inference:load_mindir"],
        "recipe": ["export_mindir_graphcell.py:export_and_load"],
        "test": "test_mindir_export_agrees",
    },
    "warmup + cosine learning-rate schedule": {
        "lesson": [],
        "library": ["course_lib.train.schedules:cosine_lr"],
        "recipe": ["warmup_cosine_no_decay_bn_bias.py:warmup_cosine_lr"],
        "test": "test_warmup_cosine_schedule_agrees",
    },
    "no weight decay on BatchNorm and biases": {
        "lesson": [],
        "library": ["course_lib.train.optim:param_groups"],
        "recipe": ["warmup_cosine_no_decay_bn_bias.py:param_groups"],
        "test": "test_param_groups_agree",
    },
}

#: (notebook stem, name) whose name matches a course_lib or recipe name but which is not a copy of that technique.
NOT_A_COPY = {
    ("00_environment", "forward"): "the first tour's plain loss function (no loss scaling); lesson 06's "
                                   "make_train_step is the copy of the recipe's technique and is tested",
    ("00_environment", "train_step"): "the first tour's plain train step (no loss scaling); lesson 06's "
                                      "make_train_step is the copy of the recipe's technique and is tested",
    ("A4_sink_mode", "counting_model_train"): "runs Model.train on counting data to show what sink mode feeds; "
                                              "not a training loop like run.fit.train or the recipe's train helper",
}

#: course_lib versions that a lesson teaches by using them (no copy in the lesson): "module:name" -> notebook stems.
TAUGHT_BY_USE = {
    "course_lib.train.schedules:cosine_lr": ["06_functional_training"],
    "course_lib.train.optim:param_groups": ["07_migrate_resnet_from_pytorch"],
    "course_lib.migrate.convert:convert_torch_state_dict": ["07_migrate_resnet_from_pytorch"],
    "course_lib.models.lenet:lenet5": ["02_cells_lenet_resnet"],
    "course_lib.inference:export_mindir": ["09_inference_and_export"],
    "course_lib.inference:load_mindir": ["09_inference_and_export"],
}

#: Recipe names that every recipe has and that are no technique.
RECIPE_SCAFFOLDING = {"check", "main"}


# ------------------------------------------------------------------------------------------------- loading
def _parse(source):
    """A code cell as a Python AST (IPython magics and shell lines left out)."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    return ast.parse("\n".join(lines)), lines


def _code_cells(stem):
    path = NOTEBOOKS / f"{stem}.ipynb"
    cells = nbformat.read(path, as_version=4).cells
    return [(index, cell.source) for index, cell in enumerate(cells) if cell.cell_type == "code"]


def _defining_cell(stem, marker):
    """(index, source) of the first code cell of the notebook containing ``marker``."""
    for index, source in _code_cells(stem):
        if marker in source:
            return index, source
    raise LookupError(f"notebooks/{stem}.ipynb has no code cell containing {marker!r}. Fix: update the marker in "
                      "tests/test_technique_agreement.py AGREEMENT (and docs/TECHNIQUES.md) to the lesson's cell.")


def _segment(lines, node):
    first = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1:node.end_lineno])


def _is_definition(node):
    if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
        return True
    if isinstance(node, ast.Assign):  # a constant the definitions use, e.g. BATCHNORM_LEAVES = {...}
        try:
            ast.literal_eval(node.value)
        except ValueError:
            return False
        return True
    return False


def _notebook_imports(stem):
    imports = []
    for _, source in _code_cells(stem):
        try:
            tree, lines = _parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                statement = _segment(lines, node)
                if statement not in imports:
                    imports.append(statement)
    return imports


_MODULE_COUNT = itertools.count()


def _import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # MindSpore's graph compiler looks the module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def lesson(tmp_path_factory):
    """lesson(stem, *markers, **names) -> a module holding the definitions of the lesson's cells with those markers.

    The module is a real file (MindSpore's graph compiler reads the source of what it compiles); ``names`` are set
    as module globals (values the lesson's definitions read from other cells, e.g. MNIST_DIR).
    """
    folder = tmp_path_factory.mktemp("lesson_cells")

    def load(stem, *markers, **names):
        parts = [f"# The definitions of notebooks/{stem}.ipynb, cells with {markers!r}, and the lesson's imports."]
        parts += _notebook_imports(stem)
        for marker in markers:
            index, source = _defining_cell(stem, marker)
            tree, lines = _parse(source)
            parts.append(f"# --- cell {index}")
            parts += [_segment(lines, node) for node in tree.body if _is_definition(node)]
        name = f"lesson_{re.sub(r'[^0-9A-Za-z]', '_', stem)}_{next(_MODULE_COUNT)}"
        path = folder / f"{name}.py"
        path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
        module = _import_file(path, name)
        for key, value in names.items():
            setattr(module, key, value)
        return module

    return load


def recipe(name):
    """A fresh import of recipes/<name>.py (a new module object each time: some recipes keep state in globals).

    A recipe's top-level ``ms.set_device("CPU")`` is skipped: this process runs on the CPU already, and MindSpore
    refuses the call once a kernel has run.
    """
    with mock.patch.object(ms, "set_device", lambda *args, **kwargs: None):
        return _import_file(RECIPES / f"{name}.py", f"recipe_{name}_{next(_MODULE_COUNT)}")


@pytest.fixture(autouse=True)
def pynative_mode():
    """Each test starts in PyNative mode and leaves the mode as it found it (some recipes set graph mode)."""
    mode = ms.get_context("mode")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=mode)


def _weights(net):
    return np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])


# ------------------------------------------------------------------------------ lesson 04: TrainOneStepCell
def _classification_batches(steps=4, batch=8, features=6, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((steps, batch, features)).astype(np.float32)
    y = rng.integers(0, classes, (steps, batch)).astype(np.int32)
    return x, y


def _train_with_cell(cell_class, loss_scale, **cell_kwargs):
    """4 steps of a small dense network from a fixed seed; the optimizer divides the sens back out (loss_scale)."""
    x, y = _classification_batches()
    ms.set_seed(1)
    net = nn.Dense(6, 3)
    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9, loss_scale=loss_scale)
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    step = cell_class(loss_net, optimizer, **cell_kwargs)
    step.set_train()
    losses = [float(step(Tensor(x[i]), Tensor(y[i])).asnumpy()) for i in range(len(x))]
    return np.array(losses), _weights(net)


@pytest.mark.parametrize("sens", [1.0, 1024.0])
def test_train_one_step_cell_agrees(lesson, sens):
    mine = lesson("04_train_one_step_and_sink", "class MyTrainOneStepCell").MyTrainOneStepCell
    copied = recipe("custom_train_one_step_cell").TrainOneStepCell
    losses, weights = _train_with_cell(nn.TrainOneStepCell, sens, sens=sens)
    assert losses[-1] < losses[0]
    for cell_class in (mine, copied):
        other_losses, other_weights = _train_with_cell(cell_class, sens, sens=sens)
        np.testing.assert_array_equal(other_losses, losses, err_msg=f"{cell_class.__module__}: losses differ")
        np.testing.assert_array_equal(other_weights, weights, err_msg=f"{cell_class.__module__}: weights differ")


@pytest.mark.parametrize("max_norm", [0.05, 100.0])
def test_clipped_train_step_agrees(lesson, max_norm):
    """Lesson 04's exercise solution (notebook and solutions/) = a value_and_grad step with the recipe's clip.

    With max_norm 0.05 every step is clipped; with 100 no step is, and the update is the plain one.
    """
    from solutions.lesson_04 import solve_04_1

    clip_by_global_norm = recipe("gradient_clipping").clip_by_global_norm
    x, y = _classification_batches()

    ms.set_seed(1)
    net = nn.Dense(6, 3)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    grad_fn = ms.value_and_grad(lambda a, b: loss_fn(net(a), b), None, optimizer.parameters)
    norms = []
    for i in range(len(x)):
        _, grads = grad_fn(Tensor(x[i]), Tensor(y[i]))
        norms.append(float(np.sqrt(sum((g.asnumpy() ** 2).sum() for g in grads))))
        optimizer(clip_by_global_norm(grads, max_norm))
    reference = _weights(net)
    assert min(norms) > max_norm or max(norms) < max_norm  # every step clipped, or none

    module = lesson("04_train_one_step_and_sink", "class MyTrainOneStepCell", "class ClippedTrainOneStepCell")
    for cell_class in (module.ClippedTrainOneStepCell, solve_04_1()):
        _, weights = _train_with_cell(cell_class, 1.0, max_norm=max_norm)
        np.testing.assert_allclose(weights, reference, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{cell_class.__module__}.{cell_class.__name__}")


# -------------------------------------------------------------------------------------------- lesson 05: mIoU
def _segmentation_batches(num_classes=5, ignore=255, seed=0):
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(3):
        logits = rng.standard_normal((2, num_classes, 6, 7)).astype(np.float32)
        logits[:, 4] -= 100.0  # class 4 is never predicted and never labelled: NaN, left out of the mean
        label = rng.integers(0, 3, (2, 6, 7)).astype(np.int32)  # class 3 is predicted but never labelled: IoU 0
        label[rng.random(label.shape) < 0.2] = ignore
        batches.append((logits, label))
    return batches


def test_miou_agrees(lesson):
    from course_lib.train.metrics import MIoU

    simple = lesson("05_eval_indexes_miou", "class SimpleMIoU").SimpleMIoU(5, ignore_label=255)
    library = MIoU(5, ignore_label=255)
    copied = recipe("miou_metric").MIoU(5, ignore_label=255)
    for metric in (simple, library, copied):
        for logits, label in _segmentation_batches():
            metric.update(Tensor(logits), Tensor(label))
    confusion = library.confusion_matrix
    assert confusion.sum() > 0 and confusion[:, 3].sum() > 0 and confusion[4].sum() == confusion[:, 4].sum() == 0
    np.testing.assert_array_equal(simple.confusion, confusion)
    np.testing.assert_array_equal(copied.confusion, confusion)
    iou = library.per_class_iou
    assert np.isnan(iou[4]) and iou[3] == 0.0
    np.testing.assert_array_equal(simple.per_class_iou(), iou)
    np.testing.assert_array_equal(copied.per_class_iou(), iou)
    assert simple.eval() == library.eval() == copied.eval()

    # A predicted label map (N, H, W) instead of logits: the lesson's and the library's metric accept both.
    simple.clear(), library.clear()
    for logits, label in _segmentation_batches(seed=1):
        for metric in (simple, library):
            metric.update(logits.argmax(axis=1).astype(np.int32), label)
    assert simple.eval() == library.eval()


# ------------------------------------------------------------------------------- lesson 03: keep the best
def _keep_best_callbacks(lesson, folder, model, eval_dataset):
    from course_lib.train.callbacks import EvalCallback

    keep_best = lesson("03_model_train_eval", "class KeepBestCheckpoint").KeepBestCheckpoint
    copied = recipe("best_checkpoint_callback").KeepBestCheckpoint
    return {"lesson": keep_best(folder / "lesson.ckpt"),
            "recipe": copied("accuracy", str(folder / "recipe.ckpt"), "max"),
            "course_lib": EvalCallback(model, eval_dataset, "accuracy", best_ckpt_path=folder / "course_lib.ckpt",
                                       verbose=False)}


def _tiny_model():
    ms.set_seed(0)
    net = nn.Dense(2, 2)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return net, nn.Momentum(net.trainable_params(), 0.5, 0.9), loss_fn


def _two_blobs(seed, n=32):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(np.int32)
    x = (rng.standard_normal((n, 2)) + 1.2 * (2 * y[:, None] - 1)).astype(np.float32)
    return ms.dataset.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)


def test_keep_best_checkpoint_agrees(lesson, tmp_path, monkeypatch):
    """Scripted scores with ties: all three keep the first epoch of the best score, and save that epoch."""
    from mindspore.train import Model, RunContext
    from mindspore.train.callback import _InternalCallbackParam

    net, optimizer, loss_fn = _tiny_model()
    model = Model(net, loss_fn, optimizer, metrics={"accuracy"})
    callbacks = _keep_best_callbacks(lesson, tmp_path, model, _two_blobs(1))
    scores = [0.5, 0.75, 0.75, 0.625, 0.875, 0.875, 0.25]
    pending = list(scores)
    monkeypatch.setattr(callbacks["course_lib"], "evaluate", lambda: pending.pop(0))
    for epoch, score in enumerate(scores, start=1):
        net.weight.set_data(Tensor(np.full((2, 2), epoch, np.float32)))  # the file shows which epoch it holds
        cb_params = _InternalCallbackParam()
        cb_params.network, cb_params.cur_epoch_num, cb_params.epoch_num = net, epoch, len(scores)
        cb_params.eval_results = {"accuracy": score}
        for callback in callbacks.values():
            callback.on_train_epoch_end(RunContext(cb_params))
    assert callbacks["lesson"].best_epoch == callbacks["recipe"].best_epoch == callbacks["course_lib"].best_epoch == 5
    assert callbacks["recipe"].scores == callbacks["course_lib"].scores == list(enumerate(scores, start=1))
    for name in callbacks:
        saved = ms.load_checkpoint(str(tmp_path / f"{name}.ckpt"), crc_check=True)
        assert int(saved["epoch"].asnumpy()) == 5 and float(saved["accuracy"].asnumpy()) == 0.875, name
        np.testing.assert_array_equal(saved["weight"].asnumpy(), np.full((2, 2), 5, np.float32), err_msg=name)


def test_keep_best_checkpoint_agrees_under_model_fit(lesson, tmp_path):
    """A real Model.fit: the three callbacks see the same scores and keep the same weights."""
    from mindspore.train import Model

    net, optimizer, loss_fn = _tiny_model()
    model = Model(net, loss_fn, optimizer, metrics={"accuracy"})
    valid = _two_blobs(1)
    callbacks = _keep_best_callbacks(lesson, tmp_path, model, _two_blobs(1))
    model.fit(4, _two_blobs(0), valid_dataset=valid, valid_frequency=1, callbacks=list(callbacks.values()),
              dataset_sink_mode=False, valid_dataset_sink_mode=False)
    assert callbacks["recipe"].scores == callbacks["course_lib"].scores and len(callbacks["recipe"].scores) == 4
    assert callbacks["lesson"].best_epoch == callbacks["recipe"].best_epoch == callbacks["course_lib"].best_epoch
    saved = {name: ms.load_checkpoint(str(tmp_path / f"{name}.ckpt"), crc_check=True) for name in callbacks}
    for name in ("recipe", "course_lib"):
        for key in ("weight", "bias", "epoch", "accuracy"):
            np.testing.assert_array_equal(saved[name][key].asnumpy(), saved["lesson"][key].asnumpy(),
                                          err_msg=f"{name}: {key}")


# ------------------------------------------------------------------ lesson 06: functional step, loss scaling
def _regression_batches(overflow_at=2, steps=5):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((steps, 8, 4)).astype(np.float32)
    y = rng.integers(0, 2, (steps, 8)).astype(np.int32)
    if overflow_at is not None:
        x[overflow_at, 0, 0] = np.inf  # one batch overflows: its update is skipped, the dynamic scale halves
    return x, y


def test_functional_train_step_agrees(lesson):
    """Lesson 06's make_train_step = the recipe's train_step (dynamic scale); = Trainer (static scale, checked)."""
    from mindspore import amp

    from course_lib.train.trainer import Trainer

    make_train_step = lesson("06_functional_training", "def make_train_step").make_train_step
    copied = recipe("functional_train_step")
    x, y = _regression_batches()

    net, loss_fn, optimizer = copied.build(0)  # the same seed and layers as the recipe's own globals
    np.testing.assert_array_equal(_weights(net), _weights(copied.net))
    scaler = amp.DynamicLossScaler(scale_value=1024.0, scale_factor=2, scale_window=50)
    step = make_train_step(net, loss_fn, optimizer, scaler)
    for i in range(len(x)):
        loss, finite = step(Tensor(x[i]), Tensor(y[i]))
        recipe_loss, _, recipe_finite = copied.train_step(Tensor(x[i]), Tensor(y[i]))
        assert bool(finite) == bool(recipe_finite) == (i != 2), f"step {i}"
        np.testing.assert_array_equal(loss.asnumpy(), recipe_loss.asnumpy(), err_msg=f"step {i}")
    np.testing.assert_array_equal(_weights(net), _weights(copied.net))
    assert float(scaler.scale_value.asnumpy()) == float(copied.scaler.scale_value.asnumpy()) == 512.0

    trainer_net, trainer_loss, trainer_optimizer = copied.build(0)
    data = ms.dataset.NumpySlicesDataset({"image": x.reshape(-1, 4), "label": y.reshape(-1)},
                                         shuffle=False).batch(8)
    trainer = Trainer(trainer_net, trainer_loss, trainer_optimizer, data, loss_scale=1024.0, progress=False)
    trainer.train(1)
    assert trainer.skipped_steps == 1
    np.testing.assert_allclose(_weights(trainer_net), _weights(net), rtol=1e-6, atol=1e-7)


def test_guide_trainer_agrees(lesson, capsys):
    """Lesson A5's GuideTrainer (the migration guide's code) = course_lib's Trainer, two losses, one epoch."""
    from course_lib.train.trainer import Trainer

    guide_trainer = lesson("A5_mixed_precision_and_schedules", "class GuideTrainer").GuideTrainer
    x, y = _regression_batches(overflow_at=None, steps=3)
    nets = []
    for _ in range(2):
        ms.set_seed(2)
        net = nn.SequentialCell(nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2))
        data = ms.dataset.NumpySlicesDataset({"image": x.reshape(-1, 4), "label": y.reshape(-1)},
                                             shuffle=False).batch(8)
        losses = (nn.CrossEntropyLoss(), nn.CrossEntropyLoss(label_smoothing=0.1))
        nets.append((net, data, losses, nn.Momentum(net.trainable_params(), 0.1, 0.9)))
    net, data, losses, optimizer = nets[0]
    guide_trainer(net, *losses, optimizer, data).train(1)
    assert "step: [0 /3]" in capsys.readouterr().out
    trainer_net, data, losses, optimizer = nets[1]
    Trainer(trainer_net, list(losses), optimizer, data, progress=False).train(1)
    assert not np.array_equal(_weights(net), _weights(nn.Dense(4, 8)))  # it trained
    np.testing.assert_allclose(_weights(trainer_net), _weights(net), rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------ lesson 07: PyTorch names
def test_torch_names_agree(lesson):
    from course_lib.migrate.convert import map_state_dict, torch_to_mindspore_name
    from course_lib.migrate.torch_resnet import build_torch_resnet
    from course_lib.models import resnet18
    from solutions.lesson_07 import torch_name_to_mindspore as solution

    taught = lesson("07_migrate_resnet_from_pytorch", 'leaf == "num_batches_tracked"').torch_name_to_mindspore
    for depth in (18, 50):
        names = list(build_torch_resnet(depth, 10).state_dict())
        assert any("downsample.1.running_var" in n for n in names) and "fc.bias" in names
        expected = [torch_to_mindspore_name(name) for name in names]
        assert [taught(name) for name in names] == expected
        assert [solution(name) for name in names] == expected

    torch_state = build_torch_resnet(18, 10).state_dict()
    net = resnet18(10)
    mapped = map_state_dict(torch_state, net)
    module_names = {"downsample": "down_sample_layer", "fc": "end_point"}
    converted = recipe("pytorch_resnet_to_mindspore").convert_state_dict(
        torch_state, net, rename=lambda name: ".".join(module_names.get(part, part) for part in name.split(".")))
    assert sorted(converted) == sorted(mapped)
    for ms_name, (_, array) in mapped.items():
        np.testing.assert_array_equal(converted[ms_name].asnumpy(), array, err_msg=ms_name)


# -------------------------------------------------------------------------------------- lessons 00, 02: LeNet
def test_lenet_agrees(lesson):
    """Same parameter names and shapes as course_lib's LeNet5, and the same outputs from the same weights.

    Lesson 00's tour version has no convolution biases (nn.Conv2d's default): the layout of ``lenet5(init="seed")``.
    """
    from course_lib.models import lenet5

    x = Tensor(np.random.default_rng(4).standard_normal((3, 1, 32, 32)).astype(np.float32))
    versions = [(lesson("00_environment", "class LeNet5").LeNet5, "seed"),
                (lesson("02_cells_lenet_resnet", "class LeNet5").LeNet5, "default"),
                (lesson("02_cells_lenet_resnet", "class AnyBatchLeNet5").AnyBatchLeNet5, "default")]
    for version, init in versions:
        ms.set_seed(4)
        library = lenet5(init=init)
        net = version()
        assert ({name: p.shape for name, p in net.parameters_and_names()}
                == {name: p.shape for name, p in library.parameters_and_names()}), version.__module__
        assert not ms.load_param_into_net(net, library.parameters_dict(), strict_load=True)[0]
        np.testing.assert_array_equal(net(x).asnumpy(), library(x).asnumpy(), err_msg=version.__module__)


# ---------------------------------------------------------------------------------- lesson 01: the pipeline
def test_mnist_pipeline_agrees(lesson):
    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.paths import DATA_DIR

    taught = lesson("01_mindata_pipelines", "def mnist_pipeline", MNIST_DIR=str(DATA_DIR / "digits_mnist"))
    ours = next(taught.mnist_pipeline().batch(16).create_tuple_iterator(output_numpy=True))
    library = next(create_mnist_dataset(batch_size=16, train=True, shuffle=False)
                   .create_tuple_iterator(output_numpy=True))
    assert ours[0].shape == (16, 1, 32, 32) and ours[0].dtype == library[0].dtype == np.float32
    np.testing.assert_array_equal(ours[0], library[0])
    np.testing.assert_array_equal(ours[1], library[1])
    assert ours[1].dtype == library[1].dtype == np.int32


# ------------------------------------------------------------------------------------- lesson 09: CRC check
def test_checkpoint_crc_agrees(lesson, tmp_path):
    from course_lib.train.checkpoint import has_crc_record, load_checkpoint, save_checkpoint

    verified = lesson("09_inference_and_export", "def checkpoint_is_verified").checkpoint_is_verified
    net = nn.Dense(3, 2)
    good = save_checkpoint(net, tmp_path / "good.ckpt")
    plain = tmp_path / "plain.ckpt"
    ms.save_checkpoint(net, str(plain), crc_check=False)
    raw = good.read_bytes()
    flipped, cut = tmp_path / "flipped.ckpt", tmp_path / "cut.ckpt"
    middle = len(raw) // 2
    flipped.write_bytes(raw[:middle] + bytes([raw[middle] ^ 1]) + raw[middle + 1:])
    cut.write_bytes(raw[:-5])

    def library_verifies(path):
        try:
            load_checkpoint(path, crc_check=True)
        except ValueError:
            return False
        return True

    results = {path.name: (verified(path), library_verifies(path), has_crc_record(path))
               for path in (good, plain, flipped, cut)}
    assert results == {"good.ckpt": (True, True, True), "plain.ckpt": (False, False, False),
                       "flipped.ckpt": (False, False, True), "cut.ckpt": (False, False, False)}


# ----------------------------------------------------------------------------- recipe <-> course_lib only
def test_mindir_export_agrees(tmp_path):
    """The recipe's ms.export + nn.GraphCell and course_lib's export_mindir + load_mindir run the same graph."""
    from course_lib.inference import export_mindir, load_mindir

    copied = recipe("export_mindir_graphcell")
    ms.set_seed(0)
    net = copied.SmallConvNet()
    bn = net.features[1]  # moving statistics as after training, so a training graph would differ
    bn.moving_mean.set_data(Tensor(np.linspace(-0.5, 0.5, 8).astype(np.float32)))
    bn.moving_variance.set_data(Tensor(np.linspace(0.5, 2.0, 8).astype(np.float32)))
    net.set_train(False)
    x = np.random.default_rng(0).standard_normal((4, 1, 8, 8)).astype(np.float32)
    eager = net(Tensor(x)).asnumpy()
    (tmp_path / "recipe").mkdir()
    recipe_graph = copied.export_and_load(net, Tensor(x), str(tmp_path / "recipe"))
    library_graph = load_mindir(export_mindir(net, x, tmp_path / "library" / "net.mindir"))
    from_recipe, from_library = recipe_graph(Tensor(x)).asnumpy(), library_graph(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(from_recipe, from_library)
    np.testing.assert_allclose(from_library, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lr_max, lr_min, total_steps, steps_per_epoch, warmup_epochs",
                         [(0.1, 0.0, 100, 10, 1), (0.05, 0.001, 37, 3, 2), (1.0, 0.5, 8, 8, 0)])
def test_warmup_cosine_schedule_agrees(lr_max, lr_min, total_steps, steps_per_epoch, warmup_epochs):
    from course_lib.train.schedules import cosine_lr

    warmup_steps = warmup_epochs * steps_per_epoch
    copied = recipe("warmup_cosine_no_decay_bn_bias").warmup_cosine_lr
    library = cosine_lr(lr_max, lr_min, total_steps, steps_per_epoch, warmup_epochs)
    assert len(library) == total_steps
    np.testing.assert_allclose(copied(lr_max, lr_min, warmup_steps, total_steps), library, rtol=1e-12, atol=0)


def test_param_groups_agree():
    from course_lib.train.optim import param_groups

    copied = recipe("warmup_cosine_no_decay_bn_bias").param_groups

    def summary(groups):
        """{weight_decay: [names]} of the non-empty groups, and the order_params names."""
        decay = {g["weight_decay"]: [p.name for p in g["params"]] for g in groups if g.get("params")}
        order = [[p.name for p in g["order_params"]] for g in groups if "order_params" in g]
        return decay, order

    net = nn.SequentialCell(nn.Conv2d(3, 4, 3, has_bias=True), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                            nn.Dense(4 * 8 * 8, 2))
    decay, order = summary(param_groups(net, 1e-4))
    assert sorted(decay) == [0.0, 1e-4] and any(name.endswith("gamma") for name in decay[0.0])
    assert summary(copied(net, 1e-4)) == (decay, order)
    plain = nn.Dense(3, 2, has_bias=False)  # only weights: the library leaves the empty group out
    assert summary(copied(plain, 1e-4)) == summary(param_groups(plain, 1e-4))


# ---------------------------------------------------------------------------------- the registry itself
def _public_names():
    """name -> [where] for the public top-level classes/functions of course_lib and the recipes."""
    names = {}
    for path in sorted((ROOT / "course_lib").rglob("*.py")) + sorted(RECIPES.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.name.startswith("_")
                    and not (path.parent == RECIPES and node.name in RECIPE_SCAFFOLDING)):
                names.setdefault(node.name, []).append(path.relative_to(ROOT).as_posix())
    return names


def _same_technique_name(defined, public):
    """``defined`` is ``public`` or ends with it at a word boundary: SimpleMIoU ~ MIoU, make_train_step ~ train_step."""
    if defined == public:
        return True
    if len(public) < 4 or not defined.endswith(public):
        return False
    before = defined[-len(public) - 1]
    return before == "_" or (public[0].isupper() and not before.isupper())


def _lesson_definitions():
    """(notebook stem, cell index, name) of every top-level class/def of the English lessons."""
    found = []
    for path in sorted(NOTEBOOKS.glob("[0-9A]*.ipynb")):
        for index, source in _code_cells(path.stem):
            try:
                tree, _ = _parse(source)
            except SyntaxError:  # a cell that shows a syntax error defines nothing
                continue
            found += [(path.stem, index, node.name) for node in tree.body
                      if isinstance(node, (ast.ClassDef, ast.FunctionDef))]
    return found


def test_no_untested_second_copy():
    """A lesson's class/def named like a course_lib or recipe name must be in AGREEMENT (tested) or NOT_A_COPY."""
    public = _public_names()
    registered = {(stem, name) for entry in AGREEMENT.values() for stem, _, name in entry["lesson"]}
    unregistered = []
    for stem, index, name in _lesson_definitions():
        matches = [f"{other} ({', '.join(public[other])})" for other in public if _same_technique_name(name, other)]
        if matches and (stem, name) not in registered and (stem, name) not in NOT_A_COPY:
            unregistered.append(f"notebooks/{stem}.ipynb cell {index}: {name} ~ {'; '.join(matches)}")
    assert not unregistered, (
        "A lesson defines its own copy of a course_lib or recipe technique, and no test holds the copies equal:\n"
        + "\n".join(unregistered) + "\nFix: show the library's source in the lesson (show_source), or add the pair "
        "to AGREEMENT in tests/test_technique_agreement.py with a test that runs both on the same inputs "
        "(and a row in docs/TECHNIQUES.md); if it is a different technique, explain it in NOT_A_COPY.")


def test_registry_is_current():
    """Every marker still finds its cell, every name resolves, every test exists, every technique is in the doc."""
    doc = TECHNIQUES_DOC.read_text(encoding="utf-8")
    tests = {name for name in globals() if name.startswith("test_")}
    definitions = {(stem, name) for stem, _, name in _lesson_definitions()}
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines() if line.startswith("| ")}
    for technique, entry in AGREEMENT.items():
        assert technique in rows, f"{technique!r} has no row in docs/TECHNIQUES.md"
        assert entry["test"] in tests, f"{technique!r}: no test named {entry['test']}"
        assert len(entry["lesson"]) + len(entry["library"]) + len(entry["recipe"]) >= 2, technique
        for stem, marker, name in entry["lesson"]:
            index, source = _defining_cell(stem, marker)
            assert re.search(rf"\bcell {index}\b", rows[technique]), (
                f"docs/TECHNIQUES.md: the row {technique!r} should name cell {index} of {stem}.ipynb")
            assert re.search(rf"^(class|def) {name}\b", source, re.M), f"{stem}: {marker!r} cell defines no {name}"
            assert (stem, name) in definitions
        for target in entry["library"] + entry.get("solution", []):
            module, attribute = target.split(":")
            assert hasattr(importlib.import_module(module), attribute), target
        for target in entry["recipe"]:
            file, attribute = target.split(":")
            tree = ast.parse((RECIPES / file).read_text(encoding="utf-8"))
            assert attribute in {node.name for node in tree.body if hasattr(node, "name")}, target
    stale = [key for key in NOT_A_COPY if key not in definitions]
    assert not stale, f"NOT_A_COPY names definitions no lesson has any more: {stale}. Fix: remove them."


def test_course_lib_versions_name_their_lesson():
    """course_lib's version of a technique a lesson teaches says where: "Taught in lesson NN (notebooks/...)"."""
    taught = {target: list(stems) for target, stems in TAUGHT_BY_USE.items()}
    for entry in AGREEMENT.values():
        for target in entry["library"]:
            if target.startswith("course_lib"):
                taught.setdefault(target, []).extend(stem for stem, _, _ in entry["lesson"])
    missing = []
    for target, stems in sorted(taught.items()):
        module, attribute = target.split(":")
        doc = " ".join((getattr(importlib.import_module(module), attribute).__doc__ or "").split())
        for stem in sorted(set(stems)):
            assert (NOTEBOOKS / f"{stem}.ipynb").is_file(), f"{target}: no notebooks/{stem}.ipynb"
            line = f"Taught in lesson {stem.split('_')[0]} (notebooks/{stem}.ipynb)."
            if line not in doc:
                missing.append(f"{target}: {line}")
    assert not missing, "Docstring lines missing:\n" + "\n".join(missing)
