"""Sweeps of the reporting assumptions from the command line: misread factors and wrong envelopes."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli


def test_cli_sweeps_the_structured_formats_misread_factor(cli, small, tmp_path):
    """--param fleet.misread_factor.structured sweeps the structured arm's misread chance; the report states it."""
    result = cli(
        "sweep", "--scenario", small, "--param", "fleet.misread_factor.structured=0,4",
        "--policies", "blind-retry", "--errors", "generic,structured", "--seeds", "2", "--jobs", "1",
        "--metric", "misreads", "--json", "--no-history",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["grid"] == {"fleet.misread_factor.structured": [0.0, 4.0]}
    by = {(e["errors"], e["params"]["fleet.misread_factor.structured"]): e for e in doc["entries"]}
    assert by[("structured", 0.0)]["misread_probability"] == 0.0
    assert by[("structured", 4.0)]["misread_probability"] == pytest.approx(0.2)  # 0.05 x 4
    assert by[("structured", 0.0)]["metrics"]["misreads"] == 0.0
    assert by[("structured", 4.0)]["metrics"]["misreads"] > 0
    # the generic arm reads its own factor: the sweep leaves it alone
    assert by[("generic", 0.0)]["per_seed"]["misreads"] == by[("generic", 4.0)]["per_seed"]["misreads"]
    assert by[("generic", 0.0)]["misread_probability"] == pytest.approx(0.05)
