"""Solutions of lesson 07's exercises (the notebook's cells tagged `solution` show the same code)."""

BATCHNORM_LEAVES = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_variance"}


def torch_name_to_mindspore(name):
    """torchvision ResNet state-dict key -> MindSpore parameter name; None for BatchNorm's step counter."""
    module, leaf = name.rsplit(".", 1)
    if leaf == "num_batches_tracked":
        return None
    parts = module.split(".")
    if parts[-1].startswith("bn") or parts[-2:-1] == ["downsample"] and parts[-1] == "1":
        leaf = BATCHNORM_LEAVES[leaf]
    parts = [{"downsample": "down_sample_layer", "fc": "end_point"}.get(part, part) for part in parts]
    return ".".join(parts + [leaf])


def solve_07_1():
    return torch_name_to_mindspore


def solve_07_2():
    torch_momentum, label_smoothing = 0.03, 0.2
    return 1 - torch_momentum, label_smoothing  # nn.CrossEntropyLoss uses PyTorch's label-smoothing convention


def _forgets_downsample(name):
    # maps BatchNorm leaves everywhere but keeps torchvision's module names
    module, leaf = name.rsplit(".", 1)
    if leaf == "num_batches_tracked":
        return None
    return f"{module}.{BATCHNORM_LEAVES.get(leaf, leaf) if 'bn' in module or 'downsample' in module else leaf}"


WRONG = {
    "07.1": [lambda name: name, _forgets_downsample, "layer1.0.bn1.gamma"],
    "07.2": [(0.03, 0.2), (0.97, 0.198), (0.97, 0.2 * 100 / 99), 0.97],
}
