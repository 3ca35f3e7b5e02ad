import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import re

import mindspore as ms
import mindspore.dataset as ds
import mindspore.graph.api as ms_graph_api
import numpy as np
import pytest
from mindspore import nn
from mindspore.train import Accuracy

from course_lib.train.callbacks import LossRecorder
from course_lib.train.checkpoint import load_checkpoint
from course_lib.train.trainer import BEST_CHECKPOINT_NAME, MAX_LOSS_SCALE, Trainer, get_grad_reducer

FEATURES, BATCH, SAMPLES = 8, 8, 48  # 6 steps per epoch


def make_data(samples=SAMPLES, seed=0, batch=BATCH, columns=("image", "label")):
    """A linearly separable 2-class problem: label = (x0 + x1 > 0)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    return ds.NumpySlicesDataset({columns[0]: x, columns[1]: y}, shuffle=False).batch(batch)


def make_net(seed=1):
    ms.set_seed(seed)
    return nn.SequentialCell(nn.Dense(FEATURES, 16), nn.ReLU(), nn.Dense(16, 2))


def make_trainer(net=None, loss_fn=None, **kwargs):
    net = net if net is not None else make_net()
    optimizer = kwargs.pop("optimizer", None) or nn.Momentum(net.trainable_params(), 0.1, 0.9)
    kwargs.setdefault("progress", False)
    kwargs.setdefault("jit", False)
    return Trainer(net, loss_fn if loss_fn is not None else nn.CrossEntropyLoss(), optimizer,
                   kwargs.pop("train_dataset", None) or make_data(), **kwargs)


def weights_of(net):
    return {p.name: p.asnumpy().copy() for p in net.trainable_params()}


# ------------------------------------------------------------------------------------------ training
def test_single_loss_trains_and_records_history():
    trainer = make_trainer()
    history = trainer.train(2)
    assert history is trainer.history and isinstance(history, LossRecorder)
    assert trainer.steps_per_epoch == 6 and trainer.global_step == 12 and trainer.skipped_steps == 0
    assert len(history.step_loss) == 12 and history.epochs == [1, 2] and history.steps_per_epoch == 6
    np.testing.assert_allclose(history.epoch_loss, [np.mean(history.step_loss[i:i + 6]) for i in (0, 6)])
    assert history.metrics == {}  # one loss, no eval set: nothing else to record
    assert trainer.loss_names == ("loss",)
    assert len(trainer.epoch_seconds) == 2 and len(trainer.step_seconds) == 12
    assert all(seconds > 0 for seconds in trainer.step_seconds + trainer.epoch_seconds)
    trainer.train(1)  # a second call continues the epoch count
    assert history.epochs == [1, 2, 3] and trainer.global_step == 18
    assert history.epoch_loss[-1] < 0.7 * history.epoch_loss[0]


def test_two_losses_are_summed_and_reported_separately():
    trainer = make_trainer(loss_fn=[nn.CrossEntropyLoss(), nn.CrossEntropyLoss(label_smoothing=0.2)])
    assert trainer.loss_names == ("loss1", "loss2")
    batch = next(make_data().create_dict_iterator())
    loss, (loss1, loss2), finite = trainer.train_step(batch["image"], batch["label"])
    assert bool(finite)
    assert float(loss.asnumpy()) == pytest.approx(float(loss1.asnumpy()) + float(loss2.asnumpy()), rel=1e-6)
    assert float(loss1.asnumpy()) != float(loss2.asnumpy())
    history = trainer.train(2)
    assert sorted(history.metrics) == ["loss1", "loss2"] and [e for e, _ in history.metrics["loss1"]] == [1, 2]
    totals = np.array([v for _, v in history.metrics["loss1"]]) + np.array([v for _, v in history.metrics["loss2"]])
    np.testing.assert_allclose(totals, history.epoch_loss, rtol=1e-5)


def test_jit_and_pynative_steps_give_the_same_numbers():
    results = []
    for jit in (True, False):
        trainer = make_trainer(net=make_net(seed=3), jit=jit)
        trainer.train(1)
        results.append((trainer.history.step_loss, weights_of(trainer.net)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    for name, value in results[0][1].items():
        np.testing.assert_allclose(value, results[1][1][name], rtol=1e-5, atol=1e-6)


def test_graph_mode_context_gives_the_same_training_and_evaluation():
    # the course's default config runs in graph mode (init_env: context_mode graph)
    results, previous_mode = [], ms.get_context("mode")
    for mode in (ms.GRAPH_MODE, ms.PYNATIVE_MODE):
        ms.set_context(mode=mode)
        try:
            trainer = make_trainer(net=make_net(seed=3), jit=True, eval_dataset=make_data(samples=16),
                                   metric=Accuracy())
            trainer.train(1)
        finally:
            ms.set_context(mode=previous_mode)
        results.append((trainer.history.step_loss, trainer.best_metric))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    assert results[0][1] == results[1][1]


@pytest.mark.parametrize("jit", [True, False])
def test_overflowing_loss_scale_skips_every_update(jit):
    # float16 compute overflows (max 65504) with loss_scale 2**100; float32 gradients would not (see lesson 06).
    net = make_net()
    net.to_float(ms.float16)
    before = weights_of(net)
    trainer = make_trainer(net=net, loss_scale=2.0 ** 100, jit=jit, train_dataset=make_data(samples=16))
    trainer.train(1)
    assert trainer.skipped_steps == trainer.global_step == 2
    for name, value in weights_of(net).items():
        np.testing.assert_array_equal(value, before[name])
    # the same float16 network with a moderate scale does update
    trainer = make_trainer(net=net, loss_scale=1024.0, train_dataset=make_data(samples=16))
    trainer.train(1)
    assert trainer.skipped_steps == 0
    assert any(not np.array_equal(value, before[name]) for name, value in weights_of(net).items())


def test_overflow_check_is_on_exactly_when_a_loss_scale_is_used():
    assert make_trainer().overflow_check is False
    assert make_trainer(loss_scale=1024.0).overflow_check is True
    assert make_trainer(overflow_check=True).overflow_check is True
    assert make_trainer(loss_scale=1024.0, overflow_check=False).overflow_check is False
    with pytest.raises(TypeError, match="overflow_check must be True or False, got 'yes'"):
        make_trainer(overflow_check="yes")


def _data_with_inf(samples=16):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(samples, FEATURES)).astype(np.float32)
    x[9, 0] = np.inf  # second batch
    y = (rng.random(samples) > 0.5).astype(np.int32)
    return ds.NumpySlicesDataset({"image": x, "label": y}, shuffle=False).batch(BATCH)


@pytest.mark.parametrize("jit", [True, False])
def test_without_overflow_check_a_non_finite_loss_stops_training_with_an_error(jit):
    trainer = make_trainer(train_dataset=_data_with_inf(), jit=jit)
    with pytest.raises(FloatingPointError, match=r"step 2 \(epoch 1\): the training loss is nan.*overflow_check=True"):
        trainer.train(1)
    assert trainer.global_step == 2 and trainer.skipped_steps == 0  # the second step met the inf


@pytest.mark.parametrize("jit", [True, False])
def test_with_overflow_check_the_same_step_is_skipped_and_counted(jit):
    net = make_net()
    trainer = make_trainer(net=net, train_dataset=_data_with_inf(), jit=jit, overflow_check=True)
    trainer.train(1)
    assert trainer.skipped_steps == 1 and trainer.global_step == 2
    assert all(np.isfinite(value).all() for value in weights_of(net).values())


@pytest.mark.parametrize("loss_scale", [1.0, 2.0 ** 10])
def test_checked_and_unchecked_steps_reach_the_same_weights_on_finite_data(loss_scale):
    results = []
    for check in (True, False):
        net = make_net(seed=3)
        make_trainer(net=net, jit=True, loss_scale=loss_scale, overflow_check=check).train(1)
        results.append(weights_of(net))
    for name, value in results[0].items():
        np.testing.assert_allclose(results[1][name], value, rtol=1e-6, atol=1e-7)


def test_loss_scale_is_undone_before_the_update():
    plain, scaled = make_trainer(net=make_net(seed=5)), make_trainer(net=make_net(seed=5), loss_scale=2.0 ** 20)
    batch = next(make_data().create_dict_iterator())
    for trainer in (plain, scaled):
        for _ in range(3):
            trainer.train_step(batch["image"], batch["label"])
    for name, value in weights_of(plain.net).items():
        np.testing.assert_allclose(value, weights_of(scaled.net)[name], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_loss_scale_survives_a_reused_parameter_id(monkeypatch, jit):
    # The flaky failure of the test above (issue 11): mindspore.amp.StaticLossScaler's scale/unscale are
    # module-level @jit functions whose compile cache key holds id(scale Parameter). When a garbage-collected
    # Trainer's Parameter id was reused by a new Trainer's, the cached graph unscaled the new gradients with the
    # old scale (1.0): 2**20 applied, never undone, weights ~1e3. Memory reuse is down to chance in a full run;
    # here every Parameter id "collides", which made the old Trainer fail every time.
    monkeypatch.setattr(ms_graph_api, "_get_parameter_ids", lambda args, kwargs: "same-id" if any(
        isinstance(arg, ms.Parameter) for arg in list(args) + list(kwargs.values())) else "")
    batch = next(make_data().create_dict_iterator())
    results = {}
    for scale in (1.0, 2.0 ** 20, 1.0):
        trainer = make_trainer(net=make_net(seed=5), loss_scale=scale, jit=jit)
        for _ in range(3):
            loss, _, finite = trainer.train_step(batch["image"], batch["label"])
            assert bool(finite) and float(loss.asnumpy()) < 10
        results.setdefault(scale, []).append(weights_of(trainer.net))
    for name, value in results[1.0][0].items():
        np.testing.assert_allclose(results[2.0 ** 20][0][name], value, rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(results[1.0][1][name], value)


def test_float32_unscale_flushes_to_zero_above_max_loss_scale():
    # why MAX_LOSS_SCALE is 2**126: 1/1e38 is subnormal in float32 and the unscale step returns exact zeros
    grads = (ms.Tensor(np.full(3, 4.0, np.float32)),)
    assert ms.amp.StaticLossScaler(1e38).unscale(grads)[0].asnumpy().tolist() == [0.0, 0.0, 0.0]
    assert ms.amp.StaticLossScaler(MAX_LOSS_SCALE).unscale(grads)[0].asnumpy().tolist() == [2.0 ** -124] * 3


# ------------------------------------------------------------------------------------------ evaluation
def test_evaluation_keeps_the_best_checkpoint(tmp_path):
    trainer = make_trainer(eval_dataset=make_data(samples=32, seed=7), metric=Accuracy(), checkpoint_dir=tmp_path,
                           optimizer=None)
    history = trainer.train(3)
    scores = [value for _, value in history.metrics["accuracy"]]
    assert [epoch for epoch, _ in history.metrics["accuracy"]] == [1, 2, 3] and len(set(scores)) > 1
    assert trainer.best_metric == max(scores) and scores[trainer.best_epoch - 1] == max(scores)
    assert trainer.best_epoch == scores.index(max(scores)) + 1  # the first epoch reaching the best score
    assert trainer.best_checkpoint == tmp_path / BEST_CHECKPOINT_NAME and trainer.best_checkpoint.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [BEST_CHECKPOINT_NAME]  # no temp files left
    fresh = make_net(seed=99)
    saved = load_checkpoint(trainer.best_checkpoint, net=fresh)
    assert int(saved["epoch"].asnumpy()) == trainer.best_epoch
    assert float(saved["accuracy"].asnumpy()) == pytest.approx(trainer.best_metric)
    fresh_trainer = make_trainer(net=fresh, eval_dataset=make_data(samples=32, seed=7), metric=Accuracy())
    assert fresh_trainer.evaluate() == pytest.approx(trainer.best_metric)


def test_evaluate_without_checkpoint_dir_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the migration guide's training script wrote best.ckpt into the working directory
    trainer = make_trainer(eval_dataset=make_data(samples=16), metric=Accuracy())
    trainer.train(1)
    assert trainer.best_checkpoint is None and trainer.best_epoch == 1
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="no eval_dataset/metric"):
        make_trainer().evaluate()


def test_custom_column_names():
    data = make_data(columns=("x", "y"))
    trainer = make_trainer(train_dataset=data, columns=("x", "y"))
    trainer.train(1)
    assert trainer.global_step == 6


def test_progress_bar_and_summary_go_to_stdout(capsys):
    make_trainer(progress=True, eval_dataset=make_data(samples=16), metric=Accuracy()).train(1)
    out = capsys.readouterr().out
    assert "epoch 1: 100%" in out and "6/6" in out
    assert "epoch 1: loss " in out and "accuracy" in out and "new best" in out


# ------------------------------------------------------------------------------------------ grad reducer
def test_grad_reducer_standalone_and_data_parallel():
    weights = make_net().trainable_params()
    previous_mode = ms.get_auto_parallel_context("parallel_mode")
    assert previous_mode == ms.ParallelMode.STAND_ALONE
    assert isinstance(get_grad_reducer(weights), nn.Identity)
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL)
    try:
        reducer = get_grad_reducer(weights)
        assert isinstance(reducer, nn.DistributedGradReducer)
        assert float(reducer.degree.asnumpy()) == 1.0  # 1 / group size: one process, communication not initialised
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL)
        assert isinstance(get_grad_reducer(weights), nn.Identity)  # MindSpore inserts the communication itself there
    finally:
        ms.set_auto_parallel_context(parallel_mode=previous_mode)


# ------------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("loss_scale, error, message", [
    (0, ValueError, "loss_scale must be a finite number >= 1.0 and <= 8.50.*e\\+37, got 0"),
    (-1.0, ValueError, "got -1.0"),
    (0.5, ValueError, "Below 1 the loss would shrink"),
    (float("inf"), ValueError, "got inf"),
    (float("nan"), ValueError, "got nan"),
    (1e38, ValueError, "subnormal float32 that the CPU flushes to 0"),
    ("1024", TypeError, "loss_scale must be a number .*, got '1024' \\(str\\)"),
    (True, TypeError, "loss_scale must be a number .*, got True \\(bool\\)"),
])
def test_bad_loss_scale(loss_scale, error, message):
    with pytest.raises(error, match=message):
        make_trainer(loss_scale=loss_scale)


@pytest.mark.parametrize("epochs", [0, -1])
def test_bad_epochs(epochs):
    with pytest.raises(ValueError, match=f"epochs must be an integer >= 1, got {epochs!r}. Fix: e.g. trainer.train"):
        make_trainer().train(epochs)


@pytest.mark.parametrize("epochs", [1.5, True, "2", None])
def test_epochs_of_the_wrong_type(epochs):
    with pytest.raises(TypeError, match=re.escape(f"epochs must be an integer (>= 1), got {epochs!r}")):
        make_trainer().train(epochs)


def test_bad_constructor_arguments():
    net = make_net()
    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    data = make_data()
    with pytest.raises(TypeError, match=r"net must be a mindspore.nn.Cell, got .*\(function\)"):
        Trainer(lambda x: x, nn.CrossEntropyLoss(), optimizer, data)
    with pytest.raises(ValueError, match="loss_fn is an empty list"):
        Trainer(net, [], optimizer, data)
    with pytest.raises(TypeError, match=r"loss_fn\[1\] must be a loss Cell or callable .* got 'mse' \(str\)"):
        Trainer(net, [nn.CrossEntropyLoss(), "mse"], optimizer, data)
    with pytest.raises(TypeError, match=r"optimizer must be a mindspore.nn.Optimizer, got .*\(list\)"):
        Trainer(net, nn.CrossEntropyLoss(), net.trainable_params(), data)
    other = nn.Momentum(make_net().trainable_params(), 0.1, 0.9)
    with pytest.raises(ValueError, match="optimizer updates parameters that are not trainable parameters of net"):
        Trainer(net, nn.CrossEntropyLoss(), other, data)
    with pytest.raises(TypeError, match=r"train_dataset must be a mindspore.dataset pipeline, got \(1, 2\) \(tuple\)"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, (1, 2))
    with pytest.raises(ValueError, match=r"train_dataset has columns \['x', 'y'\], without \['image', 'label'\]"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, make_data(columns=("x", "y")))
    with pytest.raises(TypeError, match="columns must be a pair of column names .*got 'image' \\(str\\)"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, columns="image")
    with pytest.raises(ValueError, match="train_dataset has no batches"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer,
                ds.NumpySlicesDataset({"image": np.zeros((3, 8), np.float32), "label": np.zeros(3, np.int32)},
                                      shuffle=False).batch(4, drop_remainder=True))
    with pytest.raises(ValueError, match="eval_dataset and metric go together: pass both or neither, .*metric=None"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, eval_dataset=make_data())
    with pytest.raises(ValueError, match="eval_dataset and metric go together"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, metric=Accuracy())
    with pytest.raises(TypeError, match=r"metric must be a mindspore.train.Metric, got 'accuracy' \(str\)"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, eval_dataset=make_data(), metric="accuracy")
    with pytest.raises(ValueError, match="metric_name must not be empty"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, metric_name="")
    with pytest.raises(TypeError, match=r"metric_name must be a str, got 1 \(int\)"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, metric_name=1)
    with pytest.raises(TypeError, match=r"checkpoint_dir must be a path \(str or Path\) or None, got 3 \(int\)"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, checkpoint_dir=3)
    with pytest.raises(TypeError, match=r"jit must be True or False, got 1 \(int\)"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, jit=1)
    with pytest.raises(TypeError, match="progress must be True or False, got 'no'"):
        Trainer(net, nn.CrossEntropyLoss(), optimizer, data, progress="no")
