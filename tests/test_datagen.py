import course_lib  # noqa: F401  (sets env before mindspore)
import numpy as np
import pytest

from course_lib import datagen, paths
from course_lib.datagen import shape_colour


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
