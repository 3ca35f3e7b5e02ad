# JupyterHub for a class of the course: `jupyterhub -f classroom/hub/jupyterhub_config.py` (docs/WORKSHOP.md,
# "A JupyterHub for a class"). Tested by classroom/test_hub.py with three learners on 127.0.0.1.
#
# What it does:
# - Each learner's server is a container of the course image (classroom/Containerfile, built with podman), run as
#   the image's non-root user, with the learner's own volume course-work-<name> for their work. The volume is filled
#   from the image's student edition only where a file is absent: a learner's file is never overwritten.
# - Isolation: separate containers and volumes (no learner sees another's files); the hub's tokens keep learners out
#   of each other's servers (classroom/test_hub.py checks both).
# - Limits per learner, enforced by the kernel's cgroups through podman: memory (COURSE_HUB_MEM_LIMIT, default
#   2560M, swap included: the heaviest main lesson, 08, peaks at 2.2 GB with msrun's workers; most lessons stay
#   under 0.9 GB, benchmarks/kernel_memory.md) and CPU (COURSE_HUB_CPU_LIMIT cores, default 1). Sizing: WORKSHOP.
# - Idle servers are stopped after COURSE_HUB_IDLE_TIMEOUT seconds (default 3600) by jupyterhub-idle-culler.
# - Authentication (COURSE_HUB_AUTH):
#     "native": NativeAuthenticator (pip install jupyterhub-nativeauthenticator): learners sign up, the
#               instructor (COURSE_HUB_ADMIN) authorises them. The default, for a workshop.
#     "oauth":  the institution's single sign-on, e.g. GitHubOAuthenticator or GenericOAuthenticator
#               (pip install oauthenticator); set c.Authenticator.* in a file of your own that loads this one.
#     "dummy":  ONE shared password (COURSE_HUB_DUMMY_PASSWORD, 8+ characters, required): tests and a closed room.
# Environment: COURSE_HUB_IMAGE (localhost/mindspore-course:latest), COURSE_HUB_PORT (8000), COURSE_HUB_IP
# (127.0.0.1; put an HTTPS reverse proxy in front for a real class), COURSE_HUB_STATE (a folder for the hub's
# database and cookie secret), COURSE_HUB_SERVICE_TOKEN (an admin API token for scripts; none by default).
# The hub runs as root here (podman rootful); the learners' containers never do. Kubernetes: classroom/helm/.
import os
import sys
from pathlib import Path

from jupyterhub.spawner import SimpleLocalProcessSpawner
from jupyterhub.utils import random_port

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))

import podman  # noqa: E402  (how this project calls podman)

c = get_config()  # noqa: F821  (JupyterHub's config loader defines it)


def _setting(name, default):
    return os.environ.get(f"COURSE_HUB_{name}", default)


MEM_LIMIT = _setting("MEM_LIMIT", "2560M")
CPU_LIMIT = float(_setting("CPU_LIMIT", "1"))
IDLE_TIMEOUT = int(_setting("IDLE_TIMEOUT", "3600"))
IMAGE = _setting("IMAGE", "localhost/mindspore-course:latest")
STATE = Path(_setting("STATE", ROOT / "outputs" / "hub"))
STATE.mkdir(parents=True, exist_ok=True)
os.chmod(STATE, 0o700)

c.JupyterHub.bind_url = f"http://{_setting('IP', '127.0.0.1')}:{_setting('PORT', '8000')}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.debug = False

# ---------------------------------------------------------------------------------------------- authentication
AUTH = _setting("AUTH", "native")
if AUTH == "dummy":
    password = _setting("DUMMY_PASSWORD", "")
    if len(password) < 8:
        raise SystemExit("COURSE_HUB_AUTH=dummy needs COURSE_HUB_DUMMY_PASSWORD (8 characters or more): without it "
                         "anyone could log in as anyone. For a real class use COURSE_HUB_AUTH=native or oauth.")
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = password
    c.Authenticator.allow_all = True
elif AUTH == "native":
    c.JupyterHub.authenticator_class = "native"  # jupyterhub-nativeauthenticator
    c.Authenticator.admin_users = {_setting("ADMIN", "instructor")}
    c.NativeAuthenticator.open_signup = False  # the instructor authorises each sign-up
    c.Authenticator.allow_all = True
elif AUTH != "oauth":
    raise SystemExit(f"COURSE_HUB_AUTH must be native, oauth or dummy, got {AUTH!r}.")

# A service token for automation (classroom/test_hub.py; an instructor's scripts): only when one is given.
if _setting("SERVICE_TOKEN", ""):
    c.JupyterHub.services = [{"name": "course-admin", "api_token": _setting("SERVICE_TOKEN", "")}]
    c.JupyterHub.load_roles = [{"name": "course-admin", "services": ["course-admin"],
                                "scopes": ["admin:users", "admin:servers", "tokens", "list:users"]}]
else:
    c.JupyterHub.services = []
    c.JupyterHub.load_roles = []

# ----------------------------------------------------------------------------------------------- idle culling
c.JupyterHub.services.append({
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_TIMEOUT}"],
})
c.JupyterHub.load_roles.append({"name": "idle-culler", "services": ["idle-culler"],
                                "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]})


# ----------------------------------------------------------------------------------------------------- spawner
class CoursePodmanSpawner(SimpleLocalProcessSpawner):
    """Each learner's server is a container of the course image (classroom/Containerfile), started with podman.

    - isolation: its own container and its own volume ``course-work-<name>`` (the image's user "learner", not
      root); the hub's tokens keep learners out of each other's servers;
    - limits: ``--memory``/``--memory-swap`` and ``--cpus`` (cgroups, enforced by the kernel);
    - the volume is filled from the image's edition only where a file is absent (classroom/start_lab.py).
    The container shares the host's network namespace so that it reaches the hub's API on 127.0.0.1 and the proxy
    reaches it on its port; it listens on 127.0.0.1 only.
    """

    def _container(self) -> str:
        return f"course-{self.user.name}"

    def make_preexec_fn(self, name):
        return None  # podman runs as the hub's user; the container runs as "learner"

    def user_env(self, env):
        return env

    async def start(self):
        env = self.get_env()
        self.port = self.port or random_port()
        # LocalProcessSpawner.start() appends get_args() (the singleuser options) to this command line.
        inner = ["python", "/opt/course/classroom/start_lab.py", "--singleuser"]
        passed = sorted(k for k in env if k.startswith(("JUPYTERHUB_", "JPY_", "JUPYTER_")))
        self.cmd = [*podman.podman(), "run", "--rm", "--name", self._container(), "--network=host",
                    *podman.ULIMITS, f"--memory={MEM_LIMIT}", f"--memory-swap={MEM_LIMIT}", f"--cpus={CPU_LIMIT}",
                    "-v", f"course-work-{self.user.name}:/home/learner/work",
                    *[item for key in passed for item in ("-e", key)], "-e", f"COURSE_LEARNER={self.user.name}",
                    IMAGE, *inner]
        podman.run("rm", "-f", self._container(), check=False, capture=True)  # a leftover of a killed hub
        return await super().start()

    def get_args(self):
        return [*super().get_args(), "--ServerApp.root_dir=/home/learner/work"]

    async def stop(self, now=False):
        await super().stop(now=now)
        podman.run("rm", "-f", self._container(), check=False, capture=True)


c.JupyterHub.spawner_class = CoursePodmanSpawner
c.Spawner.default_url = "/lab"
c.Spawner.mem_limit = MEM_LIMIT
c.Spawner.cpu_limit = CPU_LIMIT
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
