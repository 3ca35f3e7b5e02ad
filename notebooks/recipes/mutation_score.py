# SPDX-License-Identifier: Apache-2.0
"""Mutation score of the recipes: apply plausible one-line mistakes and check that each recipe's own check fails.

Usage: `python recipes/mutation_score.py [NAME ...] [--workers N] [--markdown FILE]`. Every mutation is an exact
(old line -> new line) edit of one recipe. It is applied to a copy of the recipe in a temporary folder (the old
line must occur exactly once, so the list cannot rot silently), the copy runs like `run_all.py` runs a recipe
(course_lib blocked), and the mutation counts as caught when the copy exits non-zero with the recipe's own check
(a `CHECK FAILED` message, a numpy `assert_allclose` mismatch, or another error the recipe raises on purpose),
not with a crash that any edit could cause (SyntaxError, NameError, ImportError, ...). The exit code is 1 if any
mutation was not caught. tests/test_recipe_mutations.py uses the same functions. Standard library only.
"""
import argparse
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_all  # noqa: E402  (this folder's run_all.py)

# recipe file -> [(what the mistake is, old line, new line)]; lines are exact, indentation included.
MUTATIONS = {
    "batch1_inference_latency.py": [
        ("timed in training mode", '    net.set_train(False)  # inference: moving statistics, no Dropout',
         '    net.set_train(True)'),
        ("warm-up calls timed with the others",
         '        (warm if i < warmup else timed).append((time.perf_counter() - start) * 1000)',
         '        timed.append((time.perf_counter() - start) * 1000)'),
    ],
    "best_checkpoint_callback.py": [
        ("reversed comparison, higher wins",
         '        return score > self.best_score if self.mode == "max" else score < self.best_score',
         '        return score < self.best_score if self.mode == "max" else score < self.best_score'),
        ("reversed comparison, lower wins",
         '        return score > self.best_score if self.mode == "max" else score < self.best_score',
         '        return score > self.best_score if self.mode == "max" else score > self.best_score'),
        ("Model.fit's scores ignored",
         '        results = cb_params.get("eval_results") or cb_params.get("metrics")  # set by Model.fit when it '
         'evaluated',
         '        results = None'),
    ],
    "custom_train_one_step_cell.py": [
        ("sens without the optimizer's loss_scale",
         '    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9, loss_scale=sens if loss_scale is None else '
         'loss_scale)',
         '    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9)'),
        ("missing gradient reducer (msrun)",
         '        grads = self.grad_reducer(grads)  # all-reduce (mean) across ranks; identity on one device',
         '        grads = grads'),
    ],
    "data_augmentation.py": [
        ("no seed",
         '    ds.config.set_seed(seed)  # the random ops draw from this seed: same seed, same augmented images',
         '    pass'),
        ("a flip that moves the label's evidence",
         '    train_ops = [vision.RandomCrop(32, padding=4), vision.RandomHorizontalFlip(),',
         '    train_ops = [vision.RandomCrop(32, padding=4), vision.RandomVerticalFlip(),'),
    ],
    "data_parallel_msrun.py": [
        ("no gradients_mean (sum over ranks)",
         '    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)',
         '    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=False)'),
        ("no sharding (every rank reads everything)",
         '    data = ds.NumpySlicesDataset({"x": x, "y": y, "id": ids}, shuffle=False, num_shards=size, '
         'shard_id=rank)',
         '    data = ds.NumpySlicesDataset({"x": x, "y": y, "id": ids}, shuffle=False)'),
    ],
    "distributed_evaluation.py": [
        ("padding duplicates counted twice", '    _, first = np.unique(indices, return_index=True)',
         '    first = np.arange(len(indices))'),
        ("de-duplication computed but not applied",
         '    return float(correct[first].mean()), float(losses[first].mean()), len(first)',
         '    return float(correct.mean()), float(losses.mean()), len(first)'),
        ("every rank reads shard 0",
         '                                 num_shards=num_shards, shard_id=shard_id).batch(batch_size)',
         '                                 num_shards=num_shards, shard_id=0).batch(batch_size)'),
    ],
    "export_mindir_graphcell.py": [
        ("exported in training mode", '    net.set_train(False)  # export the inference graph',
         '    net.set_train(True)'),
    ],
    "finetune_frozen_layers.py": [
        ("frozen layer left trainable", '        param.requires_grad = False', '        param.requires_grad = True'),
        ("BatchNorm of the frozen part in training mode", '    net.backbone.set_train(False)',
         '    net.backbone.set_train(True)'),
    ],
    "functional_train_step.py": [
        ("gradients not unscaled", '    grads = scaler.unscale(grads)', '    grads = grads'),
        ("update applied on overflow", '    if finite:', '    if True:'),
    ],
    "gradient_accumulation.py": [
        ("sum instead of mean (no divisor)",
         '        optimizer(tuple(a / k for a in accumulated))  # the mean of the k micro-batch gradients',
         '        optimizer(tuple(accumulated))'),
        ("wrong accumulation divisor",
         '        optimizer(tuple(a / k for a in accumulated))  # the mean of the k micro-batch gradients',
         '        optimizer(tuple(a / (k - 1) for a in accumulated))'),
        ("accumulator not reset",
         '        accumulated = [ops.zeros_like(a) for a in accumulated]  # start the next step from zero',
         '        pass'),
    ],
    "gradient_clipping.py": [
        ("clipping before the all-reduce",
         '    grads = all_reduce_mean(rank_grads)  # 1. all-reduce: every rank now holds the same mean gradient',
         '    grads = all_reduce_mean([clip_by_global_norm(unscale(g, scale), max_norm) for g in rank_grads]); '
         'scale = 1.0'),
        ("clipping before unscaling", '    grads = unscale(grads, scale)  # 2. unscale: the true gradient',
         '    grads = unscale(clip_by_global_norm(grads, max_norm), scale)'),
        ("no unscaling", '    grads = unscale(grads, scale)  # 2. unscale: the true gradient', '    grads = grads'),
        ("clip factor without the max (small gradients scaled up)",
         '    factor = max_norm / ops.maximum(norm, max_norm)', '    factor = max_norm / norm'),
        ("all-reduce sums instead of averaging",
         '    return tuple(sum(per_rank) / size for per_rank in zip(*rank_grads))',
         '    return tuple(sum(per_rank) for per_rank in zip(*rank_grads))'),
    ],
    "miou_metric.py": [
        ("missing class-axis check", '        if logits.ndim < 2 or logits.shape[1] != self.num_classes:',
         '        if False:'),
        ("missing label range check", '        if np.any((label[keep] < 0) | (label[keep] >= self.num_classes)):',
         '        if False:'),
        ("union without subtracting the intersection",
         '        union = self.confusion.sum(axis=0) + self.confusion.sum(axis=1) - true_pos',
         '        union = self.confusion.sum(axis=0) + self.confusion.sum(axis=1)'),
    ],
    "model_eval_custom_eval_network.py": [
        ("flip along the wrong axis",
         '        logits = (self.network(image) + self.network(ops.flip(image, (3,)))) / 2',
         '        logits = (self.network(image) + self.network(ops.flip(image, (2,)))) / 2'),
        ("sum instead of mean of the two predictions",
         '        logits = (self.network(image) + self.network(ops.flip(image, (3,)))) / 2',
         '        logits = self.network(image) + self.network(ops.flip(image, (3,)))'),
    ],
    "net_with_loss_multi.py": [
        ("wrong loss weight", '        return self.cls_weight * ce + self.reg_weight * mse, ce, mse',
         '        return self.cls_weight * ce + self.cls_weight * mse, ce, mse'),
        ("trains on one loss only", '        return self.net_with_loss(*inputs)[0]',
         '        return self.net_with_loss(*inputs)[1]'),
    ],
    "onnx_export.py": [
        ("input name differs from what the reader feeds",
         '        ms.onnx.export(net, example, file_name=stem, input_names=["image"], output_names=["logits"])',
         '        ms.onnx.export(net, example, file_name=stem, input_names=["input"], output_names=["logits"])'),
    ],
    "pytorch_resnet_to_mindspore.py": [
        ("BatchNorm momentum copied from PyTorch",
         'BN_MOMENTUM = 0.9  # torch momentum 0.1 == MindSpore momentum 0.9 (MindSpore weighs the old value)',
         'BN_MOMENTUM = 0.1'),
        ("BatchNorm eps differs", '    return msnn.BatchNorm2d(c, eps=1e-5, momentum=BN_MOMENTUM)',
         '    return msnn.BatchNorm2d(c, eps=1e-3, momentum=BN_MOMENTUM)'),
        ("BatchNorm1d not renamed", '    bn_types = (msnn.BatchNorm1d, msnn.BatchNorm2d, msnn.BatchNorm3d)',
         '    bn_types = (msnn.BatchNorm2d, msnn.BatchNorm3d)'),
    ],
    "variable_size_images.py": [
        ("zero-padded to the largest size", '            batch = np.stack([images[i] for i in chunk])',
         '            batch = np.stack([pad_to(images[i], (32, 28)) for i in chunk])'),
        ("results stored at the wrong rows", '        outputs[chunk] = net(Tensor(batch)).asnumpy()',
         '        outputs[:len(chunk)] = net(Tensor(batch)).asnumpy()'),
    ],
    "warmup_cosine_no_decay_bn_bias.py": [
        ("warmup off by one step", '    warmup = [lr_max * (i + 1) / warmup_steps for i in range(warmup_steps)]',
         '    warmup = [lr_max * i / warmup_steps for i in range(warmup_steps)]'),
        ("weight decay on biases", '''def param_groups(net, weight_decay, no_decay=("gamma", "beta", "bias")):''',
         '''def param_groups(net, weight_decay, no_decay=("gamma", "beta")):'''),
        ("groups swapped",
         '''        (not_decayed if param.name.rsplit(".", 1)[-1] in no_decay else decayed).append(param)''',
         '''        (decayed if param.name.rsplit(".", 1)[-1] in no_decay else not_decayed).append(param)'''),
    ],
    "weight_ema.py": [
        ("EMA decay swapped", '            ops.assign(ema, self.decay * ema + (1.0 - self.decay) * weight)',
         '            ops.assign(ema, (1.0 - self.decay) * ema + self.decay * weight)'),
        ("evaluation without the EMA weights", '            p.set_data(ema.value().copy())', '            pass'),
        ("training weights not restored", '            p.set_data(saved)', '            pass'),
        ("backup keeps references, not copies", '        self.backup = [p.value().copy() for p in self.params]',
         '        self.backup = list(self.params)'),
    ],
}

# An exception of one of these kinds means the edit broke the script, not that a check noticed the mistake.
CRASHES = ("SyntaxError", "IndentationError", "NameError", "ImportError", "ModuleNotFoundError", "AttributeError",
           "TypeError", "UnboundLocalError")


def apply_mutation(source, old, new):
    """The source with the one line equal to `old` replaced by `new`; refuses unless `old` occurs exactly once."""
    lines = source.splitlines(keepends=True)
    found = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == old]
    if len(found) != 1:
        raise ValueError(f"mutation line found {len(found)} times (must be exactly once): {old!r}. "
                         f"Fix: update recipes/mutation_score.py after editing the recipe")
    i = found[0]
    lines[i] = new + lines[i][len(lines[i].rstrip("\r\n")):]
    return "".join(lines)


def verdict(code, stdout, stderr):
    """'caught', 'missed' (exit 0) or 'crashed' (an error any broken edit gives)."""
    if code == 0:
        return "missed"
    last = [line for line in stderr.strip().splitlines() if line and not line.startswith(" ")]
    final = last[-1] if last else ""
    if "CHECK FAILED" in stdout + stderr or "AssertionError" in stderr:
        return "caught"
    if final.split(":")[0].split(".")[-1] in CRASHES or "TIMEOUT" in stderr:
        return "crashed"
    return "caught"  # another error the recipe raises on purpose (KeyError/ValueError naming the fix)


def run_mutation(recipe, description, old, new, timeout=300):
    """Apply one mutation to a copy and run it; returns (recipe, description, verdict, seconds, output tail)."""
    path = run_all.RECIPES_DIR / recipe
    mutated = apply_mutation(path.read_text(encoding="utf-8"), old, new)
    folder = Path(tempfile.mkdtemp(prefix="recipe-mutant-"))
    try:
        copy = folder / recipe
        copy.write_text(mutated, encoding="utf-8")
        code, seconds, stdout, stderr = run_all.run_recipe(copy, timeout=timeout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return recipe, description, verdict(code, stdout, stderr), seconds, (stdout[-600:] + stderr[-1500:])


def all_mutations(names=()):
    wanted = {n if n.endswith(".py") else n + ".py" for n in names}
    unknown = wanted - set(MUTATIONS)
    if unknown:
        raise SystemExit(f"no mutations listed for {sorted(unknown)}; listed: {sorted(MUTATIONS)}")
    return [(recipe, *mutation) for recipe, listed in sorted(MUTATIONS.items()) if not wanted or recipe in wanted
            for mutation in listed]


def run_all_mutations(mutations, workers=2):
    """Slowest recipes (msrun) first so the pool stays busy; results in list order."""
    slow = {"custom_train_one_step_cell.py", "data_parallel_msrun.py"}
    order = sorted(range(len(mutations)), key=lambda i: mutations[i][0] not in slow)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {i: pool.submit(run_mutation, *mutations[i]) for i in order}
        return [futures[i].result() for i in range(len(mutations))]


def score_table(results):
    """Per recipe: mutations listed, caught, score; then every mutation with its verdict."""
    per_recipe = {}
    for recipe, _, outcome, _, _ in results:
        listed, caught = per_recipe.get(recipe, (0, 0))
        per_recipe[recipe] = (listed + 1, caught + (outcome == "caught"))
    lines = ["| recipe | mutations | caught | score |", "|---|---:|---:|---:|"]
    for recipe, (listed, caught) in sorted(per_recipe.items()):
        lines.append(f"| {recipe[:-3]} | {listed} | {caught} | {caught / listed:.0%} |")
    total = sum(v[0] for v in per_recipe.values())
    caught = sum(v[1] for v in per_recipe.values())
    lines.append(f"| **all** | {total} | {caught} | {caught / max(total, 1):.0%} |")
    lines += ["", "| recipe | mutation | result | run time (s) |", "|---|---|---|---:|"]
    lines += [f"| {r[:-3]} | {d} | {o} | {s:.1f} |" for r, d, o, s, _ in results]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="recipe names (default: every recipe with listed mutations)")
    parser.add_argument("--workers", type=int, default=2, help="mutants run at the same time (default 2)")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.markdown and not Path(args.markdown).resolve().parent.is_dir():
        parser.error(f"--markdown {args.markdown}: its folder does not exist. Fix: create it first")
    results = run_all_mutations(all_mutations(args.names), args.workers)
    for recipe, description, outcome, _, tail in results:
        if outcome != "caught":
            print(f"{outcome.upper()}: {recipe}: {description}\n{tail}\n", flush=True)
    table = score_table(results)
    print(table)
    if args.markdown:
        temp = Path(f"{args.markdown}.tmp-{os.getpid()}")
        temp.write_text(table + "\n", encoding="utf-8")
        os.replace(temp, args.markdown)
    return 0 if all(r[2] == "caught" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
