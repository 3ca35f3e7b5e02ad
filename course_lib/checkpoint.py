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

from .paths import check_output_folder, relative

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
    blocker = next((p for p in [path.parent, *path.parent.parents] if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise NotADirectoryError(f"Cannot save checkpoint {relative(path)}: {relative(blocker)} is a file, not a "
                                 f"folder. Fix: save into a folder path, e.g. {relative(blocker.parent / 'ckpt')}.")
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


#: MindSpore (``crc_check=True``) ends a .ckpt file with b"crc_num" and the CRC32 as 10 big-endian bytes.
_CRC_RECORD = b"crc_num"
_CRC_TAIL = len(_CRC_RECORD) + 10


def has_crc_record(path) -> bool:
    """Whether the .ckpt file ends with MindSpore's CRC record (written by ``save_checkpoint(crc_check=True)``)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size < _CRC_TAIL:
            return False
        handle.seek(size - _CRC_TAIL)
        return handle.read(len(_CRC_RECORD)) == _CRC_RECORD


def _read(path: Path, crc_check: bool) -> dict:
    if path.stat().st_size == 0:
        raise ValueError(f"Checkpoint {relative(path)} is empty (0 bytes): it was truncated or never finished. "
                         f"Fix: use an earlier checkpoint or train again.")
    # MindSpore 2.10's load_checkpoint(crc_check=True) only logs a warning for a file without the CRC record
    # and loads it; the record is the file's last one, so a file cut at a record boundary would load silently.
    if crc_check and not has_crc_record(path):
        raise ValueError(f"Checkpoint {relative(path)} is corrupted or truncated: it has no CRC record, so its "
                         f"integrity cannot be checked (the CRC is the file's last record: a cut file loses it; "
                         f"a file saved without crc_check=True never had one). "
                         f"Fix: use an earlier checkpoint or train again; if you trust a file saved without a "
                         f"CRC, load it with crc_check=False.")
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


# ------------------------------------------------------------------------------------------ run management
#: ``<prefix>-<epoch>_<steps>.ckpt``, the names scripts/train.py (and ModelCheckpoint) give epoch checkpoints.
_RUN_CHECKPOINT = re.compile(r"^(?P<prefix>.+)-(?P<epoch>\d+)_(?P<steps>\d+)\.ckpt$")
#: Temporary files of ``save_checkpoint``: ``.<stem>.tmp-<8 hex>.ckpt`` and MindSpore's own ``….tmp``.
_TEMP_FILE = re.compile(r"^\..+" + re.escape(TEMP_MARK) + r"[0-9a-f]{8}\.(ckpt|tmp)$")
#: Suffix given to a checkpoint that failed to load, so it no longer counts as (or holds a keep slot of) a run's.
DAMAGED_SUFFIX = ".damaged"
LOCK_NAME = ".course_checkpoints.lock"


class CheckpointFolderBusy(RuntimeError):
    """Another live process holds the checkpoint folder's lock."""


class CheckpointManager:
    """Owns one run's checkpoint folder: a lock for the run's lifetime, clean-up of the course's own temporary
    files, retention that only deletes this run's checkpoints, and resume from the newest readable one.

    Use as a context manager (``with CheckpointManager(folder, "lenet5", keep=5) as manager:``). On entry the
    folder is locked (a second run on the same folder gets ``CheckpointFolderBusy``; the lock is an OS file
    lock, so it is released on any exit, ``kill -9`` included, and a stale lock file is simply taken over).
    A fresh run (``resume=False``) refuses a folder that already holds ``<prefix>-<epoch>_<steps>.ckpt``
    files of another run, unless ``overwrite=True``, which deletes them first.
    """

    def __init__(self, folder, prefix: str, keep: int = 5, resume: bool = False, overwrite: bool = False):
        from .validation import check_int

        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"folder must be a folder path (str or Path), got {folder!r}. Fix: e.g. 'outputs/ckpt'.")
        if not isinstance(prefix, str) or not prefix or "/" in prefix or os.sep in prefix:
            raise ValueError(f"prefix must be a file-name prefix such as 'lenet5', got {prefix!r}.")
        self.folder = Path(folder).expanduser()
        self.prefix = prefix
        self.keep = check_int("keep_checkpoint_max", keep, low=1)
        self.resume, self.overwrite = bool(resume), bool(overwrite)
        self.written = []  # checkpoints this run wrote or resumed from, oldest first
        self._lock_fd = None

    # --- folder checks and lock
    def check_folder(self):
        """Create the folder and prove it is writable now, before any training (a file there, a read-only or
        full disk fail here with the folder named, not after the first epoch)."""
        check_output_folder(self.folder, "checkpoint_dir",
                            "pass a folder you can write to with free space, e.g. --checkpoint_dir outputs/run1",
                            file_fix="pass a folder path (it is created if missing), e.g. --checkpoint_dir "
                                     "outputs/run1")
        return self.folder

    def __enter__(self):
        self.check_folder()
        self._lock()
        try:
            self.clean_temp_files()
            if not self.resume:
                others = self.checkpoints()
                if others and not self.overwrite:
                    shown = ", ".join(p.name for p in others[:4]) + (" …" if len(others) > 4 else "")
                    raise FileExistsError(
                        f"checkpoint_dir {relative(self.folder)} already holds checkpoints of another run ({shown}). "
                        "A new run there would mix with them (retention, eval and --resume would pick the other "
                        "run's files). Fix: --resume to continue that run, a new --checkpoint_dir, or "
                        "--overwrite true to delete them first.")
                for old in others:
                    old.unlink()
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def _lock(self):
        import fcntl

        path = self.folder / LOCK_NAME
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                finally:
                    os.close(fd)
                raise CheckpointFolderBusy(
                    f"checkpoint_dir {relative(self.folder)} is in use by another run (process {owner}); two runs "
                    "on one folder would overwrite each other's checkpoints. Fix: wait for it to finish, stop it, "
                    "or pass another --checkpoint_dir.") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino  # not a lock file another run just removed
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def release(self):
        """Release the folder lock (also done by the OS when the process ends)."""
        if self._lock_fd is not None:
            try:
                (self.folder / LOCK_NAME).unlink(missing_ok=True)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    # --- files
    def clean_temp_files(self) -> list:
        """Delete the temporary files of interrupted ``save_checkpoint`` calls (only those) in the folder."""
        removed = []
        for path in self.folder.iterdir():
            if _TEMP_FILE.match(path.name) and path.is_file():
                path.unlink(missing_ok=True)
                removed.append(path.name)
        return removed

    def checkpoints(self) -> list:
        """``<prefix>-<epoch>_<steps>.ckpt`` files in the folder, newest epoch first."""
        found = []
        for path in self.folder.glob(f"{self.prefix}-*.ckpt") if self.folder.is_dir() else ():
            match = _RUN_CHECKPOINT.match(path.name)
            if match and match["prefix"] == self.prefix:
                found.append((int(match["epoch"]), int(match["steps"]), path))
        return [path for *_, path in sorted(found, reverse=True)]

    def path_for(self, epoch: int, steps: int) -> Path:
        return self.folder / f"{self.prefix}-{epoch}_{steps}.ckpt"

    def save(self, save_obj, epoch: int, steps: int, append_dict=None) -> Path:
        """Write ``<prefix>-<epoch>_<steps>.ckpt`` atomically, then delete this run's checkpoints beyond ``keep``.
        A checkpoint with a non-finite value is never written (ValueError names the parameter)."""
        _check_finite(save_obj, epoch)
        path = save_checkpoint(save_obj, self.path_for(epoch, steps), append_dict=append_dict)
        self.written = [p for p in self.written if p != path] + [path]
        for old in self.written[:-self.keep]:
            old.unlink(missing_ok=True)
        self.written = self.written[-self.keep:]
        return path

    def set_aside(self, path: Path) -> Path:
        """Rename a damaged checkpoint to ``<name>.damaged``: kept for inspection, out of every run's way."""
        target = path.with_name(path.name + DAMAGED_SUFFIX)
        os.replace(path, target)
        return target

    def resume_from(self, load):
        """Call ``load(path)`` on the newest checkpoint first; a file that fails with ValueError is set aside and
        the next one tried. Returns ``(result, path)`` or ``(None, None)``. The files of the run being resumed
        become this run's (retention may delete them)."""
        for path in self.checkpoints():
            try:
                result = load(path)
            except ValueError as error:
                if "is corrupted or truncated" not in str(error) and "is empty" not in str(error):
                    raise
                aside = self.set_aside(path)
                print(f"skipping {path.name}: {str(error).splitlines()[0]} (renamed to {aside.name})", flush=True)
                continue
            self.written = list(reversed(self.checkpoints()))
            return result, path
        return None, None


def _check_finite(save_obj, epoch):
    import numpy as np

    params = save_obj.parameters_and_names() if isinstance(save_obj, nn.Cell) else (
        save_obj.items() if isinstance(save_obj, dict) else ((getattr(p, "name", "?"), p) for p in save_obj))
    for name, param in params:
        value = param.asnumpy() if hasattr(param, "asnumpy") else param
        if hasattr(value, "dtype") and np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            raise ValueError(f"Not saving the epoch-{epoch} checkpoint: parameter {name!r} holds NaN or inf, so "
                             "training diverged. Fix: lower --lr (or the loss scale) and train again; the last "
                             "finite checkpoint is kept.")
