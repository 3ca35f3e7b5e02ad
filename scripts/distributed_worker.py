"""Data-parallel LeNet-5 training on the embedded digits: the script every msrun worker runs (lesson 08).

Each rank: ``init_env`` (``init()`` + DATA_PARALLEL + gradients_mean) -> its own shard of the training set
(``num_shards=get_group_size(), shard_id=get_rank()``) -> training with ``Model.train`` (``--mode model``) and/or
``Trainer`` + ``nn.DistributedGradReducer`` (``--mode trainer``) -> reports of what it trained on and a checksum of
its final parameters (``@@report`` lines, see ``course_lib.parallel.launch``) -> ``<out>/<mode>/rank_<r>.ckpt``.

Start it from Python with ``course_lib.parallel.launch.launch`` or by hand:
    msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1 --master_port=8118 --join=True \
          --log_dir=outputs/08/logs scripts/distributed_worker.py --out outputs/08/run --steps 5
msrun also starts a scheduler process that runs this same script; it serves the cluster inside ``init()`` and
exits there, so nothing after ``init_env`` runs in it.
"""
import argparse
import os
import sys
import time

MODES = ("model", "trainer", "both")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for <mode>/rank_<r>.ckpt (created if missing)")
    parser.add_argument("--mode", choices=MODES, default="both",
                        help="model = Model.train, trainer = course_lib Trainer, both = one after the other")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=-1, help="batches per epoch on each rank; -1 = whole shard")
    parser.add_argument("--batch_size", type=int, default=32, help="per rank (global batch = this x ranks)")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=1, help="must be the same on every rank")
    parser.add_argument("--context_mode", choices=("graph", "pynative"), default="graph")
    parser.add_argument("--num_parallel_workers", type=int, default=1, help="MindData threads per rank")
    parser.add_argument("--all_reduce_fusion_config", type=int, nargs="+", default=None,
                        help="split indices of the gradient AllReduce, e.g. 4 (LeNet has 10 gradients)")
    parser.add_argument("--fail_on_rank", type=int, default=-1,
                        help="raise an error on this rank right after init (to see how a job fails)")
    parser.add_argument("--sleep_seconds", type=float, default=0.0,
                        help="sleep this long after init on every rank (to see a timeout)")
    parser.add_argument("--run_tag", default="", help="any text, only to recognise this job's processes")
    args = parser.parse_args(argv)
    # --epochs, --batch_size and --steps are checked by load_config (setup), against the config's RANGES
    if args.num_parallel_workers < 1:
        parser.error(f"--num_parallel_workers must be >= 1, got {args.num_parallel_workers}")
    return args


def setup(args):
    """Run environment from the course's config: device_num = the number of workers msrun started."""
    from mindspore.communication import init

    from course_lib.run.config import load_config
    from course_lib.run.env import init_env

    launched_by_msrun = "MS_ROLE" in os.environ
    device_num = int(os.environ.get("MS_WORKER_NUM", "1")) if launched_by_msrun else 1
    cfg = load_config(seed=args.seed, device_target="CPU", context_mode=args.context_mode, device_num=device_num,
                      batch_size=args.batch_size, epochs=args.epochs, steps_per_epoch=args.steps, lr=args.lr,
                      momentum=args.momentum, all_reduce_fusion_config=args.all_reduce_fusion_config)
    init_env(cfg)  # device_num > 1: init(), DATA_PARALLEL, gradients_mean=True
    if launched_by_msrun and device_num == 1:
        init()  # msrun's scheduler runs this script too and only leaves through init()
    return cfg


def build_dataset(cfg, args):
    from mindspore.communication import get_group_size, get_rank

    from course_lib.data.datasets import create_mnist_dataset

    sharding = {}
    if cfg.device_num > 1:
        sharding = {"num_shards": get_group_size(), "shard_id": get_rank()}
    data = create_mnist_dataset(batch_size=cfg.batch_size, train=True, num_parallel_workers=args.num_parallel_workers,
                                **sharding)
    if cfg.steps_per_epoch > 0:
        data = data.take(cfg.steps_per_epoch)
    return data


def train_with_model(net, cfg, data, recorder):
    from mindspore import nn
    from mindspore.train import Callback, Model

    class LogSteps(Callback):
        def on_train_step_end(self, run_context):
            params = run_context.original_args()
            step = (params.cur_step_num - 1) % params.batch_num + 1
            if step == params.batch_num or step % 10 == 0:
                print(f"model.train epoch {params.cur_epoch_num} step {step}/{params.batch_num} "
                      f"loss {float(params.net_outputs.asnumpy()):.4f}", flush=True)

    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=cfg.lr, momentum=cfg.momentum)
    # In DATA_PARALLEL mode Model's TrainOneStepCell adds nn.DistributedGradReducer by itself.
    model = Model(net, loss_fn=loss, optimizer=optimizer)
    model.train(cfg.epochs, data, callbacks=[recorder.callback(), LogSteps()], dataset_sink_mode=False)


def train_with_trainer(net, cfg, data, recorder, jit):
    from mindspore import nn

    from course_lib.train.trainer import Trainer

    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=cfg.lr, momentum=cfg.momentum)
    trainer = Trainer(net, loss, optimizer, data, jit=jit, progress=False)
    print(f"trainer grad reducer: {type(trainer.grad_reducer).__name__}", flush=True)
    step = trainer.train_step

    def recorded_step(images, labels):
        recorder.record(images, labels)
        return step(images, labels)

    trainer.train_step = recorded_step
    history = trainer.train(cfg.epochs)
    print(f"trainer epoch losses {[round(loss, 4) for loss in history.epoch_loss]}", flush=True)


def run_mode(mode, cfg, args, rank):
    import mindspore as ms

    from course_lib.models import lenet5
    from course_lib.parallel.worker import ShardRecorder, parameter_checksum, print_report
    from course_lib.train.checkpoint import save_checkpoint

    ms.set_seed(cfg.seed)  # same seed on every rank: same initial weights and the same shuffle for the shards
    net = lenet5(num_classes=10)
    data = build_dataset(cfg, args)
    recorder = ShardRecorder()
    start = time.perf_counter()
    if mode == "model":
        train_with_model(net, cfg, data, recorder)
    else:
        train_with_trainer(net, cfg, data, recorder, jit=cfg.context_mode == "graph")
    train_seconds = time.perf_counter() - start
    path = save_checkpoint(net, os.path.join(args.out, mode, f"rank_{rank}.ckpt"))
    print_report(f"{mode}.shard", rank=rank, **recorder.summary())
    print_report(f"{mode}.params", rank=rank, train_seconds=round(train_seconds, 3), steps=data.get_dataset_size(),
                 checkpoint=f"{mode}/{path.name}", **parameter_checksum(net))


def main(argv=None):
    args = parse_args(argv)
    import mindspore as ms

    import course_lib  # noqa: F401  (sets GLOG_v/oneDNN defaults before mindspore is imported)
    from course_lib.i18n import _
    from course_lib.parallel.worker import print_report

    started = time.perf_counter()
    cfg = setup(args)
    rank = cfg.rank_id
    print_report("env", rank=rank, group_size=cfg.device_num, python=sys.executable, pid=os.getpid(),
                 parallel_mode=str(ms.get_auto_parallel_context("parallel_mode")),
                 gradients_mean=bool(ms.get_auto_parallel_context("gradients_mean")),
                 all_reduce_fusion_config=ms.get_auto_parallel_context("all_reduce_fusion_config"),
                 msrun_rank_id=os.environ.get("RANK_ID"))
    if args.sleep_seconds > 0:
        print(_("rank {rank}: sleeping {sleep_seconds} s").format(
            rank=rank, sleep_seconds=args.sleep_seconds), flush=True)
        time.sleep(args.sleep_seconds)
    if rank == args.fail_on_rank:
        raise RuntimeError(_("rank {rank} fails on purpose (--fail_on_rank {fail_on_rank})").format(
            rank=rank, fail_on_rank=args.fail_on_rank))
    modes = ("model", "trainer") if args.mode == "both" else (args.mode,)
    for mode in modes:
        run_mode(mode, cfg, args, rank)
    print_report("done", rank=rank, seconds=round(time.perf_counter() - started, 3))


if __name__ == "__main__":
    main()
