# The two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.bayesfair-installed

.PHONY: demo test test-fast bench lint docs browser-check clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,fast,dask,docs]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bayesfair demo --out report.html

# -n 2: the project's machines have two cores (pytest-xdist spreads the tests over both)
test: $(STAMP)
	$(PY) -m pytest -q -n 2

test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not slow"

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/run.py

docs: $(STAMP)
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "documentation: docs/_build/html/index.html"

lint: $(STAMP)
	$(VENV)/bin/ruff check bayesfair tests benchmarks docs scripts
	$(VENV)/bin/ruff format --check bayesfair tests benchmarks docs scripts

# the demo's report in headless Chromium at 1,400 x 900: Answers above the fold, no table
# wider than the page (installs Debian's chromium when it is missing)
browser-check: $(STAMP)
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(VENV)/bin/bayesfair demo --out report.html
	$(PY) scripts/check_report_in_browser.py report.html

clean:
	rm -rf $(VENV) report.html .pytest_cache build *.egg-info docs/_build docs/generated
