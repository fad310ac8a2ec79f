"""Planted secrets: the raw format leaks them to the orchestrator, structured formats do not, and no file ever holds one."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.sim.sanitise import PlantedSecrets

FORMATS = "raw,structured,failure-type,subagent-result,tool-envelope,empty-success"


def _written(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_no_file_a_run_writes_holds_a_planted_secret(tmp_path):
    """compare and run reports (JSON, CSV, Markdown, HTML, PNG, history db) hold counts, never secrets."""
    history = tmp_path / "out" / "history.db"
    runner = CliRunner(env={"FLEETCHAOS_HISTORY": str(history)})
    compared = runner.invoke(
        main,
        [
            "compare",
            "--scenario",
            "field_ablation",
            "--seeds",
            "1",
            "--jobs",
            "1",
            "--policies",
            "raw-parse",
            "--errors",
            FORMATS,
            "--report",
            str(tmp_path / "out" / "compare"),
        ],
        catch_exceptions=False,
    )
    assert compared.exit_code == 0, compared.output
    ran = runner.invoke(
        main,
        [
            "run",
            "--scenario",
            "field_ablation",
            "--errors",
            "raw",
            "--seed",
            "1",
            "--policy",
            "raw-parse",
            "--report",
            str(tmp_path / "out" / "run"),
        ],
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    arms = {
        a["errors"]: a["metrics"]
        for a in json.loads((tmp_path / "out" / "compare" / "results.json").read_text())["arms"]
    }
    assert arms["raw"]["secrets_leaked"] > 0
    assert all(arms[f]["secrets_leaked"] == 0 for f in FORMATS.split(",") if f != "raw")
    secrets = [s.encode() for s in PlantedSecrets.for_run(1).all()]
    files = _written(tmp_path / "out")
    suffixes = {p.suffix for p in files}
    assert {".json", ".csv", ".md", ".html", ".db"} <= suffixes, suffixes
    for path in files:
        data = path.read_bytes()
        found = [s.decode() for s in secrets if s in data]
        assert not found, f"{path} holds planted secrets {found}"
