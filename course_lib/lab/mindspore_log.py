"""Read what MindSpore's Python logger says inside a block, instead of letting it print.

``import course_lib`` sets ``GLOG_v=2``, so MindSpore's warnings, including the deprecation notes that matter
when updating old code (``context.set_context(device_target=...)``), print to stderr. They print mixed with other
output, and its messages can carry absolute local paths. ``capture_mindspore_log`` collects the messages of a
block at a chosen level, with local paths removed, so a lesson can show them in its output (or hide INFO noise).
Only the Python logger is captured; the C++ side (glog) writes straight to the process's stderr.
"""
import contextlib
import logging

from course_lib.i18n import _
from course_lib.paths import scrub_paths

__all__ = ["capture_mindspore_log", "LEVELS"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _ListHandler(logging.Handler):
    def __init__(self, messages: list):
        super().__init__(level=logging.DEBUG)
        self.messages = messages

    def emit(self, record):
        self.messages.append(f"{record.levelname}: {scrub_paths(record.getMessage())}")


@contextlib.contextmanager
def capture_mindspore_log(level: str = "WARNING"):
    """``with capture_mindspore_log() as messages:`` — MindSpore log records at ``level`` or above raised in the
    block go into ``messages`` (``"WARNING: text"``, local paths scrubbed) instead of stderr.

    The logger's own level and handlers are restored afterwards, so ``GLOG_v`` applies again.
    """
    if level not in LEVELS:
        raise ValueError(_("level must be one of {levels}, got {level!r}. Fix: e.g. level='WARNING'.").format(
            levels=LEVELS, level=level))
    from mindspore import log as ms_log

    # MindSpore exposes no public handle on its logger object; _get_logger() is how its own modules reach it.
    logger = ms_log._get_logger()  # noqa: SLF001
    messages: list = []
    saved_handlers, saved_level = list(logger.handlers), logger.level
    logger.handlers = [_ListHandler(messages)]
    logger.setLevel(getattr(logging, level))
    try:
        yield messages
    finally:
        logger.handlers = saved_handlers
        logger.setLevel(saved_level)
