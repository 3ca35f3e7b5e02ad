"""The lessons' diagrams: each draws without error, has the boxes it promises and rejects bad arguments."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import diagrams  # noqa: E402


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_canvas_and_box_reject_bad_arguments():
    with pytest.raises(ValueError, match="positive inches"):
        diagrams.new_canvas(0, 2)
    fig, ax = diagrams.new_canvas(3, 2)
    with pytest.raises(ValueError, match="role must be one of"):
        diagrams.box(ax, 0, 0, 1, 1, "x", role="nope")
    diagrams.box(ax, 0, 0, 1, 1, "net", role="network")
    diagrams.arrow(ax, (1, 0.5), (2, 0.5), "grads")
    assert _texts(fig) == ["net", "grads"]
    plt.close(fig)
