"""The lessons' diagrams: each draws without error, has the boxes it promises and rejects bad arguments."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib.lab import diagrams  # noqa: E402


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_canvas_and_box_reject_bad_arguments():
    with pytest.raises(ValueError, match=r"width must be a finite number > 0, got 0\.0\. Fix: pass the size in inches"):
        diagrams.new_canvas(0, 2)
    with pytest.raises(TypeError, match=r"height must be a number"):
        diagrams.new_canvas(2, "2")
    fig, ax = diagrams.new_canvas(3, 2)
    with pytest.raises(ValueError, match="role must be one of"):
        diagrams.box(ax, 0, 0, 1, 1, "x", role="nope")
    diagrams.box(ax, 0, 0, 1, 1, "net", role="network")
    diagrams.arrow(ax, (1, 0.5), (2, 0.5), "grads")
    assert _texts(fig) == ["net", "grads"]
    plt.close(fig)


def test_model_wrappers_diagram_names_the_three_training_layers():
    fig = diagrams.draw_model_wrappers()
    texts = " ".join(_texts(fig))
    for name in ("TrainOneStepCell", "WithLossCell", "loss_fn", "optimizer", "WithEvalCell"):
        assert name in texts
    plt.close(fig)


def test_data_parallel_diagram_has_a_shard_and_a_replica_per_rank():
    fig = diagrams.draw_data_parallel(ranks=3)
    texts = _texts(fig)
    assert sum(t.startswith("shard ") for t in texts) == 3
    assert sum(t.startswith("rank ") for t in texts) == 3
    assert any("AllReduce" in t and "(g0 + g1 + g2) / 3" in t for t in texts)
    plt.close(fig)
    for bad, error in ((1, ValueError), (5, ValueError), ("2", TypeError), (True, TypeError)):
        with pytest.raises(error, match="ranks must be an integer"):
            diagrams.draw_data_parallel(ranks=bad)


def test_train_one_step_cell_diagram_names_the_nesting():
    fig = diagrams.draw_train_one_step_cell()
    texts = _texts(fig)
    assert any(t.startswith("TrainOneStepCell(") for t in texts)
    assert any(t.startswith("WithLossCell(") for t in texts)
    assert {"loss_fn", "optimizer", "grads"} <= set(texts)
    plt.close(fig)


def test_sink_size_schedule_continues_where_the_last_epoch_stopped():
    assert diagrams._sink_size_schedule(3, 5, 10) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [0, 1, 2, 3, 4]]
    assert diagrams._sink_size_schedule(4, 3, 10)[3] == [9, 0, 1]
    assert diagrams._sink_size_schedule(2, -1, 3) == [[0, 1, 2], [0, 1, 2]]
    with pytest.raises(ValueError, match="sink_size must be -1"):
        diagrams._sink_size_schedule(2, 0, 3)
    with pytest.raises(ValueError, match="epochs must be an integer >= 1, got 0"):
        diagrams._sink_size_schedule(0, 2, 3)
    fig = diagrams.draw_sink_size_epochs(epochs=4, sink_size=3, dataset_batches=10)
    texts = _texts(fig)
    assert texts[:4] == ["epoch 1", "0", "1", "2"] and "epoch 4" in texts
    plt.close(fig)


def test_resnet_blocks_diagram_shows_both_blocks_and_the_shortcut():
    fig = diagrams.draw_resnet_blocks()
    texts = " ".join(_texts(fig))
    for name in ("ResidualBlockBase", "ResidualBlock (bottleneck)", "1x1 conv, C -> 4C", "shortcut", "+"):
        assert name in texts
    plt.close(fig)
