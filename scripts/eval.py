"""Evaluate a classifier checkpoint and print its top-1 and top-5 accuracy (the ResNet-50 migration example's
eval.py, a straight line over course_lib.run).

    python scripts/eval.py --config my.yaml --checkpoint_path outputs/checkpoints/resnet18-2_10.ckpt
    python scripts/eval.py --config my.yaml          # newest checkpoint of the model in checkpoint_dir

Uses the same keys as scripts/train.py (model, dataset, data_path, image_size, num_classes, batch_size, ...).
The validation split is read in order, keeping the last partial batch, so every image counts once.
"""
import sys

import course_lib  # noqa: F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before mindspore is imported)
from course_lib.i18n import _
from course_lib.run import cli, factory


def main(argv=None) -> dict:
    """Evaluate and print ``top_1_accuracy`` / ``top_5_accuracy``; returns the metrics dict."""
    argv = sys.argv[1:] if argv is None else list(argv)
    cfg = cli.load(argv, cli.first_paragraph(__doc__), "eval.py", __doc__.split("\n\n", 1)[1])
    if cfg is None:  # --help
        return {}
    factory.check_classification_config(cfg)
    path = factory.resolve_checkpoint(cfg)

    from course_lib.paths import relative
    from course_lib.run.env import init_env
    from course_lib.train.checkpoint import load_checkpoint

    init_env(cfg)
    dataset = factory.create_dataset(cfg, train=False)
    net = factory.create_network(cfg)
    load_checkpoint(path, net, strict=True)
    net.set_train(False)
    metrics = {"top_1_accuracy", "top_5_accuracy"} if cfg.num_classes > 5 else {"top_1_accuracy"}
    result = factory.create_model(cfg, net, metrics=metrics).eval(dataset, dataset_sink_mode=False)
    result = {name: float(result[name]) for name in sorted(result)}
    shown = ", ".join(f"{name} {value:.4f}" for name, value in result.items())
    print(_("result: {shown} ({model}, {batches} batches) ckpt={path}").format(
        shown=shown, model=cfg.model, batches=dataset.get_dataset_size(), path=relative(path)),
        flush=True)
    return result


if __name__ == "__main__":
    sys.exit(cli.run_cli(main))
