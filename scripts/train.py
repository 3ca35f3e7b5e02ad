"""Train an image classifier from a YAML config: the ResNet-50 migration example's train.py, a straight line over
course_lib.run.

    python scripts/train.py --config my.yaml --epochs 3 --batch_size 16
    python scripts/train.py --model resnet18 --dataset imagefolder --image_size 64 --epochs 2
    python scripts/train.py --config my.yaml --resume          # continue after an interruption
    msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1 --master_port=8118 --log_dir=outputs/msrun \\
          scripts/train.py --device_num 2 --checkpoint_dir outputs/run2

Recipe: Momentum SGD, weight decay on weights only (not BN gamma/beta or biases), optional cosine LR with linear
warmup, label-smoothed cross-entropy. Every save_checkpoint_epochs epochs, rank 0 writes <model>-<epoch>_<steps>.ckpt
(network, optimizer moments and step, epoch) atomically into checkpoint_dir, with run_settings.json (the settings
--resume checks) and logs/rank_<r>.log (one per rank). --resume continues from the newest readable checkpoint:
weights, moments, learning-rate position and data order continue exactly where that epoch ended.
"""
import sys

import course_lib  # noqa: F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before mindspore is imported)
from course_lib.run import cli, fit


def main(argv=None, callbacks=()):
    """Parse the config, train (or serve as msrun's scheduler), save checkpoints; return the final network."""
    argv = sys.argv[1:] if argv is None else list(argv)
    cfg = cli.load(argv, cli.first_paragraph(__doc__), "train.py", __doc__.split("\n\n", 1)[1])
    if cfg is None:  # --help
        return None
    return fit.train(cfg, callbacks, argv)


if __name__ == "__main__":
    sys.exit(cli.run_cli(main))
