# Two entry points a newcomer needs: `make demo` and `make test`.
# Each creates .venv with python3 and installs the project with its dev and dask extras first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FILES := $(VENV)/.package-files

.PHONY: demo test test-all check bench install clean wheel-check FORCE

# The development install is setuptools' strict editable mode: every module of the package is a
# link in build/__editable__.*/fleetchaos to its file here, so editors, mypy and import-graph tools
# follow `fleetchaos.sim.world` to simulated_fleet/world.py without an import hook. Links are made
# file by file, so a file added or removed is linked again: $(FILES) lists the package's files and
# changes (and so re-runs the install) only when that list does.
$(STAMP): pyproject.toml Makefile $(FILES)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,dask]' --config-settings editable_mode=strict
	touch $(STAMP)

$(FILES): FORCE
	@mkdir -p $(VENV)
	@find harness simulated_fleet reports scenarios -name __pycache__ -prune -o -type f \( -name '*.py' -o -name '*.yaml' -o -name py.typed \) -print | LC_ALL=C sort > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/fleetchaos compare --scenario default --seeds 10 --report fleetchaos-out/demo

# Lint, layout and types first: a failure here fails `make test` (and CI) before the suite runs.
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The suite writes bytecode (into the checkout's __pycache__ folders, ignored by git) even where the
# environment sets PYTHONDONTWRITEBYTECODE: otherwise each xdist worker rewrites every test module and
# each command a test starts compiles the package again (a fresh clone's suite: 294 s, 264 s with it).
PYTEST = PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist worksteal

test: check
	$(PYTEST) -m "not slow"

test-all: check
	FLEETCHAOS_TEST_ALL=1 $(PYTEST)

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
	"$$tmp/venv/bin/python" -c "import fleetchaos, pathlib; assert (pathlib.Path(fleetchaos.__file__).parent / 'py.typed').is_file(), 'no py.typed'" && \
	echo "wheel-check: $$(basename "$$tmp"/dist/fleetchaos-*.whl) installs into a fresh venv with py.typed; fleetchaos --help answers"

# Speed and memory figures next to their targets (see docs/performance.md); takes a few minutes.
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) build fleetchaos-out .pytest_cache .hypothesis .mypy_cache

FORCE:
