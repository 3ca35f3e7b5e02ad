# SPDX-License-Identifier: Apache-2.0
"""Convert torchvision-named ResNet weights from PyTorch to MindSpore and check the outputs match.

What: a small ResNet is written twice with the same parameter names as torchvision's `resnet18`
  (`conv1`, `bn1`, `layer1.0.conv1`, `layer2.0.downsample.0/1`, `fc`): once in PyTorch, once in MindSpore.
  `convert_state_dict` renames the BatchNorm entries (weight -> gamma, bias -> beta, running_mean ->
  moving_mean, running_var -> moving_variance), drops `num_batches_tracked`, and checks every name and shape.
  BatchNorm1d layers (here in the classifier head) are renamed the same way. `rename=` takes a function for
  names that differ beyond that (here PyTorch's `fc` is MindSpore's `classifier`).
  The script loads the result and checks that both networks give the same logits in eval mode, and, in training
  mode, the same logits and the same updated moving statistics: an eval-only check cannot see a wrong BatchNorm
  momentum (PyTorch's momentum 0.1 is MindSpore's momentum 0.9 = 1 - 0.1).
  (torchvision is not needed: the PyTorch classes below reproduce torchvision's parameter names, so a real
  `torchvision.models.resnet18().state_dict()` follows the same pattern, with more layers and blocks.)
When to use it: migrating a PyTorch model and its pretrained weights to MindSpore.
Tested with: MindSpore 2.10.0 and PyTorch 2.13.0 (CPU).
Lesson: notebooks/07_migrate_resnet_from_pytorch.ipynb
"""
import argparse

import mindspore as ms
import numpy as np
import torch
from mindspore import Tensor, ops
from mindspore import nn as msnn
from torch import nn as tnn


# ----------------------------------------------------------------------------- PyTorch (torchvision layout)
class TorchBasicBlock(tnn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.relu = tnn.ReLU(inplace=True)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class TorchResNet(tnn.Module):
    def __init__(self, widths=(8, 16), num_classes=10):
        super().__init__()
        self.conv1 = tnn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = tnn.BatchNorm2d(widths[0])
        self.relu = tnn.ReLU(inplace=True)
        self.maxpool = tnn.MaxPool2d(3, 2, 1)
        self.layer1 = tnn.Sequential(TorchBasicBlock(widths[0], widths[0], 1))
        self.layer2 = tnn.Sequential(TorchBasicBlock(widths[0], widths[1], 2))
        self.avgpool = tnn.AdaptiveAvgPool2d(1)
        self.head_bn = tnn.BatchNorm1d(widths[1])
        self.fc = tnn.Linear(widths[1], num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(self.head_bn(torch.flatten(self.avgpool(x), 1)))


# ----------------------------------------------------------------------------- MindSpore, same names
def ms_conv(cin, cout, k, stride, padding):
    return msnn.Conv2d(cin, cout, k, stride, pad_mode="pad", padding=padding, has_bias=False)


BN_MOMENTUM = 0.9  # torch momentum 0.1 == MindSpore momentum 0.9 (MindSpore weighs the old value)


def ms_bn(c):
    return msnn.BatchNorm2d(c, eps=1e-5, momentum=BN_MOMENTUM)


class BasicBlock(msnn.Cell):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = ms_conv(cin, cout, 3, stride, 1), ms_bn(cout)
        self.conv2, self.bn2 = ms_conv(cout, cout, 3, 1, 1), ms_bn(cout)
        self.relu = msnn.ReLU()
        self.has_downsample = stride != 1 or cin != cout
        if self.has_downsample:
            self.downsample = msnn.SequentialCell(ms_conv(cin, cout, 1, stride, 0), ms_bn(cout))

    def construct(self, x):
        identity = self.downsample(x) if self.has_downsample else x
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet(msnn.Cell):
    def __init__(self, widths=(8, 16), num_classes=10):
        super().__init__()
        self.conv1, self.bn1, self.relu = ms_conv(3, widths[0], 7, 2, 3), ms_bn(widths[0]), msnn.ReLU()
        self.maxpool = msnn.MaxPool2d(3, 2, pad_mode="pad", padding=1)
        self.layer1 = msnn.SequentialCell(BasicBlock(widths[0], widths[0], 1))
        self.layer2 = msnn.SequentialCell(BasicBlock(widths[0], widths[1], 2))
        self.head_bn = msnn.BatchNorm1d(widths[1], eps=1e-5, momentum=BN_MOMENTUM)
        self.classifier = msnn.Dense(widths[1], num_classes)  # PyTorch calls it fc: see rename= below

    def construct(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.classifier(self.head_bn(ops.mean(x, (2, 3))))


BN_RENAME = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_variance"}


def convert_state_dict(torch_state, ms_net, rename=None):
    """PyTorch state_dict -> {MindSpore name: Parameter}; raises if a name or a shape does not line up.
    rename: optional function applied to every PyTorch name first (e.g. lambda n: n.replace("fc.", "head."))."""
    bn_types = (msnn.BatchNorm1d, msnn.BatchNorm2d, msnn.BatchNorm3d)
    bn_prefixes = {name for name, cell in ms_net.cells_and_names() if isinstance(cell, bn_types)}
    ms_params = {p.name: p for p in ms_net.get_parameters()}
    converted = {}
    for torch_name, value in torch_state.items():
        name = rename(torch_name) if rename else torch_name
        prefix, _, leaf = name.rpartition(".")
        if leaf == "num_batches_tracked":
            continue
        if prefix in bn_prefixes and leaf not in BN_RENAME:
            raise KeyError(f"{torch_name}: unknown BatchNorm entry {leaf!r}; known: {sorted(BN_RENAME)}")
        ms_name = f"{prefix}.{BN_RENAME[leaf]}" if prefix in bn_prefixes else name
        if ms_name not in ms_params:
            raise KeyError(f"{torch_name} -> {ms_name}: no such MindSpore parameter. Fix: pass rename= to map it")
        array = value.detach().cpu().numpy()
        if array.shape != tuple(ms_params[ms_name].shape):
            raise ValueError(f"{torch_name}: shape {array.shape} vs MindSpore {tuple(ms_params[ms_name].shape)}")
        converted[ms_name] = ms.Parameter(Tensor(array), name=ms_name)
    missing = set(ms_params) - set(converted)
    if missing:
        raise KeyError(f"not in the PyTorch state_dict: {sorted(missing)}")
    return converted


def check(condition, message):
    """A self-check that `python -O` keeps (it removes `assert` statements)."""
    if not condition:
        raise SystemExit(f"CHECK FAILED: {message}")


def fc_to_classifier(name):
    return "classifier." + name[len("fc."):] if name.startswith("fc.") else name


def main():
    ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE)
    torch.manual_seed(0)
    torch_net = TorchResNet()
    with torch.no_grad():  # non-trivial BatchNorm statistics and affine parameters, as after training
        for module in torch_net.modules():
            if isinstance(module, (tnn.BatchNorm1d, tnn.BatchNorm2d)):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    torch_net.eval()
    ms_net = ResNet()
    params = convert_state_dict(torch_net.state_dict(), ms_net, rename=fc_to_classifier)
    not_loaded, _ = ms.load_param_into_net(ms_net, params, strict_load=True)
    check(not not_loaded, f"parameters not loaded: {not_loaded}")
    ms_net.set_train(False)

    x = np.random.RandomState(0).randn(4, 3, 32, 32).astype(np.float32)
    with torch.no_grad():
        expected = torch_net(torch.from_numpy(x)).numpy()
    got = ms_net(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    check((got.argmax(axis=1) == expected.argmax(axis=1)).all(), "eval-mode predictions differ")

    # Training mode: batch statistics, and one update of the moving statistics (this is where momentum acts).
    torch_net.train()
    ms_net.set_train(True)
    with torch.no_grad():
        expected_train = torch_net(torch.from_numpy(x)).numpy()
    got_train = ms_net(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got_train, expected_train, rtol=1e-4, atol=1e-4)
    torch_stats = {fc_to_classifier(k): v.numpy() for k, v in torch_net.state_dict().items() if "running_" in k}
    for name, value in torch_stats.items():
        ms_name = name.replace("running_mean", "moving_mean").replace("running_var", "moving_variance")
        moved = ms_net.parameters_dict()[ms_name].asnumpy()
        # MindSpore updates the moving variance with the unbiased batch variance, as PyTorch does.
        np.testing.assert_allclose(moved, value, rtol=1e-4, atol=1e-5, err_msg=f"{ms_name} after one training step")
    bn_count = sum(k.endswith("moving_mean") for k in params)
    print(f"converted {len(params)} tensors ({bn_count} BatchNorms, one of them BatchNorm1d; fc -> classifier by "
          f"rename=); eval-mode logits match PyTorch (max |diff| {np.abs(got - expected).max():.1e}); training-mode "
          f"logits and the updated moving statistics match too (BatchNorm momentum {BN_MOMENTUM} = 1 - 0.1)")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
