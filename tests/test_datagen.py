import course_lib  # noqa: F401  (sets env before mindspore)
import numpy as np

from course_lib import datagen, paths


def test_regeneration_is_bit_for_bit(tmp_path):
    out = datagen.generate(tmp_path / "data", quiet=True)
    assert (out / datagen.MANIFEST_NAME).read_text() == (paths.DATA_DIR / datagen.MANIFEST_NAME).read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]  # staging folder cleaned up


def test_regenerating_over_existing_data_replaces_it(tmp_path):
    target = tmp_path / "data"
    datagen.generate(target, quiet=True)
    (target / "digits_png" / "stray.txt").write_text("leftover")
    datagen.generate(target, quiet=True)
    assert not (target / "digits_png" / "stray.txt").exists()


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
