"""Generated folders that never overwrite a learner's work (used by make_editions.py, translate.py and clean.py).

The rule, in one place:

* Every notebook the course generates for learners records, in its metadata under ``course_generated``, what it
  was generated from and the SHA-256 of its own generated content (its cells: type, source, outputs, execution
  counts, attachments; not metadata, so that opening and saving a notebook unchanged keeps it the course's).
* A generated folder also keeps ``.edition-manifest.json``: every file the last build wrote, with its SHA-256.
* A file is **the course's** when its content still matches its record (or the manifest). Anything else is **the
  learner's**: a notebook they edited, ran (outputs differ) or added cells to, a notebook without a record, and
  every file the course did not write (notes, data). The learner's files are never overwritten, moved or
  deleted. When the course has a new version of a file the learner changed, the new version is written beside it
  as ``NAME.new.ipynb`` (``NAME.new-2.ipynb`` ... when that name is the learner's too) and a message says so.
* A rebuild is atomic: everything is first written into a temporary folder beside the target
  (``.<target>.rebuild-<pid>-*``, with an owner record, see course_lib.staging), then moved in file by file with
  ``os.replace``; the target always holds a complete old or new version of every file. A rebuild that was killed
  is recovered at the next start: what its folder holds that is not also elsewhere (regenerable, or identical to a
  file in the target) is moved into the target, never deleted; the rest is removed. A second rebuild of the same
  folder while one runs is refused.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python tools/x.py` from a checkout without an installed course_lib
    sys.path.insert(0, str(ROOT))
from course_lib import staging  # noqa: E402

RECORD = "course_generated"
MANIFEST = ".edition-manifest.json"
NEW = ".new"


def shown(path: Path) -> str:
    path = Path(path)
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------------------- the record
def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else (source or "")


def _joined_output(output) -> dict:
    """An output with its multi-line strings joined, as nbformat reads them (v4 ``rejoin_lines``)."""
    output = copy.deepcopy(dict(output))
    if isinstance(output.get("text"), list):
        output["text"] = "".join(output["text"])
    data = output.get("data")
    if isinstance(data, dict):
        output["data"] = {mime: ("".join(value) if isinstance(value, list) and not
                                 (mime == "application/json" or mime.endswith("+json")) else value)
                          for mime, value in data.items()}
    return output


def content_sha(nb) -> str:
    """SHA-256 of what a learner can change in a notebook: its cells (not the notebook or cell metadata).

    The same for a notebook in memory and on disk: a file stores multi-line strings as lists of lines, they are
    compared joined (as nbformat reads them). Needs only the standard library, so `make clean` runs anywhere."""
    cells = [{"cell_type": c.get("cell_type"), "source": _text(c.get("source")),
              "outputs": [_joined_output(o) for o in c.get("outputs", [])],
              "execution_count": c.get("execution_count"), "attachments": c.get("attachments", {})}
             for c in nb.get("cells", [])]
    return hashlib.sha256(json.dumps(cells, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def stamp(nb, sources: list, tool: str):
    """``nb`` with its generation record: the tool, the source files (relative to the repository), its hash."""
    nb.metadata[RECORD] = {"generated_by": tool, "from": [shown(s) for s in sources], "content_sha256":
                           content_sha(nb)}
    return nb


def render(nb) -> str:
    import nbformat

    return nbformat.writes(nb) + "\n"


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def record_of(path: Path) -> tuple[dict | None, str | None]:
    """(the notebook's generation record or None, the SHA-256 of its current content or None if unreadable)."""
    nb = _read_json(path)
    if not isinstance(nb, dict):
        return None, None
    record = (nb.get("metadata") or {}).get(RECORD)
    try:
        return (record if isinstance(record, dict) else None), content_sha(nb)
    except (TypeError, AttributeError):
        return None, None


def file_sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def is_unchanged_notebook(path: Path) -> bool:
    """A generated notebook whose content still matches its record (nobody edited or ran it)."""
    record, sha = record_of(path)
    return bool(record) and sha is not None and record.get("content_sha256") == sha


def git_unmodified(path: Path) -> bool:
    """True when ``path`` is tracked by git and identical to its committed version (the course's, not a learner's:
    used for notebooks generated before they carried a record)."""
    path = Path(path).resolve()
    try:
        rel = path.relative_to(ROOT).as_posix()
        tracked = subprocess.run(["git", "ls-files", "-z", "--", rel], cwd=ROOT, capture_output=True, text=True)
        if tracked.returncode or not tracked.stdout.strip("\0"):
            return False
        return subprocess.run(["git", "diff", "--quiet", "HEAD", "--", rel], cwd=ROOT,
                              capture_output=True).returncode == 0
    except (ValueError, OSError):
        return False


# ----------------------------------------------------------------------------------------- the manifest
def read_manifest(folder: Path) -> dict:
    """rel path -> set of SHA-256 the course wrote there (today's format, and the older flat ones per folder)."""
    folder = Path(folder)
    found = {}
    data = _read_json(folder / MANIFEST)
    if isinstance(data, dict) and isinstance(data.get("files"), dict):
        for rel, shas in data["files"].items():
            found[rel] = set(shas if isinstance(shas, list) else [shas])
    elif isinstance(data, dict):  # before: {name: sha} in the folder and in zh/
        found.update({rel: {sha} for rel, sha in data.items() if isinstance(sha, str)})
    legacy_zh = _read_json(folder / "zh" / MANIFEST)
    if isinstance(legacy_zh, dict) and "files" not in legacy_zh:
        found.update({f"zh/{rel}": {sha} for rel, sha in legacy_zh.items() if isinstance(sha, str)})
    return found


def write_manifest(folder: Path, files: dict) -> None:
    data = {"about": "what the course wrote here (tools/generated.py); files not listed, or changed, are yours",
            "files": {rel: sorted(shas) for rel, shas in sorted(files.items())}}
    tmp = Path(folder) / (MANIFEST + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, Path(folder) / MANIFEST)


def is_course_file(path: Path, manifest: dict | None = None, rel: str | None = None, legacy=None) -> bool:
    """True when ``path`` is still exactly what the course generated (else it is the learner's)."""
    path = Path(path)
    if not path.is_file():
        return False
    if path.suffix == ".ipynb" and is_unchanged_notebook(path):
        return True
    if manifest and rel in manifest and file_sha(path) in manifest[rel]:
        return True
    return bool(legacy and legacy(path))


def _walk(folder: Path) -> list[str]:
    """Relative posix paths of the files under ``folder`` (owner records and manifests excluded)."""
    folder = Path(folder)
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.name not in (staging.OWNER, MANIFEST))


def beside(target: Path, new: Path, manifest: dict | None = None, rel: str | None = None) -> Path:
    """A free name next to ``target`` for the course's new version: NAME.new.ext, NAME.new-2.ext, ..."""
    target = Path(target)
    for n in range(1, 1000):
        candidate = target.with_name(f"{target.stem}{NEW}{'' if n == 1 else f'-{n}'}{target.suffix}")
        crel = None if rel is None else str(Path(rel).with_name(candidate.name).as_posix())
        if (not candidate.exists() or is_course_file(candidate, manifest, crel)
                or file_sha(candidate) == file_sha(new)):
            return candidate
    raise FileExistsError(f"no free name beside {target}. Fix: delete some of its NAME.new-N copies.")


def _move_in(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)


# ------------------------------------------------------------------------------------------- the rebuild
class RebuildRunning(RuntimeError):
    pass


def _prefix(target: Path) -> str:
    return f".{target.name}.rebuild-"


def _recover(leftover: Path, target: Path, new_staging: Path, report) -> None:
    """Empty a killed rebuild's folder: drop what is also elsewhere, move the rest into ``target`` (never lost)."""
    for rel in _walk(leftover):
        path, fresh, there = leftover / rel, new_staging / rel, target / rel
        regenerable = fresh.is_file() and (
            file_sha(fresh) == file_sha(path)
            or (path.suffix == ".ipynb" and record_of(path)[1] is not None
                and record_of(path)[1] == record_of(fresh)[1]))
        if (regenerable or is_unchanged_notebook(path)
                or (there.is_file() and file_sha(there) == file_sha(path))):
            path.unlink()
            continue
        destination = there if not there.exists() else there.with_name(
            f"{there.stem}.recovered{there.suffix}")
        n = 2
        while destination.exists():
            destination = there.with_name(f"{there.stem}.recovered-{n}{there.suffix}")
            n += 1
        _move_in(path, destination)
        report(f"recovered {shown(destination)} from an interrupted rebuild")
    staging.release(leftover)


def rebuild(target: Path, produce, *, what: str, manifest: bool = True, legacy=None, report=print,
            needed: int = 0, adopt: tuple = ()) -> list[Path]:
    """Write the files that ``produce(folder)`` makes into ``target`` without ever overwriting a learner's file.

    ``what`` names the folder in messages; ``manifest=False`` for a committed folder (notebooks/zh/) where the
    notebooks' records suffice; ``legacy(path)`` says whether a file without a record is the course's anyway
    (e.g. unchanged since git's HEAD); ``needed``: bytes for the disk-full message; ``adopt``: older folders
    whose learner files move into ``target`` (e.g. build/student/ -> my-work/student/), and stale temporary
    folders of the old naming (``build/student.tmp``), recovered the same way. Returns the files that now hold
    the course's version.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = _prefix(target)
    for other in sorted(target.parent.glob(f"{prefix}*")):
        if other.is_dir() and (other / staging.OWNER).is_file() and staging.owner_alive(other):
            raise RebuildRunning(f"{what} is being rebuilt right now by another process ({shown(other)}). "
                                 f"Fix: wait for it to finish, or stop it, then run this again.")
    try:
        new = staging.claim(target.parent, prefix)
    except OSError as error:
        if staging.is_disk_full(error):
            raise staging.DiskFullError(what, target.parent, needed, f"free at least {staging.megabytes(needed)} "
                                        f"on that disk and run the command again.") from None
        raise
    try:
        try:
            produce(new)
        except OSError as error:
            if staging.is_disk_full(error):
                shutil.rmtree(new, ignore_errors=True)  # only files generated a moment ago
                raise staging.DiskFullError(
                    what, target.parent, needed,
                    f"free at least {staging.megabytes(needed)} on that disk and run the command again. Nothing "
                    f"in {shown(target)} was changed.") from None
            raise
        for leftover in staging.stale_folders(target.parent, prefix):
            _recover(leftover, target, new, report)
        for old in adopt:
            if Path(old).is_dir() and Path(old).resolve() != target.resolve():
                _adopt(Path(old), target, new, report)
        written = _sync(new, target, what, manifest, legacy, report)
    except BaseException as error:  # Ctrl-C or an error: what is left is recovered by the next run, never deleted
        if new.exists():
            staging.abandon(new)
        if staging.is_disk_full(error) and not isinstance(error, staging.DiskFullError):
            raise staging.DiskFullError(what, target.parent, needed, f"free at least {staging.megabytes(needed)} "
                                        f"on that disk and run the command again; every file in {shown(target)} "
                                        f"is whole (old or new version).") from None
        raise
    staging.release(new)
    return written


def _adopt(old: Path, target: Path, new: Path, report) -> None:
    """Move the learner's files of an older folder (or an old-style temp folder) into ``target``."""
    old_manifest = read_manifest(old)
    moved = []
    for rel in _walk(old):
        path = old / rel
        fresh = new / rel
        there = target / rel
        if (is_course_file(path, old_manifest, rel) or (fresh.is_file() and file_sha(fresh) == file_sha(path))
                or (path.suffix == ".ipynb" and fresh.is_file() and record_of(path)[1] == record_of(fresh)[1])
                or (there.is_file() and file_sha(there) == file_sha(path))):
            if old.name.endswith(".tmp"):
                path.unlink()  # an old-style temp folder's copy of something that exists elsewhere
            continue
        destination = there if not there.exists() else there.with_name(f"{there.stem}.from-{old.name}"
                                                                        f"{there.suffix}")
        if destination.exists():
            continue  # moved before; leave this one where it is
        _move_in(path, destination)
        moved.append(destination)
    if moved:
        report(f"moved your {len(moved)} file(s) from {shown(old)}/ into {shown(target)}/ (the folder you work in "
               f"now): " + ", ".join(shown(p) for p in moved))
    if old.name.endswith(".tmp") and not _walk(old):
        shutil.rmtree(old, ignore_errors=True)  # an old-style temp folder that held nothing else


def _sync(new: Path, target: Path, what: str, use_manifest: bool, legacy, report) -> list[Path]:
    old_manifest = read_manifest(target) if use_manifest else {}
    rels = _walk(new)
    if use_manifest:  # first record both versions: a kill during the moves leaves every file recognisable
        target.mkdir(parents=True, exist_ok=True)
        union = {rel: set(shas) for rel, shas in old_manifest.items()}
        for rel in rels:
            union.setdefault(rel, set()).add(file_sha(new / rel))
        write_manifest(target, union)
    written, course, kept = {}, [], {}
    for rel in rels:
        source, there = new / rel, target / rel
        sha = file_sha(source)
        if there.is_file() and file_sha(there) == sha:
            source.unlink()
        elif there.is_dir():
            report(f"kept your folder {shown(there)}: the course's {rel} is not written there")
            source.unlink()
            continue
        elif not there.exists() or is_course_file(there, old_manifest, rel, legacy):
            _move_in(source, there)
        else:
            their_base = record_of(there)[0] if there.suffix == ".ipynb" else None
            current = (their_base or {}).get("content_sha256") == record_of(source)[1] if their_base else \
                sha in old_manifest.get(rel, ())
            kept[rel] = set(old_manifest.get(rel, ()))  # what theirs started from, for the next build
            if current:
                source.unlink()  # the course's version is the one theirs started from: nothing new to add
                report(f"kept your changed {shown(there)}")
            else:
                other = beside(there, source, old_manifest, rel)
                _move_in(source, other)
                written[other.relative_to(target).as_posix()] = sha
                report(f"kept your changed {shown(there)}; the course's new version is beside it: {other.name}")
            continue
        written[rel] = sha
        course.append(there)
    for rel in sorted(set(old_manifest) - set(written)):  # files the course no longer makes
        path = target / rel
        if path.is_file() and is_course_file(path, old_manifest, rel):
            path.unlink()
    if use_manifest:
        write_manifest(target, {**{rel: shas for rel, shas in kept.items() if shas},
                                **{rel: {sha} for rel, sha in written.items()}})
        legacy_zh = target / "zh" / MANIFEST
        if legacy_zh.is_file():
            legacy_zh.unlink()
    return course
