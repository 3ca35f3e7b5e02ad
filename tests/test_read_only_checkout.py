"""A learner on a read-only copy of the course (a write-protected USB stick) can still run the lessons."""
import errno
import tempfile

import pytest

from course_lib import paths


@pytest.fixture
def read_only_checkout(tmp_path, monkeypatch):
    """OUTPUT_DIR inside a 'checkout' where every write fails with EROFS, as on a read-only file system."""
    checkout = tmp_path / "只读 course"
    (checkout / "outputs").mkdir(parents=True)
    real_file, real_mkdir = tempfile.TemporaryFile, type(checkout).mkdir

    def refuse(path):
        return str(path).startswith(str(checkout))

    def temporary_file(*args, dir=None, **kwargs):
        if dir is not None and refuse(dir):
            raise OSError(errno.EROFS, "Read-only file system", str(dir))
        return real_file(*args, dir=dir, **kwargs)

    def mkdir(self, *args, **kwargs):
        if refuse(self) and not self.is_dir():
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)
    monkeypatch.setattr(paths.tempfile, "TemporaryFile", temporary_file)
    monkeypatch.setattr(type(checkout), "mkdir", mkdir)
    monkeypatch.setattr(paths, "OUTPUT_DIR", checkout / "outputs")
    monkeypatch.delenv("COURSE_OUTPUT_DIR", raising=False)
    cache = tmp_path / "home cache"
    monkeypatch.setattr(paths, "fallback_output_dir", lambda: cache / "outputs")
    paths._warned_fallback.clear()
    return checkout, cache


def test_lesson_dir_in_a_read_only_checkout_falls_back_to_the_users_cache(read_only_checkout, capsys):
    checkout, cache = read_only_checkout
    folder = paths.lesson_dir("03")
    assert folder == cache / "outputs" / "03" and folder.is_dir()
    (folder / "lenet.ckpt").write_bytes(b"x")  # the lesson can write there
    assert paths.lesson_dir("05") == cache / "outputs" / "05"
    err = capsys.readouterr().err
    assert err.count("cannot be written") == 1 and "Read-only file system" in err and "COURSE_OUTPUT_DIR" in err
    assert "Traceback" not in err


def test_no_writable_folder_at_all_is_one_clear_error(read_only_checkout, monkeypatch):
    checkout, _ = read_only_checkout
    monkeypatch.setattr(paths, "fallback_output_dir", lambda: checkout / "cache")
    with pytest.raises(PermissionError, match=r"cannot be written .*Read-only file system.*Fix: set "
                                              r"COURSE_OUTPUT_DIR"):
        paths.lesson_dir("03")


def test_an_unwritable_course_output_dir_is_the_users_choice_and_named(read_only_checkout, monkeypatch):
    checkout, _ = read_only_checkout
    monkeypatch.setenv("COURSE_OUTPUT_DIR", str(checkout / "outputs"))
    with pytest.raises(PermissionError, match="comes from COURSE_OUTPUT_DIR. Fix: set COURSE_OUTPUT_DIR"):
        paths.lesson_dir("03")


def test_the_fallback_is_the_platforms_cache_folder(monkeypatch):
    folder = paths.fallback_output_dir()
    assert folder.name == "outputs" and "mindspore-course" in folder.parts
    assert not folder.is_relative_to(paths.PROJECT_ROOT)
