"""Evaluate a classifier checkpoint and print top-1/top-5 accuracy: the ResNet-50 migration example's
eval.py, thin over course_lib.

    .venv/bin/python scripts/eval.py --config my.yaml --checkpoint_path outputs/checkpoints/resnet18-2_10.ckpt
    .venv/bin/python scripts/eval.py --config my.yaml          # newest checkpoint of the model in checkpoint_dir

Uses the same keys as scripts/train.py (model, dataset, data_path, image_size, num_classes, batch_size, ...).
The validation split is read in order, keeping the last partial batch, so every image counts once.
"""
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the checkout and scripts/ importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import course_lib  # noqa: E402,F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before mindspore is imported)


def resolve_checkpoint(cfg) -> Path:
    """``checkpoint_path`` if set, else the newest ``<model>-<epoch>_<steps>.ckpt`` in the checkpoint folder."""
    from train import _checkpoint_files, checkpoint_folder

    from course_lib.paths import relative

    if cfg.checkpoint_path:
        return Path(cfg.checkpoint_path).expanduser()
    folder = checkpoint_folder(cfg)
    found = _checkpoint_files(folder, cfg.model)
    if not found:
        raise FileNotFoundError(f"No checkpoint {cfg.model}-*.ckpt in {relative(folder)}. Fix: pass "
                                "--checkpoint_path FILE, or train first with scripts/train.py.")
    return found[0]


def main(argv=None) -> dict:
    """Evaluate and print ``top_1_accuracy`` / ``top_5_accuracy``; returns the metrics dict."""
    from course_lib.config import build_arg_parser, load_config

    argv = sys.argv[1:] if argv is None else list(argv)
    if "-h" in argv or "--help" in argv:
        build_arg_parser(__doc__.splitlines()[0]).print_help()
        return {}
    cfg = load_config(argv=argv)
    from train import (check_classification_config, check_other_output_folders, create_dataset, create_loss,
                       create_network)

    check_classification_config(cfg)
    path = resolve_checkpoint(cfg)
    check_other_output_folders()  # eval writes no file itself; MindSpore may (logs, compile cache)

    from mindspore.train import Model

    from course_lib.checkpoint import load_checkpoint
    from course_lib.env import init_env
    from course_lib.paths import relative

    init_env(cfg)
    dataset = create_dataset(cfg, train=False)
    net = create_network(cfg)
    load_checkpoint(path, net, strict=True)
    net.set_train(False)
    metrics = {"top_1_accuracy", "top_5_accuracy"} if cfg.num_classes > 5 else {"top_1_accuracy"}
    model = Model(net, loss_fn=create_loss(cfg), metrics=metrics)
    result = model.eval(dataset, dataset_sink_mode=False)
    result = {name: float(result[name]) for name in sorted(result)}
    shown = ", ".join(f"{name} {value:.4f}" for name, value in result.items())
    print(f"result: {shown} ({cfg.model}, {dataset.get_dataset_size()} batches) ckpt={relative(path)}", flush=True)
    return result


if __name__ == "__main__":
    from train import run_cli

    sys.exit(run_cli(main))
