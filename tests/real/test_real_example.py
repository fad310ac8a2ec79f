"""The example in examples/real_agent runs offline as a team would run it, reports included."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from pathlib import Path

import patience
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "real_agent"
JUNK = shutil.ignore_patterns(".pytest_cache", "__pycache__", "out")


def test_the_real_agent_suite_passes_offline_with_its_reports(tmp_path):
    """A copy of examples/real_agent passes its three levels offline and writes every report.

    Its wall time is measured, not asserted (no timed tests): a few seconds on an idle machine (five seeds)
    (docs/real-code.md).
    """
    pytest.importorskip("openai")
    suite = tmp_path / "real_agent"
    shutil.copytree(EXAMPLE, suite, ignore=JUNK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FLEETCHAOS_"))}
    out = patience.run(
        [sys.executable, "-m", "pytest", "-q", "--fleetchaos-report", "out"],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        cpu_s=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 passed" in out.stdout
    reports = suite / "out"
    assert list(reports.glob("*/contract.md")) and list(reports.glob("*/parity-seed-1.md"))
    (run_dir,) = sorted(reports.glob("*/real-seed-1"))
    assert (run_dir / "results.json").exists() and (run_dir / "summary.md").exists()
    rows = list(csv.DictReader((run_dir / "injections.csv").open()))
    met = {(r["tool"], r["kind"]): int(r["met"]) for r in rows}
    assert met[("llm", "rate_limit")] > 0  # 429s with Retry-After, honoured by the SDK
    assert met.get(("post_note", "timeout"), 0) + met.get(("update_contact", "timeout"), 0) > 0
    assert sum(n for (tool, kind), n in met.items() if kind == "expired_key") > 0
    assert "real" in out.stdout.splitlines()[-3] or " real" in out.stdout
    results = json.loads((run_dir / "results.json").read_text())
    # the real code's retries are judged like the simulation's: those that failed again are counted, by reason
    assert results["metrics"]["policy_errors"] == 0
    assert results["metrics"]["failed_retries"] > 0
    assert sum(results["breakdowns"]["failed_retries_by_reason"].values()) == results["metrics"]["failed_retries"]
