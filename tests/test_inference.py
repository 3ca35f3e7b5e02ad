import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)
import os

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

from course_lib.inference import (
    GraphEvalCell,
    Predictions,
    expected_input_shape,
    export_mindir,
    load_mindir,
    predict,
    softmax,
)
from course_lib.models import lenet5

CLASSES = tuple("abcdefghij")


@pytest.fixture(scope="module")
def net():
    ms.set_seed(3)
    return lenet5()


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(0).normal(size=(5, 1, 32, 32)).astype(np.float32)


def test_softmax_is_stable_and_normalised():
    probs = softmax(np.array([[1000.0, 1000.0, -1000.0], [0.0, np.log(3.0), 0.0]]))
    assert probs.dtype == np.float32
    np.testing.assert_allclose(probs, [[0.5, 0.5, 0.0], [0.2, 0.6, 0.2]], atol=1e-6)


def test_predict_batch_values_and_shapes(net, images):
    result = predict(net, images, class_names=CLASSES)
    logits = net(Tensor(images)).asnumpy()
    assert isinstance(result, Predictions) and len(result) == 5
    assert result.labels.shape == (5,) and result.labels.dtype == np.int64
    assert result.probabilities.shape == (5, 10) and result.probabilities.dtype == np.float32
    np.testing.assert_allclose(result.probabilities, softmax(logits), rtol=1e-6)
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0, rtol=1e-5)
    assert (result.labels == logits.argmax(axis=1)).all()
    assert result.names == tuple(CLASSES[i] for i in logits.argmax(axis=1))
    np.testing.assert_allclose(result.confidences, result.probabilities.max(axis=1))


def test_predict_single_image_tensor_and_chunks_agree(net, images):
    full = predict(net, images)
    single = predict(net, Tensor(images[2]))
    assert len(single) == 1 and single.labels[0] == full.labels[2]
    np.testing.assert_allclose(single.probabilities[0], full.probabilities[2], rtol=1e-5, atol=1e-7)
    chunked = predict(net, images.astype(np.float64), batch_size=2)  # float64 is accepted and cast
    np.testing.assert_allclose(chunked.probabilities, full.probabilities, rtol=1e-5, atol=1e-7)
    assert full.names == tuple(str(label) for label in full.labels)


def test_top_k_and_summary(net, images):
    result = predict(net, images, class_names=CLASSES)
    classes, probs = result.top_k(3)
    assert classes.shape == probs.shape == (5, 3)
    assert (classes[:, 0] == result.labels).all() and (np.diff(probs, axis=1) <= 0).all()
    np.testing.assert_allclose(probs, np.take_along_axis(result.probabilities, classes, axis=1))
    assert result.summary(limit=2).splitlines()[-1] == "… 3 more"
    assert result.summary().splitlines()[0].startswith(f"  0: {result.names[0]}")
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 and <= 10, got 11. Fix: pass a k from 1 to "):
        result.top_k(11)


def test_predict_restores_training_mode(net, images):
    net.set_train(True)
    predict(net, images[:1])
    assert net.training
    net.set_train(False)


@pytest.mark.parametrize("bad,message", [
    (np.zeros((2, 1, 32, 32), np.uint8), "images must be floating-point.*got dtype uint8"),
    (np.zeros((2, 3, 32, 32), np.float32), r"\(C, H, W\) = \(1, 32, 32\), got \(3, 32, 32\) \(C is 3, expected 1\)"),
    (np.zeros((2, 1, 28, 28), np.float32), r"got \(1, 28, 28\) \(H is 28, expected 32\)"),
    (np.zeros((32, 32), np.float32), r"images must be shaped \(C, H, W\) or \(N, C, H, W\), got shape \(32, 32\)"),
    (np.zeros((0, 1, 32, 32), np.float32), "empty batch"),
    (np.full((1, 1, 32, 32), np.nan, np.float32), "NaN or Inf"),
])
def test_predict_rejects_bad_images_before_mindspore(net, bad, message):
    with pytest.raises(ValueError, match=message):
        predict(net, bad)


def test_predict_rejects_images_of_the_wrong_type(net):
    with pytest.raises(TypeError, match=r"images must be a numpy array .*got \[\[0.0\]\] \(list\)"):
        predict(net, [[0.0]])


@pytest.mark.parametrize("kwargs,error,message", [
    ({"class_names": ("a", "b")}, ValueError, "class_names has 2 names but the network outputs 10 classes"),
    ({"class_names": "0123456789"}, TypeError, "class_names must be a list/tuple of names"),
    ({"input_shape": (1, 32)}, ValueError, r"input_shape must be \(C, H, W\)"),
    ({"input_shape": 32}, TypeError, r"input_shape must be a tuple \(C, H, W\), got 32 \(int\)"),
    ({"batch_size": 0}, ValueError, "batch_size must be an integer >= 1, got 0"),
    ({"batch_size": 2.0}, TypeError, r"batch_size must be an integer \(>= 1\), got 2.0 \(float\)"),
])
def test_predict_rejects_bad_arguments(net, images, kwargs, error, message):
    with pytest.raises(error, match=message):
        predict(net, images, **kwargs)


def test_predict_needs_a_network(images):
    with pytest.raises(TypeError, match=r"net must be a MindSpore network.*\(function\)"):
        predict(lambda x: x, images)


def test_expected_input_shape():
    assert expected_input_shape(lenet5(in_channels=3)) == (3, 32, 32)
    assert expected_input_shape(nn.SequentialCell([nn.Conv2d(3, 4, 3), nn.ReLU()])) == (3, None, None)
    assert expected_input_shape(nn.Dense(4, 2)) is None


def test_input_shape_override_allows_other_sizes():
    conv = nn.SequentialCell([nn.Conv2d(2, 3, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()])
    result = predict(conv, np.ones((2, 2, 9, 7), np.float32))
    assert result.probabilities.shape == (2, 3)
    with pytest.raises(ValueError, match=r"\(C, H, W\) = \(2, 8, any\)"):
        predict(conv, np.ones((1, 2, 9, 7), np.float32), input_shape=(2, 8, None))


@pytest.mark.parametrize("dynamic_batch", [False, True])
def test_export_and_graphcell_give_the_eager_outputs(net, images, tmp_path, dynamic_batch):
    path = export_mindir(net, images[:1], tmp_path / "lenet.mindir", dynamic_batch=dynamic_batch)
    assert path == tmp_path / "lenet.mindir" and path.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet.mindir", "lenet.mindir.sha256"]  # no temp file
    graph = load_mindir(path)
    assert isinstance(graph, nn.GraphCell)
    assert graph.input_shapes == [(-1 if dynamic_batch else 1, 1, 32, 32)]  # read from the file, checked per call
    eager = net(Tensor(images)).asnumpy()
    np.testing.assert_allclose(graph(Tensor(images)).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(predict(graph, images).probabilities, softmax(eager), rtol=1e-5, atol=1e-6)


def test_export_overwrites_atomically(net, images, tmp_path):
    path = tmp_path / "model.mindir"
    export_mindir(lenet5(num_classes=3), images[:1], path)
    export_mindir(net, images[:1], path)  # ms.export leaves files read-only; the rename still replaces it
    assert load_mindir(path)(Tensor(images[:1])).shape == (1, 10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.mindir", "model.mindir.sha256"]


@pytest.mark.parametrize("example,name,message", [
    (np.zeros((1, 1, 32, 32), np.uint8), "m.mindir", "images must be floating-point"),
    (np.zeros((1, 3, 32, 32), np.float32), "m.mindir", r"\(C is 3, expected 1\)"),
    (np.zeros((0,), np.float32), "m.mindir", "example_input must be a non-empty"),
    (np.zeros((1, 1, 32, 32), np.float32), "m.onnx", "must end with .mindir"),
])
def test_export_rejects_bad_input(net, tmp_path, example, name, message):
    with pytest.raises(ValueError, match=message):
        export_mindir(net, example, tmp_path / name)
    assert not any(tmp_path.iterdir())


def test_load_mindir_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.mindir does not exist"):
        load_mindir(tmp_path / "missing.mindir")
    garbage = tmp_path / "garbage.mindir"
    garbage.write_bytes(b"not a model" * 10)
    with pytest.raises(ValueError, match="garbage.mindir could not be loaded"), pytest.warns(UserWarning):
        load_mindir(garbage)
    with pytest.raises(ValueError, match="must end with .mindir"):
        load_mindir(tmp_path / "model.ckpt")
    assert os.path.exists(garbage)


def test_graph_eval_cell_lets_model_eval_score_a_mindir(net, images, tmp_path):
    import mindspore.dataset as ds
    from mindspore.train import Model

    labels = np.array([0, 1, 2, 3, 4], np.int32)
    graph = load_mindir(export_mindir(net, images[:1], tmp_path / "m.mindir", dynamic_batch=True))
    data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False).batch(5)
    top1 = float(np.mean(predict(net, images).labels == labels))
    with pytest.raises(ValueError, match="Sink mode is currently not supported when evaluating with a GraphCell"):
        Model(graph, eval_network=graph, metrics={"accuracy"}).eval(data, dataset_sink_mode=True)
    result = Model(graph, eval_network=GraphEvalCell(graph), metrics={"accuracy"}).eval(data)
    assert result == {"accuracy": pytest.approx(top1)}
    # Graph mode, after the GraphCell has run on its own: compiling a Cell whose construct calls it then fails in
    # MindSpore 2.10 ("The pointer[context] is null"); GraphEvalCell must not be compiled.
    mode = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        graph = load_mindir(tmp_path / "m.mindir")
        graph(Tensor(images))
        model = Model(graph, eval_network=GraphEvalCell(graph), metrics={"accuracy"})
        result = model.eval(data, dataset_sink_mode=True)
    finally:
        ms.set_context(mode=mode)
    assert result == {"accuracy": pytest.approx(top1)}
    with pytest.raises(TypeError, match=r"graph must be an nn.GraphCell .*, got 'model.mindir' \(str\)"):
        GraphEvalCell("model.mindir")


# ---------------------------------------------------------------------------------------- MindIR digests
def test_export_writes_a_sha256sum_digest_that_load_checks(net, images, tmp_path):
    import hashlib
    import shutil
    import subprocess

    from course_lib.inference import digest_path

    path = export_mindir(net, images[:1], tmp_path / "lenet.mindir")
    digest = digest_path(path)
    assert digest == tmp_path / "lenet.mindir.sha256"
    assert digest.read_text() == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  lenet.mindir\n"
    if shutil.which("sha256sum"):  # the same format as the tool
        assert subprocess.run(["sha256sum", "-c", digest.name], cwd=tmp_path, capture_output=True).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet.mindir", "lenet.mindir.sha256"]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file with a matching digest loads without a word
        load_mindir(path)


@pytest.mark.parametrize("where", ["middle", "first", "last"])
def test_a_mindir_with_a_flipped_byte_is_refused(net, images, tmp_path, where):
    path = export_mindir(net, images[:1], tmp_path / "lenet.mindir")
    content = bytearray(path.read_bytes())
    at = {"middle": len(content) // 2, "first": 0, "last": len(content) - 1}[where]
    content[at] ^= 0x01
    os.chmod(path, 0o644)
    path.write_bytes(bytes(content))
    with pytest.raises(ValueError, match=r"lenet.mindir does not match its digest lenet.mindir.sha256: the file "
                                         r"changed after it was exported.*Fix: export it again"):
        load_mindir(path)
    path.write_bytes(bytes(content[:-10]))  # a partial copy
    with pytest.raises(ValueError, match="does not match its digest"):
        load_mindir(path)


def test_a_mindir_without_a_digest_loads_with_a_warning_that_says_so(net, images, tmp_path):
    path = tmp_path / "plain.mindir"
    ms.export(net, Tensor(images[:1]), file_name=str(path), file_format="MINDIR")  # MindSpore's own export
    with pytest.warns(UserWarning, match=r"plain.mindir has no digest file plain.mindir.sha256 beside it, so its "
                                         r"integrity cannot be checked.*Fix: export it with"):
        graph = load_mindir(path)
    assert graph(Tensor(images[:1])).shape == (1, 10)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_mindir(path, check_digest=False)


@pytest.mark.parametrize("text", ["", "not a digest\n", "abc  lenet.mindir\n", "x" * 64 + "  lenet.mindir\n"])
def test_a_malformed_digest_file_is_an_error(net, images, tmp_path, text):
    path = export_mindir(net, images[:1], tmp_path / "lenet.mindir")
    (tmp_path / "lenet.mindir.sha256").write_text(text)
    with pytest.raises(ValueError, match=r"The digest file lenet.mindir.sha256 is malformed.*sha256sum format"):
        load_mindir(path)


def test_export_cleans_the_temporary_files_of_killed_exports_only(net, images, tmp_path):
    import subprocess
    import sys

    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    stale = [f".export.tmp-p{done.pid}-0badf00d.mindir", f".export.tmp-p{done.pid}-0badf00d.sha256"]
    live = [f".export.tmp-p{os.getppid()}-0badf00d.mindir", "notes.tmp-p1-0badf00d.mindir"]
    for name in stale + live:
        (tmp_path / name).write_bytes(b"x")
    export_mindir(net, images[:1], tmp_path / "lenet.mindir")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(live + ["lenet.mindir", "lenet.mindir.sha256"])
