"""Remove what the course generated and can make again, never a learner's file (``make clean``).

    python tools/clean.py            remove, then list what was removed and what was kept
    python tools/clean.py --dry-run  only list it

Removed: ``outputs/`` (everything the lessons write), ``build/`` (editions, the site, the bundle, test copies),
the caches ``.pytest_cache/`` and ``.ruff_cache/``, and temporary folders of killed datagen runs or rebuilds
whose owner has ended. Kept, wherever it is under those folders: every notebook that is not exactly what the
course generated (a notebook a learner edited, ran or made; see tools/generated.py), and every file inside an
edition folder (one with ``.edition-manifest.json``) that the course did not write there (notes, data). The
folder learners work in, ``my-work/``, and everything outside the folders above are never looked at.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402
from generated import staging  # noqa: E402

ROOT = generated.ROOT
#: Generated folders (relative to the repository): their files go unless they are a learner's.
DISPOSABLE = ("outputs", "build")
#: Caches: removed whole (tools write them, nobody works in them).
CACHES = (".pytest_cache", ".ruff_cache")


def _edition_root(path: Path, top: Path) -> tuple[Path, dict] | None:
    """The closest folder above ``path`` (up to ``top``) that holds an edition manifest, with that manifest."""
    for folder in path.parents:
        if (folder / generated.MANIFEST).is_file():
            return folder, generated.read_manifest(folder)
        if folder == top:
            return None
    return None


def _copy_of_a_lesson(path: Path) -> bool:
    """A notebook byte-identical to a lesson of the repository (e.g. the test suite's copy in build/)."""
    for folder in (ROOT / "notebooks", ROOT / "notebooks" / "zh"):
        original = folder / path.name
        if original.is_file() and original.stat().st_size == path.stat().st_size \
                and generated.file_sha(original) == generated.file_sha(path):
            return True
    return False


def learners(path: Path, top: Path) -> bool:
    """True when the file ``path`` (under the disposable folder ``top``) is a learner's, so it must stay."""
    if path.name in (generated.MANIFEST, staging.OWNER):
        return False
    edition = _edition_root(path, top)
    if path.suffix == ".ipynb":
        if generated.is_unchanged_notebook(path) or _copy_of_a_lesson(path):
            return False
        if edition:
            rel = path.relative_to(edition[0]).as_posix()
            return not generated.is_course_file(path, edition[1], rel)
        return True
    if edition:
        rel = path.relative_to(edition[0]).as_posix()
        return not generated.is_course_file(path, edition[1], rel)
    return False


def plan(root: Path = ROOT) -> tuple[list[Path], list[Path]]:
    """(paths to remove, learner files to keep). Folders are removed whole when nothing in them is kept."""
    remove, keep = [], []
    for name in CACHES:
        if (root / name).exists():
            remove.append(root / name)
    for name in DISPOSABLE:
        top = root / name
        if not top.is_dir():
            continue
        kept_here = [p for p in sorted(top.rglob("*")) if p.is_file() and not p.is_symlink()
                     and learners(p, top)]
        if not kept_here:
            remove.append(top)
            continue
        keep += kept_here
        manifests = {edition[0] / generated.MANIFEST for p in kept_here if (edition := _edition_root(p, top))}
        # an edition folder that still holds a learner's file keeps its manifest: it tells theirs from ours later
        protected = {parent for p in kept_here for parent in p.parents} | set(kept_here) | manifests
        gone = set()
        for path in sorted(top.rglob("*")):
            if path in protected or any(parent in gone for parent in path.parents):
                continue
            gone.add(path)
            remove.append(path)
    return remove, keep


def clean(root: Path = ROOT, dry_run: bool = False, report=print) -> tuple[list[Path], list[Path]]:
    """Remove what :func:`plan` lists; print what was removed and what was kept (and why)."""
    root = Path(root)
    remove, keep = plan(root)
    # a killed `make data` leaves .tmp-datagen-<pid>-* beside data/ (course_lib.data.generate): removed once its
    # owner ended
    stale = staging.stale_folders(root, staging.DATAGEN_PREFIX)
    remove += stale
    # a killed `translate.py build` leaves notebooks/.zh.rebuild-*: generated notebooks only, or it stays
    for leftover in staging.stale_folders(root / "notebooks", ".zh.rebuild-"):
        if all(p.name == staging.OWNER or generated.is_unchanged_notebook(p)
               for p in leftover.rglob("*") if p.is_file()):
            remove.append(leftover)
    verb = "would remove" if dry_run else "removed"
    files_in = {}
    for path in remove:
        if path.is_dir() and not path.is_symlink():
            report(f"{verb} {generated.shown(path)}/")
            if not dry_run:
                shutil.rmtree(path)
        else:
            files_in.setdefault(path.parent, []).append(path)
            if not dry_run:
                path.unlink(missing_ok=True)
    for folder, files in files_in.items():
        report(f"{verb} {len(files)} generated file(s) in {generated.shown(folder)}/")
    for path in keep:
        report(f"kept {generated.shown(path)} (yours: not a file the course generated, or changed since)")
    if not remove and not keep and not stale:
        report("nothing to clean")
    return remove, keep


def main(argv: list) -> int:
    unknown = [a for a in argv if a != "--dry-run"]
    if unknown:
        print(f"unknown argument(s) {unknown}. Usage: python tools/clean.py [--dry-run]", file=sys.stderr)
        return 2
    clean(dry_run="--dry-run" in argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
