# Two entry points a newcomer needs: `make demo` and `make test`.
# Each creates .venv with python3 and installs the project with its dev and dask extras first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all check bench install clean wheel-check

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

# The package as a user installs it: the wheel built from this checkout (no deprecation warning in the
# build), installed with its dependencies from the package index into a fresh virtual environment, where
# `fleetchaos --help` must answer. pip's cache makes a second run take well under a minute.
wheel-check: $(STAMP)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(BIN)/python -m pip wheel -v --no-deps --wheel-dir "$$tmp/dist" . > "$$tmp/build.log" 2>&1 || { cat "$$tmp/build.log"; exit 1; }; \
	if grep -i "deprecat" "$$tmp/build.log"; then echo "wheel-check: the build printed a deprecation warning"; exit 1; fi; \
	$(PYTHON) -m venv "$$tmp/venv" && \
	"$$tmp/venv/bin/python" -m pip install --quiet "$$tmp"/dist/fleetchaos-*.whl > "$$tmp/install.log" 2>&1 || { cat "$$tmp/install.log"; exit 1; }; \
	"$$tmp/venv/bin/fleetchaos" --help > "$$tmp/help.txt" && grep -q "Chaos and fault injection" "$$tmp/help.txt" && \
	echo "wheel-check: $$(basename "$$tmp"/dist/fleetchaos-*.whl) installs into a fresh venv; fleetchaos --help answers"

# Speed and memory figures next to their targets (see docs/performance.md); takes a few minutes.
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) fleetchaos-out .pytest_cache .hypothesis
