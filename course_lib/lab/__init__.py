"""Notebook plumbing: only notebooks import these (learners never need to read them).

``lesson.py`` (show an error, show source, time a block), ``results.py`` (a lesson's measured run time),
``mindspore_log.py``, ``plotting.py`` and ``diagrams.py``.
"""
