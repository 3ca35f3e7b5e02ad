import course_lib  # noqa: F401  (sets env before mindspore)
import logging

import pytest
from mindspore import log as ms_log

from course_lib.lab.mindspore_log import capture_mindspore_log


def test_captures_warnings_instead_of_printing_them_and_restores_the_logger(capfd):
    logger = ms_log._get_logger()
    level, handlers = logger.level, list(logger.handlers)
    assert level == logging.WARNING  # GLOG_v=2 (course_lib's default): warnings print, info does not
    with capture_mindspore_log() as messages:
        ms_log.warning("Old API %s is deprecated, see /work/main/outputs/09/x.ckpt", "context")
        ms_log.info("not at this level")
    assert messages == ["WARNING: Old API context is deprecated, see …/x.ckpt"]
    assert logger.level == level and logger.handlers == handlers
    out, err = capfd.readouterr()
    assert "deprecated" not in out + err


def test_captures_a_real_mindspore_deprecation_warning():
    from mindspore import context

    with capture_mindspore_log() as messages:
        context.set_context(device_target="CPU")
    assert any("'device_target' will be deprecated" in m and "mindspore.set_device()" in m for m in messages)


def test_errors_level_and_restore_on_exception():
    logger = ms_log._get_logger()
    level = logger.level
    with pytest.raises(RuntimeError, match="boom"):
        with capture_mindspore_log("ERROR") as messages:
            ms_log.warning("dropped")
            ms_log.error("kept")
            raise RuntimeError("boom")
    assert messages == ["ERROR: kept"] and logger.level == level
    with pytest.raises(ValueError, match="level must be one of"):
        with capture_mindspore_log("LOUD"):
            pass
