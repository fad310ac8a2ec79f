"""Shared fixtures of the trace tests: one exported run of the default scenario."""

from __future__ import annotations

import pytest

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario
from fleetchaos.traces.otlp_write import write_run_traces


@pytest.fixture(scope="session")
def export_run():
    """:func:`export` for tests (a fixture: importing ``conftest`` by name picks whichever folder's loaded first)."""
    return export


def export(tmp_path, scenario, policy: str, errors: str, seed: int, name: str = "run.otlp.jsonl"):
    """Run ``scenario`` traced, write its OTLP JSON; (result, world output, path)."""
    path = tmp_path / name
    kept = {}

    def hand(output) -> None:
        kept["output"] = output
        write_run_traces(output, path, scenario=scenario.name, policy=policy, errors=errors, seed=seed)

    result = run_one(scenario, policy, errors, seed, trace=True, on_trace=hand)
    return result, kept["output"], path


@pytest.fixture(scope="module")
def default_export(tmp_path_factory):
    """The default scenario, backoff on generic errors, seed 3, exported: (result, output, path)."""
    return export(tmp_path_factory.mktemp("export"), load_scenario("default"), "backoff", "generic", 3)
