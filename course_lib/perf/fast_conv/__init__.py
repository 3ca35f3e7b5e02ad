"""``FastConv2d``: an opt-in drop-in for ``nn.Conv2d`` on CPU, built from ``ops.Custom`` aot kernels; and the
blocked-layout pieces that keep a ResNet's activations in oneDNN's blocked layout between layers (``block_resnet``).

MindSpore 2.10's CPU ``Conv2D`` hands oneDNN plain NCHW tensors, so oneDNN runs im2col + GEMM. The kernels in
``fast_conv.cc`` ask oneDNN for ``format_tag::any`` instead, so it may pick blocked layouts and direct JIT
kernels. They use oneDNN's C API only, and do not link it: they ``dlopen`` a oneDNN by its full path
(``RTLD_LOCAL | RTLD_DEEPBIND``) and call it through ``dlsym``. That is the private ``onednn-cpu-gomp`` wheel
when it is installed (its ISA set by ``FAST_CONV_MAX_CPU_ISA``, default: the CPU's best), else MindSpore's own
``mindspore/lib/libdnnl.so.3`` (``FAST_CONV_ONEDNN=mindspore`` forces it). The headers come from
``onednn-devel-cpu-gomp``, else the installed ``torch`` wheel (``torch/include/oneapi/dnnl``) or the folder in
``FAST_CONV_DNNL_INCLUDE``. The shared library is compiled on first use with ``g++`` (or ``$CXX``) into
``outputs/fast_conv/<hash>/`` and reused while the source, flags and paths stay the same. Linux only.
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
from course_lib.i18n import _

SOURCE = Path(__file__).resolve().parent / "fast_conv.cc"
_MODES = {"pad": 0, "same": 1, "valid": 2}
_LIB = None
_NATIVE: dict = {}  # {"path": the library build() returned, "native": its ctypes handle}; see _native()


ISA_NAMES = {0x1: "SSE4.1", 0x3: "AVX", 0x7: "AVX2", 0xF: "AVX2 VNNI", 0x1F: "AVX2 VNNI-2", 0x27: "AVX-512",
             0x67: "AVX-512 VNNI", 0xE7: "AVX-512 BF16", 0x1EF: "AVX-512 FP16", 0xFEF: "AVX-512 + AMX",
             0x1FEF: "AVX-512 + AMX FP16"}
PRIVATE_PACKAGES = ("onednn-cpu-gomp", "onednn-devel-cpu-gomp")  # pinned in requirements-fast-conv.txt
#: FAST_CONV_MAX_CPU_ISA's values (ONEDNN_MAX_CPU_ISA's names); fast_conv.cc's isa_from_env reads the same list.
MAX_ISA_NAMES = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE", "AVX512_CORE_VNNI", "AVX512_CORE_BF16",
                 "AVX512_CORE_AMX", "ALL")


def _site_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(_("FastConv2d needs the '{module}' package installed; it was not found.").format(
            module=module))
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
    raise RuntimeError(_(
        "FastConv2d needs oneDNN's C headers (oneapi/dnnl/dnnl.h) to compile its kernels; none were found "
        "(looked in: {candidates}). Fix: `python course.py fast-conv` installs "
        "the private oneDNN with its headers (requirements-fast-conv.txt), or install torch as pinned in "
        "requirements, or set FAST_CONV_DNNL_INCLUDE to a folder holding oneapi/dnnl/."
    ).format(candidates=[str(c) for c in candidates] or _("nothing")))


def _mindspore_dnnl() -> Path:
    lib = _site_dir("mindspore") / "lib" / "libdnnl.so.3"
    if not lib.is_file():
        raise RuntimeError(_("FastConv2d links to MindSpore's own oneDNN, but {lib_name} is not in "
                             "mindspore/lib.").format(lib_name=lib.name))
    return lib


def onednn_choice() -> str:
    """Which oneDNN the kernels use: "private" (the onednn-cpu-gomp wheel, at the CPU's best ISA) when it is
    installed, else "mindspore" (MindSpore's own copy, capped by ONEDNN_MAX_CPU_ISA). FAST_CONV_ONEDNN forces one."""
    want = os.environ.get("FAST_CONV_ONEDNN", "").strip().lower()
    if want not in ("", "private", "mindspore"):
        raise ValueError(_("FAST_CONV_ONEDNN must be 'private' or 'mindspore', got {want!r}. "
                           "Fix: unset it, or set one of the two.").format(want=want))
    if want == "mindspore":
        return "mindspore"
    if private_onednn() is None:
        if want == "private":
            raise RuntimeError(_("FAST_CONV_ONEDNN=private, but the private oneDNN wheels "
                                 "({packages}) are not installed. Fix: `python course.py "
                                 "fast-conv` installs them (Linux x86-64 only), or unset FAST_CONV_ONEDNN.").format(
                                     packages=", ".join(PRIVATE_PACKAGES)))
        return "mindspore"
    return "private"


def _compiler() -> str:
    cxx = os.environ.get("CXX", "g++")
    found = shutil.which(cxx)
    if found is None:
        raise RuntimeError(_(
            "FastConv2d compiles its C++ kernels on first use, but the compiler {cxx!r} was not found on PATH. "
            "Fix: install g++ (e.g. `apt-get install g++`) or set CXX to a C++17 compiler.").format(cxx=cxx))
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
        raise RuntimeError(_("FastConv2d runs on Linux only (this is {platform}): it compiles a Linux shared "
                             "library and loads a Linux oneDNN. Fix: use mindspore.nn.Conv2d here.").format(
                                 platform=sys.platform))
    cxx = _compiler()
    isa = os.environ.get("FAST_CONV_MAX_CPU_ISA")
    if isa is not None and isa.strip().upper() not in MAX_ISA_NAMES:
        raise ValueError(_("FAST_CONV_MAX_CPU_ISA must be one of {names}, got {isa!r}. "
                           "Fix: unset it (the CPU's best) or pick one of these names.").format(
                               names=", ".join(MAX_ISA_NAMES), isa=isa))
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
                raise RuntimeError(_("Compiling FastConv2d's kernels failed:\n{command}\n{stderr}").format(
                    command=" ".join(cmd), stderr=out.stderr[-3000:]))
            try:
                os.rename(tmp, final)  # atomic: another process may have won the race, then we use its copy
            except OSError:
                if not lib.is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if verbose:
            print(_("compiled {path}").format(path=paths.relative(lib)))
    _LIB = lib
    return lib


def _native():
    """The compiled library opened from Python (ctypes), the way MindSpore opens it, with the signatures of the
    three functions Python calls. Opened once per library path: build() is cached per process."""
    import ctypes

    lib = build()
    if _NATIVE.get("path") != lib:
        native = ctypes.CDLL(str(lib))
        native.FastNormWorkspaceBytes.restype = ctypes.c_int64
        native.FastNormWorkspaceBytes.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_int,
                                                  ctypes.c_float]
        native.FastPoolWorkspaceBytes.restype = ctypes.c_int64
        native.FastPoolWorkspaceBytes.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                                  ctypes.POINTER(ctypes.c_int32)]
        _NATIVE.update(path=lib, native=native)
    return _NATIVE["native"]


def backend() -> dict:
    """What the kernels run on: {"onednn": "private"|"mindspore", "version", "runtime", "isa"}. Loads the
    library the way MindSpore does; the private oneDNN's ISA is fixed from here on."""
    import ctypes

    buf = ctypes.create_string_buffer(1024)
    if _native().FastConvInfo(buf, len(buf)) != 0:
        raise RuntimeError(_("FastConv2d cannot load its oneDNN: {reason}").format(
            reason=buf.value.decode(errors="replace")))
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

    def _keyed(op, config):
        """PyNative mode caches a Custom op's output shape by op name and input shapes; our shapes also depend
        on the layer's config (stride, padding, block), held in a Python closure the cache cannot see. A primitive
        attribute is part of the key, so two layers with different configs never share a cached shape."""
        op.add_prim_attr("fast_conv_config", str(config))
        return op

    class _ConvFunction(_nn.Cell):
        """x, w -> conv(x, w) with a hand-written bprop; holds no parameters."""

        def __init__(self, stride, mode, padding, block=0):
            super().__init__()
            lib = str(build())
            sh, sw = stride
            pt, pb, pl, pr = padding
            cfg = [sh, sw, mode, pt, pb, pl, pr]
            self.cfg = _ms.Tensor(np.array(cfg, np.int32))

            def y_shape(x, w, c):
                h, wd = _out_hw(x[2], w[2], sh, mode, pt, pb), _out_hw(x[3], w[3], sw, mode, pl, pr)
                if block:  # blocked output: (N, C/B, H, W, B)
                    return [x[0], w[0] // block, h, wd, block]
                return [x[0], w[0], h, wd]

            self.forward_op = _keyed(_ops.Custom(f"{lib}:FastConvForward", out_shape=y_shape,
                                                 out_dtype=lambda x, w, c: x, func_type="aot"), (cfg, block))
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
            self.block = 0  # BlockedConv2d sets B: its output is blocked, (N, C/B, H, W, B)
            problems = []
            if self.group != 1:
                problems.append(_("group={group} (only 1 is supported)").format(group=self.group))
            if tuple(self.dilation) not in ((1, 1), (1, 1, 1, 1)):
                problems.append(_("dilation={dilation} (only 1 is supported)").format(dilation=self.dilation))
            if self.data_format != "NCHW":
                problems.append(_("data_format={data_format!r} (only 'NCHW' is supported)").format(
                    data_format=self.data_format))
            if self.pad_mode not in _MODES:
                problems.append(f"pad_mode={self.pad_mode!r}")
            if problems:
                raise ValueError(_("FastConv2d does not support {problems}. Fix: use mindspore.nn.Conv2d for "
                                   "this layer.").format(problems=", ".join(problems)))
            pad = self.padding
            pad = (pad,) * 4 if isinstance(pad, int) else tuple(pad)
            if len(pad) == 2:
                pad = (pad[0], pad[0], pad[1], pad[1])
            self._conv_args = (tuple(self.stride)[-2:], _MODES[self.pad_mode], pad)
            self.conv_fn = _ConvFunction(*self._conv_args)

        def construct(self, x):
            if x.ndim != 4 and not (self.block and x.ndim == 5):
                raise ValueError(f"{type(self).__name__} expects a 4-D NCHW input"
                                 f"{' or a 5-D blocked one' if self.block else ''}, got {x.ndim} dimensions. "
                                 f"Fix: reshape to (batch, channels, height, width).")
            if x.dtype != _ms.float32:
                raise TypeError(f"{type(self).__name__} works on float32 only, got {x.dtype}. "
                                f"Fix: cast with x.astype(mindspore.float32).")
            channels = x.shape[1] * x.shape[4] if x.ndim == 5 else x.shape[1]
            if channels != self.in_channels:
                raise ValueError(f"{type(self).__name__} got {channels} input channels, expected "
                                 f"{self.in_channels}. Fix: check in_channels.")
            y = self.conv_fn(x, self.weight)
            if self.has_bias:
                if self.block:
                    y = y + self.bias.reshape((1, -1, 1, 1, self.block))
                else:
                    y = _ops.bias_add(y, self.bias)
            return y

    class BlockedConv2d(FastConv2d):
        """FastConv2d whose output stays in oneDNN's blocked layout: a 5-D tensor (N, C/B, H, W, B), where
        channel c is at [:, c // B, :, :, c % B]. Its input may be plain NCHW or blocked. ``out_channels`` must
        be a multiple of ``block`` (B = 16 with AVX-512, 8 with AVX2: ``block_size()``)."""

        def __init__(self, *args, block=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.block = block_size() if block is None else block
            if self.block not in (8, 16):
                raise ValueError(_("block must be 8 or 16, got {block!r}. Fix: leave it out (block_size()).").format(
                    block=self.block))
            if self.out_channels % self.block:
                raise ValueError(_("BlockedConv2d needs out_channels divisible by the block size {block}, got "
                                   "{out_channels}. Fix: use FastConv2d for this layer.").format(
                                       block=self.block, out_channels=self.out_channels))
            self.conv_fn = _ConvFunction(*self._conv_args, block=self.block)

    class _Relayout(_nn.Cell):
        """Plain NCHW <-> blocked; its gradient is the opposite change."""

        def __init__(self, block):
            super().__init__()
            lib = str(build())
            self.block = block
            self.to_blocked = _keyed(_ops.Custom(
                f"{lib}:FastRelayout", out_shape=lambda x: [x[0], x[1] // block, x[2], x[3], block],
                out_dtype=lambda x: x, func_type="aot"), ("to_blocked", block))
            self.to_plain = _keyed(_ops.Custom(
                f"{lib}:FastRelayout", out_shape=lambda x: [x[0], x[1] * x[4], x[2], x[3]],
                out_dtype=lambda x: x, func_type="aot"), ("to_plain", block))

    class ToBlocked(_Relayout):
        """(N, C, H, W) -> (N, C/B, H, W, B)."""

        def construct(self, x):
            if x.ndim != 4 or x.shape[1] % self.block:
                raise ValueError(f"ToBlocked needs a 4-D NCHW tensor with channels divisible by {self.block}, got "
                                 f"shape {x.shape}. Fix: keep this layer in the plain layout.")
            return self.to_blocked(x)

        def bprop(self, x, out, dout):
            return (self.to_plain(dout),)

    class ToPlain(_Relayout):
        """(N, C/B, H, W, B) -> (N, C, H, W)."""

        def construct(self, x):
            if x.ndim != 5 or x.shape[4] != self.block:
                raise ValueError(f"ToPlain needs a 5-D blocked tensor (N, C/{self.block}, H, W, {self.block}), got "
                                 f"shape {x.shape}. Fix: only blocked tensors need converting back.")
            return self.to_plain(x)

        def bprop(self, x, out, dout):
            return (self.to_blocked(dout),)

    _FUSE = {"none": 0, "relu": 1}
    _NORM_NAMES = {0: "FastNorm", 1: "FastNormRelu"}

    class _NormTrain(_nn.Cell):
        """Training batch norm with a hand-written bprop: (x, gamma, beta) -> (y, mean, biased variance
        [, ReLU mask]). fuse 0: y = BN(x); 1: y = ReLU(BN(x))."""

        def __init__(self, eps, fuse):
            super().__init__()
            lib, name = str(build()), _NORM_NAMES[fuse]
            self.fuse = fuse
            self.cfg = _ms.Tensor(np.array([eps], np.float32))

            def shapes(x, g, *rest):
                if not fuse:
                    return (x, g, g)
                return (x, g, g, [_workspace_bytes(x, fuse, eps)])

            def dtypes(x, *rest):
                return (x, x, x) + ((_ms.uint8,) if fuse else ())

            self.forward_op = _ops.Custom(f"{lib}:{name}Train", out_shape=shapes, out_dtype=dtypes, func_type="aot")
            self.backward_op = _ops.Custom(f"{lib}:{name}Backward", out_shape=lambda dy, x, g, *rest: (x, g, g),
                                           out_dtype=lambda dy, x, *rest: (x, x, x), func_type="aot")

        def construct(self, x, gamma, beta):
            return self.forward_op(x, gamma, beta, self.cfg)

        def bprop(self, x, gamma, beta, out, dout):
            if self.fuse:
                grads = self.backward_op(dout[0], x, gamma, out[1], out[2], out[3], self.cfg)
            else:
                grads = self.backward_op(dout[0], x, gamma, out[1], out[2], self.cfg)
            return grads

    class BlockedBatchNorm2d(_nn.Cell):
        """Replaces an ``nn.BatchNorm2d`` and shares its four parameters; runs oneDNN's batch norm on plain or
        blocked tensors. ``fuse="relu"`` returns ``ReLU(BN(x))`` in the same pass over memory.
        Training: the batch's statistics, and the moving ones updated as MindSpore does
        (``moving = (1 - momentum) * moving + momentum * batch``, with MindSpore's stored momentum and the unbiased
        variance). Inference (``set_train(False)``): the moving statistics."""

        def __init__(self, bn, fuse="none"):
            super().__init__()
            if not isinstance(bn, _nn.BatchNorm2d):
                raise TypeError(_("BlockedBatchNorm2d replaces an nn.BatchNorm2d, got {bn_type}. "
                                  "Fix: pass the BatchNorm2d layer to replace.").format(bn_type=type(bn).__name__))
            if bn.use_batch_statistics is not None:
                raise ValueError(_("BlockedBatchNorm2d follows set_train() only; this layer has "
                                   "use_batch_statistics={use_batch_statistics}. Fix: keep nn.BatchNorm2d "
                                   "here.").format(use_batch_statistics=bn.use_batch_statistics))
            if fuse not in _FUSE:
                raise ValueError(_("fuse must be one of {choices}, got {fuse!r}. Fix: pick one of them.").format(
                    choices=sorted(_FUSE), fuse=fuse))
            self.gamma, self.beta = bn.gamma, bn.beta
            self.moving_mean, self.moving_variance = bn.moving_mean, bn.moving_variance
            self.momentum = float(bn.momentum)  # MindSpore keeps 1 - momentum: the new batch's weight
            self.num_features = bn.num_features
            self.fuse = _FUSE[fuse]
            self.norm = _NormTrain(float(bn.eps), self.fuse)
            self.infer_op = _ops.Custom(f"{build()}:{_NORM_NAMES[self.fuse]}Infer",
                                        out_shape=lambda x, *rest: x, out_dtype=lambda x, *rest: x, func_type="aot")

        def construct(self, x):
            if self.training:
                outs = self.norm(x, self.gamma, self.beta)
                count = x.size // self.num_features
                mean = _ops.stop_gradient(outs[1])
                var = _ops.stop_gradient(outs[2]) * (count / (count - 1))
                _ops.assign(self.moving_mean, self.moving_mean * (1 - self.momentum) + mean * self.momentum)
                _ops.assign(self.moving_variance, self.moving_variance * (1 - self.momentum) + var * self.momentum)
                return outs[0]
            return self.infer_op(x, self.gamma, self.beta, self.moving_mean, self.moving_variance, self.norm.cfg)

    class AddReLU(_nn.Cell):
        """``ReLU(a + r)`` in one pass, any layout; its bprop gives ``dy * (y > 0)`` to both inputs."""

        def __init__(self):
            super().__init__()
            lib = str(build())
            self.forward_op = _ops.Custom(f"{lib}:FastAddRelu", out_shape=lambda a, r: a, out_dtype=lambda a, r: a,
                                          func_type="aot")
            self.backward_op = _ops.Custom(f"{lib}:FastAddReluBackward", out_shape=lambda dy, y: dy,
                                           out_dtype=lambda dy, y: dy, func_type="aot")

        def construct(self, a, r):
            if a.shape != r.shape:
                raise ValueError(f"AddReLU needs two tensors of one shape, got {a.shape} and {r.shape}. "
                                 "Fix: check the shortcut branch.")
            return self.forward_op(a, r)

        def bprop(self, a, r, out, dout):
            g = self.backward_op(dout, out)
            return g, g

    class _PoolTrain(_nn.Cell):
        """x -> (y, the winners' positions) with a hand-written bprop."""

        def __init__(self, cfg):
            super().__init__()
            lib = str(build())
            self.cfg = _ms.Tensor(np.array(cfg, np.int32))
            self.forward_op = _keyed(_ops.Custom(
                f"{lib}:FastMaxPoolTrain", out_shape=lambda x, c: (_pooled(x, cfg), [_pool_workspace_bytes(x, cfg)]),
                out_dtype=lambda x, c: (x, _ms.uint8), func_type="aot"), cfg)
            self.backward_op = _ops.Custom(f"{lib}:FastMaxPoolBackward", out_shape=lambda dy, ws, c, x: x,
                                           out_dtype=lambda dy, ws, c, x: dy, func_type="aot")

        def construct(self, x):
            return self.forward_op(x, self.cfg)

        def bprop(self, x, out, dout):
            return (self.backward_op(dout[0], out[1], self.cfg, x),)

    class BlockedMaxPool2d(_nn.Cell):
        """Replaces an ``nn.MaxPool2d`` (square kernel, ``pad_mode="pad"`` or ``"valid"``) with oneDNN's max
        pooling on plain or blocked tensors. MindSpore 2.10's CPU ``nn.MaxPool2d`` with padding runs
        ``MaxPool3DWithArgmax`` (mindspore/nn/layer/pooling.py, ``MaxPool2d.__init__``)."""

        def __init__(self, pool):
            super().__init__()
            if not isinstance(pool, _nn.MaxPool2d):
                raise TypeError(_("BlockedMaxPool2d replaces an nn.MaxPool2d, got {pool_type}. "
                                  "Fix: pass the MaxPool2d layer to replace.").format(pool_type=type(pool).__name__))
            k, s = pool.kernel_size, pool.stride
            pads = tuple(pool.padding)[-2:] if pool.pad_mode == "PAD" else (0, 0)
            problems = []
            if not (isinstance(k, int) and isinstance(s, int)):
                problems.append(_("kernel_size={kernel_size!r} and stride={stride!r} (square ints only)").format(
                    kernel_size=k, stride=s))
            if pool.pad_mode not in ("PAD", "VALID") or pads[0] != pads[1]:
                problems.append(f"pad_mode={pool.pad_mode!r}, padding={getattr(pool, 'padding', 0)!r}")
            if getattr(pool, "return_indices", False):
                problems.append("return_indices=True")
            if problems:
                raise ValueError(_("BlockedMaxPool2d does not support {problems}. Fix: keep nn.MaxPool2d for "
                                   "this layer.").format(problems=", ".join(problems)))
            self.cfg_list = [int(k), int(s), int(pads[0])]
            self.train_fn = _PoolTrain(self.cfg_list)
            self.infer_op = _keyed(_ops.Custom(f"{build()}:FastMaxPoolInfer",
                                               out_shape=lambda x, c: _pooled(x, self.cfg_list),
                                               out_dtype=lambda x, c: x, func_type="aot"), self.cfg_list)

        def construct(self, x):
            if self.training:
                return self.train_fn(x)[0]
            return self.infer_op(x, self.train_fn.cfg)

    class BlockedResidualBlock(_nn.Cell):
        """A ResNet residual block (basic or bottleneck) on blocked tensors: BlockedConv2d layers, batch norms
        fused with their ReLU, and the shortcut's Add fused with the final ReLU (``AddReLU``). Holds the original
        block's Parameter objects under the same attribute names."""

        def __init__(self, unit, block):
            super().__init__()
            # Setting a cell as an attribute prefixes its parameters' names with the attribute name (Cell.__setattr__
            # -> update_parameters_name); the Parameter objects are shared, so their names are put back below.
            names = [(param, param.name) for param in unit.get_parameters()]
            convs = [n for n in ("conv1", "conv2", "conv3") if hasattr(unit, n)]
            self.depth = len(convs)
            for i, name in enumerate(convs, 1):
                last = i == len(convs)
                setattr(self, name, _blocked_copy(getattr(unit, name), block))
                setattr(self, f"bn{i}", BlockedBatchNorm2d(getattr(unit, f"bn{i}"), "none" if last else "relu"))
            self.add_relu = AddReLU()
            self.down_sample = unit.down_sample
            if unit.down_sample:
                seq = unit.down_sample_layer
                self.down_sample_layer = _nn.SequentialCell([_blocked_copy(seq[0], block),
                                                             BlockedBatchNorm2d(seq[1])])
            for param, name in names:
                param.name = name

        def construct(self, x):
            identity = x
            if self.down_sample:
                identity = self.down_sample_layer(x)
            out = self.bn1(self.conv1(x))
            if self.depth == 2:
                return self.add_relu(self.bn2(self.conv2(out)), identity)
            out = self.bn2(self.conv2(out))
            return self.add_relu(self.bn3(self.conv3(out)), identity)

except ImportError:  # pragma: no cover - mindspore is a hard dependency of the course
    pass



def swap_convs(net):
    """Replace every ``nn.Conv2d`` inside ``net`` that FastConv2d supports by a FastConv2d sharing the same
    Parameter objects (so names, values and optimiser state stay the same). Returns how many were swapped."""
    count = 0
    for _path, parent in list(net.cells_and_names()):
        for name, child in list(parent.name_cells().items()):
            if type(child) is not _nn.Conv2d or child.group != 1 or tuple(child.dilation)[-2:] != (1, 1) \
                    or child.data_format != "NCHW":
                continue
            _replace(parent, name, _copy_conv(child, FastConv2d))
            count += 1
    return count


def block_size() -> int:
    """The channel block of the blocked layout: 16 when the kernels run AVX-512, else 8 (AVX2)."""
    isa = backend()["isa"]
    return 16 if isa.startswith("AVX-512") else 8


def _copy_conv(conv, cls, **extra):
    """A ``cls`` (FastConv2d or BlockedConv2d) with ``conv``'s settings, holding ``conv``'s Parameter objects."""
    fast = cls(conv.in_channels, conv.out_channels, tuple(conv.kernel_size), stride=tuple(conv.stride)[-2:],
               pad_mode=conv.pad_mode, padding=conv.padding, has_bias=conv.has_bias, **extra)
    fast.weight = conv.weight
    if conv.has_bias:
        fast.bias = conv.bias
    return fast


def _blocked_copy(conv, block):
    return _copy_conv(conv, BlockedConv2d, block=block)


def _replace(parent, name, new):
    """Put ``new`` in place of ``parent``'s child ``name``, keeping the names of the Parameters it shares."""
    parent.insert_child_to_cell(name, new)
    if isinstance(parent, _nn.SequentialCell):
        # SequentialCell.construct runs its own list, cell_list, which insert_child_to_cell leaves alone
        # (mindspore/nn/layer/container.py, SequentialCell.construct); __setitem__ would rename the shared
        # parameters, so the list is refreshed here instead.
        parent.cell_list = list(parent._cells.values())


def _workspace_bytes(shape, fuse, eps):
    import ctypes

    size = _native().FastNormWorkspaceBytes((ctypes.c_int64 * len(shape))(*shape), len(shape), fuse, eps)
    if size < 0:
        raise RuntimeError(_("oneDNN refused a fused batch norm on shape {shape}. Fix: use FastConv2d with "
                             "nn.BatchNorm2d (swap_convs) for this network.").format(shape=list(shape)))
    return int(size)


def _pooled(x, cfg):
    k, s, p = cfg
    return list(x[:2]) + [(x[2] + 2 * p - k) // s + 1, (x[3] + 2 * p - k) // s + 1] + list(x[4:])


def _pool_workspace_bytes(shape, cfg):
    import ctypes

    size = _native().FastPoolWorkspaceBytes((ctypes.c_int64 * len(shape))(*shape), len(shape),
                                            (ctypes.c_int32 * 3)(*cfg))
    if size < 0:
        raise RuntimeError(_("oneDNN refused a max pooling {cfg} on shape {shape}. Fix: keep nn.MaxPool2d.").format(
            cfg=cfg, shape=list(shape)))
    return int(size)


def block_resnet(net) -> int:
    """Rewrite a ``course_lib.models.resnet`` ResNet in place so that activations stay in oneDNN's blocked
    layout from the stem to the classifier: the stem's convolution becomes a ``BlockedConv2d`` and its batch
    norm a ``BlockedBatchNorm2d`` fused with the ReLU; every residual block becomes a ``BlockedResidualBlock``.
    Parameter objects are shared, so names, values and optimiser state stay the same. The max-pool becomes a
    ``BlockedMaxPool2d``; the global average pool over (H, W) of a (N, C/B, H, W, B) tensor flattens to the
    channels in order. Returns how many residual blocks were replaced."""
    from course_lib.models.resnet import ResidualBlock, ResidualBlockBase, ResNet

    if not isinstance(net, ResNet):
        raise TypeError(_("block_resnet rewrites a course_lib.models.resnet.ResNet, got {net_type}. "
                          "Fix: use swap_convs(net) for other networks.").format(net_type=type(net).__name__))
    block = block_size()
    names = [(param, param.name) for param in net.get_parameters()]
    _replace(net, "conv1", _blocked_copy(net.conv1, block))
    _replace(net, "bn1", BlockedBatchNorm2d(net.bn1, fuse="relu"))
    _replace(net, "relu", _nn.Identity())  # the stem's ReLU now runs inside bn1
    _replace(net, "maxpool", BlockedMaxPool2d(net.maxpool))
    count = 0
    for stage in (net.layer1, net.layer2, net.layer3, net.layer4):
        for key, unit in list(stage.name_cells().items()):
            if not isinstance(unit, (ResidualBlock, ResidualBlockBase)):
                raise TypeError(_("block_resnet found a {unit_type} in a stage. Fix: use swap_convs.").format(
                    unit_type=type(unit).__name__))
            _replace(stage, key, BlockedResidualBlock(unit, block))
            count += 1
    for param, name in names:  # see BlockedResidualBlock: the shared Parameters keep the names they had
        param.name = name
    net.set_train(net.training)  # the new cells start in inference mode: give them the network's mode
    return count
