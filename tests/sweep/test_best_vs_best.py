"""Best against best: the headline layout, each format's lead over the next, the envelope's lead, the format alone.

The paired differences are checked against a hand computation (mean of the per-seed
differences, Student-t interval from SciPy), never against the code's own statistics.
"""

from __future__ import annotations

import json
import statistics

import pytest
import yaml
from click.testing import CliRunner
from scipy import stats

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.results.models import ArmResult, CompareResult
from fleetchaos.runs.best import gaps, has_envelope, headline_arms, tuning_record

BEST = {"generic": "g-best", "status": "s-best", "structured": "x-best"}
SEEDS = [1, 2, 3, 4]
SUCCESS = {  # per seed, hand-made
    ("blind-retry", "generic"): [0.70, 0.72, 0.69, 0.71],
    ("g-best", "generic"): [0.80, 0.82, 0.79, 0.81],
    ("g-best", "status"): [0.80, 0.82, 0.79, 0.81],
    ("g-best", "structured"): [0.79, 0.80, 0.78, 0.80],
    ("s-best", "status"): [0.83, 0.82, 0.80, 0.84],
    ("x-best", "structured"): [0.90, 0.89, 0.91, 0.92],
}


def _arm(policy: str, errors: str) -> ArmResult:
    values = SUCCESS[(policy, errors)]
    mean = statistics.fmean(values)
    return ArmResult(policy=policy, errors=errors, metrics={"success_rate": mean}, ci={"success_rate": [mean, mean]},
                     per_seed={"success_rate": values}, breakdowns={})  # fmt: skip


def _oracle(a: list[float], b: list[float]) -> tuple[float, float, float]:
    d = [x - y for x, y in zip(a, b)]
    mean = statistics.fmean(d)
    half = stats.t.ppf(0.975, len(d) - 1) * statistics.stdev(d) / len(d) ** 0.5
    return mean, mean - half, mean + half


def test_the_headline_layout_runs_each_best_on_its_format_and_the_first_on_every_format():
    arms = headline_arms(BEST, [("blind-retry", "generic")])
    assert arms == [
        ("blind-retry", "generic"),
        ("g-best", "generic"), ("g-best", "status"), ("g-best", "structured"),
        ("s-best", "status"),
        ("x-best", "structured"),
    ]  # fmt: skip
    # One spec winning on two formats runs once per format.
    assert headline_arms({"generic": "p", "status": "p", "structured": "q"}) == [
        ("p", "generic"), ("p", "status"), ("p", "structured"), ("q", "structured"),
    ]  # fmt: skip


def test_only_generic_status_and_raw_lack_an_envelope():
    assert [f for f in ("generic", "status", "raw", "structured", "tool-envelope") if not has_envelope(f)] == [
        "generic", "status", "raw",
    ]  # fmt: skip


def test_leads_envelope_and_format_alone_by_hand():
    result = CompareResult(scenario="w", seeds=SEEDS, confidence=0.95,
                           arms=[_arm(p, e) for p, e in headline_arms(BEST, [("blind-retry", "generic")])])  # fmt: skip
    found = {
        (g.kind, g.policy, g.errors, g.reference_policy, g.reference_errors): g
        for g in gaps(result, BEST, "success_rate")
    }
    # Ranked by mean: structured 0.905, status 0.8225, generic 0.805; each over the next.
    expected = [
        ("lead", "x-best", "structured", "s-best", "status"),
        ("lead", "s-best", "status", "g-best", "generic"),
        ("envelope", "x-best", "structured", "s-best", "status"),  # the best without an envelope is status's
        ("format", "g-best", "status", "g-best", "generic"),
        ("format", "g-best", "structured", "g-best", "generic"),
    ]
    assert list(found) == expected
    for key in expected:
        gap = found[key]
        mean, low, high = _oracle(SUCCESS[(key[1], key[2])], SUCCESS[(key[3], key[4])])
        assert gap.n == 4 and gap.mean_difference == pytest.approx(mean, abs=1e-6)
        if low == high:  # every seed the same difference
            continue
        assert gap.ci == pytest.approx([low, high], abs=1e-6)
    record = tuning_record(result, BEST, objective="success_rate", train_seeds=[9, 10], source="shipped",
                           command="fleetchaos tune --scenario w", matches_world=False)  # fmt: skip
    roles = {(r.policy, r.errors): r.role for r in record.roles}
    assert roles[("g-best", "structured")] == "same policy as best for generic"
    assert roles[("x-best", "structured")] == "best for structured"
    assert ("blind-retry", "generic") not in roles
    assert record.source == "shipped" and not record.matches_world


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> str:
    """A light default world shipping a tuned: block for its own fingerprint."""
    from fleetchaos.scenario.load import parse_scenario
    from fleetchaos.scenario.tuned import world_fingerprint

    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["workload"]["tasks_per_day"] = "light", 100
    doc["tuned"] = {
        "command": "fleetchaos tune --scenario light.yaml --errors generic,status,structured --train-seeds 2",
        "train_seeds": [1000001, 1000002],
        "world": "0" * 16,
        "policies": {"generic": "backoff(base_s=0.5)", "status": "raw-parse", "structured": "structured"},
        "references": ["blind-retry/generic"],
    }
    doc["tuned"]["world"] = world_fingerprint(parse_scenario(yaml.safe_dump(doc), "light.yaml"))
    path = tmp_path_factory.mktemp("shipped") / "light.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _compare(*args: str):
    result = CliRunner().invoke(main, ["compare", "--jobs", "1", "--no-history", "--json", *args])
    doc = json.loads(result.output[result.output.index("{") :]) if result.exit_code == 0 else None
    return result, doc


def test_the_default_comparison_of_a_world_that_ships_tuned_policies_is_best_against_best(shipped):
    """No --policies, no --errors: each format's shipped policy, the first on every format, the reference; no tuning."""
    result, doc = _compare("--scenario", shipped, "--seeds", "3")
    assert result.exit_code == 0, result.output
    arms = [(a["policy"], a["errors"]) for a in doc["arms"]]
    assert arms == [
        ("blind-retry", "generic"),
        ("backoff(base_s=0.5)", "generic"), ("backoff(base_s=0.5)", "status"), ("backoff(base_s=0.5)", "structured"),
        ("raw-parse", "status"),
        ("structured", "structured"),
    ]  # fmt: skip
    tuning = doc["tuning"]
    assert tuning["source"] == "shipped" and tuning["matches_world"] is True
    assert tuning["train_seeds"] == [1000001, 1000002] and "fleetchaos tune" in tuning["command"]
    kinds = [g["kind"] for g in tuning["gaps"]]
    assert kinds.count("lead") == 2 and kinds.count("envelope") == 1 and kinds.count("format") == 2
    assert "tuned for" not in result.stderr if hasattr(result, "stderr") else True


def test_shipped_policies_for_another_world_are_said_so_and_training_seeds_are_refused(shipped):
    """Another world (a --param): the default comparison is the built-in arms, and says why; --policies best runs
    the shipped policies anyway, recorded as tuned for another world."""
    result, doc = _compare("--scenario", shipped, "--seeds", "2", "--param", "fleet.checkpoints=true")
    assert result.exit_code == 0, result.output
    assert "tuning" not in doc and {a["policy"] for a in doc["arms"]} == {"blind-retry", "backoff", "structured"}
    assert "tuned for another world" in result.output and "--tune tunes best against best" in result.output
    result, doc = _compare("--scenario", shipped, "--seeds", "2", "--param", "fleet.checkpoints=true",
                           "--policies", "best", "--errors", "generic,structured")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert doc["tuning"]["source"] == "shipped" and doc["tuning"]["matches_world"] is False
    assert "tuned for another world" in result.output
    refused, _ = _compare("--scenario", shipped, "--seeds", "2", "--first-seed", "1000002")
    assert refused.exit_code == 2 and "training seeds" in refused.output


def test_the_terminal_prints_best_against_best_with_each_lead_and_the_format_alone(shipped):
    result = CliRunner().invoke(main, ["compare", "--scenario", shipped, "--seeds", "3", "--jobs", "1", "--no-history"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "best against best on success_rate, paired by seed over seeds 1-3" in out
    assert "lead over the next" in out and "the envelope's lead: best on structured minus" in out
    assert "the format alone" in out and "best-for-generic = backoff(base_s=0.5)" in out
