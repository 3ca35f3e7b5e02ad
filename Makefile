# The course's two commands: `make lab` (learners) and `make test` (CI). Both set everything up from nothing.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# Notebooks that write files: nbval runs them a second time to prove leftovers don't break a re-run.
RERUN_NOTEBOOKS := $(filter-out notebooks/00_% notebooks/02_%,$(NOTEBOOKS))
NBVAL := --nbval-lax --nbval-current-env --nbval-cell-timeout=900

.PHONY: install lab test unit notebooks data clean

$(STAMP): requirements.txt requirements-torch.txt constraints.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt -r requirements-torch.txt -c constraints.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e .
	@touch $(STAMP)

install: $(STAMP)

lab: install
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --notebook-dir=notebooks

test: install
	$(PY) -m pytest tests
	$(PY) -m pytest $(NBVAL) $(NOTEBOOKS)
	$(PY) -m pytest $(NBVAL) $(RERUN_NOTEBOOKS)

unit: install
	$(PY) -m pytest tests

notebooks: install
	$(PY) tools/execute_notebook.py $(NOTEBOOKS)

data: install
	$(PY) -m course_lib.datagen

clean:
	rm -rf outputs build .pytest_cache
