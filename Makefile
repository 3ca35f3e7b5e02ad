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

.PHONY: install lab test unit check lint notebooks data clean browser-deps student instructor site wheelhouse

$(STAMP): requirements.txt requirements-torch.txt constraints.txt pyproject.toml
	@if test -x $(PY); then sh tools/check_python.sh $(PY); \
	  else sh tools/check_python.sh "$(PYTHON)" && $(PYTHON) -m venv $(VENV); fi
	$(PY) -m pip install --disable-pip-version-check -q $(PIP_OPTS) -r requirements.txt -r requirements-torch.txt -c constraints.txt
	$(PY) -m pip install --disable-pip-version-check -q $(PIP_OPTS) --no-deps -e .
	@touch $(STAMP)

install: $(STAMP)

LAB_DIR ?= notebooks
LAB_ARGS ?=
lab: install
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --notebook-dir=$(LAB_DIR) $(LAB_ARGS)

# Unit tests, then every notebook with nbval; then every notebook again, copied to a temporary folder, which
# proves that leftovers of the first run don't break a second one and that no lesson depends on its cwd.
test: install browser-deps lint
	$(PY) -m pytest tests
	$(PY) -m pytest $(NBVAL) $(NOTEBOOKS)
	@rerun=$$(mktemp -d) && cp $(NOTEBOOKS) $$rerun/ && echo "second run, from $$rerun:" && \
	  $(PY) -m pytest -p no:cacheprovider $(NBVAL) $$rerun/*.ipynb; status=$$?; rm -rf $$rerun; exit $$status

unit: install
	$(PY) -m pytest tests

# ruff (pycodestyle, pyflakes, bugbear, pyupgrade) over the code and the notebooks, codespell over everything:
# configured in pyproject.toml.
lint: install
	$(VENV)/bin/ruff check
	$(VENV)/bin/codespell

# A quick developer loop: the unit tests, then nbval over the notebooks changed against `main` (every notebook
# if course_lib, data, pins or nbval settings changed). CHECK_BASE=<branch or commit> compares with another base.
CHECK_BASE ?= main
check: install
	$(PY) -m pytest tests
	@changed=$$($(PY) tools/changed_notebooks.py $(CHECK_BASE)) || exit 1; \
	  if [ -z "$$changed" ]; then echo "no notebook changed against $(CHECK_BASE)"; \
	  else $(PY) -m pytest $(NBVAL) $$changed; fi

# Benchmarks (benchmarks/README.md). `bench`: MindSpore vs PyTorch, graph vs PyNative, oneDNN, pipelines, compile
# time, inference in one run (< 10 min on 2 cores); `bench-notebooks`: every lesson's run time (about as long as the
# course, so a run of its own), merged into the same benchmarks/results.json; `bench-quick`: 1-2 min smoke run.
.PHONY: bench bench-notebooks bench-quick
bench: install
	$(PY) benchmarks/run.py

bench-notebooks: install
	$(PY) benchmarks/run.py --notebooks

bench-quick: install
	$(PY) benchmarks/run.py --quick --out outputs/bench-quick

notebooks: install
	$(PY) tools/execute_notebook.py $(NOTEBOOKS)

data: install
	$(PY) -m course_lib.datagen

# Debian's Chromium for the JupyterLab browser test (Playwright drives it; it never downloads a browser).
browser-deps:
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium for tests/test_jupyterlab_browser.py"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "chromium is not installed and cannot be installed here (needs root and apt-get):" \
	  "the browser test will be skipped"; fi

# Editions: the student one has outputs cleared and solution cells removed; the instructor one is complete.
student: install
	$(PY) tools/make_editions.py student

instructor: install
	$(PY) tools/make_editions.py instructor

# The executed notebooks as a static HTML site with navigation and search: build/site/index.html
site: install
	$(PY) tools/build_site.py

# Every pinned wheel in one folder, for a classroom without internet (see docs/WORKSHOP.md).
wheelhouse:
	$(PYTHON) -m pip download --disable-pip-version-check -d wheelhouse -r requirements.txt \
	  -r requirements-torch.txt -c constraints.txt "setuptools>=68"

clean:
	rm -rf outputs build .pytest_cache
