"""The round trip: simulate a catalogue scenario, export its traces, calibrate, simulate again, compare.

Tolerances are sampling error, not fudge.  The two runs are independent samples (the
calibrated run uses another seed), so a per-call share p measured over n1 and n2 calls
may differ by chance with standard error sqrt(p(1-p)(1/n1 + 1/n2)); a duration quantile
q_p may move within the first run's quantiles at p +- that error in probability (a
distribution-free bound); a task-level rate differs within the same binomial error over
tasks.  Every check allows Z = 4 standard errors: a correct calibration fails one check
by chance about once in 16,000.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from fleetchaos.calibrate.roundtrip import measure_run, round_trip
from fleetchaos.scenario.load import load_scenario

Z = 4.0


def _share_ok(k1: int, n1: int, k2: int, n2: int) -> tuple[bool, str]:
    p = (k1 + k2) / (n1 + n2)
    se = math.sqrt(max(p * (1 - p), 1e-12) * (1 / n1 + 1 / n2))
    return abs(k1 / n1 - k2 / n2) <= Z * se, f"{k1}/{n1} vs {k2}/{n2} (tolerance {Z * se:.4f})"


def _quantile_ok(first: tuple[int, float, float], second: tuple[int, float, float], sample) -> bool:
    n1, _, _ = first
    n2, q50, q95 = second
    for p, q in ((0.5, q50), (0.95, q95)):
        width = Z * math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
        low, high = np.quantile(sample, [max(0.0, p - width), min(1.0, p + width)])
        if not low <= q <= high:
            return False
    return True


def _check(rt, kinds: tuple[str, ...], tasks_metrics: tuple[str, ...], tools: set[str] | None = None) -> list[str]:
    """What did not come back; ``tools`` limits the duration checks to those tools (None: every tool)."""
    a, b = rt.first, rt.second
    problems = []
    for kind in kinds:
        ok, text = _share_ok(a.kind_counts.get(kind, 0), a.calls, b.kind_counts.get(kind, 0), b.calls)
        if not ok:
            problems.append(f"{kind}: {text}")
    calls = rt.calibration.calls
    for tool, first in a.quantiles.items():
        if tools is not None and tool not in tools:
            continue
        t = calls.tools.index(tool)
        sample = calls.duration[(calls.tool == t) & (calls.kind == -1)]
        if tool not in b.quantiles or not _quantile_ok(first, b.quantiles[tool], sample):
            problems.append(f"{tool}: quantiles {first} vs {b.quantiles.get(tool)}")
    for metric in tasks_metrics:
        x, y = a.metrics[metric], b.metrics[metric]
        ok, text = _share_ok(round(x * a.tasks), a.tasks, round(y * b.tasks), b.tasks)
        if not ok:
            problems.append(f"{metric}: {x} vs {y}: {text}")
    return problems


def test_round_trip_crm_sync_403():
    """crm_sync_403 (a 403 window on 3 of 5 parallel writes): kinds' shares, duration quantiles and silent failures come back."""
    rt = round_trip(load_scenario("crm_sync_403"), "backoff", "generic", 1, second_seed=2)
    assert not _check(rt, ("permission_denied", "validation_error", "network_blip"), ("silent_failure_rate",))
    # The window was found by change-point detection, on the right items, where the scenario put it.
    [window] = [f for f in rt.calibration.document["faults"] if f["kind"] == "permission_denied" and "windows" in f]
    assert window["items"] == [2, 3, 4]
    assert window["probability"] > 0.95
    assert abs(window["windows"][0]["start_s"] - 36_000) <= 600
    assert abs(window["windows"][0]["duration_s"] - 14_400) <= 1200
    assert rt.first.metrics["silent_failure_rate"] > 0.15  # the silent failures the window causes under generic errors


#: The model's own faults (fleetchaos.sim.kinds_model): the catalogue scenarios that declare them.
MODEL_KINDS = (
    "refusal",
    "content_filter",
    "truncated_call",
    "malformed_args",
    "unknown_tool",
    "duplicate_call_id",
    "empty_turn",
    "stream_cut",
)


def test_round_trip_of_the_models_own_faults():
    """malformed_calls with a refusal, a content filter and stream cuts added: each model-side kind's share of calls
    comes back from the traces, mapped by its wire code and fitted from its record (keyed per task and step, or
    drawn per call), and a cut stream's duration is its cut's."""
    base = load_scenario("malformed_calls")
    doc = base.model_dump(mode="json")
    doc["faults"] += [
        {"kind": "refusal", "tools": ["label_issue"], "probability": 0.05},
        {"kind": "content_filter", "tools": ["label_issue"], "probability": 0.03},
        {"kind": "stream_cut", "probability": 0.03, "timeout_s": 20},
    ]
    rt = round_trip(type(base).model_validate(doc), "blind-retry", "generic", 1, second_seed=2)
    assert set(MODEL_KINDS) <= set(rt.first.kind_counts), rt.first.kind_counts
    assert not _check(rt, MODEL_KINDS, ("silent_failure_rate",))
    fitted = {f["kind"]: f for f in rt.calibration.document["faults"]}
    assert set(MODEL_KINDS) <= set(fitted)
    assert fitted["truncated_call"]["tools"] == ["assign_owner"]  # a per-tool rate: the other tools never met it
    assert fitted["stream_cut"]["timeout_s"] == pytest.approx(20, abs=0.5)


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "errors"), [("backoff", "generic"), ("structured", "structured")])
def test_round_trip_default_day(policy, errors):
    """The default day (blips, timeouts, rate-limit cuts, full disks, expired keys, a provider of two servers holding
    twelve calls): per-call kinds, the provider and durations come back.

    The provider is fitted from the calls' arrivals and answers (docs/calibration.md): two servers, twelve calls
    held, refusing the rest, as the scenario declares it.  Only the tools it does not serve have their durations
    checked to sampling error: the services of the ones it does are reconstructed from the traced queue.

    Kinds whose failures cluster (a rate-limit cut, a key that stays expired, a full disk, the provider's 503s at
    the peak) are not binomial over calls; they are held to the spread the original scenario itself shows across
    ten other seeds, and so are the recovery and silent-failure rates, to three standard deviations of that
    seed-to-seed spread around its mean.
    """
    scenario = load_scenario("default")
    rt = round_trip(scenario, policy, errors, 1, second_seed=2)
    unqueued = {s.tool for t in scenario.workload.templates for s in t.steps if not s.uses_api}
    assert unqueued == {"run_tests"}  # every API call goes through the provider
    assert not _check(rt, ("network_blip", "timeout"), (), tools=unqueued)
    assert rt.calibration.document["fleet"]["providers"] == [
        {"name": "provider", "servers": 2, "max_in_flight": 12, "admission": "refuse"}
    ]
    spread = [measure_run(scenario, policy, errors, s) for s in range(2, 12)]
    for kind in ("overloaded", "rate_limit", "expired_key", "disk_full"):
        shares = [side.kind_counts.get(kind, 0) / side.calls for side in spread]
        second = rt.second.kind_counts.get(kind, 0) / rt.second.calls
        assert min(shares) <= second <= max(shares), (kind, second, shares)
    for metric in ("recovery_rate", "silent_failure_rate"):
        values = [side.metrics[metric] for side in spread]
        mean, sd = statistics.fmean(values), statistics.stdev(values)
        assert abs(rt.second.metrics[metric] - mean) <= 3 * sd, (metric, rt.second.metrics[metric], values)


@pytest.mark.slow
def test_every_catalogue_scenario_calibrates_into_a_scenario_that_runs():
    """Each catalogue scenario's exported day calibrates into a scenario that validates and runs."""
    import fleetchaos.catalogue as catalogue

    for name in catalogue.names():
        rt = round_trip(load_scenario(name), "backoff", "generic", 1)
        assert rt.second.calls > 0, name


@pytest.mark.parametrize(
    ("partial_batch", "policy"), [("ok", "blind-retry"), ("failed", "blind-retry"), ("failed", "structured")]
)
def test_calibration_reads_how_tools_reported_partial_batches(partial_batch, policy):
    """research_fanout at 100 tasks a day: when the search tool says ok with the sources it reached, the synthesis
    follows the partly failed search in the traces; when it reports the failure, the search is run again (from
    the start on generic errors, resuming on structured ones).  The calibrated scenario says which."""
    base = load_scenario("research_fanout")
    doc = base.model_dump(mode="json")
    doc["workload"]["tasks_per_day"] = 100
    doc["fleet"]["partial_batch"] = partial_batch
    errors = "structured" if policy == "structured" else "generic"
    rt = round_trip(type(base).model_validate(doc), policy, errors, 1)
    assert rt.calibration.document["fleet"]["partial_batch"] == partial_batch
