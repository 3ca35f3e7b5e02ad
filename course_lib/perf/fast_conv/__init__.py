"""``FastConv2d``: an opt-in drop-in for ``nn.Conv2d`` on CPU, built from three ``ops.Custom`` aot kernels.

MindSpore 2.10's CPU ``Conv2D`` hands oneDNN plain NCHW tensors, so oneDNN runs im2col + GEMM. The kernels in
``fast_conv.cc`` ask oneDNN for ``format_tag::any`` instead, so it may pick blocked layouts and direct JIT
kernels. They use oneDNN's C API only and link to the ``libdnnl.so.3`` that ships inside MindSpore (one oneDNN
per process); the headers come from the installed ``torch`` wheel (``torch/include/oneapi/dnnl``) or from the
folder in ``FAST_CONV_DNNL_INCLUDE``. The shared library is compiled on first use with ``g++`` (or ``$CXX``)
into ``outputs/fast_conv/<hash>/`` and reused while the source, flags and paths stay the same.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from course_lib import paths

SOURCE = Path(__file__).resolve().parent / "fast_conv.cc"
_MODES = {"pad": 0, "same": 1, "valid": 2}
_LIB = None


ISA_NAMES = {0x1: "SSE4.1", 0x3: "AVX", 0x7: "AVX2", 0xF: "AVX2 VNNI", 0x1F: "AVX2 VNNI-2", 0x27: "AVX-512",
             0x67: "AVX-512 VNNI", 0xE7: "AVX-512 BF16", 0x1EF: "AVX-512 FP16", 0xFEF: "AVX-512 + AMX",
             0x1FEF: "AVX-512 + AMX FP16"}
PRIVATE_PACKAGES = ("onednn-cpu-gomp", "onednn-devel-cpu-gomp")  # pinned in requirements-fast-conv.txt


def _site_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"FastConv2d needs the '{module}' package installed; it was not found.")
    return Path(list(spec.submodule_search_locations)[0])


def _installed_file(distribution: str, suffix: str) -> Path | None:
    """The file of an installed distribution whose path ends with ``suffix``, or None."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    want = tuple(suffix.split("/"))
    for f in files:
        if tuple(str(f).replace("\\", "/").split("/"))[-len(want):] == want:
            found = Path(f.locate()).resolve()
            if found.is_file():
                return found
    return None


def private_onednn() -> tuple[Path, Path] | None:
    """(libdnnl.so.3, include folder) of the private oneDNN wheels, or None when they are not installed."""
    lib = _installed_file(PRIVATE_PACKAGES[0], "libdnnl.so.3")
    header = _installed_file(PRIVATE_PACKAGES[1], "include/oneapi/dnnl/dnnl.h")
    if lib is None or header is None:
        return None
    return lib, header.parent.parent.parent


def _include_dir() -> Path:
    env = os.environ.get("FAST_CONV_DNNL_INCLUDE")
    candidates = [Path(env)] if env else []
    if importlib.util.find_spec("torch") is not None:
        candidates.append(_site_dir("torch") / "include")
    for cand in candidates:
        if (cand / "oneapi" / "dnnl" / "dnnl.h").is_file():
            return cand
    raise RuntimeError(
        "FastConv2d needs oneDNN's C headers (oneapi/dnnl/dnnl.h) to compile its kernels; none were found "
        f"(looked in: {[str(c) for c in candidates] or 'nothing'}). Fix: `python course.py fast-conv` installs "
        "the private oneDNN with its headers (requirements-fast-conv.txt), or install torch as pinned in "
        "requirements, or set FAST_CONV_DNNL_INCLUDE to a folder holding oneapi/dnnl/."
    )


def _mindspore_dnnl() -> Path:
    lib = _site_dir("mindspore") / "lib" / "libdnnl.so.3"
    if not lib.is_file():
        raise RuntimeError(f"FastConv2d links to MindSpore's own oneDNN, but {lib.name} is not in mindspore/lib.")
    return lib


def onednn_choice() -> str:
    """Which oneDNN the kernels use: "private" (the onednn-cpu-gomp wheel, at the CPU's best ISA) when it is
    installed, else "mindspore" (MindSpore's own copy, capped by ONEDNN_MAX_CPU_ISA). FAST_CONV_ONEDNN forces one."""
    want = os.environ.get("FAST_CONV_ONEDNN", "").strip().lower()
    if want not in ("", "private", "mindspore"):
        raise ValueError(f"FAST_CONV_ONEDNN must be 'private' or 'mindspore', got {want!r}. "
                         "Fix: unset it, or set one of the two.")
    if want == "mindspore":
        return "mindspore"
    if private_onednn() is None:
        if want == "private":
            raise RuntimeError("FAST_CONV_ONEDNN=private, but the private oneDNN wheels "
                               f"({', '.join(PRIVATE_PACKAGES)}) are not installed. Fix: `python course.py "
                               "fast-conv` installs them (Linux x86-64 only), or unset FAST_CONV_ONEDNN.")
        return "mindspore"
    return "private"


def _compiler() -> str:
    cxx = os.environ.get("CXX", "g++")
    found = shutil.which(cxx)
    if found is None:
        raise RuntimeError(
            f"FastConv2d compiles its C++ kernels on first use, but the compiler {cxx!r} was not found on PATH. "
            "Fix: install g++ (e.g. `apt-get install g++`) or set CXX to a C++17 compiler.")
    return found


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build(verbose: bool = False) -> Path:
    """Compile ``fast_conv.cc`` (once per source hash, compiler command and oneDNN choice) and return the
    path of the shared library."""
    global _LIB
    if _LIB is not None:
        return _LIB
    if not sys.platform.startswith("linux"):
        raise RuntimeError(f"FastConv2d runs on Linux only (this is {sys.platform}): it compiles a Linux shared "
                           "library and loads a Linux oneDNN. Fix: use mindspore.nn.Conv2d here.")
    cxx = _compiler()
    if onednn_choice() == "private":
        dnnl, inc = private_onednn()
        extra = ["-DFAST_CONV_PRIVATE"]
    else:
        dnnl, inc, extra = _mindspore_dnnl(), _include_dir(), []
    cmd = [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-fopenmp", f"-I{inc}", *extra,
           f"-DFAST_CONV_DNNL={_c_string(str(dnnl))}", str(SOURCE), "-ldl"]
    digest = hashlib.sha256(SOURCE.read_bytes() + "\0".join(cmd).encode()).hexdigest()[:16]
    final = paths.OUTPUT_DIR / "fast_conv" / digest
    lib = final / "fast_conv.so"
    if not lib.is_file():
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=final.parent))
        try:
            out = subprocess.run(cmd + ["-o", str(tmp / "fast_conv.so")], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"Compiling FastConv2d's kernels failed:\n{' '.join(cmd)}\n{out.stderr[-3000:]}")
            try:
                os.rename(tmp, final)  # atomic: another process may have won the race, then we use its copy
            except OSError:
                if not lib.is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if verbose:
            print("compiled", paths.relative(lib))
    _LIB = lib
    return lib


def backend() -> dict:
    """What the kernels run on: {"onednn": "private"|"mindspore", "version", "runtime", "isa"}. Loads the
    library the way MindSpore does; the private oneDNN's ISA is fixed from here on."""
    import ctypes

    lib = ctypes.CDLL(str(build()))
    buf = ctypes.create_string_buffer(1024)
    if lib.FastConvInfo(buf, len(buf)) != 0:
        raise RuntimeError(f"FastConv2d cannot load its oneDNN: {buf.value.decode(errors='replace')}")
    info = json.loads(buf.value.decode())
    code = info.pop("isa_code")
    info["isa"] = ISA_NAMES.get(code, "MindSpore's (ONEDNN_MAX_CPU_ISA)" if code < 0 else hex(code))
    return {"onednn": onednn_choice(), **info}


def _out_hw(n, k, s, mode, p0, p1):
    if mode == 1:
        return -(-n // s)
    if mode == 2:
        return (n - k) // s + 1
    return (n + p0 + p1 - k) // s + 1


try:
    import mindspore as _ms
    from mindspore import nn as _nn
    from mindspore import ops as _ops

    class _ConvFunction(_nn.Cell):
        """x, w -> conv(x, w) with a hand-written bprop; holds no parameters."""

        def __init__(self, stride, mode, padding):
            super().__init__()
            lib = str(build())
            sh, sw = stride
            pt, pb, pl, pr = padding
            cfg = [sh, sw, mode, pt, pb, pl, pr]
            self.cfg = _ms.Tensor(np.array(cfg, np.int32))

            def y_shape(x, w, c):
                return [x[0], w[0], _out_hw(x[2], w[2], sh, mode, pt, pb), _out_hw(x[3], w[3], sw, mode, pl, pr)]

            self.forward_op = _ops.Custom(f"{lib}:FastConvForward", out_shape=y_shape,
                                          out_dtype=lambda x, w, c: x, func_type="aot")
            # backward data: (dy, w, cfg, x) -> dx ; x is passed only so the kernel knows dx's shape.
            self.data_op = _ops.Custom(f"{lib}:FastConvBackwardData", out_shape=lambda dy, w, c, x: x,
                                       out_dtype=lambda dy, w, c, x: dy, func_type="aot")
            self.weights_op = _ops.Custom(f"{lib}:FastConvBackwardWeights", out_shape=lambda dy, x, c, w: w,
                                          out_dtype=lambda dy, x, c, w: dy, func_type="aot")

        def construct(self, x, w):
            return self.forward_op(x, w, self.cfg)

        def bprop(self, x, w, out, dout):
            dx = self.data_op(dout, w, self.cfg, x)
            dw = self.weights_op(dout, x, self.cfg, w)
            return dx, dw

    class FastConv2d(_nn.Conv2d):
        """Drop-in for ``nn.Conv2d`` (same arguments, parameters and initialisation) on CPU, float32, NCHW,
        ``group=1``, ``dilation=1``; forward and both gradients run oneDNN with blocked layouts."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            problems = []
            if self.group != 1:
                problems.append(f"group={self.group} (only 1 is supported)")
            if tuple(self.dilation) not in ((1, 1), (1, 1, 1, 1)):
                problems.append(f"dilation={self.dilation} (only 1 is supported)")
            if self.data_format != "NCHW":
                problems.append(f"data_format={self.data_format!r} (only 'NCHW' is supported)")
            if self.pad_mode not in _MODES:
                problems.append(f"pad_mode={self.pad_mode!r}")
            if problems:
                raise ValueError("FastConv2d does not support " + ", ".join(problems)
                                 + ". Fix: use mindspore.nn.Conv2d for this layer.")
            pad = self.padding
            pad = (pad,) * 4 if isinstance(pad, int) else tuple(pad)
            if len(pad) == 2:
                pad = (pad[0], pad[0], pad[1], pad[1])
            stride = tuple(self.stride)[-2:]
            self.conv_fn = _ConvFunction(stride, _MODES[self.pad_mode], pad)

        def construct(self, x):
            if x.ndim != 4:
                raise ValueError(f"FastConv2d expects a 4-D NCHW input, got {x.ndim} dimensions. "
                                 f"Fix: reshape to (batch, channels, height, width).")
            if x.dtype != _ms.float32:
                raise TypeError(f"FastConv2d works on float32 only, got {x.dtype}. "
                                f"Fix: cast with x.astype(mindspore.float32).")
            if x.shape[1] != self.in_channels:
                raise ValueError(f"FastConv2d got {x.shape[1]} input channels, expected {self.in_channels}. "
                                 f"Fix: check in_channels.")
            y = self.conv_fn(x, self.weight)
            if self.has_bias:
                y = _ops.bias_add(y, self.bias)
            return y

except ImportError:  # pragma: no cover - mindspore is a hard dependency of the course
    pass



def swap_convs(net):
    """Replace every ``nn.Conv2d`` inside ``net`` that FastConv2d supports by a FastConv2d sharing the same
    Parameter objects (so names, values and optimiser state stay the same). Returns how many were swapped."""
    count = 0
    for _, parent in list(net.cells_and_names()):
        for name, child in list(parent.name_cells().items()):
            if type(child) is not _nn.Conv2d or child.group != 1 or tuple(child.dilation)[-2:] != (1, 1) \
                    or child.data_format != "NCHW":
                continue
            fast = FastConv2d(child.in_channels, child.out_channels, tuple(child.kernel_size),
                              stride=tuple(child.stride)[-2:], pad_mode=child.pad_mode,
                              padding=child.padding, has_bias=child.has_bias)
            fast.weight = child.weight
            if child.has_bias:
                fast.bias = child.bias
            parent.insert_child_to_cell(name, fast)
            if isinstance(parent, _nn.SequentialCell):
                # SequentialCell.construct runs its own list, cell_list, which insert_child_to_cell leaves alone
                # (mindspore/nn/layer/container.py, SequentialCell.construct); __setitem__ would rename the shared
                # parameters, so the list is refreshed here instead.
                parent.cell_list = list(parent._cells.values())
            count += 1
    return count
