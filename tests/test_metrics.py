import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import math
import re

import numpy as np
import pytest
from mindspore import Tensor
from mindspore.train import Metric

from course_lib.train.metrics import MIoU

IGN = 255


def logits_for(label_map, num_classes):
    """Logits (N, C, H, W) whose argmax over C is ``label_map`` (N, H, W)."""
    one_hot = np.eye(num_classes, dtype=np.float32)[label_map]          # (N, H, W, C)
    return np.moveaxis(one_hot * 5.0 - 1.0, -1, 1).copy()


# A 1x2x3 image with 3 classes. label row 0: 0 0 1 / row 1: 1 IGN 2 ; pred: 0 1 1 / 2 0 2
LABEL = np.array([[[0, 0, 1], [1, IGN, 2]]], dtype=np.int32)
PRED = np.array([[[0, 1, 1], [2, 0, 2]]], dtype=np.int32)
# counted pixels (label, pred): (0,0) (0,1) (1,1) (1,2) (2,2); the ignored pixel predicted 0 is skipped.
EXPECTED_CM = np.array([[1, 1, 0],
                        [0, 1, 1],
                        [0, 0, 1]])
# IoU_c = TP / (row + col - TP): class 0: 1/(2+1-1)=1/2, class 1: 1/(2+2-1)=1/3, class 2: 1/(1+2-1)=1/2
EXPECTED_IOU = np.array([1 / 2, 1 / 3, 1 / 2])


def test_hand_computed_case_with_an_ignored_pixel():
    metric = MIoU(3)
    metric.update(PRED, LABEL)
    np.testing.assert_array_equal(metric.confusion_matrix, EXPECTED_CM)
    miou = metric.eval()
    assert isinstance(miou, float)
    assert miou == pytest.approx((1 / 2 + 1 / 3 + 1 / 2) / 3)
    np.testing.assert_allclose(metric.per_class_iou, EXPECTED_IOU)


def test_ignored_pixel_is_skipped_whatever_is_predicted_there():
    other = PRED.copy()
    other[0, 1, 1] = 2                      # change only the prediction under the ignored label
    a, b = MIoU(3), MIoU(3)
    a.update(PRED, LABEL)
    b.update(other, LABEL)
    np.testing.assert_array_equal(a.confusion_matrix, b.confusion_matrix)
    assert a.eval() == b.eval()


def test_class_absent_from_labels_and_predictions_is_nan_and_left_out_of_the_mean():
    label = np.array([[[0, 0], [1, 1]]], dtype=np.int32)
    pred = np.array([[[0, 1], [1, 1]]], dtype=np.int32)
    metric = MIoU(4)                        # classes 2 and 3 never appear
    metric.update(pred, label)
    np.testing.assert_array_equal(metric.confusion_matrix, [[1, 1, 0, 0],
                                                            [0, 2, 0, 0],
                                                            [0, 0, 0, 0],
                                                            [0, 0, 0, 0]])
    iou = metric.per_class_iou
    np.testing.assert_allclose(iou[:2], [1 / 2, 2 / 3])
    assert math.isnan(iou[2]) and math.isnan(iou[3])
    assert metric.eval() == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_class_only_predicted_has_iou_zero_and_counts_in_the_mean():
    label = np.array([[[0, 0], [1, 1]]], dtype=np.int32)
    pred = np.array([[[0, 2], [1, 1]]], dtype=np.int32)   # class 2 predicted once, never labelled
    metric = MIoU(3)
    metric.update(pred, label)
    np.testing.assert_array_equal(metric.confusion_matrix, [[1, 0, 1],
                                                            [0, 2, 0],
                                                            [0, 0, 0]])
    np.testing.assert_allclose(metric.per_class_iou, [1 / 2, 1.0, 0.0])
    assert metric.eval() == pytest.approx((1 / 2 + 1 + 0) / 3)


def test_logits_and_label_map_give_the_same_result_for_numpy_and_tensor_inputs():
    results = []
    for pred in (PRED, logits_for(PRED, 3), Tensor(PRED), Tensor(logits_for(PRED, 3))):
        metric = MIoU(3)
        metric.update(pred, Tensor(LABEL))
        np.testing.assert_array_equal(metric.confusion_matrix, EXPECTED_CM)
        results.append(metric.eval())
    assert len(set(results)) == 1


def test_counts_accumulate_over_updates_and_clear_resets():
    metric = MIoU(3)
    metric.update(PRED, LABEL)
    second_label = np.array([[[2, 2], [0, IGN]]], dtype=np.int32)
    second_pred = np.array([[[2, 0], [0, 1]]], dtype=np.int32)
    metric.update(second_pred, second_label)
    # second batch adds (2,2) (2,0) (0,0); its ignored pixel is skipped
    np.testing.assert_array_equal(metric.confusion_matrix, [[2, 1, 0],
                                                            [0, 1, 1],
                                                            [1, 0, 2]])
    # class 0: 2/(3+3-2)=1/2, class 1: 1/(2+2-1)=1/3, class 2: 2/(3+3-2)=1/2
    assert metric.eval() == pytest.approx((1 / 2 + 1 / 3 + 1 / 2) / 3)
    metric.clear()
    np.testing.assert_array_equal(metric.confusion_matrix, np.zeros((3, 3)))
    with pytest.raises(RuntimeError, match="update\\(\\) has not been called"):
        metric.eval()


def test_metric_call_and_confusion_matrix_copy():
    metric = MIoU(3)
    assert isinstance(metric, Metric)
    assert metric(PRED, LABEL) == pytest.approx((1 / 2 + 1 / 3 + 1 / 2) / 3)   # Metric.__call__: clear+update+eval
    metric.confusion_matrix[0, 0] = 99
    assert metric.confusion_matrix[0, 0] == 1


def test_set_indexes_picks_logits_and_label_from_all_outputs():
    loss = Tensor(np.float32(0.5))
    metric = MIoU(3).set_indexes([1, 2])
    metric.update(loss, Tensor(logits_for(PRED, 3)), Tensor(LABEL))   # what Model passes with eval_indexes=None
    np.testing.assert_array_equal(metric.confusion_matrix, EXPECTED_CM)


def test_ignore_label_none_counts_every_pixel():
    label = np.array([[[0, 1]]], dtype=np.int32)
    metric = MIoU(2, ignore_label=None)
    metric.update(np.array([[[0, 0]]], dtype=np.int32), label)
    np.testing.assert_array_equal(metric.confusion_matrix, [[1, 0], [1, 0]])


def test_eval_before_update_raises():
    with pytest.raises(RuntimeError, match="update\\(\\) has not been called"):
        MIoU(4).eval()
    with pytest.raises(RuntimeError, match="update\\(\\) has not been called"):
        MIoU(4).per_class_iou  # noqa: B018


def test_eval_with_only_ignored_pixels_raises():
    metric = MIoU(2)
    metric.update(np.zeros((1, 2, 2), np.int32), np.full((1, 2, 2), IGN, np.int32))
    with pytest.raises(RuntimeError, match="all 4 pixels .* ignore_label=255"):
        metric.eval()


@pytest.mark.parametrize("inputs", [(PRED,), (PRED, LABEL, LABEL), ()])
def test_wrong_number_of_inputs(inputs):
    with pytest.raises(ValueError, match=f"needs 2 inputs \\(pred, label\\), got {len(inputs)}"):
        MIoU(3).update(*inputs)


def test_mismatched_shapes():
    with pytest.raises(ValueError, match=r"pred shape \(1, 2, 2\) does not match label shape \(1, 2, 3\)"):
        MIoU(3).update(np.zeros((1, 2, 2), np.int32), LABEL)
    # logits with the wrong number of classes
    with pytest.raises(ValueError, match=r"pred shape \(1, 4, 2, 3\) .*C = num_classes = 3"):
        MIoU(3).update(logits_for(PRED, 4), LABEL)


def test_non_integer_label_dtype():
    with pytest.raises(ValueError, match="label must hold integer class ids, got dtype float32"):
        MIoU(3).update(PRED, LABEL.astype(np.float32))


def test_float_label_map_prediction_is_rejected():
    with pytest.raises(ValueError, match="read as a predicted label map, but its dtype is float32"):
        MIoU(3).update(PRED.astype(np.float32), LABEL)


@pytest.mark.parametrize("bad", [3, -1, 254])
def test_label_values_outside_range(bad):
    label = LABEL.copy()
    label[0, 0, 0] = bad
    with pytest.raises(ValueError, match=f"label has values outside \\[0, 3\\) .*: {bad}\\."):
        MIoU(3).update(PRED, label)


@pytest.mark.parametrize("bad", [3, -1, 255])
def test_predicted_label_values_outside_range(bad):
    pred = PRED.copy()
    pred[0, 1, 1] = bad                     # even under an ignored label, a class id must be valid
    with pytest.raises(ValueError, match=f"predicted label map has values outside \\[0, 3\\): {bad}\\."):
        MIoU(3).update(pred, LABEL)


def test_bad_input_type():
    with pytest.raises(TypeError, match=r"pred must be a mindspore.Tensor or numpy.ndarray, got 'logits' \(str\)"):
        MIoU(3).update("logits", LABEL)


@pytest.mark.parametrize("num_classes", [0, -2])
def test_bad_num_classes(num_classes):
    with pytest.raises(ValueError, match=f"num_classes must be an integer >= 1, got {num_classes!r}"):
        MIoU(num_classes)


@pytest.mark.parametrize("num_classes", [2.5, True, "4"])
def test_num_classes_of_the_wrong_type(num_classes):
    with pytest.raises(TypeError, match=re.escape(f"num_classes must be an integer (>= 1), got {num_classes!r}")):
        MIoU(num_classes)


@pytest.mark.parametrize("ignore_label", [2.5, "255", True])
def test_bad_ignore_label(ignore_label):
    with pytest.raises(TypeError, match=r"ignore_label must be an integer .* Fix: .*or None"):
        MIoU(3, ignore_label=ignore_label)
