"""Does ``MS_DEV_HOST_BLOCKING_RUN=1`` help the @ms.jit train step, and is it harmless in graph mode?

Five processes, one per setting: graph mode and `@ms.jit` (lesson 06's ``Trainer.train_step`` in PyNative mode:
``value_and_grad`` + optimizer, as lesson 00's loop), each with the variable unset and with it set to 1, and the
``Trainer`` with its overflow check (``all_finite``, on by default only with a loss scale above 1) and the variable
set. They time the same training steps interleaved, as
``run.py`` does (one repeat per process in turn, rotating order), and the per-round ratios show the noise.

    python benchmarks/host_blocking.py                       # LeNet-5 b32 and ResNet-18 b16 64 px, 9 repeats
    python benchmarks/host_blocking.py --steps lenet5:32:32 --repeats 15 --out outputs/host_blocking.json
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (imports course_lib first)

#: name -> (worker arguments, what it is)
SETTINGS = {
    "graph_off": (["--mode", "graph", "--host-blocking", "off"], "graph mode, unset"),
    "graph_on": (["--mode", "graph", "--host-blocking", "on"], "graph mode, =1"),
    "jit_off": (["--mode", "pynative", "--host-blocking", "off"], "@ms.jit, unset"),
    "jit_on": (["--mode", "pynative", "--host-blocking", "on"], "@ms.jit, =1"),
    "jit_check_on": (["--mode", "pynative", "--host-blocking", "on"], "@ms.jit + overflow check, =1"),
}
RATIOS = {"graph: =1 vs unset": ("graph_on", "graph_off"),
          "@ms.jit: =1 vs unset": ("jit_on", "jit_off"),
          "@ms.jit unset vs graph unset": ("jit_off", "graph_off"),
          "@ms.jit =1 vs graph unset": ("jit_on", "graph_off"),
          "@ms.jit =1: overflow check vs none": ("jit_check_on", "jit_on")}


def parse_step(text):
    model, batch, size = text.split(":")
    return {"model": model, "batch_size": int(batch), "image_size": int(size)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", nargs="+", type=parse_step, default=[parse_step("lenet5:32:32"),
                                                                         parse_step("resnet18:16:64")],
                        help="model:batch:image_size, e.g. lenet5:32:32 resnet18:16:64")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--target-seconds", type=float, default=0.25)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    threads = args.threads or run.cpu_info()["cores"]
    started = time.perf_counter()

    def log(text):
        print(f"[{time.perf_counter() - started:5.0f} s] {text}", flush=True)

    run_dir = Path(tempfile.mkdtemp(prefix="bench-host-blocking-"))
    workers, found = {}, []
    load_before = run.load_average()
    try:
        for key, (worker_args, _) in SETTINGS.items():
            workers[key] = run.Worker(key, ["--framework", "mindspore", *worker_args, "--threads", str(threads)],
                                      dict(run.ORIGINAL_ENV), run_dir / f"worker-{key}.log")
        for worker in workers.values():
            worker.wait_ready()
        for step in args.steps:
            spec = {"kind": "train_step", "seed": run.SEED, "target_seconds": args.target_seconds, **step}
            participants = [
                run.Participant(key, f"{key}_{step['model']}",
                                {**spec, "api": "jit", "overflow_check": key == "jit_check_on"}
                                if key.startswith("jit") else spec, {"label": label, **step})
                for key, (_, label) in SETTINGS.items()]
            log(f"{step['model']} b{step['batch_size']} {step['image_size']}px, {args.repeats} interleaved repeats")
            run.run_group(workers, participants, args.repeats, log)
            by_key = {p.worker: p for p in participants}
            record = {**step, "seconds_per_step": {key: run.timing_record(p)["median"] for key, p in by_key.items()},
                      "ratios": {name: run.ratio_record(by_key[a], by_key[b]) for name, (a, b) in RATIOS.items()}}
            found.append(record)
            for name, ratio in record["ratios"].items():
                log(f"    {name:<30} {ratio['ratio']:.3f}x (per round {ratio['per_round_min']:.3f}-"
                    f"{ratio['per_round_max']:.3f})")
    finally:
        for worker in workers.values():
            worker.request_exit()
        for worker in workers.values():
            worker.close()
    result = {"cpu_kind": run.cpu_kind(), "threads": threads, "repeats": args.repeats,
              "load_average_before": load_before, "load_average_after": run.load_average(),
              "measured_utc": run.utc_now(), "steps": found,
              "note": "speed ratios (images/s over images/s), ratio of medians; per-round range shows the noise"}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        log(f"wrote {run.scrub_paths(str(args.out))}")
    return result


if __name__ == "__main__":
    main()
