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


def test_cli_sweeps_the_misclassification_probability_and_draws_the_curve(cli, tmp_path):
    """--param faults[6].misclassify=0,0.5 on imperfect_contracts: the report draws recovery falling with it."""
    out = tmp_path / "misclassify"
    result = cli(
        "sweep", "--scenario", "imperfect_contracts", "--param", "faults[6].misclassify=0,0.5",
        "--policies", "structured", "--errors", "structured", "--seeds", "3", "--jobs", "1",
        "--metric", "recovery_rate,misreported_failures", "--report", str(out), "--no-history",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "curve_recovery_rate.png").stat().st_size > 0
    assert (out / "curve_misreported_failures.png").stat().st_size > 0
    doc = json.loads((out / "results.json").read_text())
    low, high = doc["entries"]
    assert low["params"] == {"faults[6].misclassify": 0.0} and high["params"] == {"faults[6].misclassify": 0.5}
    assert high["metrics"]["recovery_rate"] < low["metrics"]["recovery_rate"]
    assert high["metrics"]["misreported_failures"] > low["metrics"]["misreported_failures"]
