import matplotlib

import course_lib  # noqa: F401  (sets env before mindspore)

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from course_lib.lab import plotting  # noqa: E402
from course_lib.train.callbacks import LossRecorder  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def titles(fig):
    return [ax.get_title() for ax in fig.axes]


# ---- plot_history ----------------------------------------------------------------------------------------

def make_history():
    history = LossRecorder()
    history.step_loss = [2.3, 2.0, 1.5, 1.0, 0.8, 0.5]
    history.epochs = [1, 2, 3]
    history.epoch_loss = [2.15, 1.25, 0.65]
    history.steps_per_epoch = 2
    history.record("accuracy", 0.5, epoch=1)
    history.record("accuracy", 0.9, epoch=3)
    return history


def test_plot_history_loss_and_metric_curves():
    fig = plotting.plot_history(make_history(), keys=("loss", "accuracy"))
    assert len(fig.axes) == 2
    loss_ax, acc_ax = fig.axes
    step_line, epoch_line = loss_ax.lines
    assert list(step_line.get_ydata()) == [2.3, 2.0, 1.5, 1.0, 0.8, 0.5]
    assert list(epoch_line.get_xdata()) == [2, 4, 6]  # epoch means sit at each epoch's last step
    assert list(acc_ax.lines[0].get_xdata()) == [1, 3]
    assert acc_ax.get_title() == "last 0.9000, max 0.9000 (epoch 3)"


def test_plot_history_accepts_as_dict_and_default_key():
    fig = plotting.plot_history(make_history().as_dict())
    assert len(fig.axes) == 1 and fig.axes[0].get_ylabel() == "loss"


def test_plot_history_accepts_mindspore_history():
    from mindspore.train import History as MsHistory

    history = MsHistory()
    history.epoch = {"epoch": [1, 2]}
    history.history = {"net_output": [1.5, 0.7], "accuracy": [0.6, 0.8]}
    fig = plotting.plot_history(history, keys=["loss", "accuracy"])
    assert list(fig.axes[0].lines[0].get_ydata()) == [1.5, 0.7]
    assert list(fig.axes[1].lines[0].get_ydata()) == [0.6, 0.8]


def test_plot_history_unknown_key_lists_available():
    with pytest.raises(ValueError, match=r"no values for \['miou'\]; available: \['loss', 'accuracy'\]"):
        plotting.plot_history(make_history(), keys=("loss", "miou"))
    with pytest.raises(ValueError, match="none of the keys"):
        plotting.plot_history({"loss": [1.0]})
    with pytest.raises(TypeError, match="history must be"):
        plotting.plot_history([1.0, 2.0])


# ---- plot_lr_schedule ------------------------------------------------------------------------------------

def test_plot_lr_schedule_draws_values_and_epoch_lines():
    lrs = np.linspace(0.1, 0.0, 12)
    fig = plotting.plot_lr_schedule(lrs, steps_per_epoch=4, title="linear")
    (ax,) = fig.axes
    assert np.allclose(ax.lines[0].get_ydata(), lrs)
    assert len(ax.lines) == 1 + 2  # the curve + boundaries at steps 4 and 8
    assert ax.get_title() == "linear"


@pytest.mark.parametrize("bad, message", [
    ([], "non-empty 1-D"), (np.ones((2, 3)), "non-empty 1-D"), ([0.1, float("nan")], "NaN"),
])
def test_plot_lr_schedule_rejects_bad_values(bad, message):
    with pytest.raises(ValueError, match=message):
        plotting.plot_lr_schedule(bad)


def test_plot_lr_schedule_rejects_bad_steps_per_epoch():
    with pytest.raises(ValueError, match=r"steps_per_epoch must be an integer >= 1, got 0\. Fix: pass "
                                         r"dataset\.get_dataset_size\(\), or None"):
        plotting.plot_lr_schedule([0.1, 0.2], steps_per_epoch=0)


# ---- plot_segmentation -----------------------------------------------------------------------------------

def test_plot_segmentation_rows_columns_and_ignore_in_white():
    images = np.random.default_rng(1).random((2, 3, 16, 16)).astype(np.float32)
    labels = np.zeros((2, 16, 16), np.int32)
    labels[:, 4:8, 4:8] = 2
    labels[:, 3, 3:9] = 255
    logits = np.zeros((2, 4, 16, 16), np.float32)
    logits[:, 1] = 1.0  # predicts class 1 everywhere
    fig = plotting.plot_segmentation(images, labels, logits, class_names=("bg", "circle", "rect", "tri"))
    assert len(fig.axes) == 2 * 3
    assert titles(fig)[:3] == ["image", "ground truth", "prediction"]
    truth_image = fig.axes[1].images[0]
    rgba = truth_image.to_rgba(truth_image.get_array())
    assert np.allclose(rgba[3, 3, :3], 1.0)  # ignore pixel is white
    assert not np.allclose(rgba[5, 5, :3], 1.0)
    legend_labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend_labels == ["bg", "circle", "rect", "tri", "ignore (255)"]


def test_plot_segmentation_without_preds_has_two_columns():
    fig = plotting.plot_segmentation(np.zeros((3, 8, 8, 3)), np.ones((3, 8, 8), np.int64))
    assert len(fig.axes) == 3 * 2


def test_plot_segmentation_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"labels shape \(2, 8, 9\) does not match the images: expected \(2, 8, 8\)"):
        plotting.plot_segmentation(np.zeros((2, 3, 8, 8)), np.zeros((2, 8, 9)))
    with pytest.raises(ValueError, match=r"preds must be class masks shaped \(N, H, W\)"):
        plotting.plot_segmentation(np.zeros((2, 3, 8, 8)), np.zeros((2, 8, 8)), preds=np.zeros((8, 8)))
    with pytest.raises(ValueError, match="class_names has 2 names but the masks contain class 3"):
        plotting.plot_segmentation(np.zeros((1, 3, 8, 8)), np.full((1, 8, 8), 3), class_names=["a", "b"])



def test_plot_segmentation_rescales_each_image_to_0_1():
    images = np.stack([np.full((4, 4, 3), -5.0), np.linspace(-2, 3, 48).reshape(4, 4, 3)])  # HWC, RGB
    fig = plotting.plot_segmentation(images, np.zeros((2, 4, 4), np.int64))
    assert isinstance(fig, Figure) and fig.dpi <= 80
    shown = [np.asarray(fig.axes[row * 2].images[0].get_array()) for row in (0, 1)]
    assert shown[1].min() == pytest.approx(0.0) and shown[1].max() == pytest.approx(1.0)
    assert np.all(shown[0] == 0.0)  # constant image: no division by zero


@pytest.mark.parametrize("shape", [(8, 8), (2, 4, 8, 8), (2, 1, 8, 8, 1), (0, 8, 8)])
def test_plot_segmentation_rejects_bad_image_shapes(shape):
    with pytest.raises(ValueError, match="images"):
        plotting.plot_segmentation(np.zeros(shape), np.zeros((2, 8, 8), np.int64))


# ---- plot_bars -------------------------------------------------------------------------------------------

def test_plot_bars_labels_each_bar_with_its_value():
    fig = plotting.plot_bars({"graph": 1.25, "pynative": 3.5}, "Step time", "seconds")
    (ax,) = fig.axes
    assert [p.get_height() for p in ax.patches] == [1.25, 3.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["graph", "pynative"]
    assert [t.get_text() for t in ax.texts] == ["1.25", "3.5"]
    assert ax.get_ylabel() == "seconds" and ax.get_title() == "Step time"


@pytest.mark.parametrize("bad, error, message", [
    ({}, ValueError, "non-empty dict"), ([1, 2], TypeError, "non-empty dict"),
    ({"a": "fast"}, TypeError, r"values\['a'\] must be a number"),
    ({"a": float("inf")}, ValueError, "not a finite number"),
])
def test_plot_bars_rejects_bad_values(bad, error, message):
    with pytest.raises(error, match=message):
        plotting.plot_bars(bad, "t", "s")
