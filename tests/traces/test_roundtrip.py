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


def _quantile_ok(first: tuple[int, float, ...], second: tuple[int, float, ...], sample) -> bool:
    n1 = first[0]
    n2, q50, _, q95 = second
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


def _figures(side) -> dict[str, float]:
    """What the default day's round trip holds: each kind's share of calls, each tool's p50 and p90, the rates."""
    shares = {k: side.kind_counts.get(k, 0) / side.calls for k in DEFAULT_KINDS}
    quantiles = {f"{tool} p{q}": side.quantiles[tool][i] for tool in side.quantiles for i, q in ((1, 50), (2, 90))}
    rates = {m: side.metrics[m] for m in ("success_rate", "recovery_rate", "silent_failure_rate")}
    return shares | quantiles | rates


#: The default day's fault kinds.
DEFAULT_KINDS = ("network_blip", "timeout", "rate_limit", "disk_full", "expired_key", "overloaded")


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "errors"), [("backoff", "generic"), ("structured", "structured")])
def test_round_trip_default_day(policy, errors):
    """The default day (blips, hangs, a 3-minute call timeout, rate-limit cuts, full disks, expired keys, a provider
    of two servers holding twelve calls): the world comes back, and so does every figure the day is judged by.

    The provider is fitted from the calls' arrivals and answers (docs/calibration.md), the call timeout from the
    timeouts that end at it, and the hangs from the ones that end at 90 s.  The figures (each kind's share of
    calls, each tool's p50 and p90, the success, recovery and silent-failure rates) of the calibrated run on
    seed 2 and of the first run on seed 1 are two runs' figures: if the fit is right they differ by seed-to-seed
    noise alone, so each difference must be within three standard errors of a difference of two runs,
    sqrt(2) times the figure's standard deviation over ten other seeds of the original scenario.
    """
    scenario = load_scenario("default")
    rt = round_trip(scenario, policy, errors, 1, second_seed=2)
    fleet = rt.calibration.document["fleet"]
    assert fleet["providers"] == [{"name": "provider", "servers": 2, "max_in_flight": 12, "admission": "refuse"}]
    assert fleet["call_timeout_s"] == 180
    [hangs] = [f for f in rt.calibration.document["faults"] if f["kind"] == "timeout"]
    assert hangs["timeout_s"] == 90 and "windows" not in hangs and "tools" not in hangs
    spread = [_figures(measure_run(scenario, policy, errors, s)) for s in range(2, 12)]
    first, second = _figures(rt.first), _figures(rt.second)
    assert set(first) == set(second) and len(first) == len(DEFAULT_KINDS) + 2 * 9 + 3
    misses = []
    for name in first:
        sd = statistics.stdev(day[name] for day in spread)
        if abs(second[name] - first[name]) > 3 * math.sqrt(2) * sd:
            misses.append(f"{name}: {first[name]:.4g} -> {second[name]:.4g} (sd over ten seeds {sd:.3g})")
    assert not misses, misses


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
