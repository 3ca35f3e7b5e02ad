# A thin alias for those who like make: `make X` runs `python course.py X` (course.py is the front door on every OS,
# with or without make; `python course.py --help` lists the commands). Variables are passed on to course.py in the
# environment: LAB_DIR, LAB_ARGS, UNIT_WORKERS, NBVAL_WORKERS, CHECK_BASE, PIP_OPTS. `make install PYTHON=/path/to/
# python3.12` picks the interpreter (course.py --python); without it course.py finds one (README).
COMMANDS := install lab lab-student lab-zh zh test unit lint check notebooks nbval data browser-deps student instructor \
	student-bundle site wheelhouse bench bench-notebooks bench-quick bench-host-blocking fast-conv fast-conv-bench \
	clean preflight bundles
.PHONY: $(COMMANDS)
export LAB_DIR LAB_ARGS UNIT_WORKERS NBVAL_WORKERS CHECK_BASE PIP_OPTS

ifneq ($(filter command line environment,$(origin PYTHON)),)
COURSE := "$(PYTHON)" course.py --python "$(PYTHON)"
else
COURSE := $(or $(shell command -v python3 2>/dev/null),python) course.py
endif

$(COMMANDS):
	$(COURSE) $@
