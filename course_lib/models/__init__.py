"""For learners: the networks the lessons use: LeNet-5 (the programming guide's "Training"), the ResNet family (the
ResNet-50 migration example), a small segmentation FCN; and ``check_image_size``, the 32-pixel rule they impose."""
from course_lib.i18n import _
from course_lib.models.lenet import LENET_INPUT_SIZE, LeNet5, lenet5
from course_lib.models.resnet import (
    MIN_INPUT_SIZE,
    ResidualBlock,
    ResidualBlockBase,
    ResNet,
    resnet18,
    resnet34,
    resnet50,
    resnet101,
)
from course_lib.models.segmentation import SegmentationFCN, segmentation_fcn

__all__ = [
    "LeNet5", "lenet5",
    "ResNet", "ResidualBlock", "ResidualBlockBase", "resnet18", "resnet34", "resnet50", "resnet101",
    "SegmentationFCN", "segmentation_fcn", "check_image_size",
]


def check_image_size(model: str, image_size: int, fix: str = "image_size=") -> int:
    """The 32-pixel rule, in one place: LeNet-5 takes exactly 32x32 images (two valid 5x5 convs and two 2x2 pools
    leave the 5x5 maps its Dense layers expect); a ResNet downsamples by 32, so its input side must be at least 32.
    Other models pass. ``fix`` spells the setting in the error: ``"image_size="`` in Python, ``"--image_size "``
    for the scripts. Returns ``image_size``."""
    if model == "lenet5" and image_size != LENET_INPUT_SIZE:
        raise ValueError(_("lenet5 takes {size}x{size} images, got image_size={value}. Fix: {fix}{size}.").format(
            size=LENET_INPUT_SIZE, value=image_size, fix=fix))
    if model.startswith("resnet") and image_size < MIN_INPUT_SIZE:
        raise ValueError(_("{model} downsamples by {size}, so image_size must be >= {size}, got {value}. Fix: "
                           "{fix}{size} or larger ({fix}64 for quick runs, {fix}224 for ImageNet).").format(
            model=model, size=MIN_INPUT_SIZE, value=image_size, fix=fix))
    return image_size
