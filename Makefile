# The two commands a new user needs: `make demo` and `make test`.
#
# Two stacks are supported and tested:
#   default: $(PYTHON) (python3, 3.11 on the project's machines), which pip resolves to PyMC 5 /
#            ArviZ 0.2x (PyMC 6 and ArviZ 1 need Python 3.12+), in .venv;
#   next:    the newest PyMC / ArviZ on Python 3.12+ (PyMC 6 / ArviZ 1.x), in .venv-next, with
#            $(PYTHON_NEXT): the first Python 3.12 or 3.13 under pyenv, else on PATH.
# `make demo` uses the default stack; `make test` tests both (see test-next).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.bayesfair-installed

PYENV_VERSIONS := $(shell pyenv root 2>/dev/null)/versions
PYTHON_NEXT ?= $(firstword $(wildcard $(PYENV_VERSIONS)/3.12*/bin/python3.12 \
                   $(PYENV_VERSIONS)/3.13*/bin/python3.13) $(shell command -v python3.12 python3.13 2>/dev/null))
VENV_NEXT   ?= .venv-next
PY_NEXT     := $(VENV_NEXT)/bin/python
STAMP_NEXT  := $(VENV_NEXT)/.bayesfair-installed

.PHONY: demo test environments test-default test-next test-fast bench bench-next lint docs browser-check clean

# pip byte-compiles every module it installs, and must here: with PYTHONDONTWRITEBYTECODE
# set (as on the project's machines) a module pip left uncompiled is compiled again in every
# process that imports it (import bayesfair, pymc, arviz: 3.1 s compiled, 7.5 s not)
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,fast,dask,docs]"
	touch $(STAMP)

# --upgrade-strategy eager: the newest releases the pins admit, as a new user gets them
$(STAMP_NEXT): pyproject.toml
	@test -n "$(PYTHON_NEXT)" || { echo "make: no Python 3.12+ found for the PyMC 6 / ArviZ 1 stack (set PYTHON_NEXT=/path/to/python3.12)"; exit 1; }
	test -x $(PY_NEXT) || $(PYTHON_NEXT) -m venv $(VENV_NEXT)
	$(PY_NEXT) -m pip install --quiet --upgrade pip
	$(PY_NEXT) -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[test,fast,docs]"
	touch $(STAMP_NEXT)

demo: $(STAMP)
	$(VENV)/bin/bayesfair demo --out report.html

# -n 2: the project's machines have two cores (pytest-xdist spreads the tests over both);
# --maxschedchunk 1: each worker takes the next test when it frees up, and conftest.py
# puts the slow tests first, so the short ones fill the end on both cores
test: environments
	$(MAKE) --no-print-directory test-default
	$(MAKE) --no-print-directory test-next

# both environments at once, one pip on each core (no --output-sync: make 3.81, macOS's,
# lacks it; pip runs --quiet, so little of the two outputs interleaves)
environments:
	$(MAKE) --no-print-directory -j2 $(STAMP) $(STAMP_NEXT)

test-default: $(STAMP)
	$(PY) -m pytest -q -n 2 --maxschedchunk 1

# on PyMC 6 / ArviZ 1: every test marked `bayesian`, fast and slow: the tests of the Bayesian
# models, the notebooks that use PyMC or ArviZ (in their small mode) and every other fast test
# that reaches PyMC, PyTensor or ArviZ; the other fast tests run with those blocked on the
# default stack (marker pymc_free, conftest.py), which is how the marker is kept
# complete; the stack's versions are printed first
test-next: $(STAMP_NEXT)
	$(PY_NEXT) -c "import sys, pymc, arviz, nutpie; print('next stack: Python', sys.version.split()[0], '| PyMC', pymc.__version__, '| ArviZ', arviz.__version__, '| nutpie', nutpie.__version__)"
	$(PY_NEXT) -m pytest -q -n 2 --maxschedchunk 1 -m bayesian

test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 --maxschedchunk 1 -m "not slow"

bench: $(STAMP) bench-next
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/run.py

# the Bayesian timings on PyMC 6 / ArviZ 1, to set beside the default stack's
bench-next: $(STAMP_NEXT)
	$(PY_NEXT) benchmarks/run.py hlr

docs: $(STAMP)
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "documentation: docs/_build/html/index.html"

lint: $(STAMP)
	$(VENV)/bin/ruff check bayesfair tests benchmarks docs scripts conftest.py
	$(VENV)/bin/ruff format --check bayesfair tests benchmarks docs scripts conftest.py

# the demo's report in headless Chromium at 1,400 x 900: Answers above the fold, no table
# wider than the page (installs Debian's chromium when it is missing)
browser-check: $(STAMP)
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(VENV)/bin/bayesfair demo --out report.html
	$(PY) scripts/check_report_in_browser.py report.html

clean:
	rm -rf $(VENV) $(VENV_NEXT) report.html .pytest_cache build *.egg-info docs/_build docs/generated
