# The two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.bayesfair-installed

.PHONY: demo test test-fast bench lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,fast,dask]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bayesfair demo --out report.html

test: $(STAMP)
	$(PY) -m pytest -q

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/run.py

lint: $(STAMP)
	$(VENV)/bin/ruff check bayesfair tests benchmarks
	$(VENV)/bin/ruff format --check bayesfair tests benchmarks

clean:
	rm -rf $(VENV) report.html .pytest_cache build *.egg-info
