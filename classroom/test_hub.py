"""The classroom hub, tested as a class would use it: three learners at the same time (a slow check, about 3-5
minutes after the image exists; not part of `make test`).

    python classroom/test_hub.py [--image localhost/mindspore-course:test] [--lesson 00_environment] [--learners 3]

Needs: root, podman, npm, the hub's packages (pip install -r classroom/requirements-hub.txt -c constraints.txt
-c classroom/constraints-hub.txt) and the course image (built here by classroom/test_image.py's build when absent).
Steps: the hub (classroom/hub/jupyterhub_config.py, shared-password authenticator) on a free 127.0.0.1 port; each
learner logs in through the login form, gets an API token through the hub's REST API and starts their server with
it; all learners then execute the lesson at the same time through the hub's proxy (kernel websocket), each on
their own copy in their own volume. Checks: every cell ran (cells tagged raises-exception may fail), each server
runs as the image's non-root user with the class's memory and CPU limits, no learner can reach another's server
(another's token, and from inside a kernel), their files are not visible to each other, and the instructor's class
table (tools/class_progress.py) lists every learner. Prints peak memory and CPU per learner.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import podman  # noqa: E402
from test_image import build_image, free_port  # noqa: E402


def _need(module: str, fix: str):
    try:
        return __import__(module)
    except ImportError:
        raise SystemExit(f"test_hub: Python package {module!r} is missing. Fix: {fix}") from None


requests = _need("requests", "pip install requests")
websocket = _need("websocket", "pip install websocket-client")
_need("jupyterhub", "pip install -r classroom/requirements-hub.txt -c constraints.txt -c classroom/constraints-hub.txt")


class Hub:
    def __init__(self, image: str, state: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(16)
        self.service_token = secrets.token_hex(32)
        env = {**os.environ, "COURSE_HUB_AUTH": "dummy", "COURSE_HUB_DUMMY_PASSWORD": self.password,
               "COURSE_HUB_SERVICE_TOKEN": self.service_token, "COURSE_HUB_PORT": str(self.port),
               "COURSE_HUB_IMAGE": image, "COURSE_HUB_STATE": str(state), "COURSE_HUB_IDLE_TIMEOUT": "3600"}
        self.log = open(state / "hub.log", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f",
                                      str(HERE / "hub" / "jupyterhub_config.py"),
                                      f"--JupyterHub.hub_port={free_port()}"], cwd=state, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.state = state
        self.wait(lambda: requests.get(f"{self.url}/hub/api/", timeout=2).ok, "the hub to answer", 90)

    def wait(self, ready, what: str, seconds: float):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the hub exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if ready():
                    return
            except requests.RequestException:
                pass
            time.sleep(1)
        raise SystemExit(f"timed out waiting for {what}:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        self.log.flush()
        return "\n".join((self.state / "hub.log").read_text(errors="replace").splitlines()[-lines:])

    def api(self, method: str, path: str, token: str | None = None, **kwargs):
        headers = {"Authorization": f"token {token or self.service_token}"}
        return requests.request(method, f"{self.url}/hub/api{path}", headers=headers, timeout=30, **kwargs)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def hub_memory_limit() -> int:
    """The hub config's default per-learner memory limit, in bytes (e.g. "2560M")."""
    import re

    text = (HERE / "hub" / "jupyterhub_config.py").read_text()
    value = re.search(r'_setting\("MEM_LIMIT", "(\d+)([MG])"\)', text)
    return int(value.group(1)) * {"M": 2**20, "G": 2**30}[value.group(2)]


def login(hub: Hub, name: str) -> str:
    """Log in through the hub's login form, then ask the REST API for a token of this learner's own."""
    session = requests.Session()
    session.get(f"{hub.url}/hub/login", timeout=10)
    xsrf = session.cookies.get("_xsrf")
    response = session.post(f"{hub.url}/hub/login?next=", data={"username": name, "password": hub.password,
                                                                 "_xsrf": xsrf}, allow_redirects=False, timeout=30)
    assert response.status_code == 302, f"login of {name} failed: {response.status_code}"
    wrong = requests.Session()
    wrong.get(f"{hub.url}/hub/login", timeout=10)
    refused = wrong.post(f"{hub.url}/hub/login", data={"username": name, "password": "wrong-password",
                                                        "_xsrf": wrong.cookies.get("_xsrf")},
                         allow_redirects=False, timeout=30)
    assert refused.status_code != 302, "a wrong password logged in"
    token = session.post(f"{hub.url}/hub/api/users/{name}/tokens", json={"note": "course test"},
                         headers={"X-XSRFToken": session.cookies.get("_xsrf")}, timeout=30)
    assert token.status_code in (200, 201), f"token for {name}: {token.status_code} {token.text[:200]}"
    return token.json()["token"]


def start_server(hub: Hub, name: str, token: str) -> None:
    response = hub.api("POST", f"/users/{name}/server", token=token)
    assert response.status_code in (201, 202), f"start {name}: {response.status_code} {response.text[:200]}"

    def ready():
        return hub.api("GET", f"/users/{name}").json()["servers"].get("", {}).get("ready")
    hub.wait(ready, f"{name}'s server", 240)


class Kernel:
    """One kernel of a learner's server, reached through the hub's proxy with the learner's token."""

    def __init__(self, hub: Hub, name: str, token: str):
        self.base = f"{hub.url}/user/{name}/api"
        self.headers = {"Authorization": f"token {token}"}
        response = requests.post(f"{self.base}/kernels", headers=self.headers, json={"name": "python3"}, timeout=60)
        assert response.status_code == 201, f"kernel for {name}: {response.status_code} {response.text[:200]}"
        self.id = response.json()["id"]
        ws_url = self.base.replace("http://", "ws://") + f"/kernels/{self.id}/channels"
        self.ws = websocket.create_connection(ws_url, header=[f"Authorization: token {token}"], timeout=600)

    def run(self, code: str) -> tuple[str, str]:
        """Execute ``code``; return (status, printed text)."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                                            "session": uuid.uuid4().hex, "version": "5.3"},
                                 "parent_header": {}, "metadata": {}, "channel": "shell",
                                 "content": {"code": code, "silent": False, "store_history": True,
                                             "user_expressions": {}, "allow_stdin": False}}))
        printed, status, idle = [], None, False
        while status is None or not idle:
            message = json.loads(self.ws.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                printed.append(content["text"])
            elif kind == "error":
                printed.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "execute_reply":
                status = content["status"]
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        return status, "".join(printed)


def run_lesson(hub: Hub, name: str, token: str, lesson: str, results: dict) -> None:
    try:
        contents = requests.get(f"{hub.url}/user/{name}/api/contents/{lesson}.ipynb", timeout=60,
                                headers={"Authorization": f"token {token}"})
        assert contents.status_code == 200, f"{name}'s copy of {lesson}: {contents.status_code}"
        cells = [c for c in contents.json()["content"]["cells"] if c["cell_type"] == "code"]
        kernel = Kernel(hub, name, token)
        ran = failed = 0
        for cell in cells:
            status, printed = kernel.run(cell["source"])
            ran += 1
            if status != "ok" and "raises-exception" not in cell.get("metadata", {}).get("tags", []):
                failed += 1
                results[name] = {"error": f"cell {ran} failed: {printed[-500:]}"}
                return
        _, who = kernel.run("import os, getpass; print(os.environ.get('COURSE_LEARNER'), getpass.getuser(), "
                            "os.getuid(), os.getcwd())")
        results[name] = {"cells": ran, "failed": failed, "who": who.split(), "kernel": kernel}
    except Exception as error:  # reported by the main thread
        results[name] = {"error": f"{type(error).__name__}: {error}"}


def sample_stats(names, peaks: dict, stop: threading.Event) -> None:
    while not stop.is_set():
        out = podman.run("stats", "--no-stream", "--format", "json", *[f"course-{n}" for n in names],
                         check=False, capture=True).stdout
        try:
            rows = json.loads(out or "[]")
        except ValueError:
            rows = []
        for row in rows:
            name = row.get("name", "").removeprefix("course-")
            memory = float(row.get("mem_usage_bytes") or 0) or _parse_bytes(row.get("mem_usage", "0B").split("/")[0])
            cpu = float(str(row.get("cpu_percent", "0")).rstrip("%") or 0)
            peak = peaks.setdefault(name, {"memory": 0.0, "cpu": 0.0})
            peak["memory"] = max(peak["memory"], memory)
            peak["cpu"] = max(peak["cpu"], cpu)
        stop.wait(2)


def _parse_bytes(text: str) -> float:
    text = text.strip()
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="localhost/mindspore-course:test")
    parser.add_argument("--lesson", default="00_environment")
    parser.add_argument("--learners", type=int, default=3)
    args = parser.parse_args(argv)
    if args.learners < 2:
        parser.error("--learners must be at least 2 (isolation needs two)")
    if os.geteuid() != 0:
        raise SystemExit("test_hub: run as root (the hub starts learners' containers with rootful podman).")
    if not (HERE / "hub" / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        if not shutil.which("npm"):
            raise SystemExit("test_hub: npm is missing (configurable-http-proxy). Fix: apt-get install npm")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE / "hub", check=True)
    if podman.run("image", "exists", args.image, check=False).returncode != 0:
        print(f"--- building {args.image}", flush=True)
        build_image(args.image)
    suffix = secrets.token_hex(2)
    names = [f"learner{i}-{suffix}" for i in range(1, args.learners + 1)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="course-hub-") as state:
        hub = Hub(args.image, Path(state))
        try:
            tokens = {name: login(hub, name) for name in names}
            for name in names:
                start_server(hub, name, tokens[name])
            print(f"--- {len(names)} servers ready after {time.monotonic() - started:.0f} s; running {args.lesson} "
                  "for every learner at once", flush=True)
            results, peaks, stop = {}, {}, threading.Event()
            sampler = threading.Thread(target=sample_stats, args=(names, peaks, stop), daemon=True)
            sampler.start()
            t_lesson = time.monotonic()
            threads = [threading.Thread(target=run_lesson, args=(hub, n, tokens[n], args.lesson, results))
                       for n in names]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            lesson_seconds = time.monotonic() - t_lesson
            stop.set()
            sampler.join()
            problems = [f"{n}: {results.get(n, {}).get('error', 'no result')}" for n in names
                        if "error" in results.get(n, {"error": ""})]
            assert not problems, "\n".join(problems)
            for name in names:
                learner, user, uid, cwd = results[name]["who"]
                assert learner == name and user == "learner" and uid != "0" and cwd == "/home/learner/work", \
                    results[name]["who"]
            # Limits, as podman applied them.
            for name in names:
                inspect = json.loads(podman.run("inspect", f"course-{name}", capture=True).stdout)[0]
                assert inspect["HostConfig"]["Memory"] == hub_memory_limit(), inspect["HostConfig"]["Memory"]
                assert inspect["HostConfig"]["NanoCpus"] == 10**9, inspect["HostConfig"]["NanoCpus"]
            # Isolation: another learner's token, and from inside a kernel (no token, the server's own token).
            a, b = names[0], names[1]
            other = requests.get(f"{hub.url}/user/{b}/api/contents", timeout=30,
                                 headers={"Authorization": f"token {tokens[a]}"}, allow_redirects=False)
            assert other.status_code == 403, f"{a}'s token reached {b}'s server: {other.status_code}"
            anonymous = requests.get(f"{hub.url}/user/{b}/api/contents", timeout=30, allow_redirects=False)
            assert anonymous.status_code in (302, 403), f"anonymous reached {b}'s server: {anonymous.status_code}"
            probe = (f"import os, urllib.request, urllib.error\n"
                     f"def status(url, token=None):\n"
                     f"    request = urllib.request.Request(url, headers={{'Authorization': 'token ' + token}} "
                     f"if token else {{}})\n"
                     f"    try:\n        return urllib.request.urlopen(request, timeout=10).status\n"
                     f"    except urllib.error.HTTPError as e:\n        return e.code\n"
                     f"print(status('{hub.url}/user/{b}/api/contents', os.environ['JUPYTERHUB_API_TOKEN']),"
                     f" status('{hub.url}/user/{b}/api/contents'),"
                     f" sorted(os.listdir('/home')), os.path.exists('/var/lib/containers'))")
            status, printed = results[a]["kernel"].run(probe)
            with_token, without, homes, storage = printed.split(None, 3)
            # S105: an HTTP status, not a password.
            assert status == "ok" and with_token == "403" and without in ("302", "403"), printed  # noqa: S105
            assert "False" in storage and b not in homes, printed
            # The instructor's class table from the learners' volumes.
            progress_files = []
            for name in names:
                mount = podman.run("volume", "inspect", f"course-work-{name}", "--format", "{{.Mountpoint}}",
                                   capture=True).stdout.strip()
                progress_files.append(str(Path(mount) / "progress" / "exercises.jsonl"))
            table = subprocess.run([sys.executable, str(ROOT / "tools" / "class_progress.py"), *progress_files,
                                    "--out", str(Path(state) / "class")], capture_output=True, text=True, check=True)
            assert f"{len(names)} learner(s)" in table.stdout, table.stdout
            print(f"--- lesson {args.lesson} ran for {len(names)} learners at once in {lesson_seconds:.0f} s "
                  f"({results[a]['cells']} code cells each); isolation, limits and class table checked")
            for name in names:
                peak = peaks.get(name, {"memory": 0, "cpu": 0})
                print(f"  {name}: peak memory {peak['memory'] / 2**20:.0f} MiB, peak CPU {peak['cpu']:.0f}% "
                      f"(limit {hub_memory_limit() / 2**30:.1f} GiB, 1 CPU)")
        except BaseException:
            print(f"--- the hub's log (last lines):\n{hub.tail(60)}", flush=True)
            raise
        finally:
            for name in names:
                hub.api("DELETE", f"/users/{name}/server")
            hub.stop()
            for name in names:
                podman.run("rm", "-f", f"course-{name}", check=False, capture=True)
                podman.run("volume", "rm", "-f", f"course-work-{name}", check=False, capture=True)
    print(f"hub: all checks passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
