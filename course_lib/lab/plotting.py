"""Small matplotlib figures the lessons share: training curves, LR schedules, masks, timings.

Every function checks its input before drawing, returns the ``Figure`` (so tests and notebooks can inspect
or close it) and keeps figures small (``dpi`` <= 80) so executed notebooks stay light.
"""
import math
from collections.abc import Mapping

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from course_lib.i18n import _
from course_lib.validation import check_int

#: Resolution of every figure made here: sharp enough on screen, small enough for a notebook under 2 MB.
FIGURE_DPI = 72

# Mask colours: one per class (tab10 order), so class k always has the same colour in every figure.
_CLASS_COLORS = matplotlib.colormaps["tab10"].colors


def _to_numpy(name: str, value) -> np.ndarray:
    """Accept numpy arrays, lists and MindSpore/PyTorch tensors (anything with ``asnumpy``/``numpy``)."""
    if hasattr(value, "asnumpy"):
        value = value.asnumpy()
    elif hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(_("{name} must be array-like, got {value_type}: {error}").format(
            name=name, value_type=type(value).__name__, error=error)) from None


def _images_to_hwc(images) -> np.ndarray:
    """Return images as (N, H, W) grey or (N, H, W, 3) RGB floats in [0, 1], each min-max rescaled.

    Accepts (N, C, H, W) or (N, H, W, C) with C in {1, 3}, or (N, H, W) grey images. Rescaling each image
    to its own range undoes any normalisation (e.g. MNIST's (x - 0.1307) / 0.3081) for display.
    """
    array = _to_numpy("images", images).astype(np.float64)
    if array.ndim == 4 and array.shape[1] in (1, 3) and array.shape[-1] not in (1, 3):
        array = array.transpose(0, 2, 3, 1)  # CHW -> HWC
    elif array.ndim == 4 and array.shape[1] in (1, 3) and array.shape[1] == array.shape[-1]:
        array = array.transpose(0, 2, 3, 1)  # ambiguous (N, C, H, C): MindSpore pipelines emit CHW
    if array.ndim == 4 and array.shape[-1] == 1:
        array = array[..., 0]
    if not ((array.ndim == 3) or (array.ndim == 4 and array.shape[-1] == 3)):
        raise ValueError(
            _("images must be a batch shaped (N, C, H, W) or (N, H, W, C) with C = 1 or 3, or (N, H, W), got shape "
              "{array_shape}. Fix: for a single image add a batch axis, e.g. image[None].").format(
                  array_shape=tuple(array.shape))
        )
    if array.shape[0] == 0:
        raise ValueError(_("images is an empty batch (N = 0). Fix: pass at least one image."))
    if not np.all(np.isfinite(array)):
        raise ValueError(_("images contain NaN or Inf values. Fix: check the data pipeline or the model output."))
    axes = tuple(range(1, array.ndim))
    low = array.min(axis=axes, keepdims=True)
    span = array.max(axis=axes, keepdims=True) - low
    return (array - low) / np.where(span > 0, span, 1.0)


def _history_to_dict(history) -> dict:
    """Normalise a ``course_lib.train.callbacks.LossRecorder``, its ``as_dict()``, or ``mindspore.train.History``."""
    if hasattr(history, "as_dict"):
        return history.as_dict()
    if hasattr(history, "history") and isinstance(history.history, dict):
        # mindspore.train.History: {'net_output': [per-epoch loss], 'accuracy': [...]}, epochs in .epoch
        raw = history.history
        epochs = list((history.epoch or {}).get("epoch", range(1, len(raw.get("net_output", [])) + 1)))
        return {
            "step_loss": [],
            "epochs": epochs,
            "epoch_loss": [float(v) for v in raw.get("net_output", [])],
            "metrics": {k: list(zip(epochs, map(float, v))) for k, v in raw.items() if k != "net_output"},
            "steps_per_epoch": None,
        }
    if isinstance(history, Mapping):
        known = {"step_loss", "epoch_loss", "epochs", "metrics", "steps_per_epoch"}
        if not known & set(history):
            raise ValueError(
                _("history dict has none of the keys {known}, got {history}. Fix: pass a "
                  "course_lib.train.callbacks.LossRecorder or its as_dict().").format(
                      known=sorted(known), history=sorted(history))
            )
        return dict(history)
    raise TypeError(
        _("history must be a course_lib.train.callbacks.LossRecorder, its as_dict(), or mindspore.train.History, "
          "got {history_type}.").format(history_type=type(history).__name__)
    )


def plot_history(history, keys=("loss",)):
    """Plot training curves: ``"loss"`` (per-step loss plus per-epoch mean) and any recorded metric.

    ``history``: a ``course_lib.train.callbacks.LossRecorder``, its ``as_dict()``, or a ``mindspore.train.History``.
    One axes per key, side by side; an unknown key raises ``ValueError`` listing what was recorded.
    """
    data = _history_to_dict(history)
    if isinstance(keys, str):
        keys = (keys,)
    keys = tuple(keys)
    step_loss = [float(v) for v in data.get("step_loss") or []]
    epoch_loss = [float(v) for v in data.get("epoch_loss") or []]
    epochs = list(data.get("epochs") or range(1, len(epoch_loss) + 1))
    metrics = data.get("metrics") or {}
    available = (["loss"] if (step_loss or epoch_loss) else []) + sorted(metrics)
    if not keys:
        raise ValueError(_("keys is empty. Fix: pass names to plot, available: {available}.").format(
            available=available))
    missing = [key for key in keys if key not in available]
    if missing:
        raise ValueError(
            _("history has no values for {missing}; available: {available}. Fix: pick from the available names "
              "(metrics appear once EvalCallback or LossRecorder.record ran).").format(
                  missing=missing, available=available)
        )
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.0), dpi=FIGURE_DPI, squeeze=False)
    for ax, key in zip(axes.flat, keys):
        if key == "loss":
            steps_per_epoch = data.get("steps_per_epoch")
            if step_loss:
                ax.plot(range(1, len(step_loss) + 1), step_loss, lw=0.8, alpha=0.6, label="step loss")
            if epoch_loss:
                if steps_per_epoch and step_loss:
                    first = epochs[0] - 1 if epochs else 0
                    xs = [(epoch - first) * steps_per_epoch for epoch in epochs]
                else:
                    xs = epochs
                ax.plot(xs, epoch_loss, "o-", lw=1.5, label="epoch mean")
            ax.set_xlabel("step" if step_loss else "epoch")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel("loss")
            ax.legend(fontsize=8)
        else:
            points = metrics[key]
            xs = [epoch for epoch, _ in points]
            ys = [float(value) for _, value in points]
            ax.plot(xs, ys, "o-", color="tab:green")
            ax.set_xlabel("epoch")
            ax.set_ylabel(key)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if ys:
                lower_is_better = "loss" in key.lower()
                best = int(np.argmin(ys) if lower_is_better else np.argmax(ys))
                ax.set_title(f"last {ys[-1]:.4f}, {'min' if lower_is_better else 'max'} {ys[best]:.4f} "
                             f"(epoch {xs[best]})", fontsize=9)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_lr_schedule(lrs, steps_per_epoch=None, title=None):
    """Plot a learning-rate schedule (one value per step); dotted lines mark epochs if ``steps_per_epoch``."""
    values = _to_numpy("lrs", lrs).astype(np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            _("lrs must be a non-empty 1-D sequence (one learning rate per step), got shape {values_shape}. Fix: "
              "pass the list returned by a schedule, e.g. course_lib.train.schedules.*.").format(
                  values_shape=tuple(values.shape))
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(_("lrs contains NaN or Inf. Fix: check the schedule's parameters."))
    if steps_per_epoch is not None:
        steps_per_epoch = check_int("steps_per_epoch", steps_per_epoch, 1,
                                    fix=_("pass dataset.get_dataset_size(), or None"))
    fig, ax = plt.subplots(figsize=(5.0, 2.8), dpi=FIGURE_DPI)
    ax.plot(np.arange(values.size), values, lw=1.5)
    if steps_per_epoch is not None:
        for boundary in range(steps_per_epoch, values.size, steps_per_epoch):
            ax.axvline(boundary, color="0.6", lw=0.8, ls=":")
    ax.set_xlabel("step" + (f" ({steps_per_epoch} per epoch)" if steps_per_epoch else ""))
    ax.set_ylabel("learning rate")
    ax.set_title(title or f"{values.size} steps: {values[0]:.3g} -> {values[-1]:.3g} (max {values.max():.3g})",
                 fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _masks(name: str, masks, count: int | None = None, spatial=None) -> np.ndarray:
    """Check a batch of class masks (N, H, W); (N, K, H, W) scores become their argmax over K."""
    array = _to_numpy(name, masks)
    if array.ndim == 4:
        array = array.argmax(axis=1)
    if array.ndim != 3:
        raise ValueError(
            _("{name} must be class masks shaped (N, H, W) (or (N, K, H, W) scores), got shape {array_shape}. Fix: "
              "for a single mask add a batch axis, e.g. mask[None].").format(name=name, array_shape=tuple(array.shape))
        )
    if count is not None and (array.shape[0] != count or array.shape[1:] != spatial):
        raise ValueError(
            _("{name} shape {array_shape} does not match the images: expected ({count}, {height}, {width}). "
              "Fix: pass masks of the same batch and size as the images.").format(
                  name=name, array_shape=tuple(array.shape), count=count, height=spatial[0], width=spatial[1])
        )
    return array.astype(np.int64)


def plot_segmentation(images, labels, preds=None, class_names=None, ignore_label=255):
    """One row per image: image | ground-truth mask | predicted mask; ``ignore_label`` pixels in white.

    ``images``: (N, C, H, W) / (N, H, W, C) / (N, H, W); ``labels``: (N, H, W) class indices; ``preds``:
    (N, H, W) classes or (N, K, H, W) scores. Returns the Figure with N x (2 or 3) axes.
    """
    pictures = _images_to_hwc(images)
    count, spatial = pictures.shape[0], pictures.shape[1:3]
    truth = _masks("labels", labels, count, spatial)
    predicted = None if preds is None else _masks("preds", preds, count, spatial)
    valid = truth[truth != ignore_label]
    num_classes = int(max(valid.max(initial=0), 0 if predicted is None else predicted.max(initial=0))) + 1
    if class_names is not None:
        if len(class_names) < num_classes:
            raise ValueError(
                _("class_names has {n_class_names} names but the masks contain class {max_class}. Fix: pass "
                  "one name per class (e.g. course_lib.data.datasets.SHAPES_CLASSES).").format(
                      n_class_names=len(class_names), max_class=num_classes - 1)
            )
        num_classes = len(class_names)
    if num_classes > len(_CLASS_COLORS):
        raise ValueError(_("plot_segmentation colours at most {n_class_colors} classes, got {num_classes}.").format(
            n_class_colors=len(_CLASS_COLORS), num_classes=num_classes))
    negative = [int(v) for v in np.unique(truth) if v < 0 and v != ignore_label]
    if negative:
        raise ValueError(_("labels contain negative classes {negative}. Fix: mark unlabelled pixels "
                           "{ignore_label}.").format(negative=negative, ignore_label=ignore_label))
    # Palette index num_classes is white and stands for "ignore".
    palette = ListedColormap(list(_CLASS_COLORS[:num_classes]) + [(1.0, 1.0, 1.0)])

    def colour_index(mask):
        return np.where(mask == ignore_label, num_classes, np.clip(mask, 0, num_classes - 1))

    columns = ["image", "ground truth"] + ([] if predicted is None else ["prediction"])
    fig, axes = plt.subplots(count, len(columns), figsize=(2.0 * len(columns), 2.0 * count + 0.4),
                             dpi=FIGURE_DPI, squeeze=False)
    for row in range(count):
        panels = [pictures[row], colour_index(truth[row])]
        if predicted is not None:
            panels.append(colour_index(predicted[row]))
        for col, (ax, panel) in enumerate(zip(axes[row], panels)):
            if col == 0:
                ax.imshow(panel, cmap="gray" if panel.ndim == 2 else None, vmin=0.0, vmax=1.0)
            else:
                ax.imshow(panel, cmap=palette, vmin=-0.5, vmax=num_classes + 0.5, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(columns[col], fontsize=9)
    names = class_names if class_names is not None else [str(k) for k in range(num_classes)]
    handles = [Patch(color=_CLASS_COLORS[k], label=str(names[k])) for k in range(num_classes)]
    handles.append(Patch(facecolor="white", edgecolor="0.5", label=f"ignore ({ignore_label})"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.3 / (2.0 * count + 0.4) + 0.04, 1, 1))
    return fig


def plot_bars(values, title, ylabel):
    """Bar chart of named measurements (e.g. seconds per configuration), each bar labelled with its value."""
    if not isinstance(values, Mapping):
        raise TypeError(
            _("values must be a non-empty dict of name -> number, got {values!r}. Fix: e.g. plot_bars({{'graph': "
              "1.2, 'pynative': 3.4}}, 'Step time', 'seconds').").format(values=values)
        )
    if not values:
        raise ValueError(
            _("values must be a non-empty dict of name -> number, got {values!r}. Fix: e.g. plot_bars({{'graph': "
              "1.2, 'pynative': 3.4}}, 'Step time', 'seconds').").format(values=values)
        )
    names = [str(name) for name in values]
    numbers = []
    for name, value in values.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError(_("values[{name!r}] must be a number, got {value!r}.").format(
                name=name, value=value)) from None
        if not math.isfinite(number):
            raise ValueError(_("values[{name!r}] is {number}, not a finite number. Fix: re-run the "
                               "measurement.").format(name=name, number=number))
        numbers.append(number)
    fig, ax = plt.subplots(figsize=(max(3.5, 0.9 * len(names) + 1.5), 3.0), dpi=FIGURE_DPI)
    bars = ax.bar(names, numbers, color=[_CLASS_COLORS[i % len(_CLASS_COLORS)] for i in range(len(names))])
    ax.bar_label(bars, labels=[f"{n:.3g}" for n in numbers], fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    ax.margins(y=0.15)
    if len(names) > 4:
        ax.tick_params(axis="x", labelrotation=30)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
