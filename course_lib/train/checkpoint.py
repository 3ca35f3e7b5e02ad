"""Checkpoints that are never half-written and never silently wrong.

``mindspore.save_checkpoint`` (2.10) deletes the old file *before* writing the new one and does not flush
to disk, so a crash mid-save can leave no checkpoint at all. ``save_checkpoint`` here writes a temporary file
in the same folder, flushes it, and only then renames it over the old one. Both functions use MindSpore's
CRC check by default: a plain load accepts a file with flipped bytes silently.
A checkpoint from an untrusted source is untrusted input: load only files you (or someone you trust) wrote.
"""
import glob
import os
import re
from pathlib import Path

import mindspore as ms
from mindspore import nn

from course_lib.i18n import _
from course_lib.locks import FolderBusy, clean_stale_temp_files, temp_name
from course_lib.paths import check_output_folder, relative
from course_lib.validation import check_bool, check_int, check_path, check_str, check_type

TEMP_MARK = ".tmp-"


class CorruptCheckpointError(ValueError):
    """A checkpoint file that is empty, truncated, corrupted or inconsistent (a ValueError: the file's content is
    wrong). ``CheckpointManager.resume`` sets such a file aside and resumes from the one before it."""


def _checkpoint_path(path, must_exist: bool) -> Path:
    path = check_path("path", path, _("pass the checkpoint file's path, e.g. 'outputs/lenet5.ckpt'")).expanduser()
    if path.suffix != ".ckpt":
        raise ValueError(_("checkpoint file name must end with .ckpt, got {name!r}. Fix: e.g. {example!r}.").format(
            name=path.name, example=path.with_suffix(".ckpt").name))
    if must_exist:
        if not path.exists():
            raise FileNotFoundError(_("Checkpoint {path} does not exist. Fix: check the path, or train first so "
                                      "that the checkpoint is written.").format(path=relative(path)))
        if path.is_dir():
            raise ValueError(_("Checkpoint path {path} is a folder. Fix: pass the .ckpt file inside it.").format(
                path=relative(path)))
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
    check_type("save_obj", save_obj, (nn.Cell, list, dict), _("a network (nn.Cell) or a list/dict of parameters"),
               _("pass the network, e.g. save_checkpoint(net, 'outputs/net.ckpt')"))
    path = _checkpoint_path(path, must_exist=False)
    blocker = next((p for p in [path.parent, *path.parent.parents] if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise NotADirectoryError(_("Cannot save checkpoint {path}: {blocker} is a file, not a folder. Fix: save "
                                   "into a folder path, e.g. {example}.").format(
            path=relative(path), blocker=relative(blocker), example=relative(blocker.parent / "ckpt")))
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_temp_files(path.parent)  # what earlier, killed saves left here (only provably stale files)
    temp = path.parent / temp_name(path.stem, ".ckpt")
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
    """Whether the .ckpt file ends with MindSpore's CRC record (written by ``save_checkpoint(crc_check=True)``).

    Taught in lesson 09 (notebooks/09_inference_and_export.ipynb).
    """
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size < _CRC_TAIL:
            return False
        handle.seek(size - _CRC_TAIL)
        return handle.read(len(_CRC_RECORD)) == _CRC_RECORD


#: Bytes per element of each ``tensor_type`` MindSpore 2.10 writes (``tensor_to_ms_type`` in
#: mindspore/train/serialization.py); "str" and "Int4" (two values per byte) are checked separately.
_ITEM_BYTES = {"Int8": 1, "UInt8": 1, "Int16": 2, "UInt16": 2, "Int32": 4, "UInt32": 4, "Int64": 8, "UInt64": 8,
               "Float16": 2, "Float32": 4, "Float64": 8, "Bool": 1, "BFloat16": 2}


def check_tensor_sizes(path) -> int:
    """Check that every tensor of a .ckpt file holds exactly the bytes its declared shape and dtype need.

    A CRC only proves the file is the one that was written; a crafted (or badly converted) file with a valid
    CRC can still declare a shape larger or smaller than its data, and MindSpore 2.10 loads it. The file is read
    as MindSpore does (``_parse_ckpt_proto``: strip the 17-byte CRC record, parse ``checkpoint_pb2.Checkpoint``;
    a large tensor is several consecutive entries with the same tag). Returns the number of tensors checked;
    raises ValueError ("is corrupted or inconsistent") naming the first bad tensor.
    """
    from google.protobuf.message import DecodeError
    from mindspore.train.checkpoint_pb2 import Checkpoint

    path = Path(path)
    content = path.read_bytes()
    if content[-_CRC_TAIL:-10] == _CRC_RECORD:
        content = content[:-_CRC_TAIL]
    checkpoint = Checkpoint()
    try:
        checkpoint.ParseFromString(content)
    except (DecodeError, RuntimeError, ValueError):
        raise CorruptCheckpointError(_("Checkpoint {path} is corrupted or truncated: its content cannot "
                                       "be parsed. Fix: use an earlier checkpoint or train again.").format(
            path=relative(path))) from None

    def fail(tag, why):
        raise CorruptCheckpointError(_("Checkpoint {path} is corrupted or inconsistent: tensor {tag!r} "
                                       "{why}. Loading it would give a parameter with wrong or made-up "
                                       "values. Fix: use an earlier checkpoint or train again; do not "
                                       "load checkpoints from untrusted sources.").format(
            path=relative(path), tag=tag, why=why))

    entries = list(checkpoint.value)
    checked = 0
    index = 0
    while index < len(entries):
        element = entries[index]
        tag = element.tag
        group = [element]
        while index + 1 < len(entries) and entries[index + 1].tag == tag:
            index += 1
            group.append(entries[index])
        index += 1
        if not element.HasField("tensor"):
            continue  # a map parameter (MapTensor): not written by the course
        tensor = element.tensor
        dtype = tensor.tensor_type
        if any(part.tensor.tensor_type != dtype or list(part.tensor.dims) != list(tensor.dims) for part in group):
            fail(tag, _("is split into parts that declare different shapes or dtypes"))
        dims = list(tensor.dims)
        if any(d < 0 for d in dims):
            fail(tag, _("declares a negative dimension in its shape {shape}").format(shape=tuple(dims)))
        data_bytes = sum(len(part.tensor.tensor_content) for part in group)
        if dtype == "str":
            if data_bytes % 4:
                fail(tag, _("is a string of {size} bytes, not a multiple of 4 (UTF-32)").format(size=data_bytes))
            continue
        if dims == [0]:  # MindSpore writes a scalar's shape as [0]
            dims = []
        count = 1
        for d in dims:
            count *= d
        if dtype == "Int4":
            expected = (count + 1) // 2
        elif dtype in _ITEM_BYTES:
            expected = count * _ITEM_BYTES[dtype]
        else:
            fail(tag, _("declares an unknown dtype {dtype!r} (known: {known})").format(
                dtype=dtype, known=", ".join([*_ITEM_BYTES, "Int4", "str"])))
        if data_bytes != expected:
            fail(tag, _("declares shape {shape} of {dtype} ({expected} bytes) but holds {size} bytes").format(
                shape=tuple(dims), dtype=dtype, expected=expected, size=data_bytes))
        checked += 1
    return checked


def _read(path: Path, crc_check: bool) -> dict:
    if path.stat().st_size == 0:
        raise CorruptCheckpointError(_("Checkpoint {path} is empty (0 bytes): it was truncated or never "
                                       "finished. Fix: use an earlier checkpoint or train again.").format(
            path=relative(path)))
    # MindSpore 2.10's load_checkpoint(crc_check=True) only logs a warning for a file without the CRC record
    # and loads it; the record is the file's last one, so a file cut at a record boundary would load silently.
    if crc_check and not has_crc_record(path):
        raise CorruptCheckpointError(_("Checkpoint {path} is corrupted or truncated: it has no CRC "
                                       "record, so its integrity cannot be checked (the CRC is the "
                                       "file's last record: a cut file loses it; a file saved without "
                                       "crc_check=True never had one). Fix: use an earlier checkpoint or "
                                       "train again; if you trust a file saved without a CRC, load it "
                                       "with crc_check=False.").format(
            path=relative(path)))
    check_tensor_sizes(path)
    try:
        return ms.load_checkpoint(str(path), crc_check=crc_check)
    except ValueError as error:
        reason = _("(CRC check failed or content unparsable)") if crc_check else _("(content unparsable)")
        raise CorruptCheckpointError(_("Checkpoint {path} is corrupted or truncated: MindSpore could not read it "
                                       "{reason}. Fix: use an earlier checkpoint or train again.").format(
            path=relative(path), reason=reason)) from error


def load_checkpoint(path, net=None, strict=True, crc_check=True) -> dict:
    """Read a checkpoint (CRC-checked) and, if ``net`` is given, load it into the network.

    With ``strict`` every parameter of ``net`` must be in the file with the same shape; otherwise the error
    lists what is missing or mismatched (the usual sign of a checkpoint from another network).
    Returns the parameter dict (extra entries such as optimizer moments or ``append_dict`` values included).

    Taught in lesson 09 (notebooks/09_inference_and_export.ipynb).
    Copy held equal by tests/test_technique_agreement.py: the lesson's ``checkpoint_is_verified``.
    """
    path = _checkpoint_path(path, must_exist=True)
    params = _read(path, crc_check)
    if net is None:
        return params
    check_type("net", net, nn.Cell, _("a mindspore.nn.Cell"),
               _("pass the network to load into, or net=None to get the parameter dict"))
    missing, mismatched = [], []
    for name, param in net.parameters_and_names():
        if name not in params:
            missing.append(name)
        elif tuple(params[name].shape) != tuple(param.shape):
            mismatched.append(_("{name}: network {shape} vs checkpoint {saved}").format(
                name=name, shape=tuple(param.shape), saved=tuple(params[name].shape)))
    if mismatched or (strict and missing):
        details = []
        if missing:
            shown = ", ".join(missing[:8]) + (f" … ({len(missing)})" if len(missing) > 8 else "")
            details.append(_("missing from the checkpoint: {names}").format(names=shown))
        if mismatched:
            details.append(_("shape mismatch: {names}").format(names="; ".join(mismatched[:8])))
        raise ValueError(_("Checkpoint {path} does not fit this {type}: {details}. Fix: load it into the network it "
                           "was saved from (same architecture and num_classes), or pass strict=False to load what "
                           "matches.").format(path=relative(path), type=type(net).__name__,
                                              details=" | ".join(details)))
    # Only exact names: load_param_into_net strips unknown prefixes, which would load an optimizer's
    # "moments.conv1.weight" into "conv1.weight" when a weight itself is missing.
    own = {name for name, _ in net.parameters_and_names()}
    ms.load_param_into_net(net, {k: v for k, v in params.items() if k in own}, strict_load=False)
    return params


def _check_prefix(prefix):
    """A checkpoint name prefix is a plain, non-empty start of a file name: never a path (``../x``, ``a/b``,
    ``a\\b``)."""
    check_str("prefix", prefix, _("e.g. prefix='lenet5' (the start of the checkpoint file names)"))
    bad = [part for part in ("/", "\\", os.sep, os.altsep or "/", "\0", ":") if part in prefix]
    if bad or prefix in (".", "..") or prefix.startswith(".."):
        raise ValueError(_("prefix must be the start of a file name inside the folder, not a path, got {prefix!r} "
                           "(it holds {part}); results are always files inside the folder. Fix: pass the folder "
                           "as the first argument and a plain name start such as 'lenet5' as prefix.").format(
            prefix=prefix, part=_("a path separator") if bad else _("a parent-folder part")))
    return prefix


# ------------------------------------------------------------------------------------------ run management
#: ``<prefix>-<epoch>_<steps>.ckpt``, the names scripts/train.py (and ModelCheckpoint) give epoch checkpoints.
_RUN_CHECKPOINT = re.compile(r"^(?P<prefix>.+)-(?P<epoch>\d+)_(?P<steps>\d+)\.ckpt$")
#: Temporary files of ``save_checkpoint``: ``.<stem>.tmp-p<pid>-<8 hex>.ckpt`` (older versions: no ``p<pid>-``)
#: and MindSpore's own ``….tmp``.
_TEMP_FILE = re.compile(r"^\..+" + re.escape(TEMP_MARK) + r"(p\d+-)?[0-9a-f]{8}\.(ckpt|tmp)$")


def clean_temp_files(folder) -> list:
    """Delete the temporary files that killed ``save_checkpoint`` calls left in ``folder``: only those whose
    writer is provably gone (``course_lib.locks.is_stale_temp``). Returns the names removed."""
    return clean_stale_temp_files(folder, _TEMP_FILE)
#: Suffix given to a checkpoint that failed to load, so it no longer counts as (or holds a keep slot of) a run's.
DAMAGED_SUFFIX = ".damaged"
LOCK_NAME = ".course_checkpoints.lock"


class CheckpointFolderBusy(FolderBusy):
    """Another live process holds the checkpoint folder's lock."""


class CheckpointManager:
    """Owns one run's checkpoint folder: a lock for the run's lifetime, clean-up of the course's own temporary
    files, retention that only deletes this run's checkpoints, and resume from the newest readable one.

    Use as a context manager (``with CheckpointManager(folder, "lenet5", keep=5) as manager:``). On entry the
    folder is locked (a second run on the same folder gets ``CheckpointFolderBusy``). The lock is held by the
    OS on the folder itself (``course_lib.locks.FolderLock``: ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on
    Windows), so it is released on any exit, ``kill -9`` included, and deleting the ``.course_checkpoints.lock``
    file beside it (which only names the owner's pid) does not release it.
    A fresh run (``resume=False``) refuses a folder that already holds ``<prefix>-<epoch>_<steps>.ckpt``
    files of another run, unless ``overwrite=True``, which deletes them first.
    """

    def __init__(self, folder, prefix: str, keep: int = 5, resume: bool = False, overwrite: bool = False):
        folder = check_path("folder", folder, _("e.g. 'outputs/ckpt'"))
        _check_prefix(prefix)
        self.folder = Path(folder).expanduser()
        self.prefix = prefix
        self.keep = check_int("keep_checkpoint_max", keep, low=1, fix=_("keep at least one checkpoint, e.g. 5"))
        self.resume = check_bool("resume", resume)
        self.overwrite = check_bool("overwrite", overwrite)
        self.written = []  # checkpoints this run wrote or resumed from, oldest first
        self._lock_fd = None

    # --- folder checks and lock
    def check_folder(self):
        """Create the folder and prove it is writable now, before any training (a file there, a read-only or
        full disk fail here with the folder named, not after the first epoch)."""
        check_output_folder(self.folder, "checkpoint_dir",
                            _("pass a folder you can write to with free space, e.g. --checkpoint_dir outputs/run1"),
                            file_fix=_("pass a folder path (it is created if missing), e.g. --checkpoint_dir "
                                       "outputs/run1"))
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
                        _("checkpoint_dir {folder} already holds checkpoints of another run ({shown}). A new run "
                          "there would mix with them (retention, eval and --resume would pick the other run's "
                          "files). Fix: --resume to continue that run, a new --checkpoint_dir, or --overwrite true "
                          "to delete them first.").format(folder=relative(self.folder), shown=shown))
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
        from course_lib.locks import FolderLock

        lock = FolderLock(
            self.folder, LOCK_NAME, error=CheckpointFolderBusy,
            busy_message=_("checkpoint_dir {folder} is in use by another run ({owner}); two runs on one folder "
                           "would overwrite each other's checkpoints. Fix: wait for it to finish, stop it, or pass "
                           "another --checkpoint_dir."))
        lock.acquire()
        self._lock_fd = lock

    @property
    def locked(self) -> bool:
        """Whether this manager holds the folder's lock now."""
        return self._lock_fd is not None

    def release(self):
        """Release the folder lock (also done by the OS when the process ends)."""
        if self._lock_fd is not None:
            lock, self._lock_fd = self._lock_fd, None
            lock.release()

    # --- files
    def clean_temp_files(self) -> list:
        """Delete the temporary files of interrupted ``save_checkpoint`` calls (only those, and only when their
        writer is provably gone) in the folder."""
        return clean_temp_files(self.folder)

    def checkpoints(self) -> list:
        """``<prefix>-<epoch>_<steps>.ckpt`` files in the folder, newest epoch first."""
        found = []
        for path in self.folder.glob(f"{glob.escape(self.prefix)}-*.ckpt") if self.folder.is_dir() else ():
            match = _RUN_CHECKPOINT.match(path.name)
            if match and match["prefix"] == self.prefix:
                found.append((int(match["epoch"]), int(match["steps"]), path))
        return [path for *_key, path in sorted(found, reverse=True)]

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
            except CorruptCheckpointError as error:
                aside = self.set_aside(path)
                print(_("skipping {name}: {error} (renamed to {aside})").format(
                    name=path.name, error=str(error).splitlines()[0], aside=aside.name), flush=True)
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
            raise ValueError(_("Not saving the epoch-{epoch} checkpoint: parameter {name!r} holds NaN or inf, so "
                               "training diverged. Fix: lower --lr (or the loss scale) and train again; the last "
                               "finite checkpoint is kept.").format(epoch=epoch, name=name))
