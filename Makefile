# Two entry points a newcomer needs: `make demo` and `make test`.
# Each creates .venv with python3 and installs the project with its dev and dask extras first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all check bench install clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,dask]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/fleetchaos compare --scenario default --seeds 10 --report fleetchaos-out/demo

# Lint, layout and types first: a failure here fails `make test` (and CI) before the suite runs.
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/typecheck.py

test: check
	$(BIN)/python -m pytest -q -m "not slow" -n 2

test-all: check
	$(BIN)/python -m pytest -q -n 2

# Speed and memory figures next to their targets (see docs/performance.md); takes a few minutes.
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) fleetchaos-out .pytest_cache .hypothesis
