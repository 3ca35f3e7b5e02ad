"""A small fully-convolutional segmentation network for the 64x64 "shapes" lesson (lesson 05).

``SegmentationFCN`` works on a coarse grid: a stride-4 stem (two stride-2 convolutions) takes 64x64 to 16x16,
a U-Net on that grid (16 -> 8 -> 4 and back, skip connections, ``nn.Conv2dTranspose`` upsampling) sees the
whole object — needed to tell a circle from a rectangle or a triangle — and the 16x16 logits are upsampled
bilinearly (``ops.interpolate``) to the input size. Measured on 2 CPU cores, this trains several times
faster than a U-Net that keeps full-resolution layers, for the same mIoU on the shapes data.

``RandomFlipTranspose`` is its data augmentation: the 8 symmetries of the square map every shape class onto
itself (a rectangle stays axis-aligned), and without them the network overfits the 320 training images.
"""
import numpy as np
from mindspore import nn, ops

from course_lib.i18n import _
from course_lib.validation import check_int  # absolute: MindSpore's amp rewrite re-executes this module's source

__all__ = ["SegmentationFCN", "segmentation_fcn", "RandomFlipTranspose"]

#: H and W of the input must be multiples of this (stem /4, then two 2x poolings).
SIZE_MULTIPLE = 16


def _check_int(name, value, minimum, example):
    return check_int(name, value, minimum, fix=_("pass e.g. {name}={example}").format(name=name, example=example))


def _conv_bn_relu(in_channels, out_channels, stride=1):
    return [nn.Conv2d(in_channels, out_channels, 3, stride=stride, pad_mode="same", has_bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU()]


def _double_conv(in_channels, out_channels):
    """Two 3x3 convolutions with BatchNorm and ReLU; keeps the spatial size."""
    return nn.SequentialCell(*_conv_bn_relu(in_channels, out_channels), *_conv_bn_relu(out_channels, out_channels))


class SegmentationFCN(nn.Cell):
    """Stride-4 stem + U-Net on the H/4 grid (channels width, 2*width, 4*width) + bilinear upsampling.

    Args:
        num_classes: classes predicted per pixel (>= 2), e.g. 4 for background/circle/rectangle/triangle.
        in_channels: channels of the input image (3 for RGB).
        width: channels on the H/4 grid; the H/8 and H/16 stages use 2x and 4x.

    Input (N, in_channels, H, W) float32 with H and W multiples of 16; output logits (N, num_classes, H, W).
    """

    def __init__(self, num_classes=4, in_channels=3, width=32):
        super().__init__()
        num_classes = _check_int("num_classes", num_classes, 2, 4)
        in_channels = _check_int("in_channels", in_channels, 1, 3)
        width = _check_int("width", width, 2, 32)
        self.num_classes = num_classes
        self.in_channels = in_channels
        self.width = width
        self.stem = nn.SequentialCell(*_conv_bn_relu(in_channels, width // 2, stride=2),
                                      *_conv_bn_relu(width // 2, width, stride=2))
        self.encoder1 = _double_conv(width, width)                 # H/4
        self.encoder2 = _double_conv(width, 2 * width)             # H/8
        self.encoder3 = _double_conv(2 * width, 4 * width)         # H/16
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.up3 = nn.Conv2dTranspose(4 * width, 2 * width, 2, stride=2, has_bias=True)
        self.decoder2 = _double_conv(4 * width, 2 * width)         # H/8, after concatenating the skip
        self.up2 = nn.Conv2dTranspose(2 * width, width, 2, stride=2, has_bias=True)
        self.decoder1 = _double_conv(2 * width, width)             # H/4
        self.head = nn.Conv2d(width, num_classes, 1, has_bias=True)
        self.size_multiple = SIZE_MULTIPLE

    def construct(self, x):
        if x.ndim != 4 or x.shape[2] % self.size_multiple != 0 or x.shape[3] % self.size_multiple != 0:
            raise ValueError("SegmentationFCN expects images (N, C, H, W) with H and W multiples of 16, got shape "
                             + str(x.shape) + ". Fix: resize or pad the images, e.g. to 64x64.")
        skip1 = self.encoder1(self.stem(x))
        skip2 = self.encoder2(self.pool(skip1))
        deep = self.encoder3(self.pool(skip2))
        y = self.decoder2(ops.concat((self.up3(deep), skip2), 1))
        y = self.decoder1(ops.concat((self.up2(y), skip1), 1))
        return ops.interpolate(self.head(y), size=x.shape[2:], mode="bilinear")


def segmentation_fcn(num_classes=4, in_channels=3, width=32):
    """The lesson-05 network: ``SegmentationFCN`` with the width tuned for the 64x64 shapes data."""
    return SegmentationFCN(num_classes=num_classes, in_channels=in_channels, width=width)


class RandomFlipTranspose:
    """Flip left-right, flip up-down and transpose each image together with its label map, each with p=0.5.

    For ``dataset.map(RandomFlipTranspose(seed), input_columns=["image", "label"])`` on batches
    (N, C, H, W) + (N, H, W) or on single samples (C, H, W) + (H, W); square images only. Its own seeded
    generator makes the sequence of transforms repeatable (use ``num_parallel_workers=1`` for that map).
    """

    def __init__(self, seed=0):
        _check_int("seed", seed, 0, 0)
        self._rng = np.random.default_rng(seed)

    def __call__(self, image, label):
        image, label = np.asarray(image), np.asarray(label)
        batched = image.ndim == 4
        if image.ndim not in (3, 4) or label.ndim != image.ndim - 1 or \
                image.shape[:1] * batched + image.shape[-2:] != label.shape[:1] * batched + label.shape[-2:]:
            raise ValueError(_("RandomFlipTranspose expects image (N, C, H, W) with label (N, H, W), or (C, H, W) "
                               "with (H, W); got image {image} and label {label}. Fix: map it over the image and "
                               "label columns together, e.g. input_columns=['image', 'label'].").format(
                image=image.shape, label=label.shape))
        if image.shape[-1] != image.shape[-2]:
            raise ValueError(_("RandomFlipTranspose needs square images (transpose swaps H and W), got "
                               "{height}x{width}. Fix: crop or resize to a square first.").format(
                height=image.shape[-2], width=image.shape[-1]))
        if not batched:
            return self._one(image, label)
        images, labels = zip(*(self._one(one_image, one_label) for one_image, one_label in zip(image, label)))
        return np.stack(images), np.stack(labels)

    def _one(self, image, label):
        flip_lr, flip_ud, transpose = self._rng.random(3) < 0.5
        if flip_lr:
            image, label = image[..., ::-1], label[..., ::-1]
        if flip_ud:
            image, label = image[..., ::-1, :], label[..., ::-1, :]
        if transpose:
            image, label = np.swapaxes(image, -1, -2), np.swapaxes(label, -1, -2)
        return np.ascontiguousarray(image), np.ascontiguousarray(label)
