"""scripts/train.py, eval.py and export.py at their command line: --help generated from the config schema, every
key settable, export.py's round trip, and issue 23's cases (an empty --checkpoint_dir, --resume with other settings,
a leftover MS_ROLE, a deleted working directory) refused with one message before MindSpore is imported."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import yaml

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.paths import PROJECT_ROOT
from course_lib.run import cli, cluster, settings
from course_lib.run.config import DEFAULT_CONFIG, RANGES, load_config

SCRIPTS = PROJECT_ROOT / "scripts"
TRAIN, EVAL, EXPORT = SCRIPTS / "train.py", SCRIPTS / "eval.py", SCRIPTS / "export.py"
TINY = ["--epochs", "1", "--steps_per_epoch", "1", "--batch_size", "16", "--num_parallel_workers", "1"]
#: A `mindspore` package that fails to import: a message printed with it on the path came before MindSpore.
FAKE_MINDSPORE = "raise ImportError('the fake mindspore of the test was imported')\n"


def run(args, cwd, env=None, timeout=300):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def env_without_mindspore(tmp_path, **extra):
    fake = tmp_path / "fake_site"
    (fake / "mindspore").mkdir(parents=True, exist_ok=True)
    (fake / "mindspore" / "__init__.py").write_text(FAKE_MINDSPORE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MS_")}
    # No empty entry: "" means the working directory, which Python cannot resolve once it is deleted.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(fake), str(PROJECT_ROOT), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    folder = root / "run"
    result = run([TRAIN, *TINY, "--checkpoint_dir", folder], root)
    assert result.returncode == 0, result.stderr
    return root, folder


# ------------------------------------------------------------------------------------------ --help and arguments
def _help_entries(text: str) -> dict:
    """``{key: its help text in one line}`` from argparse's output."""
    entries, current = {}, None
    for line in text.splitlines():
        found = re.match(r"^  --(\w+)(?: (\S+))?\s*(.*)$", line)
        if found:
            current = found[1]
            entries[current] = found[3]
        elif current and line.startswith("      "):
            entries[current] += " " + line.strip()
        else:
            current = None
    return {key: " ".join(value.split()) for key, value in entries.items()}


def test_train_help_lists_every_config_key_with_type_default_range_and_meaning(tmp_path):
    result = run([TRAIN, "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    entries = _help_entries(result.stdout)
    defaults = yaml.safe_load(DEFAULT_CONFIG.read_text())
    assert set(defaults) <= set(entries), sorted(set(defaults) - set(entries))
    meanings = {row[1]: row[5] for row in cli.schema()}
    for key, default in defaults.items():
        shown = "null" if default is None else str(default).lower() if isinstance(default, bool) else str(default)
        assert f"Default: {shown}." in entries[key], (key, entries[key])
        assert " ".join(meanings[key].split()) in entries[key], key
        if key in RANGES:
            assert "Range: " in entries[key], key
    assert re.search(r"--lr FLOAT\s", result.stdout) and re.search(r"--resume true\|false", result.stdout)
    assert re.search(r"--checkpoint_dir PATH\|null", result.stdout)
    assert "Range: 2 <= value <= 1000000." in entries["num_classes"]
    assert "Range: 0.0 <= value < 1." in entries["momentum"]


def test_schema_refuses_a_key_without_a_meaning(tmp_path, monkeypatch):
    broken = tmp_path / "default.yaml"
    broken.write_text(re.sub(r"(?m)^lr_end: .*$", "lr_end: 0.0", DEFAULT_CONFIG.read_text()))
    monkeypatch.setattr(cli._config, "DEFAULT_CONFIG", broken)
    with pytest.raises(ValueError, match="key 'lr_end' has no comment"):
        cli.schema()


@pytest.mark.parametrize("script", [EVAL, EXPORT])
def test_eval_and_export_help_show_their_whole_description(tmp_path, script):
    result = run([script, "-h"], tmp_path)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    first = " ".join(script.read_text().split('"""')[1].split("\n\n")[0].split())
    assert first.endswith(").") and first in text
    assert "--checkpoint_path PATH|null" in text
    if script == EXPORT:
        assert "--output FILE" in text


def test_every_key_can_be_set_on_the_command_line_and_flags_need_no_value():
    defaults = yaml.safe_load(DEFAULT_CONFIG.read_text())
    for key, default in defaults.items():
        if default is None:
            continue
        text = str(default).lower() if isinstance(default, bool) else str(default)
        assert getattr(load_config(argv=[f"--{key}", text]), key) == default, key
    cfg = load_config(argv=["--resume", "--resume_with_changes", "--overwrite", "--lr", "0.05"])
    assert (cfg.resume, cfg.resume_with_changes, cfg.overwrite, cfg.lr) == (True, True, True, 0.05)


@pytest.mark.parametrize("args, message", [
    (["stray"], "Unexpected command-line argument 'stray'"),
    (["--epoch", "3"], "Unknown config key(s) ['epoch']"),
    (["--checkpoint_dir", ""], "Command-line option --checkpoint_dir is empty"),
    (["--checkpoint_dir", "  "], "Command-line option --checkpoint_dir is empty"),
])
def test_bad_arguments_are_refused_before_mindspore_is_imported(tmp_path, args, message):
    result = run([TRAIN, *args], tmp_path, env=env_without_mindspore(tmp_path))
    assert result.returncode == 1, result.stderr
    assert message in result.stderr and "fake mindspore" not in result.stderr
    assert not (tmp_path / "outputs").exists()


def test_an_empty_checkpoint_dir_in_a_yaml_is_refused(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text('checkpoint_dir: ""\n')
    with pytest.raises(ValueError, match="'checkpoint_dir' is an empty path"):
        load_config(config)


# ------------------------------------------------------------------------------------------ the environment
@pytest.mark.parametrize("variables, message", [
    ({"MS_ROLE": "MS_WORKER"}, "MS_ROLE is MS_WORKER, but MS_WORKER_NUM, MS_SCHED_HOST, MS_SCHED_PORT are not set"),
    ({"MS_ROLE": "MS_SCHED"}, "MS_ROLE is MS_SCHED, but MS_WORKER_NUM, MS_SCHED_HOST, MS_SCHED_PORT are not set"),
    ({"MS_ROLE": "MS_WORKER", "MS_WORKER_NUM": "2", "MS_SCHED_HOST": "127.0.0.1", "MS_SCHED_PORT": "1"},
     "no scheduler answers at 127.0.0.1:1"),
    ({"MS_ROLE": "MS_PSERVER"}, "MS_ROLE is 'MS_PSERVER'"),
])
def test_a_leftover_ms_role_gives_one_message_before_mindspore_is_imported(tmp_path, variables, message):
    result = run([TRAIN, *TINY, "--checkpoint_dir", tmp_path / "ckpt"], tmp_path,
                 env=env_without_mindspore(tmp_path, **variables))
    assert result.returncode == 1, result.stderr
    assert message in result.stderr and "Fix: unset MS_ROLE" in result.stderr
    assert "fake mindspore" not in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "ckpt").exists()


def test_msrun_variables_must_fit_device_num():
    cfg = load_config(device_num=2)
    with pytest.raises(ValueError, match="device_num is 2, but this process was not started by msrun"):
        cluster.check_environment(cfg, environ={})
    worker = {"MS_ROLE": "MS_WORKER", "MS_WORKER_NUM": "3", "MS_SCHED_HOST": "127.0.0.1", "MS_SCHED_PORT": "8118"}
    with pytest.raises(ValueError, match=r"msrun started 3 workers .*Fix: --device_num 3"):
        cluster.check_environment(cfg, environ=worker, launcher=["python", "-m", "mindspore.parallel.cluster.run"])
    assert cluster.check_environment(load_config(device_num=3), environ=worker, launcher=["msrun"]) == "worker"
    assert cluster.role({"MS_ROLE": "MS_SCHED"}) == "scheduler" and cluster.role({}) == "standalone"


def test_the_scheduler_of_a_simulated_second_node_leaves_without_serving(capsys):
    launcher = ["python", "-m", "mindspore.parallel.cluster.run", "--worker_num=2", "--node_rank", "1", "x.py"]
    assert cluster.msrun_option(launcher, "node_rank") == "1"
    assert cluster.msrun_option(["msrun", "--node_rank=0"], "node_rank") == "0"
    cluster.serve_as_scheduler(launcher)  # returns at once: node 0's scheduler serves the job
    assert "node 0's scheduler serves the job" in capsys.readouterr().out


def test_a_deleted_working_directory_gives_one_message_before_mindspore_is_imported(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    starter = ("import os, sys\nos.chdir(sys.argv[1])\nos.rmdir(sys.argv[1])\n"
               "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n")
    result = run(["-c", starter, gone, TRAIN, *TINY], tmp_path, env=env_without_mindspore(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "the current working directory no longer exists" in result.stderr and "Fix: cd into" in result.stderr
    assert "fake mindspore" not in result.stderr and "Traceback" not in result.stderr


# ------------------------------------------------------------------------------------------ --resume settings
def test_resume_with_other_settings_is_refused_naming_each_and_allowed_on_request(tmp_path, tiny_run):
    root, source = tiny_run
    folder = tmp_path / "run"
    folder.mkdir()
    for path in source.iterdir():
        if path.is_file():
            (folder / path.name).write_bytes(path.read_bytes())
    recorded = json.loads((folder / "run_settings.json").read_text())
    assert recorded["settings"]["lr"] == 0.01 and "checkpoint_dir" not in recorded["settings"]
    before = sorted(p.name for p in folder.iterdir())

    changed = [*TINY, "--epochs", "2", "--checkpoint_dir", folder, "--resume", "--lr", "0.05", "--momentum", "0.5"]
    refused = run([TRAIN, *changed], tmp_path)
    assert refused.returncode == 1, refused.stderr
    assert "lr: 0.01 in the run, 0.05 now" in refused.stderr and "momentum: 0.9 in the run, 0.5 now" in refused.stderr
    assert "epochs" not in refused.stderr.split("Fix:")[0]  # a constant-rate run may be extended
    assert "--resume_with_changes" in refused.stderr and "--lr 0.01 --momentum 0.9" in refused.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted([*before, "logs"])  # checkpoints untouched
    assert "=== stopped: ValueError: --resume: the settings differ" in (folder / "logs" / "rank_0.log").read_text()
    assert json.loads((folder / "run_settings.json").read_text()) == recorded

    allowed = run([TRAIN, *changed, "--resume_with_changes"], tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert "resume: lenet5-1_1.ckpt (epoch 1" in allowed.stdout and "epoch 2/2" in allowed.stdout
    now = json.loads((folder / "run_settings.json").read_text())
    assert now["settings"]["lr"] == 0.05
    assert now["resumed_with_changes"] == [{"lr": {"was": 0.01, "now": 0.05}, "momentum": {"was": 0.9, "now": 0.5}}]
    log = (folder / "logs" / "rank_0.log").read_text()
    assert log.count("=== 20") == 2 and "resume with changes: lr 0.01 -> 0.05" in log


def test_epochs_count_as_a_setting_with_the_cosine_schedule():
    run_a = {"epochs": 3, "lr_schedule": "cosine", "lr": 0.1}
    assert settings.differences(run_a, {**run_a, "epochs": 4}) == [("epochs", 3, 4)]
    constant = {"epochs": 3, "lr_schedule": "constant", "lr": 0.1}
    assert settings.differences(constant, {**constant, "epochs": 4}) == []
    assert settings.differences(constant, {**constant, "lr_schedule": "cosine"}) == [
        ("lr_schedule", "constant", "cosine")]


# ------------------------------------------------------------------------------------------ export.py
def test_export_writes_a_mindir_that_predicts_like_the_checkpoint(tmp_path, tiny_run):
    import mindspore as ms

    from course_lib.data.datasets import create_mnist_dataset
    from course_lib.inference import load_mindir
    from course_lib.models import lenet5
    from course_lib.train.checkpoint import load_checkpoint

    root, folder = tiny_run
    target = tmp_path / "out" / "lenet5.mindir"
    result = run([EXPORT, "--checkpoint_dir", folder, "--output", target], root)
    assert result.returncode == 0, result.stderr
    assert "exported lenet5-1_1.ckpt -> lenet5.mindir (MindIR, input [N, 1, 32, 32])" in result.stdout
    again = run([EXPORT, "--checkpoint_dir", folder, "--output", target], root)
    assert again.returncode == 1 and "lenet5.mindir already exists" in again.stderr

    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = lenet5(10)
    load_checkpoint(folder / "lenet5-1_1.ckpt", net)
    net.set_train(False)
    images, _ = next(create_mnist_dataset(batch_size=5, train=False).create_tuple_iterator(num_epochs=1))
    graph = load_mindir(target)
    np.testing.assert_allclose(graph(images).asnumpy(), net(images).asnumpy(), rtol=1e-5, atol=1e-6)
