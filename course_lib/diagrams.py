"""Explanatory diagrams drawn with matplotlib, so they are reproducible and tested like the rest of course_lib.

Each public function draws one picture a lesson shows (a box-and-arrow diagram, not data) and returns the
``Figure``. The helpers below give every diagram the same look: rounded boxes, short labels, grey arrows.
Add a diagram as a function ``draw_<what>()`` at the end of this file, with a test in tests/test_diagrams.py.
"""
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

#: Same resolution as course_lib.plotting: sharp on screen, light in an executed notebook.
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
    if not (width > 0 and height > 0):
        raise ValueError(f"width and height must be positive inches, got {width!r} x {height!r}.")
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
        raise ValueError(f"role must be one of {sorted(COLORS)}, got {role!r}.")
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
