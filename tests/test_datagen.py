from pathlib import Path

import numpy as np
import pytest

import course_lib  # noqa: F401  (sets env before mindspore)
from course_lib import paths
from course_lib.data import generate as datagen
from course_lib.data.generate import shape_colour


def test_regeneration_is_bit_for_bit(tmp_path):
    out = datagen.generate(tmp_path / "data", quiet=True)
    assert (out / datagen.MANIFEST_NAME).read_text() == (paths.DATA_DIR / datagen.MANIFEST_NAME).read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]  # staging folder cleaned up


def test_regenerating_over_its_own_output_replaces_it_and_a_stray_file_stops_it(tmp_path):
    target = tmp_path / "data"
    datagen.generate(target, quiet=True)
    datagen.generate(target, quiet=True)  # exactly what it wrote: replaced, bit for bit
    assert (target / datagen.MANIFEST_NAME).read_text() == (paths.DATA_DIR / datagen.MANIFEST_NAME).read_text()
    (target / "digits_png" / "stray.txt").write_text("leftover")
    with pytest.raises(datagen.DatagenRefused, match=r"digits_png/stray\.txt \(not written by datagen\)"):
        datagen.generate(target, quiet=True)
    assert (target / "digits_png" / "stray.txt").read_text() == "leftover"


def test_ignore_borders_marks_class_boundaries_only():
    mask = np.zeros((6, 6), np.uint8)
    mask[2:4, 2:4] = 2
    out = datagen.ignore_borders(mask)
    assert out[0, 0] == 0 and out[5, 5] == 0
    assert (out[2:4, 2:4] == datagen.IGNORE_LABEL).all()       # a 2x2 object is all border
    assert out[1, 2] == datagen.IGNORE_LABEL and out[1, 1] == 0  # 4-neighbourhood, not diagonal


def test_idx_header(tmp_path):
    datagen.write_idx(tmp_path / "x", np.arange(6, dtype=np.uint8).reshape(2, 3))
    raw = (tmp_path / "x").read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x02" and raw[4:12] == b"\x00\x00\x00\x02\x00\x00\x00\x03"
    assert raw[12:] == bytes(range(6))


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_shape_colour_hint_gives_each_class_its_own_channel(kind):
    rng = np.random.default_rng(0)
    for _ in range(50):
        base = rng.uniform(40, 200, size=3)
        colour = shape_colour(rng, kind, base)
        assert colour.argmax() == kind - 1 and colour[kind - 1] >= 170
        assert np.delete(colour, kind - 1).max() <= 90


def test_shape_colour_never_loops_forever_on_a_background_close_to_the_hint():
    # (198, 50, 50) is within 60 of every reddish hint colour: the fallback picks the farthest allowed one.
    colour = shape_colour(np.random.default_rng(0), 1, np.array([198.0, 50.0, 50.0]))
    assert colour.tolist() == [255.0, 0.0, 0.0]


def test_shape_colour_without_hint_is_any_colour_far_from_the_background():
    rng = np.random.default_rng(1)
    colours = np.array([shape_colour(rng, 2, np.array([120.0, 120.0, 120.0]), colour_hint=False) for _ in range(200)])
    assert (np.abs(colours - 120).max(axis=1) >= 60).all()
    assert len({int(c.argmax()) for c in colours}) == 3      # no class hint: every channel can dominate


# ------------------------------------------------------------------ never replace a user's files; full disk; leftovers
import errno  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from course_lib import staging  # noqa: E402


def _dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    return int(child.stdout)


@pytest.mark.parametrize("mine", ["shapes/我的 形状.mindrecord", "MANIFEST.sha256", "digits_png/notes.txt"])
def test_datagen_out_never_replaces_a_users_own_files(tmp_path, mine, capsys):
    target = tmp_path / "我的 数据"
    (target / mine).parent.mkdir(parents=True, exist_ok=True)
    (target / mine).write_text("the user's own file", encoding="utf-8")
    (target / "README.txt").write_text("also mine")
    assert datagen.main(["--out", str(target)]) == 1
    err = capsys.readouterr().err
    assert "datagen never replaces" in err and Path(mine).parts[0] in err and "Fix:" in err and "Traceback" not in err
    assert (target / mine).read_text(encoding="utf-8") == "the user's own file"
    assert (target / "README.txt").read_text() == "also mine"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-datagen-")]


def test_datagen_rewrites_a_folder_that_holds_exactly_its_own_output_and_leaves_other_files(tmp_path):
    target = tmp_path / "data"
    (target / "digits_mnist").mkdir(parents=True)
    for path in paths.DATA_DIR.rglob("*"):  # the repository's data/: exactly what datagen writes
        if path.is_file():
            (target / path.relative_to(paths.DATA_DIR)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(paths.DATA_DIR)).write_bytes(path.read_bytes())
    (target / "notes.txt").write_text("mine")  # beside datagen's folders: never touched
    assert datagen._not_datagens(target) == []
    (target / "shapes" / "shapes_val.mindrecord").write_bytes(b"changed")
    assert datagen._not_datagens(target) == ["shapes/shapes_val.mindrecord (changed since datagen wrote it)"]
    with pytest.raises(datagen.DatagenRefused, match="shapes_val.mindrecord"):
        datagen.generate(target, quiet=True)
    assert (target / "shapes" / "shapes_val.mindrecord").read_bytes() == b"changed"


def test_datagen_on_a_full_disk_prints_one_message_and_keeps_the_old_data(tmp_path, monkeypatch, capsys):
    target = tmp_path / "data"

    def full(root):
        (root / "shapes").mkdir()
        (root / "shapes" / "half").write_bytes(b"x")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(datagen, "write_shapes", full)
    assert datagen.main(["--out", str(target)]) == 1
    err = capsys.readouterr().err
    assert "Not enough disk space" in err and str(tmp_path) in err and "MB" in err and "Fix:" in err
    assert "Traceback" not in err and not target.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-datagen-")]


def test_datagen_refuses_before_writing_when_free_space_is_short(tmp_path, monkeypatch):
    monkeypatch.setattr(staging, "shutil_free", lambda where: 1_000_000)
    with pytest.raises(staging.DiskFullError, match=r"needs about 14\.0 MB, 1\.0 MB free"):
        datagen.generate(tmp_path / "data", quiet=True)
    assert list(tmp_path.iterdir()) == []


def test_a_killed_datagens_temp_folder_is_removed_at_the_next_start_only_when_its_owner_is_gone(tmp_path):
    killed = staging.claim(tmp_path, datagen.STAGING_PREFIX)
    (killed / "shapes").mkdir()
    (killed / "shapes" / "half.mindrecord").write_bytes(b"x" * 1000)
    record = json.loads((killed / staging.OWNER).read_text())
    record["pid"] = _dead_pid()
    (killed / staging.OWNER).write_text(json.dumps(record))
    running = staging.claim(tmp_path, datagen.STAGING_PREFIX)  # a live run (this process): never touched
    unknown = tmp_path / ".tmp-datagen-abc123"  # no owner record: cannot prove it is abandoned
    unknown.mkdir()
    said = []
    assert datagen.clean_stale_staging(tmp_path, said.append) == [killed]
    assert not killed.exists() and running.is_dir() and unknown.is_dir() and said
