"""scripts/train.py under msrun: 2 workers on one machine, and a 2-node job simulated on 127.0.0.1 (two msrun calls
with --node_rank 0/1). The scheduler process only serves the cluster, every rank trains on its shard, rank 0 alone
writes checkpoints, and both ranks end with the same weights (each logs a digest of its weights)."""
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib.parallel.launch import LAUNCH_ID_ENV, find_free_port, find_launch_processes, launch
from course_lib.paths import PROJECT_ROOT

TRAIN = PROJECT_ROOT / "scripts" / "train.py"
ARGS = ["--device_num", "2", "--epochs", "2", "--steps_per_epoch", "2", "--batch_size", "16", "--seed", "5",
        "--num_parallel_workers", "1", "--lr", "0.05"]
DIGEST = re.compile(r"^\[rank (\d)/2\] all 2 ranks end with identical weights \(sha256 ([0-9a-f]{16})\)$", re.M)


def checkpoint_digest(path) -> str:
    """The digest train.py logs, computed here from rank 0's checkpoint (the network's parameters only)."""
    import mindspore as ms

    from course_lib.models import lenet5
    from course_lib.run.fit import weights_digest
    from course_lib.train.checkpoint import load_checkpoint

    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = lenet5(10)
    load_checkpoint(path, net)
    return weights_digest(net)[:16]


def check_run(folder: Path, rank_logs: dict, scheduler_logs: list, epochs: int):
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*(f"lenet5-{e}_2.ckpt" for e in range(1, epochs + 1)), "logs", "run_settings.json"])
    assert sorted(p.name for p in (folder / "logs").iterdir()) == ["rank_0.log", "rank_1.log"]
    digests = {}
    for rank, text in rank_logs.items():
        assert re.findall(rf"^\[rank {rank}/2\] epoch (\d)/{epochs}: loss", text, re.M) == [
            str(e) for e in range(1, epochs + 1)], text  # every rank trains
        assert ("saved lenet5-" in text) == (rank == 0), text  # only rank 0 saves
        digests.update(DIGEST.findall(text))
        own = (folder / "logs" / f"rank_{rank}.log").read_text()
        assert f"[rank {rank}/2] epoch {epochs}/{epochs}" in own and f"[rank {1 - rank}/2]" not in own
    assert digests["0"] == digests["1"] == checkpoint_digest(folder / f"lenet5-{epochs}_2.ckpt")
    for text in scheduler_logs:
        assert "scheduler" in text and "train lenet5" not in text and "Traceback" not in text


@pytest.mark.slow
def test_two_workers_train_identically_and_only_rank_0_saves(tmp_path):
    folder = tmp_path / "run"
    result = launch(TRAIN, [*ARGS, "--checkpoint_dir", str(folder)], worker_num=2, timeout=300,
                    log_dir=tmp_path / "msrun")
    assert result.returncode == 0
    check_run(folder, result.logs, [result.scheduler_log], epochs=2)
    assert "scheduler: serving 2 workers" in result.scheduler_log


@pytest.mark.slow
def test_a_two_node_job_simulated_on_127_0_0_1(tmp_path):
    folder, port, launch_id = tmp_path / "run", find_free_port(), uuid.uuid4().hex
    env = {**os.environ, LAUNCH_ID_ENV: launch_id, "PYTHONUNBUFFERED": "1",
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    nodes = []
    try:
        for node in (0, 1):
            command = [sys.executable, "-m", "mindspore.parallel.cluster.run", "--worker_num=2",
                       "--local_worker_num=1", "--node_rank", str(node), "--master_addr", "127.0.0.1",
                       "--master_port", str(port), "--join=True", "--cluster_time_out=240",
                       f"--log_dir={tmp_path / f'node{node}'}", str(TRAIN), *ARGS, "--epochs", "1",
                       "--checkpoint_dir", str(folder)]
            nodes.append(subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        outputs = [node.communicate(timeout=300)[0] for node in nodes]
    finally:
        for process in nodes:
            if process.poll() is None:
                process.kill()
        for process in find_launch_processes(launch_id):
            process.kill()
    assert [node.returncode for node in nodes] == [0, 0], outputs
    logs = {rank: (tmp_path / f"node{rank}" / f"worker_{rank}.log").read_text() for rank in (0, 1)}
    schedulers = [(tmp_path / f"node{node}" / "scheduler.log").read_text() for node in (0, 1)]
    check_run(folder, logs, schedulers, epochs=1)
    assert "scheduler: serving 2 workers" in schedulers[0]
    assert "node 0's scheduler serves the job, so this one exits" in schedulers[1]


@pytest.mark.parametrize("role, message", [
    ("MS_SCHED", "msrun started 2 workers (MS_WORKER_NUM=2), but device_num is 1. Fix: --device_num 2"),
    ("MS_WORKER", "MS_ROLE is MS_WORKER, but no msrun started this process and no scheduler answers at 127.0.0.1:"),
])
def test_msrun_variables_without_msrun_are_refused_before_any_work(tmp_path, role, message):
    env = {**os.environ, "MS_ROLE": role, "MS_WORKER_NUM": "2", "MS_SCHED_HOST": "127.0.0.1",
           "MS_SCHED_PORT": str(find_free_port())}
    result = subprocess.run([sys.executable, str(TRAIN), "--checkpoint_dir", str(tmp_path / "ckpt")], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.slow
def test_when_rank_0_refuses_the_folder_every_rank_stops_and_nothing_is_written(tmp_path):
    from course_lib.models import lenet5
    from course_lib.parallel.launch import DistributedLaunchError
    from course_lib.train.checkpoint import save_checkpoint

    other = tmp_path / "other_run"
    save_checkpoint(lenet5(10), other / "lenet5-6_2.ckpt", append_dict={"epoch_num": 6})
    with pytest.raises(DistributedLaunchError) as failed:
        launch(TRAIN, [*ARGS, "--checkpoint_dir", str(other)], worker_num=2, timeout=300, log_dir=tmp_path / "msrun")
    logs = failed.value.result.logs
    assert "already holds checkpoints of another run (lenet5-6_2.ckpt)" in logs[0]
    assert "scheduler" not in logs[0] and "CheckpointFolderBusy" not in logs[0] + logs[1]
    assert sorted(p.name for p in other.iterdir()) == ["lenet5-6_2.ckpt"]
