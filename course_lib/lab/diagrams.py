"""Explanatory diagrams drawn with matplotlib, so they are reproducible and tested like the rest of course_lib.

Each public function draws one picture a lesson shows (a box-and-arrow diagram, not data) and returns the
``Figure``. The helpers below give every diagram the same look: rounded boxes, short labels, grey arrows.
Add a diagram as a function ``draw_<what>()`` at the end of this file, with a test in tests/test_diagrams.py.
"""
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from course_lib.i18n import _
from course_lib.validation import check_int, check_real

#: Same resolution as course_lib.lab.plotting: sharp on screen, light in an executed notebook.
DIAGRAM_DPI = 72

#: Fill colours by role, so a "network" looks the same in every diagram.
COLORS = {
    "network": "#cfe2f3",   # the user's nn.Cell
    "loss": "#fce5cd",      # loss functions / WithLossCell
    "train": "#d9ead3",     # TrainOneStepCell, optimizer
    "data": "#fff2cc",      # datasets, batches
    "comm": "#ead1dc",      # communication (AllReduce)
    "neutral": "#eeeeee",
}


def new_canvas(width: float, height: float, title: str = ""):
    """A figure of ``width`` x ``height`` inches whose axes use the same units (inches), without ticks."""
    width = check_real("width", width, 0, low_open=True, fix=_("pass the size in inches, e.g. 6"))
    height = check_real("height", height, 0, low_open=True, fix=_("pass the size in inches, e.g. 4"))
    fig, ax = plt.subplots(figsize=(width, height), dpi=DIAGRAM_DPI)
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=11)
    return fig, ax


def box(ax, x, y, width, height, text="", role="neutral", fontsize=9, text_va="center", **kwargs):
    """A rounded box with its lower-left corner at (x, y); ``role`` picks the fill colour from COLORS."""
    if role not in COLORS:
        raise ValueError(_("role must be one of {colors}, got {role!r}.").format(colors=sorted(COLORS), role=role))
    patch = FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.02,rounding_size=0.08",
                           facecolor=COLORS[role], edgecolor="#555555", linewidth=1.0, **kwargs)
    ax.add_patch(patch)
    if text:
        ty = y + height / 2 if text_va == "center" else y + height - 0.12
        ax.text(x + width / 2, ty, text, ha="center", va=text_va, fontsize=fontsize)
    return patch


def arrow(ax, start, end, text="", fontsize=8, color="#555555", style="-|>", **kwargs):
    """An arrow from ``start`` to ``end`` (x, y tuples), with an optional label at its middle."""
    patch = FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, color=color, linewidth=1.2,
                            **kwargs)
    ax.add_patch(patch)
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.08, text, ha="center", va="bottom",
                fontsize=fontsize, color=color)
    return patch

# ------------------------------------------------------------------------------------------ diagrams


def draw_model_wrappers():
    """What ``Model(net, loss_fn, optimizer)`` builds: the network inside ``WithLossCell`` inside
    ``TrainOneStepCell`` (training), and the same network inside ``WithEvalCell`` (evaluation)."""
    fig, ax = new_canvas(8.4, 3.3, "What Model(net, loss_fn, optimizer, metrics) builds")
    box(ax, 0.1, 0.2, 5.2, 2.6, "TrainOneStepCell (model.train_network)", role="train", text_va="top")
    box(ax, 0.3, 0.4, 3.2, 1.9, "WithLossCell", role="loss", text_va="top")
    box(ax, 0.5, 0.6, 1.3, 1.1, "net\n(your Cell)", role="network")
    box(ax, 2.1, 0.6, 1.2, 1.1, "loss_fn", role="loss")
    arrow(ax, (1.8, 1.15), (2.1, 1.15))
    box(ax, 3.8, 0.6, 1.3, 1.1, "optimizer\n(grads ->\nnew weights)", role="train", fontsize=8)
    arrow(ax, (3.5, 1.15), (3.8, 1.15), "grads")
    box(ax, 5.6, 0.2, 2.7, 2.6, "WithEvalCell (model.eval_network)", role="neutral", text_va="top", fontsize=8)
    box(ax, 5.8, 0.6, 1.0, 1.1, "net\n(same\nobject)", role="network", fontsize=8)
    box(ax, 7.0, 0.6, 1.1, 1.1, "loss_fn", role="loss")
    arrow(ax, (6.8, 1.15), (7.0, 1.15))
    ax.text(6.95, 0.32, "returns (loss, logits, label)", ha="center", fontsize=7)
    return fig


def draw_data_parallel(ranks: int = 2):
    """Lesson 08: data parallel (数据并行): one shard per rank, one replica per rank, AllReduce of the gradients."""
    ranks = check_int("ranks", ranks, 2, 4)
    col = 2.6
    width = 0.4 + col * ranks
    fig, ax = new_canvas(width, 4.8, f"Data parallel on {ranks} ranks")
    box(ax, 0.2, 4.2, width - 0.4, 0.45, "one dataset, split with num_shards / shard_id", role="data")
    for r in range(ranks):
        x = 0.3 + col * r
        arrow(ax, (x + 1.1, 4.2), (x + 1.1, 3.75))
        box(ax, x, 3.25, 2.2, 0.5, f"shard {r} (shard_id={r})", role="data")
        arrow(ax, (x + 1.1, 3.25), (x + 1.1, 2.85))
        box(ax, x, 2.15, 2.2, 0.7, f"rank {r}: same network,\nsame weights", role="network")
        arrow(ax, (x + 0.6, 2.15), (x + 0.6, 1.35))
        ax.text(x + 0.52, 1.75, f"grads g{r}", ha="right", va="center", fontsize=8, color="#555555")
        arrow(ax, (x + 1.6, 1.35), (x + 1.6, 2.15))
        ax.text(x + 1.68, 1.75, "g", ha="left", va="center", fontsize=8, color="#555555")
    mean = " + ".join(f"g{r}" for r in range(ranks))
    box(ax, 0.2, 0.55, width - 0.4, 0.8, f"AllReduce: g = ({mean}) / {ranks}\nevery rank receives the same g",
        role="comm")
    return fig


def draw_train_one_step_cell():
    """Lesson 04: the nesting TrainOneStepCell(WithLossCell(network, loss_fn), optimizer) and one step's data flow."""
    fig, ax = new_canvas(8.4, 3.4, "One training step: what Model builds from network, loss_fn and optimizer")
    box(ax, 0.1, 0.15, 8.2, 2.75, "TrainOneStepCell(net_with_loss, optimizer, sens)", role="train",
        text_va="top")
    box(ax, 0.35, 1.05, 4.1, 1.35, "WithLossCell(network, loss_fn)", role="loss", text_va="top")
    box(ax, 0.55, 1.2, 1.6, 0.65, "network\n(LeNet-5)", role="network")
    box(ax, 2.65, 1.2, 1.6, 0.65, "loss_fn", role="loss")
    arrow(ax, (2.15, 1.52), (2.65, 1.52), "logits")
    box(ax, 4.85, 1.2, 1.45, 0.65, "GradOperation\n(sens)", role="neutral")
    box(ax, 7.0, 1.2, 1.15, 0.65, "optimizer", role="train")
    arrow(ax, (4.45, 1.52), (4.85, 1.52), "loss")
    arrow(ax, (6.3, 1.52), (7.0, 1.52), "grads")
    arrow(ax, (7.55, 1.2), (1.35, 1.2), "", connectionstyle="arc3,rad=-0.25")
    ax.text(4.4, 0.3, "the optimizer updates the network's weights (Parameters)", ha="center", fontsize=8,
            color="#555555")
    ax.text(0.2, 3.05, "inputs: (data, label)", fontsize=8)
    ax.text(8.2, 3.05, "returns: loss", fontsize=8, ha="right")
    return fig


def _sink_size_schedule(epochs: int, sink_size: int, dataset_batches: int) -> list[list[int]]:
    """The batch numbers each epoch trains on with ``Model.train(epochs, data, dataset_sink_mode=True,
    sink_size=sink_size)`` on Ascend/GPU: one stream of batches, pass after pass; each epoch takes the next
    ``sink_size`` of them (``sink_size=-1``: each epoch is one whole pass)."""
    epochs = check_int("epochs", epochs, 1)
    dataset_batches = check_int("dataset_batches", dataset_batches, 1)
    sink_size = check_int("sink_size", sink_size, -1, fix=_("pass -1 (whole data set) or a positive int"))
    if sink_size == 0:
        raise ValueError(_("sink_size must be -1 (whole data set) or a positive int, got {sink_size!r}.").format(
            sink_size=sink_size))
    per_epoch = dataset_batches if sink_size == -1 else sink_size
    return [[(epoch * per_epoch + i) % dataset_batches for i in range(per_epoch)] for epoch in range(epochs)]


def draw_sink_size_epochs(epochs: int = 3, sink_size: int = 5, dataset_batches: int = 10):
    """Lesson 04 / appendix A4: which batches each epoch receives under ``sink_size`` (one row per epoch;
    the colour changes with each new pass over the data set)."""
    schedule = _sink_size_schedule(epochs, sink_size, dataset_batches)
    per_epoch = len(schedule[0])
    cell = 0.42
    width, height = 1.3 + per_epoch * cell + 0.2, 0.5 + epochs * (cell + 0.1) + 0.1
    fig, ax = new_canvas(max(width, 6.0), height,
                         f"sink_size={sink_size}, {dataset_batches}-batch data set: batches of each epoch")
    position = 0
    for epoch, batches in enumerate(schedule):
        y = height - 0.45 - (epoch + 1) * (cell + 0.1) + 0.1
        ax.text(1.2, y + cell / 2, f"epoch {epoch + 1}", ha="right", va="center", fontsize=9)
        for i, batch in enumerate(batches):
            role = "data" if (position // dataset_batches) % 2 == 0 else "network"
            box(ax, 1.3 + i * cell, y, cell - 0.06, cell, str(batch), role=role, fontsize=8)
            position += 1
    ax.text(1.3, 0.08, "colour: 1st, 2nd, … pass over the data set", fontsize=8, color="#555555")
    return fig


def draw_resnet_blocks():
    """ResNet's two residual blocks side by side: the basic block (ResNet-18/34) and the bottleneck block
    (ResNet-50/101/152), each with its shortcut and the addition before the last ReLU."""
    fig, ax = new_canvas(8.0, 5.0, "ResNet blocks: basic (left) vs bottleneck (right)")
    columns = (
        (0.4, "ResidualBlockBase (basic)\nResNet-18/34",
         ["3x3 conv, C -> C\nBN, ReLU", "3x3 conv, C -> C\nBN"], "identity, or 1x1 conv + BN\nif shape changes"),
        (4.4, "ResidualBlock (bottleneck)\nResNet-50/101/152",
         ["1x1 conv, 4C -> C\nBN, ReLU", "3x3 conv, C -> C\nBN, ReLU", "1x1 conv, C -> 4C\nBN"],
         "identity, or 1x1 conv + BN\nif shape changes"),
    )
    for x, title, layers, shortcut in columns:
        ax.text(x + 1.1, 4.55, title, ha="center", va="center", fontsize=9)
        top, height, gap = 3.95, 0.62, 0.25
        box(ax, x + 0.35, top, 1.5, 0.3, "input x", role="data", fontsize=8)
        y = top
        for layer in layers:
            arrow(ax, (x + 1.1, y), (x + 1.1, y - gap))
            y -= gap + height
            box(ax, x + 0.2, y, 1.8, height, layer, role="network", fontsize=8)
        arrow(ax, (x + 1.1, y), (x + 1.1, y - gap))
        y -= gap + 0.36
        box(ax, x + 0.75, y, 0.7, 0.36, "+", role="neutral", fontsize=11)
        arrow(ax, (x + 1.1, y), (x + 1.1, y - gap))
        box(ax, x + 0.5, y - gap - 0.3, 1.2, 0.3, "ReLU", role="network", fontsize=8)
        # the shortcut: from the input, down the right-hand side, into the "+"
        arrow(ax, (x + 1.85, top + 0.15), (x + 2.45, top + 0.15), style="-")
        arrow(ax, (x + 2.45, top + 0.15), (x + 2.45, y + 0.18), style="-")
        arrow(ax, (x + 2.45, y + 0.18), (x + 1.45, y + 0.18))
        ax.text(x + 2.55, (top + y) / 2, "shortcut:\n" + shortcut, ha="left", va="center", fontsize=7,
                color="#555555")
    return fig
