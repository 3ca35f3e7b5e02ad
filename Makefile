# The course's two commands: `make lab` (learners) and `make test` (CI). Both set everything up from nothing.
SHELL := /bin/bash
# The interpreter that makes .venv: python3.11 if it is on PATH (MindSpore 2.10 runs on CPython 3.11 only), else
# python3; `make install PYTHON=/path/to/python3.11` picks another. tools/check_python.sh refuses a wrong one.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
NBVAL := --nbval-lax --nbval-current-env --nbval-cell-timeout=900 --nbval-sanitize-with=nbval_sanitize.cfg

# Set PIP_OPTS="--no-index --find-links=wheelhouse" to install from a folder made by `make wheelhouse`.
PIP_OPTS ?=

.PHONY: fast-conv fast-conv-bench install lab lab-student test unit check lint notebooks data clean browser-deps student instructor \
	student-bundle site wheelhouse zh lab-zh

$(STAMP): requirements.txt requirements-torch.txt constraints.txt pyproject.toml
	@if test -x $(PY); then sh tools/check_python.sh $(PY); \
	  else sh tools/check_python.sh "$(PYTHON)" && $(PYTHON) -m venv $(VENV); fi
	$(PY) -m pip install --disable-pip-version-check -q $(PIP_OPTS) -r requirements.txt -r requirements-torch.txt -c constraints.txt
	$(PY) -m pip install --disable-pip-version-check -q $(PIP_OPTS) --no-deps -e .
	@touch $(STAMP)

install: $(STAMP)

# `make lab`: the full course (notebooks/, solutions included); `make lab-student`: the student edition, rebuilt
# from notebooks/ first (build/student/: no solutions, no outputs), keeping every notebook the learner changed.
# LAB_DIR=<folder> opens another folder.
LAB_DIR ?= notebooks
LAB_ARGS ?=
lab: install
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --notebook-dir=$(LAB_DIR) $(LAB_ARGS)

lab-student: install
	$(PY) tools/make_editions.py student --keep-edits
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --notebook-dir=build/student $(LAB_ARGS)

# The Chinese edition (中文版, tools/translate.py): `make zh` writes notebooks/zh/ from the English notebooks and the
# catalogs i18n/zh/*.yaml (code and outputs copied, prose translated); it fails naming every missing or stale
# translation. `make lab-zh` brings notebooks/zh/ up to date, keeping every notebook the learner ran or edited,
# then opens it; a kernel started there prints the exercise checks in Chinese.
zh: install
	$(PY) tools/translate.py build

lab-zh: install
	$(PY) tools/translate.py build --keep-edits
	COURSE_LANG=zh $(VENV)/bin/jupyter lab --ip=127.0.0.1 --notebook-dir=notebooks/zh $(LAB_ARGS)

# The unit tests run on UNIT_WORKERS pytest-xdist workers, a whole test file per worker (--dist loadfile keeps each
# file's order, which tests/test_recipes.py relies on): 332 s serial vs 273 s on 2 workers, measured side by side.
UNIT_WORKERS ?= 2
UNIT := -n $(UNIT_WORKERS) --dist loadfile

# Unit tests, then every notebook twice with nbval: from notebooks/, then a copy from a temporary folder, which
# proves that leftovers of the first run don't break a second one and that no lesson depends on its cwd. Both copies
# of a lesson run back to back on one of NBVAL_WORKERS pytest-xdist workers (tools/nbval_groups.py), different
# lessons side by side: 303 s against 489 s for the two serial sessions, measured one after the other on 2 cores
# (benchmarks/nbval_schedules.py, benchmarks/nbval_schedules.md). The copies live under build/: pytest 9 gives a
# file outside the rootdir a node id without its path, and the scheduler must tell the two copies apart.
NBVAL_WORKERS ?= 2
test: install browser-deps lint
	$(PY) -m pytest $(UNIT) tests
	@mkdir -p build && rerun=$$(mktemp -d "$$PWD/build/nbval-second-run.XXXXXX") && cp $(NOTEBOOKS) $$rerun/ && \
	  echo "every notebook twice: notebooks/, then the copy in $${rerun#$$PWD/}" && \
	  PYTHONPATH=tools $(PY) -m pytest -p nbval_groups -n $(NBVAL_WORKERS) -p no:cacheprovider $(NBVAL) \
	    $(NOTEBOOKS) $$rerun/*.ipynb; status=$$?; rm -rf $$rerun; exit $$status

unit: install
	$(PY) -m pytest $(UNIT) tests

# ruff (pycodestyle, pyflakes, bugbear, pyupgrade) over the code and the notebooks, codespell over everything:
# configured in pyproject.toml.
lint: install
	$(VENV)/bin/ruff check
	$(VENV)/bin/codespell

# A quick developer loop: the unit tests, then nbval over the notebooks changed against `main` (every notebook
# if course_lib, data, pins or nbval settings changed). CHECK_BASE=<branch or commit> compares with another base.
CHECK_BASE ?= main
check: install
	$(PY) -m pytest $(UNIT) tests
	@changed=$$($(PY) tools/changed_notebooks.py $(CHECK_BASE)) || exit 1; \
	  if [ -z "$$changed" ]; then echo "no notebook changed against $(CHECK_BASE)"; \
	  else $(PY) -m pytest $(NBVAL) $$changed; fi

# Benchmarks (benchmarks/README.md). `bench`: MindSpore (graph, @ms.jit, PyNative) vs PyTorch (defaults, PASSIVE,
# AVX2-capped), oneDNN ISA, SGEMM roofline, import time, pipelines, compile time, inference in one run (goal < 10 min
# on 2 cores; run it on an idle machine); `bench-notebooks`: every lesson's run time (a run of its own), merged into
# the same benchmarks/results.json; `bench-quick`: smoke run of the same structure (2-4 min). `bench` then runs
# `fast-conv-bench` (appendix A8's FastConv2d vs nn.Conv2d vs PyTorch) and re-renders results.md with it.
.PHONY: bench bench-notebooks bench-quick bench-host-blocking
bench: install
	$(PY) benchmarks/run.py
	$(MAKE) fast-conv-bench
	$(PY) benchmarks/run.py --render-only

bench-notebooks: install
	$(PY) benchmarks/run.py --notebooks

bench-quick: install
	$(PY) benchmarks/run.py --quick --out outputs/bench-quick

# MS_DEV_HOST_BLOCKING_RUN=1 on/off, in graph mode and under @ms.jit, interleaved (about 2-4 min on 2 cores).
bench-host-blocking: install
	$(PY) benchmarks/host_blocking.py --out outputs/host_blocking.json

# The opt-in custom convolution of appendix A8 (course_lib.fast_conv): compile its C++ kernels now (else on first
# use; cached by source hash in outputs/fast_conv/), and measure it against nn.Conv2d and PyTorch.
fast-conv: install
	$(PY) -c "from course_lib.fast_conv import build; print(build(verbose=True))"

fast-conv-bench: fast-conv
	$(PY) benchmarks/fast_conv_bench.py

notebooks: install
	$(PY) tools/execute_notebook.py $(NOTEBOOKS)

data: install
	$(PY) -m course_lib.datagen

# Debian's Chromium for the JupyterLab browser test (Playwright drives it; it never downloads a browser), and
# Debian's Noto CJK fonts: without a CJK font every Chinese character (zh edition, glossary terms) is an empty box.
browser-deps:
	@missing=""; command -v chromium >/dev/null || missing="chromium"; \
	  fc-list :lang=zh family 2>/dev/null | grep -q . || missing="$$missing fonts-noto-cjk"; \
	  if [ -z "$$missing" ]; then :; \
	  elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's $$missing for tests/test_jupyterlab_browser.py and the Chinese edition"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "not installed and not installable here (needs root and apt-get): $$missing." \
	    "Without chromium the browser test is skipped; without a CJK font Chinese text shows as empty boxes" \
	    "(Debian/Ubuntu: sudo apt-get install fonts-noto-cjk)"; fi

# Editions (tools/make_editions.py): the student one has solution cells, outputs and nbval markers removed; the
# instructor one is complete. student-bundle: build/course-student/, the course for learners' laptops (USB stick):
# no solutions/ and no tests/, notebooks/ = the student edition, plus wheelhouse/ when it exists.
student: install
	$(PY) tools/make_editions.py student

instructor: install
	$(PY) tools/make_editions.py instructor

student-bundle: install
	$(PY) tools/make_editions.py bundle

# The executed notebooks as a static HTML site with navigation and search: build/site/index.html
site: install
	$(PY) tools/build_site.py

# Every pinned wheel in one folder, for a classroom without internet (see docs/WORKSHOP.md).
wheelhouse:
	$(PYTHON) -m pip download --disable-pip-version-check -d wheelhouse -r requirements.txt \
	  -r requirements-torch.txt -c constraints.txt "setuptools>=68"

clean:
	rm -rf outputs build .pytest_cache
