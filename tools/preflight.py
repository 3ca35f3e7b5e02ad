"""Pre-flight check of a learner's or instructor's machine before a workshop: PASS or FAIL per item, then a verdict.

    python course.py preflight        (with the course's environment)
    python tools/preflight.py         (with any Python, even before the course is installed)

Checks: the Python (version, implementation), the OS and CPU, MindSpore (installed, at the pinned version), free
disk and RAM against what the course needs, a free port for the lab, and a short training step that must finish in
10 seconds. Exit status 0 when every item passes, 1 otherwise. Standard library only.
"""
# ruff: noqa: UP031, UP021, UP022  (%-formatting, universal_newlines: this file must run on old Pythons far enough to say what is wrong)
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import course_cli  # noqa: E402

ROOT = course_cli.ROOT
GB = 1024 ** 3
#: What the course needs. Disk: a default install (.venv) plus room for outputs/; a full one (PyTorch) needs more.
DISK_WITHOUT_VENV_GB = 6.0
DISK_WITH_VENV_GB = 1.0
RAM_GB = 4.0
TRAIN_SECONDS = 10.0

#: The training step, run in the course's environment: a small conv net, @ms.jit, five steps on fixed data.
TRAIN_STEP = r"""
import json, time
start = time.perf_counter()
try:
    import course_lib  # noqa: F401  (the course's environment defaults, e.g. the oneDNN ISA cap)
except ImportError:
    pass
import numpy as np
import mindspore as ms
from mindspore import nn, ops
imported = time.perf_counter()
ms.set_seed(0)
net = nn.SequentialCell([nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Dense(8 * 28 * 28, 10)])
loss_fn = nn.CrossEntropyLoss()
optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)


def forward(x, y):
    return loss_fn(net(x), y)


grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)


@ms.jit
def step(x, y):
    loss, grads = grad_fn(x, y)
    optimizer(grads)
    return loss

rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((32, 1, 28, 28)).astype(np.float32))
y = ms.Tensor(rng.integers(0, 10, 32).astype(np.int32))
losses = [float(step(x, y).asnumpy()) for _ in range(5)]
done = time.perf_counter()
print(json.dumps({"import": imported - start, "train": done - imported, "losses": losses,
                  "version": ms.__version__}))
"""


def result(ok, name, detail):
    print("%s  %-12s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    return ok


def course_python():
    """The interpreter that has MindSpore: this one, else the course's .venv (if it was made), else None."""
    try:
        import importlib.util
        if importlib.util.find_spec("mindspore") is not None:
            return sys.executable
    except (ImportError, ValueError):
        pass
    python = course_cli.venv_python(os.path.join(ROOT, ".venv"))
    return python if os.path.isfile(python) else None


def check_python(info):
    problems = course_cli.problems_of(dict(info, system="Linux", machine="x86_64", bits=64))
    detail = "%s at %s" % (course_cli.describe(info), info["executable"])
    if problems:
        detail += ": " + "; ".join(problems) + ". " + course_cli.how_to_get_python(info["system"])
    return result(not problems, "Python", detail)


def check_platform(info):
    pair = (info["system"], info["machine"].lower())
    name = course_cli.SUPPORTED_PLATFORMS.get(pair)
    ok = name is not None and info["bits"] == 64
    detail = "%s %s, %d-bit Python, %d CPU cores" % (info["system"], info["machine"], info["bits"], os.cpu_count() or 0)
    if not ok:
        detail += (": MindSpore 2.10 has wheels for Linux x86-64/aarch64, macOS arm64/x86-64 and Windows amd64 only. "
                   "Fix: use one of those (on Windows, a 64-bit Python).")
    return result(ok, "OS/CPU", detail)


def pinned_mindspore():
    pins = course_cli.pinned(ROOT, [course_cli.REQUIREMENTS])
    return pins.get("mindspore", ("2.10.0", None))[0]


def check_mindspore(python):
    want = pinned_mindspore()
    if python is None:
        return result(False, "MindSpore", "not installed (no .venv yet, and not in this Python). "
                                          "Fix: python course.py install")
    found = subprocess.run([python, "-c", "import mindspore; print(mindspore.__version__)"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, cwd=ROOT)
    have = found.stdout.strip().splitlines()[-1] if found.returncode == 0 and found.stdout.strip() else None
    if have is None:
        last = (found.stderr.strip().splitlines() or ["no output"])[-1]
        return result(False, "MindSpore", "does not import in %s: %s. Fix: python course.py install" % (python, last))
    return result(have == want, "MindSpore", "%s in %s%s" % (have, python, "" if have == want else
                  " (the course is pinned to %s). Fix: python course.py install" % want))


def check_disk(venv_exists):
    free = shutil.disk_usage(ROOT).free / GB
    need = DISK_WITH_VENV_GB if venv_exists else DISK_WITHOUT_VENV_GB
    what = "outputs" if venv_exists else "the install (.venv) and outputs"
    return result(free >= need, "disk", "%.1f GB free where the course is, %.1f GB needed for %s%s"
                  % (free, need, what, "" if free >= need else ". Fix: free some disk space"))


def total_ram_bytes():
    """Physical memory in bytes, or None if this OS does not say."""
    try:
        if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    if platform.system() == "Darwin":
        found = subprocess.run(["sysctl", "-n", "hw.memsize"], stdout=subprocess.PIPE,
                               universal_newlines=True)
        return int(found.stdout.strip()) if found.stdout.strip().isdigit() else None
    if platform.system() == "Windows":
        import ctypes

        class MemoryStatus(ctypes.Structure):
            _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                        ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                        ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                        ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                        ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]
        status = MemoryStatus()
        status.dwLength = ctypes.sizeof(MemoryStatus)
        if ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
            return status.ullTotalPhys
    return None


def check_ram():
    total = total_ram_bytes()
    if total is None:
        return result(False, "RAM", "this OS did not report its memory; the course needs %.0f GB. Fix: check it "
                                    "yourself, then ignore this line" % RAM_GB)
    gb = total / GB
    return result(gb >= RAM_GB, "RAM", "%.1f GB, %.0f GB needed%s" % (gb, RAM_GB, "" if gb >= RAM_GB else
                  ". Fix: close other programs and use a machine with more memory"))


def check_port():
    port = course_cli.free_port()
    if port is None:
        return result(False, "lab port", "no free port on 127.0.0.1 between 8888 and 8987. Fix: stop other Jupyter "
                                         "servers (jupyter server list)")
    if port == course_cli.DEFAULT_LAB_PORT:
        return result(True, "lab port", "127.0.0.1:%d is free" % port)
    return result(True, "lab port", "127.0.0.1:%d is in use; the lab will use %d" % (course_cli.DEFAULT_LAB_PORT, port))


def check_training(python):
    if python is None:
        return result(False, "training", "not run: MindSpore is not installed. Fix: python course.py install")
    folder = tempfile.mkdtemp(prefix="course-preflight-")  # @ms.jit reads the source of what it compiles: a file
    script = os.path.join(folder, "train_step.py")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(TRAIN_STEP)
    try:
        found = subprocess.run([python, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, cwd=folder, timeout=300)
    except subprocess.TimeoutExpired:
        return result(False, "training", "five training steps did not finish in 300 s. Fix: check that nothing else "
                                         "loads the CPU (python course.py preflight again on an idle machine)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        report = json.loads(found.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (found.stderr.strip().splitlines() or ["no output"])[-3:]
        return result(False, "training", "the training step failed: %s. Fix: python course.py install, then run "
                                         "lesson 00" % " | ".join(last))
    losses = report["losses"]
    finite = all(loss == loss and abs(loss) < 1e6 for loss in losses)
    ok = finite and losses[-1] < losses[0] and report["train"] <= TRAIN_SECONDS
    detail = "5 steps of a small CNN with @ms.jit in %.1f s (compile included; limit %.0f s; import %.1f s), loss " \
             "%.3f -> %.3f" % (report["train"], TRAIN_SECONDS, report["import"], losses[0], losses[-1])
    if not ok:
        detail += ". Fix: %s" % ("the loss did not fall: reinstall (python course.py install)" if not finite or
                                 losses[-1] >= losses[0] else "close other programs; a workshop laptop this slow "
                                 "will wait minutes per lesson")
    return result(ok, "training", detail)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    print("Pre-flight check of this machine for the course (MindSpore %s on CPU)" % pinned_mindspore(), flush=True)
    info = course_cli.probe_running()
    python = course_python()
    venv_exists = python is not None
    checks = [check_python(info), check_platform(info), check_mindspore(python), check_disk(venv_exists),
              check_ram(), check_port(), check_training(python)]
    failed = checks.count(False)
    if failed:
        print("\nVERDICT: FAIL (%d of %d items failed; each FAIL line says the fix)" % (failed, len(checks)))
        return 1
    print("\nVERDICT: PASS (%d of %d items): this machine is ready for the course" % (len(checks), len(checks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
