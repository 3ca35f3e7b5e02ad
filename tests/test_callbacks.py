import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import io

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
import pytest
from mindspore import nn
from mindspore.train import Callback, Model
from mindspore.train.callback import RunContext
from mindspore.train.callback._callback import InternalCallbackParam

from course_lib.train.callbacks import EvalCallback, LossRecorder, ProgressBar, loss_value

OLD_HOOK_NAMES = {"begin", "end", "epoch_begin", "epoch_end", "step_begin", "step_end"}
STEPS_PER_EPOCH = 3


def make_dataset(seed=0, batches=STEPS_PER_EPOCH, batch_size=8):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batches * batch_size, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)  # learnable: the sign of the first feature
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch_size)


def make_model(metrics=("accuracy",), lr=0.5):
    ms.set_seed(1)
    net = nn.Dense(4, 2)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), lr, 0.9)
    return Model(net, loss, opt, metrics=set(metrics) if metrics else None)


def fake_run_context(epoch, epoch_num, network=None):
    params = {"cur_epoch_num": epoch, "epoch_num": epoch_num, "batch_num": STEPS_PER_EPOCH,
              "cur_step_num": epoch * STEPS_PER_EPOCH, "network": network, "net_outputs": ms.Tensor(0.5)}
    return RunContext(InternalCallbackParam(params))


def test_only_modern_hooks_so_model_fit_accepts_them():
    # Model.fit raises ValueError for custom callbacks that define the deprecated begin/epoch_end/... names.
    class OldStyle(Callback):
        def epoch_end(self, run_context):
            pass

    with pytest.raises(ValueError, match="may not be supported in later version"):
        Model._check_methods_for_custom_callbacks([OldStyle()], "fit")
    model = make_model()
    ours = [ProgressBar(file=io.StringIO()), LossRecorder(),
            EvalCallback(model, make_dataset(seed=1), "accuracy", verbose=False)]
    Model._check_methods_for_custom_callbacks(ours, "fit")
    assert not any(OLD_HOOK_NAMES & set(type(cb).__dict__) for cb in ours)


def test_loss_value_handles_tensor_tuple_and_none():
    assert loss_value(ms.Tensor(np.float32(1.5))) == 1.5
    assert loss_value((ms.Tensor(np.array([1.0, 3.0], np.float32)), ms.Tensor(False))) == 2.0
    assert loss_value(None) is None and loss_value(()) is None


# ---- ProgressBar -----------------------------------------------------------------------------------------

def test_progress_bar_per_epoch_shows_steps_and_loss():
    out = io.StringIO()
    make_model().train(2, make_dataset(), callbacks=[ProgressBar(desc="toy", file=out)])
    text = out.getvalue()
    assert "toy epoch 1/2" in text and "toy epoch 2/2" in text
    assert f"{STEPS_PER_EPOCH}/{STEPS_PER_EPOCH}" in text
    assert "loss=" in text


def test_progress_bar_whole_run_and_eval():
    out = io.StringIO()
    model = make_model()
    model.train(2, make_dataset(), callbacks=[ProgressBar(per_epoch=False, file=out)])
    assert "train 2 epochs" in out.getvalue() and f"{2 * STEPS_PER_EPOCH}/{2 * STEPS_PER_EPOCH}" in out.getvalue()
    out = io.StringIO()
    model.eval(make_dataset(batches=2), callbacks=[ProgressBar(file=out)])
    assert "eval" in out.getvalue() and "2/2" in out.getvalue()


def test_progress_bar_rejects_bad_arguments():
    with pytest.raises(TypeError, match=r"desc must be a str or None, got 3 \(int\)"):
        ProgressBar(desc=3)
    with pytest.raises(TypeError, match="per_epoch must be True or False"):
        ProgressBar(per_epoch="yes")
    with pytest.raises(TypeError, match=r"show_eval must be True or False, got 1 \(int\)"):
        ProgressBar(show_eval=1)


# ---- LossRecorder -----------------------------------------------------------------------------------------

def test_history_records_step_and_epoch_losses():
    history = LossRecorder()
    make_model().train(2, make_dataset(), callbacks=[history])
    assert len(history.step_loss) == 2 * STEPS_PER_EPOCH
    assert all(isinstance(v, float) for v in history.step_loss)
    assert history.epochs == [1, 2]
    assert history.steps_per_epoch == STEPS_PER_EPOCH
    for epoch, mean in enumerate(history.epoch_loss):
        steps = history.step_loss[epoch * STEPS_PER_EPOCH:(epoch + 1) * STEPS_PER_EPOCH]
        assert mean == pytest.approx(np.mean(steps))
    assert history.epoch_loss[1] < history.epoch_loss[0]  # the toy problem is learnable
    assert history.as_dict()["epochs"] == [1, 2] and history.as_dict()["metrics"] == {}


def test_history_keeps_counting_epochs_across_train_calls_and_resume():
    history = LossRecorder()
    model = make_model()
    model.train(1, make_dataset(), callbacks=[history])
    model.train(1, make_dataset(), callbacks=[history])  # cur_epoch_num restarts at 1
    model.train(4, make_dataset(), callbacks=[history], initial_epoch=2)  # resumes at epoch 3
    assert history.epochs == [1, 2, 3, 4]
    assert len(history.step_loss) == 4 * STEPS_PER_EPOCH


def test_history_records_model_fit_validation_results():
    history = LossRecorder()
    model = make_model()
    model.fit(2, make_dataset(), valid_dataset=make_dataset(seed=1, batches=2), callbacks=[history])
    assert [epoch for epoch, _ in history.metrics["accuracy"]] == [1, 2]
    assert [epoch for epoch, _ in history.metrics["eval_loss"]] == [1, 2]


def test_history_record_validates():
    history = LossRecorder()
    history.record("accuracy", np.float64(0.75), epoch=3)
    assert history.metrics == {"accuracy": [(3, 0.75)]}
    with pytest.raises(ValueError, match="name must not be empty, got ''"):
        history.record("", 1.0)
    with pytest.raises(TypeError, match="metric name must be a str, got None"):
        history.record(None, 1.0)
    with pytest.raises(TypeError, match=r"metric 'accuracy' must be a number, got 'high' \(str\)"):
        history.record("accuracy", "high")


# ---- EvalCallback ----------------------------------------------------------------------------------------

def test_eval_callback_every_and_last_epoch_with_history_and_best_checkpoint(tmp_path, capsys):
    model = make_model()
    history = LossRecorder()
    best = tmp_path / "best.ckpt"
    callback = EvalCallback(model, make_dataset(seed=1, batches=2), "accuracy", every=2,
                            best_ckpt_path=best, history=history)
    model.train(3, make_dataset(), callbacks=[history, callback])
    assert [epoch for epoch, _ in callback.scores] == [2, 3]  # every 2nd epoch, plus the last one
    assert history.metrics["accuracy"] == callback.scores
    assert callback.best_score == max(score for _, score in callback.scores)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.ckpt"]  # no temporary file left behind
    saved = ms.load_checkpoint(str(best))
    assert int(saved["epoch"].asnumpy()) == callback.best_epoch
    assert {"weight", "bias"} <= set(saved)
    printed = capsys.readouterr().out
    assert "epoch 2: accuracy = " in printed and "epoch 3: accuracy = " in printed


def test_eval_callback_result_matches_model_eval():
    model = make_model()
    eval_set = make_dataset(seed=1, batches=2)
    callback = EvalCallback(model, eval_set, "accuracy", verbose=False)
    model.train(1, make_dataset(), callbacks=[callback])
    assert callback.scores == [(1, pytest.approx(model.eval(eval_set)["accuracy"]))]


@pytest.mark.parametrize("mode, scores, best_epoch", [
    ("max", [0.5, 0.4, 0.7, 0.7], 3),  # ties do not replace the earlier best
    ("min", [0.5, 0.4, 0.7, 0.3], 4),
])
def test_eval_callback_keeps_the_best_score(tmp_path, mode, scores, best_epoch, monkeypatch):
    model = make_model()
    best = tmp_path / "best.ckpt"
    callback = EvalCallback(model, make_dataset(), "accuracy", best_ckpt_path=best, mode=mode, verbose=False)
    feed = iter(scores)
    monkeypatch.setattr(callback, "evaluate", lambda: next(feed))
    callback.on_train_begin(fake_run_context(0, len(scores)))
    saved_epochs = []
    for epoch in range(1, len(scores) + 1):
        callback.on_train_epoch_end(fake_run_context(epoch, len(scores), network=model.predict_network))
        saved_epochs.append(int(ms.load_checkpoint(str(best))["epoch"].asnumpy()))
    assert callback.best_epoch == best_epoch and callback.best_score == scores[best_epoch - 1]
    assert saved_epochs[-1] == best_epoch
    assert callback.scores == list(enumerate(scores, start=1))


def test_eval_callback_validates_arguments():
    model, data = make_model(), make_dataset()
    with pytest.raises(ValueError, match=r"metric_name must be one of \('accuracy',\), got 'acc'"):
        EvalCallback(model, data, "acc")
    with pytest.raises(ValueError, match="every must be an integer >= 1, got 0"):
        EvalCallback(model, data, "accuracy", every=0)
    with pytest.raises(TypeError, match=r"every must be an integer \(>= 1\), got 1.5 \(float\)"):
        EvalCallback(model, data, "accuracy", every=1.5)
    with pytest.raises(ValueError, match=r"mode must be one of \('max', 'min'\), got 'maximum'"):
        EvalCallback(model, data, "accuracy", mode="maximum")
    with pytest.raises(TypeError, match=r"eval_dataset must be a mindspore.dataset pipeline, got \[1, 2\] \(list\)"):
        EvalCallback(model, [1, 2], "accuracy")
    with pytest.raises(TypeError, match=r"model must be a mindspore.train.Model, got .*\(Dense\)"):
        EvalCallback(nn.Dense(2, 2), data, "accuracy")
    with pytest.raises(ValueError, match="model has no metrics"):
        EvalCallback(make_model(metrics=None), data, "accuracy")
    with pytest.raises(TypeError, match=r"history must be an object with a record\(name, value\) method.*\(dict\)"):
        EvalCallback(model, data, "accuracy", history={})
    with pytest.raises(ValueError, match=r"best_ckpt_path must name a \.ckpt file, got 'best.pt'"):
        EvalCallback(model, data, "accuracy", best_ckpt_path="best.pt")


def test_eval_callback_keeps_every_metric_of_each_evaluation():
    model = make_model(metrics=("accuracy", "loss"))
    eval_set = make_dataset(seed=1, batches=2)
    callback = EvalCallback(model, eval_set, "accuracy", every=1, verbose=False)
    model.train(2, make_dataset(), callbacks=[callback])
    assert [epoch for epoch, _ in callback.results] == [1, 2]
    last = model.eval(eval_set)
    assert set(callback.results[-1][1]) == {"accuracy", "loss"}
    assert callback.results[-1][1] == {k: pytest.approx(v) for k, v in last.items()}
    assert [r["accuracy"] for _, r in callback.results] == [s for _, s in callback.scores]


# ---- dependencies: copy-pasteable without the rest of course_lib, no shadowed names --------------

def test_callbacks_import_only_mindspore_numpy_stdlib_and_course_lib_checkpoint():
    """Besides checkpoint, only course_lib's layer 0 for its checks and messages (validation, i18n)."""
    import ast
    import sys
    from pathlib import Path

    import course_lib.train.callbacks as module
    tree = ast.parse(Path(module.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    outside = {name for name in imported if name.split(".")[0] not in sys.stdlib_module_names
               and name.split(".")[0] not in ("mindspore", "numpy")
               and name not in ("course_lib.train.checkpoint", "course_lib.validation", "course_lib.i18n")}
    assert outside == {"tqdm"}  # pinned in requirements.txt


def test_no_class_shadows_a_mindspore_train_name():
    import mindspore.train

    import course_lib.train.callbacks as module
    ours = {name for name in module.__all__ if isinstance(getattr(module, name), type)}
    assert ours and not ours & set(dir(mindspore.train))

