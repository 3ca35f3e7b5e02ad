import course_lib  # noqa: F401  # isort: skip  (sets env before mindspore)

import json
import math
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import mindspore as ms
import numpy as np
import psutil
import pytest

from course_lib.data.datasets import create_mnist_dataset
from course_lib.models import lenet5
from course_lib.parallel import launch as distributed
from course_lib.parallel.launch import DistributedLaunchError, DistributedTimeoutError, find_free_port, launch
from course_lib.parallel.worker import (
    ShardRecorder,
    dataset_fingerprints,
    image_fingerprint,
    parameter_checksum,
    parse_worker_report,
    print_report,
)
from course_lib.paths import PROJECT_ROOT
from course_lib.train.checkpoint import load_checkpoint

WORKER = PROJECT_ROOT / "scripts" / "distributed_worker.py"
STEPS, BATCH = 4, 16


def processes_with(tag: str) -> list:
    """Live processes whose command line contains ``tag`` (this job's workers, scheduler or msrun)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and tag in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


# --------------------------------------------------------------------------------------- validation (fast)
# One vocabulary (issue 26): a wrong type is a TypeError, a bad value of the right type a ValueError.
@pytest.mark.parametrize("kwargs, error, message", [
    ({"script": "no_such_worker.py"}, FileNotFoundError, "does not exist"),
    ({"script": 42}, TypeError, "script must be the path"),
    ({"args": "--steps 4"}, TypeError, "args must be a list"),
    ({"args": ["--steps", None]}, TypeError, "every item of args"),
    ({"worker_num": 0}, ValueError, r"worker_num must be an integer >= 1 and <= 16, got 0\. Fix: pass how many"),
    ({"worker_num": True}, TypeError, "worker_num must be an integer"),
    ({"worker_num": 2.0}, TypeError, "worker_num must be an integer"),
    ({"timeout": 0}, ValueError, r"timeout must be a finite number > 0, got 0\.0\. Fix: e\.g\. timeout=300"),
    ({"timeout": math.nan}, ValueError, "timeout must be a finite number > 0, got nan"),
    ({"timeout": "300"}, TypeError, "timeout must be a number"),
    ({"master_port": 80}, ValueError, "master_port must be an integer >= 1024 and <= 65535, got 80"),
    ({"echo": "yes"}, TypeError, "echo must be True or False"),
    ({"env": {"GLOG_v": 2}}, TypeError, "env must be a dict of str -> str"),
    ({"log_dir": 3}, TypeError, "log_dir must be a folder path"),
])
def test_launch_rejects_bad_arguments_before_starting_anything(kwargs, error, message):
    call = {"script": WORKER, "args": [], **kwargs}
    with pytest.raises(error, match=message):
        launch(call.pop("script"), **call)


def test_launch_rejects_a_non_python_script_and_a_file_as_log_dir(tmp_path):
    shell = tmp_path / "run.sh"
    shell.write_text("echo hi\n")
    with pytest.raises(ValueError, match=r"script must be a \.py file"):
        launch(shell)
    with pytest.raises(ValueError, match="log_dir .* is a file"):
        launch(WORKER, log_dir=shell)


def test_launch_rejects_a_busy_master_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ValueError, match=f"master_port {port} is already in use"):
            launch(WORKER, master_port=port)


def test_find_free_port_gives_a_bindable_loopback_port_and_refuses_other_hosts():
    port = find_free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    with pytest.raises(ValueError, match="must be '127.0.0.1'"):
        find_free_port("0.0.0.0")  # noqa: S104  (the host that must be refused)


def test_workers_get_this_interpreter_first_on_path(tmp_path):
    folder = distributed._interpreter_dir(tmp_path)
    python = folder / "python"
    assert python.exists()
    if folder == Path(sys.executable).parent:  # a virtualenv: its own bin folder is used as is
        assert python.samefile(sys.executable)
    else:  # otherwise a shim that execs this interpreter
        assert sys.executable in python.read_text()


def test_without_python_next_to_the_interpreter_a_shim_execs_it(tmp_path, monkeypatch):
    lonely = tmp_path / "bin" / "python3.11"
    lonely.parent.mkdir()
    lonely.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(lonely))
    folder = distributed._interpreter_dir(tmp_path / "logs")
    assert folder == tmp_path / "logs" / ".interpreter"
    shim = folder / "python"
    assert str(lonely) in shim.read_text()
    done = subprocess.run([str(shim), "-c", "print(6 * 7)"], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "42"


def test_a_launcher_that_fails_before_any_worker_is_reported_with_its_output(tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "MSRUN_MODULE", "json.tool")  # rejects msrun's options: exit code 2
    with pytest.raises(DistributedLaunchError, match="failed before any worker started") as caught:
        launch(WORKER, ["--out", tmp_path], worker_num=2, timeout=60, log_dir=tmp_path / "logs")
    message = str(caught.value)
    assert "exited with code 2" in message and "unrecognized arguments" in message
    assert distributed.find_launch_processes(caught.value.result.launch_id) == []


# ------------------------------------------------------------------------------------------- reports (fast)
def test_reports_round_trip_and_survive_log_noise(capsys):
    print_report("model.params", rank=1, sha256="ab12", sum=1.5)
    print_report("env", rank=1, python="x")
    printed = capsys.readouterr().out
    noisy = ("[WARNING] DISTRIBUTED(1,python): something\n" + printed.replace("\n", "[INFO] ME(2): late\n", 1)
             + "plain line\n")
    assert parse_worker_report(noisy) == {"model.params": {"rank": 1, "sha256": "ab12", "sum": 1.5},
                                          "env": {"rank": 1, "python": "x"}}
    assert parse_worker_report("no reports here\n") == {}


def test_malformed_reports_and_bad_kinds_are_errors():
    with pytest.raises(ValueError, match="Malformed report on log line 2"):
        parse_worker_report("ok\n@@report {\"kind\": \"env\", \n")
    with pytest.raises(ValueError, match="has no 'kind'"):
        parse_worker_report('@@report {"rank": 0}\n')
    with pytest.raises(ValueError, match="kind must be a non-empty str without spaces"):
        print_report("model params", rank=0)
    with pytest.raises(TypeError, match=r"kind must be a non-empty str without spaces, got 3 \(int\)"):
        print_report(3, rank=0)
    with pytest.raises(TypeError, match="log_text must be the text"):
        parse_worker_report(b"bytes")


def test_log_tail_keeps_the_traceback_and_drops_mindspore_noise():
    log = "\n".join(["step 1", "[WARNING] ME: noise", "Traceback (most recent call last):",
                     '  File "w.py", line 3, in main', "RuntimeError: boom", "[INFO] DISTRIBUTED: bye"])
    tail = distributed.log_tail(log)
    assert tail.splitlines() == ["Traceback (most recent call last):", '  File "w.py", line 3, in main',
                                 "RuntimeError: boom"]
    assert distributed.log_tail("\n".join(f"line {i}" for i in range(50)), lines=3) == "line 47\nline 48\nline 49"


def test_shard_recorder_counts_labels_and_digest_ignores_order():
    images = np.arange(4 * 2 * 2, dtype=np.float32).reshape(4, 1, 2, 2)
    labels = np.array([3, 1, 3, 0], np.int32)
    forward, backward = ShardRecorder(), ShardRecorder()
    forward.record(images[:2], labels[:2])
    forward.record(ms.Tensor(images[2:]), ms.Tensor(labels[2:]))
    backward.record(images[::-1], labels[::-1])
    summary = forward.summary()
    assert summary["samples"] == 4 and summary["label_counts"] == [1, 1, 0, 2]
    assert summary["fingerprints"] == [image_fingerprint(image) for image in images]
    assert summary["digest"] == backward.summary()["digest"]
    assert "fingerprints" not in forward.summary(with_fingerprints=False)
    with pytest.raises(ValueError, match="same number of samples, got 2 images and 3 labels"):
        forward.record(images[:2], labels[:3])


def test_parameter_checksum_tells_identical_from_changed_parameters(tmp_path):
    ms.set_seed(3)
    first = lenet5()
    ms.set_seed(3)
    second = lenet5()
    checksum = parameter_checksum(first)
    assert checksum == parameter_checksum(second)
    assert checksum["count"] == 10
    weight = second.fc3.weight
    weight.set_data(ms.Tensor(weight.asnumpy() + np.float32(1e-6)))
    assert parameter_checksum(second)["sha256"] != checksum["sha256"]
    with pytest.raises(TypeError, match="params must be a network"):
        parameter_checksum([1, 2])
    with pytest.raises(TypeError, match="'epoch' is not a numeric array"):
        parameter_checksum({"epoch": "3"})


# ------------------------------------------------------------------------------------- real msrun jobs
@pytest.fixture(scope="module")
def two_worker_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp_out")
    tag = f"ddp-ok-{uuid.uuid4().hex[:8]}"
    result = launch(WORKER, ["--out", out, "--mode", "both", "--steps", STEPS, "--batch_size", BATCH,
                             "--run_tag", tag], worker_num=2, timeout=240,
                    log_dir=tmp_path_factory.mktemp("ddp_logs"))
    return result, out, tag


@pytest.mark.slow
def test_two_workers_use_this_interpreter_and_data_parallel_mode(two_worker_run):
    result, _, tag = two_worker_run
    assert result.returncode == 0 and not result.timed_out
    envs = {rank: report["env"] for rank, report in result.reports.items()}
    assert sorted(envs) == [0, 1]
    for rank, env in envs.items():
        assert env["rank"] == rank and env["group_size"] == 2 and env["msrun_rank_id"] == str(rank)
        assert env["python"] == sys.executable
        assert env["parallel_mode"] == "data_parallel" and env["gradients_mean"] is True
    assert processes_with(tag) == []
    assert distributed.find_launch_processes(result.launch_id) == []
    assert result.command[:3] == [sys.executable, "-m", "mindspore.parallel.cluster.run"]
    assert result.command[3:8] == ["--worker_num=2", "--local_worker_num=2", "--master_addr=127.0.0.1",
                                   f"--master_port={result.master_port}", "--join=True"]
    with pytest.raises(ValueError, match=r"rank must be one of \[0, 1\], got 2"):
        result.tail(2)


@pytest.mark.slow
def test_each_rank_trains_on_its_own_disjoint_shard(two_worker_run):
    result, _, _ = two_worker_run
    whole_train_set = set(dataset_fingerprints(create_mnist_dataset(batch_size=256, train=True, shuffle=False,
                                                                    drop_remainder=False)))
    for mode in ("model", "trainer"):
        shards = [result.reports[rank][f"{mode}.shard"] for rank in (0, 1)]
        seen = [set(shard["fingerprints"]) for shard in shards]
        assert [shard["samples"] for shard in shards] == [STEPS * BATCH] * 2
        assert [len(s) for s in seen] == [STEPS * BATCH] * 2  # no sample twice within a rank
        assert not seen[0] & seen[1]  # no sample on both ranks
        assert seen[0] | seen[1] <= whole_train_set
        assert shards[0]["digest"] != shards[1]["digest"]
    # Same seed, same shard sampler: Model.train and the Trainer were fed exactly the same batches.
    for rank in (0, 1):
        assert (result.reports[rank]["model.shard"]["fingerprints"]
                == result.reports[rank]["trainer.shard"]["fingerprints"])


@pytest.mark.slow
def test_parameters_are_identical_on_every_rank_and_saved(two_worker_run):
    result, out, _ = two_worker_run
    ms.set_seed(1)
    untrained = parameter_checksum(lenet5())
    for mode in ("model", "trainer"):
        reports = [result.reports[rank][f"{mode}.params"] for rank in (0, 1)]
        assert reports[0]["sha256"] == reports[1]["sha256"]
        assert reports[0]["sha256"] != untrained["sha256"]  # training did change them
        assert [r["steps"] for r in reports] == [STEPS, STEPS]
        for rank, report in enumerate(reports):
            saved = parameter_checksum(load_checkpoint(out / mode / f"rank_{rank}.ckpt"))
            assert saved == {key: report[key] for key in ("count", "sha256", "sum")}


@pytest.mark.slow
def test_a_failing_worker_raises_with_its_log_and_leaves_no_process(tmp_path):
    tag = f"ddp-fail-{uuid.uuid4().hex[:8]}"
    with pytest.raises(DistributedLaunchError) as caught:
        launch(WORKER, ["--out", tmp_path / "out", "--fail_on_rank", 1, "--steps", 2, "--run_tag", tag],
               worker_num=2, timeout=180, log_dir=tmp_path / "logs")
    message = str(caught.value)
    assert "rank 1 of 2 exited with an error" in message
    assert "RuntimeError: rank 1 fails on purpose (--fail_on_rank 1)" in message
    assert "Traceback (most recent call last)" in message
    assert not isinstance(caught.value, DistributedTimeoutError)
    # the job ended because a worker failed (msrun's exit code), not because the timeout killed it
    assert caught.value.result.returncode is not None and not caught.value.result.timed_out
    assert processes_with(tag) == []


@pytest.mark.slow
def test_a_hanging_job_is_killed_at_the_timeout_and_leaves_no_process(tmp_path):
    tag = f"ddp-hang-{uuid.uuid4().hex[:8]}"
    timeout = 12
    with pytest.raises(DistributedTimeoutError, match=f"ran longer than {timeout} s and was killed") as caught:
        launch(WORKER, ["--out", tmp_path / "out", "--sleep_seconds", 600, "--run_tag", tag],
               worker_num=2, timeout=timeout, log_dir=tmp_path / "logs")
    assert caught.value.result.timed_out and caught.value.result.returncode is None
    # killed mid-job: no rank got to its final report (each would sleep 600 s first)
    assert not any("done" in report for report in caught.value.result.reports.values())
    assert processes_with(tag) == []
    assert json.dumps(caught.value.result.command)  # the command is kept for the error report


# ------------------------------------------------------------------------------------- log_dir ownership
def test_launch_never_deletes_logs_it_did_not_write(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    (logs / "rank_0").mkdir(parents=True)
    (logs / "rank_0" / "mine.txt").write_text("a user's file")
    (logs / "worker_0.log").write_text("a user's own log")
    (logs / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match=r"already holds rank_0, worker_0.log.*Fix: pass an empty or new folder"):
        launch(WORKER, ["--out", tmp_path], worker_num=2, timeout=60, log_dir=logs)
    assert (logs / "rank_0" / "mine.txt").read_text() == "a user's file"
    assert (logs / "worker_0.log").read_text() == "a user's own log"


def test_a_second_launch_removes_only_what_the_first_one_created(tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "MSRUN_MODULE", "json.tool")  # fails at once, but writes msrun.log
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "notes.txt").write_text("keep")
    (logs / "worker_x.log").write_text("not a rank log name: keep")
    for _ in range(2):
        with pytest.raises(DistributedLaunchError):
            launch(WORKER, ["--out", tmp_path], worker_num=2, timeout=60, log_dir=logs)
        assert (logs / "msrun.log").exists()
        assert json.loads((logs / distributed.LAUNCH_MANIFEST).read_text())["files"][0] == "msrun.log"
    assert (logs / "notes.txt").read_text() == "keep"
    assert (logs / "worker_x.log").read_text() == "not a rank log name: keep"
    # a manifest edited to point at a user's file does not get it deleted
    (logs / distributed.LAUNCH_MANIFEST).write_text(json.dumps({"files": ["notes.txt", "../outside", "msrun.log"]}))
    with pytest.raises(DistributedLaunchError):
        launch(WORKER, ["--out", tmp_path], worker_num=2, timeout=60, log_dir=logs)
    assert (logs / "notes.txt").exists()


# ------------------------------------------------------------------- one job per log_dir, kills and leftovers
def start_launcher(log_dir, worker_args, timeout=300):
    """A separate Python process that calls launch() (like a notebook kernel) and prints the result as JSON."""
    code = ("import json, sys\nfrom course_lib.parallel.launch import launch\n"
            f"result = launch({str(WORKER)!r}, {[str(a) for a in worker_args]!r}, worker_num=2, timeout={timeout},"
            f" log_dir={str(log_dir)!r})\n"
            "print(json.dumps({'launch_id': result.launch_id, 'logs': result.logs}), flush=True)\n")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def wait_until(condition, what, limit=240):
    """Poll ``condition`` until it holds; fail naming ``what`` if it never does (a bound, not a timing assert)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"gave up waiting for {what}")


def both_workers_sleeping(log_dir):
    return all("sleeping" in (Path(log_dir) / f"worker_{rank}.log").read_text(errors="replace")
               if (Path(log_dir) / f"worker_{rank}.log").exists() else False for rank in (0, 1))


def kill_all(procs):
    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.mark.slow
def test_a_second_launch_on_a_busy_log_dir_is_refused_and_the_first_reports_its_own_job(tmp_path):
    logs = tmp_path / "logs"
    tag = f"ddp-first-{uuid.uuid4().hex[:8]}"
    first = start_launcher(logs, ["--out", tmp_path / "out", "--mode", "model", "--steps", 1, "--sleep_seconds",
                                  8, "--run_tag", tag])
    try:
        wait_until(lambda: both_workers_sleeping(logs), "the first job's workers")
        with pytest.raises(distributed.LogDirBusy, match=r"log_dir .*logs is in use by another launch \(process "
                                                         rf"{first.pid}\).*Fix: wait for that job to finish, or "
                                                         r"pass another log_dir"):
            launch(WORKER, ["--out", tmp_path / "out2", "--run_tag", "second"], worker_num=2, timeout=60,
                   log_dir=logs)
        assert both_workers_sleeping(logs)  # the second launch deleted nothing
        output, _ = first.communicate(timeout=300)
    finally:
        first.kill()
        kill_all(processes_with(tag))
    assert first.returncode == 0
    result = json.loads(output.strip().splitlines()[-1])
    for rank in ("0", "1"):
        assert "sleeping 8.0 s" in result["logs"][rank]  # its own job's logs, not another's
        assert parse_worker_report(result["logs"][rank])["done"]["rank"] == int(rank)


@pytest.mark.slow
def test_killing_the_launcher_ends_msrun_its_scheduler_and_the_workers(tmp_path):
    logs = tmp_path / "logs"
    tag = f"ddp-orphan-{uuid.uuid4().hex[:8]}"
    launcher = start_launcher(logs, ["--out", tmp_path / "out", "--sleep_seconds", 600, "--run_tag", tag])
    try:
        wait_until(lambda: both_workers_sleeping(logs), "the workers to start")
        job = processes_with(tag)
        assert len(job) >= 3  # msrun, the scheduler and two workers carry the tag in their command line
        launcher.kill()  # SIGKILL: what restarting a notebook kernel does to the process that called launch()
        launcher.wait(timeout=60)
        wait_until(lambda: processes_with(tag) == [], "the orphaned job to be ended", limit=120)
    finally:
        kill_all(processes_with(tag))
        launcher.kill()


@pytest.mark.slow
def test_the_next_launch_ends_orphans_of_a_launch_recorded_in_its_log_dir(tmp_path, monkeypatch, capsys):
    logs = tmp_path / "logs"
    tag = f"ddp-orphan2-{uuid.uuid4().hex[:8]}"
    launcher = start_launcher(logs, ["--out", tmp_path / "out", "--sleep_seconds", 600, "--run_tag", tag])
    try:
        wait_until(lambda: both_workers_sleeping(logs), "the workers to start")
        launch_id = json.loads((logs / distributed.LAUNCH_MANIFEST).read_text())["launch_id"]
        watchdogs = [p for p in psutil.process_iter(["cmdline"])
                     if launch_id in " ".join(p.info["cmdline"] or []) and "_watchdog.py" in
                     " ".join(p.info["cmdline"] or [])]
        assert len(watchdogs) == 1
        kill_all(watchdogs + [psutil.Process(launcher.pid)])  # the launcher and its watchdog both die
        launcher.wait(timeout=60)
        psutil.wait_procs(watchdogs, timeout=30)
        orphans = processes_with(tag)
        assert orphans and {p.pid for p in orphans} == {p.pid for p in distributed.find_launch_processes(launch_id)}
        monkeypatch.setattr(distributed, "MSRUN_MODULE", "json.tool")  # the next job fails at once: enough here
        with pytest.raises(DistributedLaunchError):
            launch(WORKER, ["--out", tmp_path], worker_num=2, timeout=60, log_dir=logs)
        assert processes_with(tag) == []
        assert f"ended {len(orphans)} leftover process(es) of an earlier launch" in capsys.readouterr().out
    finally:
        kill_all(processes_with(tag))
        launcher.kill()


ODD_WORKER = '''
import os
import course_lib
from course_lib.parallel.worker import msrun_role, print_report
role = msrun_role(on_leftover="raise")
import mindspore as ms
from mindspore.communication import get_group_size, get_rank, init
ms.set_device("CPU")
init()
print_report("odd", role=role, rank=get_rank(), size=get_group_size(), rank_id=os.environ["RANK_ID"],
             simulation=os.environ.get("MS_SIMULATION_LEVEL"), cwd=os.getcwd())
'''


@pytest.mark.slow
def test_launch_from_a_folder_with_spaces_and_chinese_and_with_leftover_msrun_variables(tmp_path, monkeypatch):
    folder = tmp_path / "课程 test dir"
    folder.mkdir()
    script = folder / "工作 worker.py"
    script.write_text(ODD_WORKER, encoding="utf-8")
    # an earlier msrun's variables left in the launcher's environment (msrun reads RANK_ID, RANK_SIZE and
    # MS_SIMULATION_LEVEL itself: a leftover MS_SIMULATION_LEVEL turns the job into a dry run)
    for key, value in {"MS_ROLE": "MS_WORKER", "MS_WORKER_NUM": "4", "MS_SCHED_HOST": "127.0.0.1",
                       "MS_SCHED_PORT": str(find_free_port()), "RANK_ID": "3", "RANK_SIZE": "4",
                       "MS_SIMULATION_LEVEL": "1"}.items():
        monkeypatch.setenv(key, value)
    result = launch(script, [], worker_num=2, timeout=240, log_dir=folder / "日志 logs")
    assert result.log_dir == folder / "日志 logs"
    reports = {rank: report["odd"] for rank, report in result.reports.items()}
    for rank, report in reports.items():
        assert report == {"role": "MS_WORKER", "rank": rank, "size": 2, "rank_id": str(rank), "simulation": None,
                          "cwd": str(folder / "日志 logs")}
    assert result.command[result.command.index("--join=True") + 2] == "--log_dir=."


def test_msrun_role_tells_a_worker_from_leftover_variables():
    from course_lib.parallel.worker import LeftoverMsrunEnvironment, msrun_role

    assert msrun_role({}) is None
    assert msrun_role({"RANK_ID": "0", "DEVICE_ID": "0"}) is None  # common settings alone are not msrun's
    leftover = {"MS_ROLE": "MS_WORKER", "MS_SCHED_HOST": LOOPBACK_HOST, "MS_SCHED_PORT": str(find_free_port())}
    with pytest.warns(RuntimeWarning, match="left exported by an earlier msrun"):
        assert msrun_role(leftover) is None
    with pytest.raises(LeftoverMsrunEnvironment, match=r"Fix: `unset MS_ROLE MS_SCHED_HOST MS_SCHED_PORT`"):
        msrun_role(leftover, on_leftover="raise")
    with pytest.warns(RuntimeWarning, match="MS_WORKER_NUM=2"):
        assert msrun_role({"MS_WORKER_NUM": "2"}) is None
    with socket.socket() as scheduler:  # a scheduler that answers: a real worker
        scheduler.bind((LOOPBACK_HOST, 0))
        scheduler.listen()
        live = {**leftover, "MS_SCHED_PORT": str(scheduler.getsockname()[1])}
        assert msrun_role(live, on_leftover="raise") == "MS_WORKER"
        assert msrun_role({**live, "MS_ROLE": "MS_SCHED"}) == "MS_SCHED"
    with pytest.raises(ValueError, match="on_leftover must be"):
        msrun_role({}, on_leftover="loud")


LOOPBACK_HOST = "127.0.0.1"
