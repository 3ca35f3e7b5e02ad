"""A pytest plugin for running nbval on pytest-xdist workers without losing the "second run" guarantee.

    PYTHONPATH=tools pytest -p nbval_groups -n 2 <nbval flags> notebooks/*.ipynb COPY/*.ipynb

Every notebook is scheduled by its file name, so both copies of a lesson (``notebooks/03_x.ipynb`` and
``/tmp/…/03_x.ipynb``) go to the same worker and run one after the other, in the order given on the command line:
the copy meets the leftovers of the first run, as in the serial two-pass run, while different lessons run side by
side. A notebook's cells never split across workers (they share one kernel).

Why not ``--dist loadgroup`` with an ``xdist_group`` mark per lesson: with pytest 9.2, pytest-xdist 3.8.0's
loadgroup never groups anything (it renames ``item._nodeid``, which pytest 9 no longer reads), so every cell
becomes its own work unit and a notebook's cells are spread over workers and kernels. This plugin uses xdist's
public ``pytest_xdist_make_scheduler`` hook instead, with the scope rule of xdist's own ``--dist loadfile``
changed from "same path" to "same file name".
"""
from __future__ import annotations

import pytest
from xdist.scheduler import LoadScopeScheduling


def scope_of(nodeid: str) -> str:
    """The work unit of a test: its file's name (``/tmp/x/03_a.ipynb::Cell 4`` -> ``03_a.ipynb``)."""
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


class SameFileNameScheduling(LoadScopeScheduling):
    """xdist's load-scope scheduler, with tests grouped by the name of their file (whatever its folder)."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    return SameFileNameScheduling(config, log)
