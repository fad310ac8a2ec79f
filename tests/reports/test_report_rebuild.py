"""`fleetchaos report` rebuilds sweep and ablation folders too: the same files, byte for byte, from their JSON."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def cli(history_cli):
    """The CLI in a temporary working directory (see tests/conftest.py)."""
    return history_cli


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_sweep_report_is_rebuilt_from_its_results(cli, small, tmp_path):
    """report sweep/results.json -o DIR writes every file of the sweep's report with the same bytes."""
    first = tmp_path / "sweep"
    made = cli("sweep", "--scenario", small, "--param", "faults[0].probability=0,0.3", "--policies", "structured",
               "--errors", "generic", "--seeds", "2", "--jobs", "1", "--no-history", "--report", str(first))  # fmt: skip
    assert made.exit_code == 0, made.stderr
    rebuilt = tmp_path / "rebuilt"
    result = cli("report", str(first / "results.json"), "-o", str(rebuilt))
    assert result.exit_code == 0, result.stderr
    original = _files(first)
    assert "results.json" in original and any(name.endswith(".png") for name in original)
    assert _files(rebuilt) == original
    again = tmp_path / "from_folder"
    assert cli("report", str(first), "-o", str(again)).exit_code == 0  # the folder stands for its results.json
    assert _files(again) == original


def test_an_ablation_report_is_rebuilt_from_its_json(cli, small, tmp_path):
    """report ablation.json -o DIR writes ablation.json, ablation.md and ablation.png with the same bytes."""
    first = tmp_path / "ablation"
    made = cli("ablation", "--scenario", small, "--seeds", "2", "--jobs", "1", "--report", str(first))
    assert made.exit_code == 0, made.stderr
    rebuilt = tmp_path / "rebuilt"
    result = cli("report", str(first / "ablation.json"), "-o", str(rebuilt))
    assert result.exit_code == 0, result.stderr
    original = _files(first)
    assert set(original) == {"ablation.json", "ablation.md", "ablation.png"}
    assert _files(rebuilt) == original
    assert cli("report", str(first), "-o", str(tmp_path / "again")).exit_code == 0
    assert _files(tmp_path / "again") == original


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["steps"][0].pop("metrics"), "steps[0].metrics: must be a mapping"),
        (lambda d: d["steps"][1]["ci"].update(success_rate=[0.1]), "steps[1].ci.success_rate: must be [low, high]"),
        (lambda d: d.update(seeds="1,2"), "seeds: must be a list of whole numbers"),
    ],
    ids=["no-metrics", "short-interval", "seeds-text"],
)
def test_a_damaged_ablation_json_is_one_message(cli, tmp_path, change, message):
    """A damaged ablation.json: exit 2 naming the file and the field, no traceback, nothing drawn."""
    doc = {
        "scenario": "s", "seeds": [1, 2], "policy": "p", "confidence": 0.95,
        "steps": [
            {"format": "generic", "metrics": {"success_rate": 0.5}, "ci": {"success_rate": [0.4, 0.6]}, "gain": {}},
            {"format": "ablation:failure_type", "metrics": {"success_rate": 0.6}, "ci": {"success_rate": [0.5, 0.7]},
             "gain": {"success_rate": {"mean": 0.1, "ci": [0.0, 0.2], "n": 2}}},
        ],
    }  # fmt: skip
    change(doc)
    path = tmp_path / "ablation.json"
    path.write_text(json.dumps(doc))
    result = cli("report", str(path), "-o", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "ablation.json: not a fleetchaos ablation result" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "ablation.png").exists()
