"""The work behind ``python course.py COMMAND`` (see course.py): one front door on Linux, macOS and Windows.

Standard library only. Everything up to choosing the interpreter also runs on old Pythons (3.6 and up), so that an
unsupported ``python`` can still find a supported one or say why there is none; the rest runs on the interpreter
that was chosen (course.py restarts itself there). Every command runs its tools with argument lists, never through
a shell, so file names with spaces, Chinese characters or shell metacharacters are just names.
"""
# ruff: noqa: UP031, UP021, UP022  (%-formatting and universal_newlines: this file must run on Python 3.6)
import argparse
import glob
import hashlib
import inspect
import json
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORTED_VERSIONS = ((3, 10), (3, 11), (3, 12))
#: (platform.system(), platform.machine()) pairs MindSpore 2.10 publishes wheels for (lower-cased machine).
SUPPORTED_PLATFORMS = {
    ("Linux", "x86_64"): "Linux x86-64", ("Linux", "aarch64"): "Linux aarch64", ("Linux", "arm64"): "Linux aarch64",
    ("Darwin", "arm64"): "macOS arm64", ("Darwin", "x86_64"): "macOS x86-64",
    ("Windows", "amd64"): "Windows amd64", ("Windows", "x86_64"): "Windows amd64",
}
STAMP_NAME = ".course-installed.json"
REQUIREMENTS = "requirements.txt"
REQUIREMENTS_TORCH = "requirements-torch.txt"
REQUIREMENTS_FAST_CONV = "requirements-fast-conv.txt"  # appendix A8's private oneDNN (a no-op off Linux x86-64)
CONSTRAINTS = "constraints.txt"
NBVAL = ["--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=900", "--nbval-sanitize-with=nbval_sanitize.cfg"]
DEFAULT_LAB_PORT = 8888

def probe_info():
    """What the course needs to know about an interpreter. Runs on any Python 3: in-process for the running
    interpreter, and as ``PYTHON -c PROBE`` (this function's own source) for the others."""
    import platform  # (imported here: the probe's source runs on its own)
    import struct
    import sys
    try:
        import ensurepip  # noqa: F401  (only whether it can be imported)
        import venv  # noqa: F401
        has_venv = True
    except Exception:
        has_venv = False
    return {"version": list(sys.version_info[:3]), "implementation": platform.python_implementation(),
            "system": platform.system(), "machine": platform.machine(), "bits": struct.calcsize("P") * 8,
            "venv": has_venv, "executable": sys.executable}


PROBE = inspect.getsource(probe_info) + "\nimport json\nprint(json.dumps(probe_info()))\n"


class CourseError(Exception):
    """A problem the user can fix: printed as the message (with its "Fix: ..."), no traceback."""


def say(message):
    text = "course.py: " + message
    try:
        print(text, flush=True)
    except UnicodeEncodeError:  # a console whose code page has no Chinese characters (Windows cp1252, ...)
        encoding = getattr(sys.stdout, "encoding", None) or "ascii"
        print(text.encode(encoding, "replace").decode(encoding), flush=True)


# ---------------------------------------------------------------------------------------------- the interpreter
def describe(info):
    return "%s %s (%s %s, %d-bit)" % (info["implementation"], ".".join(str(n) for n in info["version"]),
                                      info["system"], info["machine"], info["bits"])


def how_to_get_python(system=None):
    """The fix for a missing or unsupported interpreter, for the OS the user is on."""
    system = system or platform.system()
    if system == "Windows":
        ways = ("Install Python 3.12 (64-bit) from python.org (tick 'Add python.exe to PATH'), or 'winget install "
                "Python.Python.3.12', or 'uv python install 3.12', or conda ('conda env create -f environment.yml'); "
                "then run 'py -3.12 course.py lab'.")
    elif system == "Darwin":
        ways = ("Install Python 3.12 from python.org, or 'brew install python@3.12', or pyenv ('pyenv install 3.12'), "
                "or uv ('uv python install 3.12'), or conda ('conda env create -f environment.yml'); then run "
                "'python3.12 course.py lab'.")
    else:
        ways = ("Use your system's Python 3.10-3.12 with its venv package (Ubuntu 24.04: 'sudo apt install "
                "python3.12-venv'; Ubuntu 22.04: python3.10-venv; Debian 12: python3.11-venv), or the deadsnakes "
                "PPA on older Ubuntu, or pyenv ('pyenv install 3.12'), or uv ('uv python install 3.12'), or conda "
                "('conda env create -f environment.yml'); then run e.g. 'python3.12 course.py lab'.")
    return "Fix: " + ways + " Or pick one with 'python course.py --python PATH COMMAND'."


def problems_of(info):
    """Why ``info`` (a probe result) cannot run the course: an empty list when it can."""
    found = []
    version = tuple(info["version"][:2])
    if info["implementation"] != "CPython":
        found.append("it is %s; MindSpore 2.10 publishes wheels for CPython only" % info["implementation"])
    if version not in SUPPORTED_VERSIONS:
        found.append("MindSpore 2.10 has wheels for CPython 3.10, 3.11 and 3.12 only, not %d.%d" % version)
    pair = (info["system"], info["machine"].lower())
    if pair not in SUPPORTED_PLATFORMS or info["bits"] != 64:
        found.append("MindSpore 2.10 has no wheels for %s %s (%d-bit); it has them for Linux x86-64 and aarch64, "
                     "macOS arm64 and x86-64, and 64-bit Windows on amd64"
                     % (info["system"], info["machine"], info["bits"]))
    if not info.get("venv", True):
        fix = " (Debian/Ubuntu: 'sudo apt install python%d.%d-venv')" % version if info["system"] == "Linux" else ""
        found.append("it cannot create a virtual environment: its venv/ensurepip modules are missing" + fix)
    return found


def probe_running():
    """The probe result of the interpreter running this file (no subprocess)."""
    return probe_info()


def probe(command):
    """Run the probe with ``command`` (a list such as ["py", "-3.12"] or ["/usr/bin/python3.11"]): its result, or
    None if it does not run as a Python 3 interpreter within 30 s."""
    try:
        result = subprocess.run(list(command) + ["-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    try:
        info = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return info if isinstance(info, dict) and "version" in info else None


def candidates(system=None, which=shutil.which):
    """Interpreters to try after the running one, best first: the Windows launcher ``py -3.x``, then
    python3.12/3.11/3.10 on PATH."""
    system = system or platform.system()
    found = []
    if system == "Windows" and which("py"):
        found += [["py", "-%d.%d" % version] for version in reversed(SUPPORTED_VERSIONS)]
    for version in reversed(SUPPORTED_VERSIONS):
        path = which("python%d.%d" % version)
        if path:
            found.append([path])
    return found


def choose_interpreter(requested=None, running=None, system=None, which=shutil.which, run_probe=None):
    """The probe result of the interpreter the course runs on. ``requested``: the user's --python (refused with
    the reason if it cannot work); else the running one if it can, else the first candidate that can."""
    run_probe = run_probe or probe
    running = running or probe_running()
    system = system or running["system"]
    if requested:
        command = [requested] if not isinstance(requested, list) else requested
        info = run_probe(command)
        if info is None:
            raise CourseError("--python %s does not run (or is not a Python 3 interpreter). The course needs CPython "
                              "3.10, 3.11 or 3.12.\n%s" % (" ".join(command), how_to_get_python(system)))
        why = problems_of(info)
        if why:
            raise CourseError("--python %s is %s and cannot run the course: %s. Nothing was downloaded.\n%s"
                              % (" ".join(command), describe(info), "; ".join(why), how_to_get_python(system)))
        return info
    if not problems_of(running):
        return running
    tried = ["%s: %s (%s)" % (running["executable"], describe(running), "; ".join(problems_of(running)))]
    for command in candidates(system, which):
        info = run_probe(command)
        if info is None:
            tried.append("%s: does not run" % " ".join(command))
        elif problems_of(info):
            tried.append("%s: %s (%s)" % (" ".join(command), describe(info), "; ".join(problems_of(info))))
        else:
            return info
    raise CourseError("No Python interpreter here can run the course. MindSpore 2.10 needs CPython 3.10, 3.11 or "
                      "3.12 on Linux (x86-64, aarch64), macOS (arm64, x86-64) or 64-bit Windows. Tried:\n  "
                      + "\n  ".join(tried) + "\nNothing was downloaded.\n" + how_to_get_python(system))


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


# ------------------------------------------------------------------------------------------ the environment
def venv_python(venv, system=None):
    """The interpreter inside a venv: Scripts\\python.exe on Windows, bin/python elsewhere."""
    system = system or platform.system()
    if system == "Windows":
        return os.path.join(venv, "Scripts", "python.exe")
    return os.path.join(venv, "bin", "python")


def requirement_files(full):
    """The requirement files of the default install, or of the full one (plus PyTorch and the private oneDNN)."""
    return [REQUIREMENTS] + ([REQUIREMENTS_TORCH, REQUIREMENTS_FAST_CONV] if full else [])


def requirements_hash(root, full):
    """The install stamp's key: the contents (not the mtimes) of every file the install reads."""
    digest = hashlib.sha256()
    for name in requirement_files(full) + [CONSTRAINTS, "pyproject.toml"]:
        path = os.path.join(root, name)
        digest.update(name.encode() + b"\0")
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                digest.update(handle.read())
        digest.update(b"\0")
    return digest.hexdigest()


def read_stamp(venv):
    try:
        with open(os.path.join(venv, STAMP_NAME), encoding="utf-8") as handle:
            stamp = json.load(handle)
        return stamp if isinstance(stamp, dict) else {}
    except (OSError, ValueError):
        return {}


def stamp_is_current(root, venv, full):
    stamp = read_stamp(venv)
    return stamp.get("full" if full else "default") == requirements_hash(root, full)


def write_stamp(root, venv, full):
    stamp = read_stamp(venv)
    stamp["default"] = requirements_hash(root, False)
    if full:
        stamp["full"] = requirements_hash(root, True)
    path = os.path.join(venv, STAMP_NAME)
    temporary = path + ".tmp-%d" % os.getpid()
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(stamp, handle, indent=1)
    os.replace(temporary, path)


def pinned(root, names):
    """{name: (version, marker or None)} of the ``name==version`` lines of the requirement files ``names``."""
    pins = {}
    for name in names:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.split("#", 1)[0].strip()
                match = re.match(r"([A-Za-z0-9_.\-]+)\s*==\s*([^;\s]+)\s*(?:;(.*))?$", line)
                if match:
                    pins[normalise(match.group(1))] = (match.group(2), (match.group(3) or "").strip() or None)
    return pins


def normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def marker_applies(marker):
    """Does a requirement's environment marker hold here? pip's own parser when it is there (it always is in a
    venv or conda environment), else the marker is taken to apply."""
    if not marker:
        return True
    try:
        from pip._vendor.packaging.markers import Marker
    except ImportError:
        try:
            from packaging.markers import Marker
        except ImportError:
            return True
    return Marker(marker).evaluate()


def version_matches(have, want):
    """Does installed version ``have`` satisfy ``==want`` (PEP 440: 2.13.0+cpu satisfies ==2.13.0)?"""
    try:
        from pip._vendor.packaging.specifiers import Specifier
    except ImportError:
        try:
            from packaging.specifiers import Specifier
        except ImportError:
            return have == want or ("+" not in want and have.split("+", 1)[0] == want)
    return Specifier("==" + want).contains(have, prereleases=True)


def unmet_pins(root, full):
    """The pins the running interpreter's environment does not satisfy, as 'name: want X, have Y' lines."""
    from importlib import metadata

    unmet = []
    for name, (version, marker) in sorted(pinned(root, requirement_files(full)).items()):
        if not marker_applies(marker):
            continue
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        if have is None or not version_matches(have, version):
            unmet.append("%s: pinned %s, installed %s" % (name, version, have or "nothing"))
    return unmet


def in_active_environment():
    """Is the running interpreter inside a virtual or conda environment other than the course's own .venv?"""
    return sys.prefix != getattr(sys, "base_prefix", sys.prefix) or bool(
        os.environ.get("CONDA_PREFIX") and same_file(os.environ["CONDA_PREFIX"], sys.prefix))


class Environment:
    """The Python environment the course's commands run in: its interpreter and how it was chosen."""

    def __init__(self, python, venv=None, active=False):
        self.python, self.venv, self.active = python, venv, active

    def run(self, *args, **kwargs):
        return run([self.python] + list(args), **kwargs)


#: --dry-run: print every command instead of running it (and install nothing).
DRY_RUN = False


def shown(command, env=None):
    """A command as a line a user can read (and paste into a POSIX shell)."""
    prefix = ["%s=%s" % (key, shlex.quote(value)) for key, value in sorted((env or {}).items()) if value is not None]
    return " ".join(prefix + [shlex.quote(str(arg)) for arg in command])


def run(command, env=None, cwd=None, check=True):
    """Run ``command`` (an argument list, never a shell string) in the course's folder; its exit status. Ctrl+C
    reaches the child too (same console): course.py waits for it to finish its own way (JupyterLab stops its
    kernels, pytest prints its summary) instead of killing it."""
    if DRY_RUN:
        print(shown(command, env), flush=True)
        return 0
    full_env = dict(os.environ, **(env or {}))
    for key in [k for k, v in full_env.items() if v is None]:  # None: not passed on at all
        del full_env[key]
    try:
        process = subprocess.Popen(command, cwd=cwd or ROOT, env=full_env)
    except OSError as error:
        raise CourseError("could not start %s: %s" % (command[0], error)) from None
    while True:
        try:
            status = process.wait()
            break
        except KeyboardInterrupt:
            continue
    if check and status != 0:
        raise CommandFailed(status, command)
    return status


class CommandFailed(Exception):
    def __init__(self, status, command):
        Exception.__init__(self, "%s exited with status %d" % (os.path.basename(command[0]), status))
        self.status = status


def lock(path):
    """An exclusive lock held while the returned file is open (fcntl on POSIX, msvcrt on Windows); the OS drops
    it when the process dies, so a killed install never blocks the next one."""
    handle = open(path, "a+")
    try:
        if os.name == "nt":
            import msvcrt
            handle.seek(0)
            while True:
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    say("waiting for another course.py install to finish ...")
        else:
            import fcntl
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                say("waiting for another course.py install to finish ...")
                fcntl.flock(handle, fcntl.LOCK_EX)
    except BaseException:
        handle.close()
        raise
    return handle


def pip_install(python, args, pip_opts):
    """pip install, with its progress lines shown and its errors in full (nothing hidden by -q)."""
    command = [python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"] + pip_opts + args
    if DRY_RUN:
        print(shown(command), flush=True)
        return
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, universal_newlines=True,
                               encoding="utf-8", errors="replace")
    for line in process.stdout:
        if not line.startswith(("Requirement already satisfied", "  Using cached", "Using cached")):
            sys.stdout.write(line)
            sys.stdout.flush()
    status = process.wait()
    if status != 0:
        raise CourseError("pip could not install the course's packages (its error is above). Nothing was marked as "
                          "installed: the next run tries again.\nFix: read pip's error above. If it says no version "
                          "or conflicting versions of a package can be had for this Python, try another supported "
                          "one (e.g. 'python course.py --python python3.12 install'); without internet, set "
                          "PIP_OPTS=\"--no-index --find-links=wheelhouse\" (docs/WORKSHOP.md).")


def prepare(options, full):
    """The environment every command but ``clean`` and ``wheelhouse`` runs in, installed if needed."""
    venv = options.venv
    if in_active_environment() and not same_file(sys.prefix, venv):
        location = find_course_lib()
        if location and not same_file(location, os.path.join(ROOT, "course_lib")):
            raise CourseError(
                "the active environment %s imports course_lib from %s, not from this course (%s).\nFix: run "
                "'python -m pip install --no-deps -e .' here to point it at this course, or deactivate the "
                "environment to let course.py use its own .venv." % (sys.prefix, location, ROOT))
        if location:
            unmet = unmet_pins(ROOT, full)
            if not unmet:
                say("using the active environment %s (it has the course and its pins); no .venv is made"
                    % sys.prefix)
                return Environment(sys.executable, active=True)
            raise CourseError(
                "the active environment %s has the course but not its pins:\n  %s\nFix: install them there with "
                "'python -m pip install -r %s -c constraints.txt -e .', or deactivate it to let course.py use its "
                "own .venv." % (sys.prefix, "\n  ".join(unmet), " -r ".join(requirement_files(full))))
        say("the active environment %s does not have the course (course_lib); using %s instead"
            % (sys.prefix, os.path.relpath(venv, ROOT) if venv.startswith(ROOT) else venv))
    python = venv_python(venv)
    if os.path.isfile(python) and stamp_is_current(ROOT, venv, full):
        return Environment(python, venv)
    if DRY_RUN:
        say("would create %s if needed and install %s into it" % (venv, " and ".join(requirement_files(full))))
        return Environment(python, venv)
    os.makedirs(os.path.dirname(venv) or ".", exist_ok=True)
    holder = lock(venv.rstrip("/\\") + ".lock")
    try:
        if os.path.isfile(python) and stamp_is_current(ROOT, venv, full):  # another run installed it meanwhile
            return Environment(python, venv)
        info = probe([python]) if os.path.isfile(python) else None
        if info is not None and problems_of(info):
            raise CourseError("%s was made with %s, which cannot run the course: %s.\nFix: move it away (e.g. rename "
                              "it to .venv-old) and run the command again; course.py then makes a new one."
                              % (venv, describe(info), "; ".join(problems_of(info))))
        if info is None:
            base = options.interpreter["executable"]
            say("creating %s with %s (%s)" % (venv, base, describe(options.interpreter)))
            # Also repairs a .venv left half-made by an interrupted run (no --clear: nothing in it is deleted).
            run([base, "-m", "venv", venv])
            if not os.path.isfile(python):
                raise CourseError("'%s -m venv' made no %s. Fix: check that Python's venv module works (Debian/"
                                  "Ubuntu: install python3.X-venv)." % (base, python))
        files = requirement_files(full)
        say("installing %s (pinned by constraints.txt) into %s%s" % (" and ".join(files), venv,
            "" if full else "; PyTorch and the private oneDNN are left out (python course.py install --full adds "
                           "them)"))
        requirement_args = []
        for name in files:
            requirement_args += ["-r", name]
        pip_opts = shlex.split(os.environ.get("PIP_OPTS", ""), posix=os.name != "nt")
        if getattr(options, "wheelhouse", None):  # an offline classroom: every wheel from that folder
            pip_opts += ["--no-index", "--find-links", os.path.abspath(options.wheelhouse)]
        pip_install(python, requirement_args + ["-c", CONSTRAINTS], pip_opts)
        pip_install(python, ["--no-deps", "-e", "."], pip_opts)
        write_stamp(ROOT, venv, full)
        say("installed; the next run skips this until a requirement file changes")
        return Environment(python, venv)
    finally:
        holder.close()


def find_course_lib():
    """The folder course_lib is imported from in the running interpreter (installed, or on PYTHONPATH; not just
    because course.py's own folder is on sys.path), or None."""
    import importlib.util
    saved = list(sys.path)
    try:
        script = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else None
        chosen = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]

        def own(entry):  # course.py's folder (Python puts a script's folder first) and tools/, unless on PYTHONPATH
            return not any(same_file(entry, c) for c in chosen) and (
                same_file(entry, os.path.join(ROOT, "tools")) or (script is not None and same_file(entry, script)))
        sys.path[:] = [p for p in saved if p and not own(p)]
        spec = importlib.util.find_spec("course_lib")
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path[:] = saved
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else os.path.dirname(spec.origin or "")


# --------------------------------------------------------------------------------------------- the commands
def notebooks():
    return sorted(glob.glob(os.path.join("notebooks", "*.ipynb"), root_dir=ROOT)) if sys.version_info >= (3, 10) \
        else sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def workers(name, default=2):
    # empty counts as unset: the Makefile exports UNIT_WORKERS/NBVAL_WORKERS even when nobody set them
    value = os.environ.get(name) or str(default)
    if not value.isdigit() or int(value) < 1:
        raise CourseError("%s=%r is not a number of workers. Fix: set it to 1 or more (e.g. %s=2)."
                          % (name, value, name))
    return value


def unit_args(quick=False):
    """pytest over tests/ on UNIT_WORKERS pytest-xdist workers, a file per worker (module fixtures run once), in
    collection order: tests/conftest.py puts the files that take minutes first, so that none starts last while the
    other worker idles (xdist's default reorder, by number of tests, would undo that). ``quick``: without the tests
    marked ``slow`` (pyproject.toml)."""
    return (["-m", "pytest", "-n", workers("UNIT_WORKERS"), "--dist", "loadfile", "--no-loadscope-reorder"]
            + (["-m", "not slow"] if quick else []) + ["tests"])


#: Options that would switch off or weaken the lab's authentication, or open it to the network.
LAB_FORBIDDEN = re.compile(r"token|password|identity_?provider|authori[sz]er|unauthenticated|login_handler|"
                           r"allow_remote|xsrf|(^--|\.)ip$|notebook-dir|root_dir", re.I)


def forbidden_lab_option(arg):
    """Does a jupyter lab option (``--X.y=value`` or ``--X.y value``) touch authentication or the address?"""
    return arg.startswith("-") and bool(LAB_FORBIDDEN.search(arg.split("=", 1)[0]))


def free_port(start=DEFAULT_LAB_PORT, tries=100):
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    return None


def lab_command(python, folder, extra, token, system=None, is_root=None):
    """The jupyter lab command line: 127.0.0.1 only, always with the course's token, whatever the user's Jupyter
    config says (command-line options win over config files). Refuses extra options that touch authentication."""
    for arg in extra:
        if forbidden_lab_option(arg):
            raise CourseError("refusing the JupyterLab option %r: the course's lab always runs on 127.0.0.1 with "
                              "its own token, in the folder course.py picks. Fix: drop it; open the URL course.py "
                              "prints (it carries the token); LAB_DIR=folder opens another folder." % arg)
    port = None
    for index, arg in enumerate(extra):
        if arg.startswith("--port="):
            port = arg.split("=", 1)[1]
        elif arg == "--port" and index + 1 < len(extra):
            port = extra[index + 1]
    rest = list(extra)
    if port is None:
        port = free_port()
        if port is None:
            raise CourseError("no free port on 127.0.0.1 between 8888 and 8987. Fix: stop another JupyterLab, or "
                              "pass one: python course.py lab --port 9999")
        rest += ["--port=%d" % port]
    if not str(port).isdigit():
        raise CourseError("--port %r is not a port number. Fix: e.g. --port 8890" % port)
    is_root = (hasattr(os, "geteuid") and os.geteuid() == 0) if is_root is None else is_root
    if is_root and "--allow-root" not in rest:
        rest.append("--allow-root")  # Jupyter's own rule for root (containers, CI); the token still protects it
    command = [python, "-m", "jupyter", "lab", "--ip=127.0.0.1", "--notebook-dir=" + folder,
               "--ServerApp.port_retries=0",
               "--ServerApp.identity_provider_class=jupyter_server.auth.identity.PasswordIdentityProvider",
               "--IdentityProvider.token=" + token] + rest
    return command, int(port)


def lab_extra_args(options):
    """The user's JupyterLab options (LAB_ARGS, then the command line), refused up front if they touch the
    authentication or the address, before anything is installed or started."""
    extra = shlex.split(os.environ.get("LAB_ARGS", ""), posix=os.name != "nt") + options.args
    for arg in extra:
        if forbidden_lab_option(arg):
            raise CourseError("refusing the JupyterLab option %r: the course's lab always runs on 127.0.0.1 with "
                              "its own token, in the folder course.py picks. Fix: drop it; open the URL course.py "
                              "prints (it carries the token); LAB_DIR=folder opens another folder." % arg)
    return extra


def cmd_lab(options, env, folder=None, lang=None):
    import secrets
    if DRY_RUN:
        secrets = type("Secrets", (), {"token_hex": staticmethod(lambda n: "<token>")})
    if folder is None:  # LAB_DIR is relative to where the user is, the default to the course
        folder = os.path.abspath(os.environ["LAB_DIR"]) if os.environ.get("LAB_DIR") else "notebooks"
    extra = lab_extra_args(options)
    token = secrets.token_hex(24)
    command, port = lab_command(env.python, folder, extra, token)
    say("JupyterLab on 127.0.0.1 only, with a token (whatever your Jupyter config says). Open:\n\n"
        "    http://127.0.0.1:%d/lab?token=%s\n\n(Ctrl+C stops it.)" % (port, token))
    extra_env = {"COURSE_LANG": lang} if lang else {}
    extra_env["JUPYTER_TOKEN"] = None  # the command line sets the token; kernels and notebooks never see it
    try:
        return run(command, env=extra_env, check=False)
    except KeyboardInterrupt:
        return 130


def cmd_install(options, env):
    if not env.active and not DRY_RUN:
        say("%s is ready (%s)" % (env.venv, "full install: with PyTorch and the private oneDNN"
                                  if stamp_is_current(ROOT, env.venv, True) else
                                  "without PyTorch and the private oneDNN: python course.py install --full adds "
                                  "them"))
    return 0


def cmd_notebooks(options, env):
    names = [os.path.abspath(name) for name in options.args] or notebooks()
    return env.run("tools/execute_notebook.py", *names)


def cmd_unit(options, env):
    """The unit tests; with arguments (``-x tests/test_metrics.py``), pytest gets those instead of ``tests``."""
    return env.run(*(unit_args()[:-1] + options.args if options.args else unit_args()))


#: What ruff's flake8-bandit (S) rules do not see, checked by ``lint`` as well (pyproject.toml has the rest).
UNSAFE_PATTERNS = {
    "numpy with allow_pickle on (it then unpickles arbitrary objects). Fix: save and load arrays, not objects":
        re.compile(r"allow_pickle\s*=\s*True"),
}
UNSAFE_SCANNED = ("benchmarks", "classroom", "course_lib", "notebooks", "recipes", "scripts", "solutions", "tools")


def unsafe_lines(root=None):
    """``path:line: what`` for each line of the course's code and notebooks that matches UNSAFE_PATTERNS."""
    root, found = root or ROOT, []
    for folder in UNSAFE_SCANNED:
        for base, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            for name in sorted(files):
                if not name.endswith((".py", ".ipynb")):
                    continue
                path = os.path.join(base, name)
                with open(path, encoding="utf-8", errors="replace") as source:
                    for number, line in enumerate(source, 1):
                        found.extend("%s:%d: %s" % (os.path.relpath(path, root), number, what)
                                     for what, pattern in UNSAFE_PATTERNS.items() if pattern.search(line))
    return found


def cmd_lint(options, env):
    env.run("-m", "ruff", "check")
    found = unsafe_lines()
    if found:
        raise CourseError("unsafe code:\n  " + "\n  ".join(found))
    return env.run("-m", "codespell_lib")


def longest_first(names, root=None):
    """``names`` (notebook paths) ordered by their last recorded run time, longest first, from the ``notebooks``
    records of benchmarks/results.json (``python course.py bench-notebooks``); notebooks without a record come first
    (a new one may be long), in their given order. Started first, a long lesson does not run alone at the end while
    the other worker idles. Without readable records, the order is kept."""
    try:
        with open(os.path.join(root or ROOT, "benchmarks", "results.json"), encoding="utf-8") as f:
            records = json.load(f)["notebooks"]["records"]
        seconds = dict((r["notebook"], float(r["seconds"])) for r in records)
    except (OSError, ValueError, KeyError, TypeError):
        return list(names)
    unknown = [name for name in names if os.path.basename(name) not in seconds]
    known = [name for name in names if os.path.basename(name) in seconds]
    return unknown + sorted(known, key=lambda name: -seconds[os.path.basename(name)])


def nbval_twice(env, names):
    """Every notebook twice: from notebooks/, then a copy in a fresh folder under build/ (leftovers of the first
    run must not break a second one; no lesson may depend on its cwd). Both copies of a lesson run back to back on
    one pytest-xdist worker (tools/nbval_groups.py), the longest lessons first (``longest_first``; xdist's own
    reorder, by number of cells, is switched off)."""
    names = longest_first(names)
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    rerun = tempfile.mkdtemp(prefix="nbval-second-run.", dir=os.path.join(ROOT, "build"))
    try:
        copies = []
        for name in names:
            copy = os.path.join(rerun, os.path.basename(name))
            shutil.copy2(os.path.join(ROOT, name), copy)
            copies.append(os.path.relpath(copy, ROOT))
        say("every notebook twice: notebooks/, then the copy in %s" % os.path.relpath(rerun, ROOT))
        pythonpath = os.pathsep.join(p for p in (os.path.join(ROOT, "tools"), os.environ.get("PYTHONPATH")) if p)
        return env.run("-m", "pytest", "-p", "nbval_groups", "-n", workers("NBVAL_WORKERS"), "--no-loadscope-reorder",
                       "-p", "no:cacheprovider", *(NBVAL + list(names) + copies), env={"PYTHONPATH": pythonpath})
    finally:
        shutil.rmtree(rerun, ignore_errors=True)


def cmd_test(options, env):
    cmd_browser_deps(options, env)
    cmd_lint(options, env)
    env.run(*unit_args())
    return nbval_twice(env, notebooks())


def cmd_nbval(options, env):
    """nbval over the notebooks named (default: every lesson), once, in this process's order."""
    names = [os.path.abspath(name) for name in options.args] or notebooks()
    return env.run("-m", "pytest", *(NBVAL + names))


def cmd_check(options, env):
    """The quick loop before a commit: lint, the unit tests not marked slow, then nbval over the notebooks changed
    against CHECK_BASE (default main). ``python course.py test`` runs everything."""
    cmd_lint(options, env)
    env.run(*unit_args(quick=True))
    from changed_notebooks import changed_notebooks
    base = os.environ.get("CHECK_BASE", "main")
    changed = changed_notebooks(base)
    if not changed:
        say("no notebook changed against %s" % base)
        return 0
    return env.run("-m", "pytest", *(NBVAL + changed))


def cmd_browser_deps(options, env):
    """Debian's chromium (the JupyterLab browser test) and Noto CJK fonts (Chinese text), where they can be had."""
    missing = []
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        missing.append("chromium")
    if platform.system() == "Linux":
        fonts = ""
        if shutil.which("fc-list"):
            fonts = subprocess.run(["fc-list", ":lang=zh", "family"], stdout=subprocess.PIPE,
                                   universal_newlines=True).stdout.strip()
        if not fonts:
            missing.append("fonts-noto-cjk")
    if DRY_RUN:
        say("checks: chromium on PATH; a CJK font (fc-list :lang=zh); as root with apt-get, installs the missing "
            "ones of: chromium fonts-noto-cjk")
    if not missing:
        return 0
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if platform.system() == "Linux" and root and shutil.which("apt-get"):
        say("installing Debian's %s for tests/test_jupyterlab_browser.py and the Chinese edition" % " ".join(missing))
        apt_env = {"DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-qq"], env=apt_env)
        return run(["apt-get", "install", "-y", "-qq"] + missing, env=apt_env)
    say("not installed and not installable here (needs root and apt-get): %s. Without chromium the browser test is "
        "skipped; without a CJK font Chinese text shows as empty boxes (Debian/Ubuntu: sudo apt-get install "
        "fonts-noto-cjk)." % " ".join(missing))
    return 0


def cmd_clean(options, env):
    clean = os.path.join(ROOT, "tools", "clean.py")
    if os.path.isfile(clean):
        return run([sys.executable, clean] + options.args, check=False)
    say("tools/clean.py is not in this checkout: removing outputs/ and build/ only")
    for name in ("outputs", "build", ".pytest_cache"):
        shutil.rmtree(os.path.join(ROOT, name), ignore_errors=True)
    return 0


def cmd_wheelhouse(options, env):
    """pip download of every pin of the full install, for this platform (pip evaluates the markers: the private
    oneDNN only on Linux x86-64), with the course's environment if there is one (a system Python may lack pip)."""
    ready = existing_environment(options)
    python = ready.python if ready else options.interpreter["executable"]
    requirement_args = []
    for name in requirement_files(True):
        requirement_args += ["-r", name]
    return run([python, "-m", "pip", "download", "--disable-pip-version-check", "-d", "wheelhouse"] + requirement_args
               + ["-c", CONSTRAINTS, "setuptools>=68"] + options.args)


def cmd_preflight(options, env):
    return run([env.python if env else sys.executable, os.path.join(ROOT, "tools", "preflight.py")] + options.args,
               check=False)


def cmd_bench(options, env):
    env.run("benchmarks/run.py", *options.args)
    cmd_fast_conv_bench(options, env)
    return env.run("benchmarks/run.py", "--render-only")


def cmd_fast_conv(options, env):
    return env.run("-c", "from course_lib.perf.fast_conv import build; print(build(verbose=True))")


def cmd_fast_conv_bench(options, env):
    cmd_fast_conv(options, env)
    return env.run("benchmarks/fast_conv_bench.py")


def script(*args):
    """A command that runs one of the course's scripts with the environment's Python (plus the user's args)."""
    return lambda options, env: env.run(*(list(args) + options.args))


def lab_in(folder, build=None, lang=None, open_at=None):
    """Build (if asked), then serve ``folder``; ``open_at`` is a subfolder the lab opens in (JupyterLab's
    ``default_url``), so that links from it to files beside it, inside ``folder``, still resolve."""
    def command(options, env):
        if build:
            env.run(*build)
        if open_at:
            options.args = ["--LabApp.default_url=/lab/tree/%s" % open_at] + list(options.args)
        return cmd_lab(options, env, folder=folder, lang=lang)
    return command


#: name: (help, function, environment: None (none needed) / "default" / "full")
COMMANDS = {
    "lab": ("open the full course in JupyterLab (127.0.0.1, token); LAB_DIR=folder opens another folder",
            lab_in(None), "default"),
    "test": ("lint, unit tests, then every notebook twice under nbval (CI runs this)", cmd_test, "full"),
    "install": ("set up .venv (or check the active environment); --full adds PyTorch and the private oneDNN",
                cmd_install, "default"),
    "preflight": ("check this machine before a workshop: Python, MindSpore, OS/CPU, disk, RAM, port, a training step",
                  cmd_preflight, None),
    "lab-student": ("build the student edition in my-work/student/ (never overwriting your edits) and open it",
                    lab_in("my-work/student", build=("tools/make_editions.py", "student", "--keep-edits")),
                    "default"),
    # notebooks/ is served and the lab opens in zh/: the lessons' links to ../docs etc. stay inside the root.
    "lab-zh": ("update the Chinese edition (keeping your edits) and open it in JupyterLab",
               lab_in("notebooks", build=("tools/translate.py", "build", "--keep-edits"), lang="zh", open_at="zh"),
               "default"),
    "zh": ("write notebooks/zh/ from the English notebooks and i18n/zh/", script("tools/translate.py", "build"),
           "default"),
    "unit": ("only the unit tests (UNIT_WORKERS=2 pytest-xdist workers)", cmd_unit, "full"),
    "lint": ("ruff and codespell (configured in pyproject.toml)", cmd_lint, "default"),
    "check": ("the quick loop: lint, unit tests not marked slow, nbval over the notebooks changed against main "
              "(CHECK_BASE=...)", cmd_check, "full"),
    "notebooks": ("re-execute every notebook (or the ones named) in place", cmd_notebooks, "full"),
    "nbval": ("check every notebook (or the ones named; add --full for lesson 07) with nbval, once", cmd_nbval,
              "full"),
    "data": ("regenerate data/ bit for bit", script("-m", "course_lib.data.generate"), "default"),
    "student": ("build/student/: the student edition", script("tools/make_editions.py", "student"), "default"),
    "bundles": ("one archive per learner platform (--platform NAME, --all, --python 3.x): tools/make_bundles.py",
                script("tools/make_bundles.py"), "default"),
    "instructor": ("build/instructor/: the instructor edition", script("tools/make_editions.py", "instructor"),
                   "default"),
    "student-bundle": ("build/course-student/: the course for learners' laptops",
                       script("tools/make_editions.py", "bundle"), "default"),
    "site": ("the executed lessons as a static HTML site: build/site/index.html", script("tools/build_site.py"),
             "default"),
    "wheelhouse": ("download every pinned wheel of the full install into wheelhouse/ for an offline classroom",
                   cmd_wheelhouse, None),
    "bench": ("the benchmarks (benchmarks/README.md), then fast-conv-bench", cmd_bench, "full"),
    "bench-notebooks": ("every lesson's run time", script("benchmarks/run.py", "--notebooks"), "full"),
    "bench-quick": ("a smoke run of the benchmarks",
                    script("benchmarks/run.py", "--quick", "--out", os.path.join("outputs", "bench-quick")), "full"),
    "bench-host-blocking": ("MS_DEV_HOST_BLOCKING_RUN on/off",
                            script("benchmarks/host_blocking.py", "--out",
                                   os.path.join("outputs", "host_blocking.json")), "full"),
    "fast-conv": ("compile appendix A8's opt-in oneDNN convolution (full install: the private oneDNN's headers)",
                  cmd_fast_conv, "full"),
    "fast-conv-bench": ("time FastConv2d against nn.Conv2d and PyTorch", cmd_fast_conv_bench, "full"),
    "browser-deps": ("install Debian's chromium and fonts-noto-cjk (as root) for the browser test",
                     cmd_browser_deps, None),
    "clean": ("remove what the course generated (tools/clean.py)", cmd_clean, None),
}


def parser():
    lines = ["commands:"] + ["  %-20s %s" % (name, COMMANDS[name][0]) for name in COMMANDS]
    result = argparse.ArgumentParser(
        prog="python course.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The course's front door, the same on Linux, macOS and Windows. `make X` runs the same command.",
        epilog="\n".join(lines) + "\n\nEnvironment variables: LAB_DIR, LAB_ARGS, UNIT_WORKERS, NBVAL_WORKERS, "
                                  "CHECK_BASE, PIP_OPTS (as in the README).")
    result.add_argument("--python", metavar="PATH", help="the interpreter that makes .venv (default: the running "
                        "one if it can, else py -3.12/3.11/3.10 on Windows, else python3.12/3.11/3.10 on PATH)")
    result.add_argument("--venv", metavar="PATH", default=os.path.join(ROOT, ".venv"),
                        help="the course's virtual environment (default: .venv beside course.py)")
    result.add_argument("--full", action="store_true", help="also install PyTorch and, on Linux x86-64, the private "
                        "oneDNN (requirements-torch.txt, requirements-fast-conv.txt)")
    result.add_argument("--wheelhouse", metavar="DIR", help="install offline, every wheel from DIR (made by "
                        "'python course.py wheelhouse'; docs/WORKSHOP.md)")
    result.add_argument("-n", "--dry-run", action="store_true",
                        help="print the commands instead of running them (install nothing)")
    result.add_argument("command", choices=sorted(COMMANDS), metavar="COMMAND", help="one of the commands below")
    result.add_argument("args", nargs=argparse.REMAINDER, help="passed on (e.g. to jupyter lab or pytest)")
    return result


def main(argv):
    child = os.environ.pop("COURSE_PY_CHILD", None)  # set for a restart under the chosen interpreter only
    options = parser().parse_args(argv)
    options.venv = os.path.abspath(options.venv)
    global DRY_RUN
    DRY_RUN = options.dry_run
    if "--full" in options.args:  # `python course.py install --full` as well as `python course.py --full install`
        options.args.remove("--full")
        options.full = True
    try:
        try:
            options.interpreter = choose_interpreter(options.python)
        except CourseError:
            # No supported interpreter on PATH, but a working .venv (made earlier) is one: use it.
            existing = venv_python(options.venv)
            info = None if options.python or not os.path.isfile(existing) else probe([existing])
            if info is None or problems_of(info):
                raise
            options.interpreter = info
        if not same_file(options.interpreter["executable"], sys.executable) and not child:
            # Restart under the chosen interpreter: everything after this point runs on CPython 3.10-3.12.
            say("running on %s (%s)" % (options.interpreter["executable"], describe(options.interpreter)))
            return subprocess.call([options.interpreter["executable"], os.path.join(ROOT, "course.py")] + argv,
                                   env=dict(os.environ, COURSE_PY_CHILD="1"))
        _, function, needs = COMMANDS[options.command]
        if options.command.startswith("lab"):
            lab_extra_args(options)
        env = None
        if needs is not None:
            # PyTorch for the whole suite; a notebook run on named notebooks needs it only with --full
            named = options.command in ("nbval", "notebooks") and options.args
            env = prepare(options, full=options.full or (needs == "full" and not named))
        elif options.command == "preflight":
            env = existing_environment(options)
        return function(options, env) or 0
    except CourseError as error:
        sys.stderr.write("course.py %s: %s\n" % (options.command, error))
        return 1
    except CommandFailed as error:
        sys.stderr.write("course.py %s: %s\n" % (options.command, error))
        return error.status or 1
    except KeyboardInterrupt:
        sys.stderr.write("course.py %s: interrupted\n" % options.command)
        return 130


def existing_environment(options):
    """The course's environment if one is ready (the active one with course_lib, or .venv), else None."""
    if in_active_environment() and find_course_lib():
        return Environment(sys.executable, active=True)
    python = venv_python(options.venv)
    return Environment(python, options.venv) if os.path.isfile(python) else None
