"""Wasted retries grouped into the families users reason about."""

from __future__ import annotations

from fleetchaos.results.metrics import WASTE_FAMILIES, compute_run
from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario
from fleetchaos.sim.kinds import KINDS

#: The reason each kind's record gives a wasted retry after it.
WASTE_REASONS = {name: kind.waste.reason for name, kind in KINDS.items() if kind.waste is not None}


def test_every_recorded_reason_has_a_family():
    """Each reason the driver can record maps to one of the six families."""
    assert set(WASTE_REASONS.values()) == set(WASTE_FAMILIES)
    assert set(WASTE_FAMILIES.values()) == {
        "retried a permanent error",
        "while still rate limited",
        "on the same exhausted resource",
        "into the same transient fault",
        "retried a deterministic denial",
        "into the same malformed model output",
    }


def test_families_add_up_to_the_wasted_retries_of_a_run():
    """On a scenario with many kinds of waste, the family counts sum to wasted_retries and match the reasons."""
    result = run_one(load_scenario("mixed_production_day"), "blind-retry", "generic", 1)
    families = result.breakdowns["wasted_retries_by_family"]
    reasons = result.breakdowns["wasted_retries_by_reason"]
    assert len(families) >= 2  # the scenario wastes retries in more than one way
    assert sum(families.values()) == sum(reasons.values()) == result.metrics["wasted_retries"]
    for family, count in families.items():
        assert count == sum(n for reason, n in reasons.items() if WASTE_FAMILIES[reason] == family)


#: The families as docs/metrics.md (``wasted_retries``) states them, written out by hand so
#: that a swap in fleetchaos.results.metrics.WASTE_FAMILIES cannot pass by being read back.
DOCUMENTED_FAMILIES = {
    # "a permanent error not addressed"
    "credentials still expired": "retried a permanent error",
    "tool still missing": "retried a permanent error",
    "input still invalid": "retried a permanent error",
    "access still denied": "retried a permanent error",
    "same missing source": "retried a permanent error",
    "same failing batch items": "retried a permanent error",
    "the context is still past the model's window": "retried a permanent error",
    # "the fleet's API token bucket still empty (whatever instant a retry-after hint named)"
    "API token bucket still empty": "while still rate limited",
    # "the same full disk, the same exhausted daily quota (before its reset), a worker still
    # down or still cut off (the same exhausted resource)"
    "same full disk": "on the same exhausted resource",
    "same exhausted quota": "on the same exhausted resource",
    "worker still down": "on the same exhausted resource",
    "still partitioned": "on the same exhausted resource",
    # "the retried call's own keyed draws meet the same blip, timeout or spike again"
    "blip drawn again": "into the same transient fault",
    "timed out again": "into the same transient fault",
    "still too slow in the spike": "into the same transient fault",
    "the stream is cut again": "into the same transient fault",
    # "the model's deterministic denials: the same request refused or filtered again"
    "the model refuses the same request again": "retried a deterministic denial",
    "the filter stops the same request again": "retried a deterministic denial",
    # "the model's malformed output again: a length stop, bad arguments, a missing tool, a repeated id, an empty turn"
    "the call is cut at the same length again": "into the same malformed model output",
    "the model emits malformed arguments again": "into the same malformed model output",
    "the model names a missing tool again": "into the same malformed model output",
    "the model repeats a tool-call id again": "into the same malformed model output",
    "the model answers empty again": "into the same malformed model output",
}


def test_each_documented_reason_falls_in_the_family_docs_metrics_md_gives_it():
    """The reason -> family table matches docs/metrics.md entry by entry (a literal, not the code's table)."""
    for reason, family in DOCUMENTED_FAMILIES.items():
        assert WASTE_FAMILIES[reason] == family, reason
    # and each documented reason is one the driver really records, under the fault kind the doc implies
    assert {
        WASTE_REASONS[k]
        for k in (
            "expired_key",
            "missing_dependency",
            "validation_error",
            "permission_denied",
            "not_found",
            "partial_batch",
            "context_overflow",
        )
    } == {r for r, f in DOCUMENTED_FAMILIES.items() if f == "retried a permanent error"}
    assert WASTE_REASONS["rate_limit"] == "API token bucket still empty"
    assert {WASTE_REASONS[k] for k in ("network_blip", "timeout", "latency_spike", "stream_cut")} == {
        r for r, f in DOCUMENTED_FAMILIES.items() if f == "into the same transient fault"
    }
    assert {WASTE_REASONS[k] for k in ("refusal", "content_filter")} == {
        r for r, f in DOCUMENTED_FAMILIES.items() if f == "retried a deterministic denial"
    }
    assert {
        WASTE_REASONS[k]
        for k in ("truncated_call", "malformed_args", "unknown_tool", "duplicate_call_id", "empty_turn")
    } == {r for r, f in DOCUMENTED_FAMILIES.items() if f == "into the same malformed model output"}
    assert {WASTE_REASONS[k] for k in ("disk_full", "quota_exhausted", "node_crash", "network_partition")} == {
        r for r, f in DOCUMENTED_FAMILIES.items() if f == "on the same exhausted resource"
    }


def _plan_push(sim):
    return {"job": [sim.step("plan", 10), sim.step("push", 5, side_effect="append")]}


def _families(r, scn) -> dict[str, int]:
    """The run's wasted_retries_by_family as the runner computes it (compute_run over the whole output)."""
    _, breakdowns, _ = compute_run(r.output, scn.fleet)
    assert breakdowns["wasted_retries_by_reason"] == r.breakdowns["wasted_retries_by_reason"]
    return breakdowns["wasted_retries_by_family"]


def test_an_expired_key_retried_blindly_is_a_retried_permanent_error(sim):
    """Hand-built world: an expired key, 3 blind retries -> the breakdown is {"retried a permanent error": 3}."""
    scn = sim.scenario(
        _plan_push(sim),
        faults=[{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}],
        credential_refresh_s=20.0,
    )
    r = sim.run(scn, "blind-retry", "generic")
    assert r.breakdowns["wasted_retries_by_reason"] == {"credentials still expired": 3}
    assert _families(r, scn) == {"retried a permanent error": 3}


def test_retries_inside_a_rate_limit_window_are_while_still_rate_limited(sim):
    """Hand-built world: blind retries while the token bucket is still empty -> {"while still rate limited": 3}."""
    scn = sim.scenario(
        _plan_push(sim),
        faults=[{"kind": "rate_limit", "capacity_factor": 0.01, "windows": [{"start_s": 0, "duration_s": 1000}]}],
        api_rate_per_s=1.0,
        api_burst=1,
    )
    r = sim.run(scn, "blind-retry", "generic")
    assert _families(r, scn) == {"while still rate limited": 3}


def test_retries_onto_a_crashed_worker_are_on_the_same_exhausted_resource(sim):
    """Hand-built world: w0 crashes at 5 s, blind retries go back to it while down -> {"on the same exhausted resource": 3}."""
    scn = sim.scenario(
        _plan_push(sim),
        faults=[{"kind": "node_crash", "events": [{"worker": 0, "at_s": 5.0}], "down_s": 100}],
        workers=2,
        heartbeat_timeout_s=60,
    )
    r = sim.run(scn, "blind-retry", "generic")
    assert r.breakdowns["wasted_retries_by_reason"] == {"worker still down": 3}
    assert _families(r, scn) == {"on the same exhausted resource": 3}
