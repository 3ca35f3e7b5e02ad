import contextlib as _contextlib
import os as _os
import sys as _sys
import tempfile as _tempfile

import pytest

import course_lib  # noqa: F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before any test imports mindspore)

# check() records every attempt (course_lib.exercises.progress); the tests' attempts go to a throw-away file,
# not the clone's.
_os.environ.setdefault("COURSE_PROGRESS_FILE",
                       _os.path.join(_tempfile.mkdtemp(prefix="course-progress-"), "exercises.jsonl"))

#: Files that take minutes on 2 cores (pytest --durations, Nov 2026), heaviest first. `--dist loadfile` hands out
#: whole files in collection order (with --no-loadscope-reorder, as `python course.py test` runs it): started first,
#: none of them is left to run alone at the end while the other worker idles. The rest keep pytest's order. A stale
#: list only costs balance, never a test.
HEAVIEST_FIRST = ("test_recipe_mutations.py", "test_recipes.py", "test_benchmarks.py", "test_distributed.py",
                  "test_site_and_editions.py", "test_scripts_msrun.py", "test_training_lenet.py",
                  "test_reproducibility.py", "test_scripts_reliability.py", "test_scripts.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: index for index, name in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # a stable sort: order inside a file is kept


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The static site (tools/build_site.py) in a folder with a space and Chinese characters, built once per test
    worker: the tests that use it only read it."""
    tools = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "tools")
    if tools not in _sys.path:
        _sys.path.insert(0, tools)
    import build_site

    return build_site.build(tmp_path_factory.mktemp("site dir 站点") / "site")


# ---------------------------------------------------------------- MindSpore's execution mode, restored afterwards
@_contextlib.contextmanager
def _mindspore_mode(name):
    import mindspore as ms  # here, not at the top: most test files never need MindSpore's import time

    previous = ms.get_context("mode")
    mode = {"pynative": ms.PYNATIVE_MODE, "graph": ms.GRAPH_MODE}[name]
    ms.set_context(mode=mode)
    try:
        yield mode
    finally:
        ms.set_context(mode=previous)


@pytest.fixture
def pynative():
    """The test runs in PyNative mode."""
    with _mindspore_mode("pynative"):
        yield


@pytest.fixture
def graph():
    """The test runs in graph mode."""
    with _mindspore_mode("graph"):
        yield


@pytest.fixture(params=["pynative", "graph"])
def mode(request):
    """The test runs twice, in PyNative then in graph mode; the fixture's value is the mode set."""
    with _mindspore_mode(request.param) as value:
        yield value
