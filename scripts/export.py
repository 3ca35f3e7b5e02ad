"""Export a classifier checkpoint written by scripts/train.py to MindIR, for inference without the Python network
(the ResNet-50 migration example's export.py, a straight line over course_lib.run).

    python scripts/export.py --config my.yaml --checkpoint_path outputs/checkpoints/lenet5-5_45.ckpt
    python scripts/export.py --config my.yaml --output lenet5.mindir     # newest checkpoint in checkpoint_dir

The network is built from the same keys as scripts/train.py (model, dataset, image_size, num_classes) and loaded
strictly from the checkpoint. The MindIR file takes any batch size; course_lib.inference.load_mindir runs it.
"""
import sys
from pathlib import Path

import course_lib  # noqa: F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before mindspore is imported)
from course_lib.i18n import _
from course_lib.run import cli, factory

OUTPUT_HELP = ("--output FILE: the .mindir file to write (default: the checkpoint's name with .mindir, beside it). "
               "An existing file is kept unless --overwrite true.")


def split_output(argv) -> tuple:
    """``(output or None, the other arguments)``: ``--output`` is export.py's own option, not a config key."""
    rest, output, i = [], None, 0
    while i < len(argv):
        if argv[i] == "--output":
            if i + 1 >= len(argv) or argv[i + 1].startswith("--") or not argv[i + 1].strip():
                raise ValueError(_("--output needs a file name, e.g. --output lenet5.mindir."))
            output, i = argv[i + 1], i + 2
        elif argv[i].startswith("--output="):
            output, i = argv[i].split("=", 1)[1], i + 1
            if not output.strip():
                raise ValueError(_("--output needs a file name, e.g. --output=lenet5.mindir."))
        else:
            rest.append(argv[i])
            i += 1
    return output, rest


def main(argv=None):
    """Export and print the MindIR path; returns it."""
    argv = sys.argv[1:] if argv is None else list(argv)
    output, argv = split_output(argv)
    cfg = cli.load(argv, cli.first_paragraph(__doc__), "export.py", __doc__.split("\n\n", 1)[1], OUTPUT_HELP)
    if cfg is None:  # --help
        return None
    factory.check_classification_config(cfg)
    checkpoint = factory.resolve_checkpoint(cfg)
    target = Path(output).expanduser() if output else checkpoint.with_suffix(".mindir")
    if target.suffix != ".mindir":
        raise ValueError(_("--output must end with .mindir, got {target_name!r}. Fix: e.g. --output {name}.").format(
            target_name=target.name, name=target.with_suffix('.mindir').name))
    from course_lib.paths import relative

    if target.exists() and not cfg.overwrite:
        raise FileExistsError(_("{target} already exists. Fix: --output another file name, or --overwrite true to "
                                "replace it.").format(target=relative(target)))

    from course_lib.inference import export_mindir
    from course_lib.run.env import init_env
    from course_lib.train.checkpoint import load_checkpoint

    init_env(cfg)
    net = factory.create_network(cfg)
    load_checkpoint(checkpoint, net, strict=True)
    path = export_mindir(net, factory.example_input(cfg), target, dynamic_batch=True)
    print(_("exported {checkpoint} -> {path} (MindIR, input [N, {channels}, {image_size}, "
            "{image_size}])").format(
                checkpoint=relative(checkpoint), path=relative(path),
                channels=factory.in_channels(cfg), image_size=cfg.image_size), flush=True)
    return path


if __name__ == "__main__":
    sys.exit(cli.run_cli(main))
