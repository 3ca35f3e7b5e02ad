import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import numpy as np
import pytest
from mindspore import Tensor, nn

from course_lib.models import SegmentationFCN, segmentation_fcn
from course_lib.models.segmentation import SegmentationFCN as DirectSegmentationFCN


def test_factory_and_class_are_exported():
    assert SegmentationFCN is DirectSegmentationFCN
    net = segmentation_fcn()
    assert isinstance(net, SegmentationFCN)
    assert (net.num_classes, net.in_channels) == (4, 3)


@pytest.mark.parametrize("num_classes, in_channels, size", [(4, 3, 64), (2, 1, 32)])
def test_output_is_per_pixel_logits(num_classes, in_channels, size):
    net = SegmentationFCN(num_classes=num_classes, in_channels=in_channels, width=4)
    net.set_train(False)
    x = Tensor(np.random.default_rng(0).random((2, in_channels, size, size), dtype=np.float32))
    logits = net(x)
    assert logits.shape == (2, num_classes, size, size)
    assert logits.dtype == x.dtype
    assert np.isfinite(logits.asnumpy()).all()


def test_width_sets_the_channels_and_parameter_count():
    small = sum(p.size for p in SegmentationFCN(width=4).trainable_params())
    large = sum(p.size for p in SegmentationFCN(width=8).trainable_params())
    assert large > 3 * small                 # conv weights grow with width squared


EXPECTED_DEFAULT_PARAMS = 480_756


def test_default_parameter_count_is_stable():
    # Pinned so a silent architecture change shows up here (and in notebook 05's printed count).
    assert sum(p.size for p in segmentation_fcn().trainable_params()) == EXPECTED_DEFAULT_PARAMS


def test_trains_one_step_on_ignore_labels():
    net = SegmentationFCN(num_classes=3, width=4)
    loss_fn = nn.CrossEntropyLoss(ignore_index=255)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), nn.Adam(net.trainable_params(), 1e-2))
    rng = np.random.default_rng(1)
    x = Tensor(rng.random((2, 3, 16, 16), dtype=np.float32))
    y = rng.integers(0, 3, size=(2, 16, 16)).astype(np.int32)
    y[:, 0, :] = 255
    losses = [float(step(x, Tensor(y)).asnumpy()) for _ in range(3)]
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"num_classes": 1}, ValueError, "num_classes must be an integer >= 2, got 1. Fix: pass e.g. num_classes=4"),
    ({"num_classes": 4.0}, TypeError, r"num_classes must be an integer \(>= 2\), got 4.0 \(float\)"),
    ({"num_classes": True}, TypeError, r"num_classes must be an integer \(>= 2\), got True \(bool\)"),
    ({"in_channels": 0}, ValueError, "in_channels must be an integer >= 1, got 0"),
    ({"width": "16"}, TypeError, r"width must be an integer \(>= 2\), got '16' \(str\)"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        SegmentationFCN(**kwargs)
    with pytest.raises(error, match=message):
        segmentation_fcn(**kwargs)
