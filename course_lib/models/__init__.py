"""For learners: the networks the lessons use: LeNet-5 (the programming guide's "Training"), the ResNet family (the ResNet-50
migration example), a small segmentation FCN."""
from course_lib.models.lenet import LeNet5, lenet5
from course_lib.models.resnet import ResNet, ResidualBlock, ResidualBlockBase, resnet18, resnet34, resnet50, resnet101
from course_lib.models.segmentation import SegmentationFCN, segmentation_fcn

__all__ = [
    "LeNet5", "lenet5",
    "ResNet", "ResidualBlock", "ResidualBlockBase", "resnet18", "resnet34", "resnet50", "resnet101",
    "SegmentationFCN", "segmentation_fcn",
]
