"""Suite-wide test set-up: the ``pytester`` fixture for the plugin tests (tests/plugin), and
the small scenario and CLI fixtures the history and sweep tests share.

``pytest_plugins`` may only be set in a top-level conftest, hence here.

Helpers several test folders share are modules of their own beside this file (e.g.
``tenacity_clock.py``), imported by name; a folder's own helpers sit in that folder
(``reliability_cli.py``, ``hostile_policies.py``).  Nothing is imported from a conftest:
several folders have one, and which owns the module name ``conftest`` depends on the order
pytest loaded them (tests/unit/test_suite_layout.py checks both rules).
"""

import multiprocessing
import os

import pytest
import yaml
from click.testing import CliRunner
from dev_install import unlinked_files

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.chart_pool import CHART_MODULES
from fleetchaos.cli.main import main

pytest_plugins = ["pytester"]

# Before the fleetchaos plugin configures this session: no run cache for its scenario runs either
# (the autouse fixture below keeps it off in each test, whatever a test before it set).
os.environ["FLEETCHAOS_CACHE"] = "off"


def pytest_configure(config):
    """Refuse to run against a development install that lacks a module of this checkout; preload the forkserver."""
    missing = unlinked_files()
    if missing:
        raise pytest.UsageError(
            f"the development install lacks {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}: "
            "run `make install` to link the files added since (a new subpackage also goes in pyproject.toml)"
        )
    # A test process runs other threads (pytest-xdist's), so the pools the commands it invokes open fork their
    # workers from a forkserver (fleetchaos.runs.executors.start_method), not from the process itself as a
    # command line's do; the server imports what the workers need once, as the command line's fork shares it,
    # instead of every worker importing the simulation and the charts again (about a second each, a few hundred
    # pools a session).  Commands run as subprocesses, tests/unit/test_executors.py's forkserver and spawn
    # workers among them, start their own workers as a user's would.
    multiprocessing.set_forkserver_preload(["fleetchaos.runs.runner", *CHART_MODULES])


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    """Path to the default scenario with a light workload (about 100 tasks a day)."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"] = "small"
    doc["workload"]["tasks_per_day"] = 100
    path = tmp_path_factory.mktemp("scenarios") / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture
def history_cli(tmp_path, monkeypatch):
    """Invoke the CLI in a temporary working directory, so the default history lands there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLEETCHAOS_HISTORY", raising=False)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture(autouse=True)
def _runs_made_afresh(monkeypatch):
    """Commands make every run afresh unless a test turns the run cache on (tests/unit/test_run_cache.py).

    A test checks the code it runs, not what an earlier test or session left in a cache
    (the cache never serves other code, but a test that patches a function would be served
    the unpatched result).
    """
    monkeypatch.setenv("FLEETCHAOS_CACHE", "off")


@pytest.fixture(autouse=True)
def _no_columns_from_the_shell(monkeypatch):
    """Tables are laid out for a pipe (160 columns) unless a test sets COLUMNS itself.

    A developer's exported COLUMNS would otherwise narrow every table the CLI tests read.
    """
    monkeypatch.delenv("COLUMNS", raising=False)
