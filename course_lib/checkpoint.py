"""Checkpoints that are never half-written and never silently wrong.

``mindspore.save_checkpoint`` (2.10) deletes the old file *before* writing the new one and does not flush
to disk, so a crash mid-save can leave no checkpoint at all. ``save_checkpoint`` here writes a temporary file
in the same folder, flushes it, and only then renames it over the old one. Both functions use MindSpore's
CRC check by default: a plain load accepts a file with flipped bytes silently.
A checkpoint from an untrusted source is untrusted input: load only files you (or someone you trust) wrote.
"""
import os
import re
import uuid
from pathlib import Path

import mindspore as ms
from mindspore import nn

from .paths import relative

TEMP_MARK = ".tmp-"


def _checkpoint_path(path, must_exist: bool) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"checkpoint path must be a str or Path, got {path!r}.")
    path = Path(path).expanduser()
    if path.suffix != ".ckpt":
        raise ValueError(f"checkpoint file name must end with .ckpt, got {path.name!r}. "
                         f"Fix: e.g. {path.with_suffix('.ckpt').name!r}.")
    if must_exist:
        if not path.exists():
            raise FileNotFoundError(f"Checkpoint {relative(path)} does not exist. Fix: check the path, or train "
                                    f"first so that the checkpoint is written.")
        if path.is_dir():
            raise ValueError(f"Checkpoint path {relative(path)} is a folder; pass the .ckpt file inside it.")
    return path


def _fsync(path: Path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(save_obj, path, append_dict=None, crc_check=True) -> Path:
    """Save a Cell (or a parameter list/dict) to ``path`` atomically: temp file, flush, rename. Returns the path.

    ``append_dict`` stores extra scalars (epoch, step, best score) next to the parameters, as in MindSpore.
    """
    if not isinstance(save_obj, (nn.Cell, list, dict)):
        raise ValueError(f"save_obj must be a network (nn.Cell) or a list/dict of parameters, "
                         f"got {type(save_obj).__name__}.")
    path = _checkpoint_path(path, must_exist=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f".{path.stem}{TEMP_MARK}{uuid.uuid4().hex[:8]}.ckpt"
    try:
        ms.save_checkpoint(save_obj, str(temp), append_dict=append_dict, crc_check=crc_check)
        _fsync(temp)
        os.replace(temp, path)
    finally:
        # MindSpore writes <temp>.tmp first and renames it to <temp>.ckpt: after a failure either may remain.
        for leftover in (temp, temp.with_suffix(".tmp")):
            if leftover.exists():
                os.chmod(leftover, 0o600)
                leftover.unlink()
    return path


def _read(path: Path, crc_check: bool) -> dict:
    if path.stat().st_size == 0:
        raise ValueError(f"Checkpoint {relative(path)} is empty (0 bytes): it was truncated or never finished. "
                         f"Fix: use an earlier checkpoint or train again.")
    try:
        return ms.load_checkpoint(str(path), crc_check=crc_check)
    except ValueError as error:
        raise ValueError(f"Checkpoint {relative(path)} is corrupted or truncated: MindSpore could not read it "
                         f"{'(CRC check failed or content unparsable)' if crc_check else '(content unparsable)'}. "
                         f"Fix: use an earlier checkpoint or train again.") from error


def load_checkpoint(path, net=None, strict=True, crc_check=True) -> dict:
    """Read a checkpoint (CRC-checked) and, if ``net`` is given, load it into the network.

    With ``strict`` every parameter of ``net`` must be in the file with the same shape; otherwise the error
    lists what is missing or mismatched (the usual sign of a checkpoint from another network).
    Returns the parameter dict (extra entries such as optimizer moments or ``append_dict`` values included).
    """
    path = _checkpoint_path(path, must_exist=True)
    params = _read(path, crc_check)
    if net is None:
        return params
    if not isinstance(net, nn.Cell):
        raise ValueError(f"net must be a MindSpore nn.Cell, got {type(net).__name__}.")
    missing, mismatched = [], []
    for name, param in net.parameters_and_names():
        if name not in params:
            missing.append(name)
        elif tuple(params[name].shape) != tuple(param.shape):
            mismatched.append(f"{name}: network {tuple(param.shape)} vs checkpoint {tuple(params[name].shape)}")
    if mismatched or (strict and missing):
        details = []
        if missing:
            shown = ", ".join(missing[:8]) + (f" … ({len(missing)} in all)" if len(missing) > 8 else "")
            details.append(f"missing from the checkpoint: {shown}")
        if mismatched:
            details.append("shape mismatch: " + "; ".join(mismatched[:8]))
        raise ValueError(f"Checkpoint {relative(path)} does not fit this {type(net).__name__}: "
                         + " | ".join(details) + ". Fix: load it into the network it was saved from "
                         "(same architecture and num_classes), or pass strict=False to load what matches.")
    # Only exact names: load_param_into_net strips unknown prefixes, which would load an optimizer's
    # "moments.conv1.weight" into "conv1.weight" when a weight itself is missing.
    own = {name for name, _ in net.parameters_and_names()}
    ms.load_param_into_net(net, {k: v for k, v in params.items() if k in own}, strict_load=False)
    return params


_STEP_PATTERN = re.compile(r"-(\d+)_(\d+)\.ckpt$")


def latest_checkpoint(folder, prefix: str = "") -> Path | None:
    """The newest finished checkpoint ``<prefix>*.ckpt`` in ``folder`` (temporary files are ignored).

    Files named like ModelCheckpoint's ``net-3_44.ckpt`` are ordered by (epoch, step), others by mtime.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return None
    files = [p for p in folder.glob(f"{prefix}*.ckpt") if TEMP_MARK not in p.name and p.stat().st_size > 0]
    if not files:
        return None

    def order(p: Path):
        match = _STEP_PATTERN.search(p.name)
        return (1, int(match.group(1)), int(match.group(2)), p.stat().st_mtime) if match else (0, 0, 0,
                                                                                               p.stat().st_mtime)

    return max(files, key=order)
