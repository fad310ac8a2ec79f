"""The public hypothesis strategies draw valid, small worlds and are registered with hypothesis."""

from __future__ import annotations

import json
import sys

import patience
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fleetchaos.scenario.load import Scenario
from fleetchaos.sim.config import FleetSpec
from fleetchaos.sim.fault_specs import FAULT_MODELS
from fleetchaos.testing.strategies import (
    ALL_KINDS,
    DEFAULT_TOOLS,
    fault_mixes,
    fault_schedules,
    fault_specs,
    fleets,
    scenarios,
)

FAST = settings(max_examples=30, deadline=None)


def _times(fault) -> list[tuple[float, float]]:
    """(start, end) of every window and (at, at) of every event of a fault."""
    spans = [(w.start_s, w.start_s + w.duration_s) for w in getattr(fault, "windows", [])]
    spans += [(e.at_s, e.at_s) for e in getattr(fault, "events", [])]
    return spans


@FAST
@given(data=st.data(), workers=st.integers(1, 6), horizon=st.floats(1.0, 5000.0))
def test_fault_schedules_stay_inside_the_fleet_and_the_horizon(data, workers, horizon):
    """Every window and event of a drawn schedule lies in [0, horizon] and names an existing worker."""
    faults = data.draw(fault_schedules(workers=workers, horizon_s=horizon, max_faults=5))
    for fault in faults:
        assert _times(fault), "a scheduled fault is placed in time"
        for start, end in _times(fault):
            assert 0.0 <= start <= end <= horizon + 1e-9 * horizon
        for w in (getattr(fault, "workers", None) or []) + [e.worker for e in getattr(fault, "events", [])]:
            assert 0 <= w < workers


@FAST
@given(data=st.data(), workers=st.integers(1, 6))
def test_fault_mixes_are_rates_with_one_fault_per_kind(data, workers):
    """A mix has no windows or events, and at most one fault of each kind, in catalogue order."""
    mix = data.draw(fault_mixes(workers=workers, horizon_s=3600.0))
    kinds = [f.kind for f in mix]
    assert kinds and len(set(kinds)) == len(kinds)
    assert kinds == sorted(kinds, key=ALL_KINDS.index)
    assert all(not _times(f) for f in mix)


@FAST
@given(fleets(max_workers=3))
def test_fleets_are_small(fleet):
    """A drawn fleet has 1-3 workers and 1-2 orchestrators."""
    assert 1 <= fleet.workers <= 3 and 1 <= fleet.orchestrators <= 2


@FAST
@given(scenarios(max_workers=2, max_tasks=5, max_horizon_s=600.0))
def test_scenarios_validate_and_respect_their_bounds(scenario):
    """A drawn scenario survives a JSON round trip through the validator and stays within its bounds."""
    assert Scenario.model_validate_json(scenario.model_dump_json()) == scenario
    assert scenario.fleet.workers <= 2 and 60.0 <= scenario.duration_s <= 600.0
    assert 1 <= len(scenario.workload.arrivals) <= 5


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_fault_specs_can_be_restricted_to_one_kind(kind):
    """fault_specs(kinds=(k,)) draws only faults of kind k, for every kind of the table."""

    @FAST
    @given(fault_specs(kinds=(kind,), workers=3, horizon_s=100.0, tools=DEFAULT_TOOLS, providers=("api",)))
    def check(fault):
        assert isinstance(fault, FAULT_MODELS[kind])

    check()


def test_unknown_kinds_and_bad_bounds_are_rejected():
    """Strategies name the kinds they know, say what a kind needs from the world, and refuse impossible fleets."""
    with pytest.raises(InvalidArgument, match="unknown fault kind 'node_crush'"):
        fault_specs(kinds=("node_crush",))
    with pytest.raises(InvalidArgument, match="no strategy for the field 'provider' of 'overloaded'"):
        fault_specs(kinds=("overloaded",))  # no provider named: the world has none
    with pytest.raises(InvalidArgument, match="none of them can be drawn as a schedule .*quota_exhausted as mix"):
        fault_schedules(kinds=("quota_exhausted",))
    with pytest.raises(InvalidArgument, match="none of them can be drawn as a mix .*network_partition as schedule"):
        fault_mixes(kinds=("network_partition",))
    with pytest.raises(InvalidArgument, match="workers: must be a whole number >= 1"):
        fault_schedules(workers=0)
    with pytest.raises(InvalidArgument, match="min_horizon_s <= max_horizon_s"):
        scenarios(min_horizon_s=10.0, max_horizon_s=5.0)


@pytest.mark.parametrize("cls", [FleetSpec, *(FAULT_MODELS[k] for k in ALL_KINDS), Scenario], ids=lambda c: c.__name__)
def test_from_type_uses_the_registered_strategies(cls):
    """The hypothesis entry point registers a strategy for each model: from_type draws valid instances."""

    @settings(max_examples=5, deadline=None)
    @given(st.from_type(cls))
    def check(value):
        assert isinstance(value, cls)

    check()


PROBE = """
import json, sys
{first}
from hypothesis import strategies as st
from fleetchaos.sim.config import FleetSpec
value = st.from_type(FleetSpec).example()
print(json.dumps([type(value).__name__, "fleetchaos.testing.strategies" in sys.modules]))
"""


@pytest.mark.parametrize(
    "first", ["import hypothesis", "import fleetchaos.testing.strategies", "import fleetchaos.testing.kind_strategies"]
)
def test_registration_works_whichever_module_is_imported_first(first):
    """Importing hypothesis runs the hook, and importing fleetchaos.testing.strategies first does not break it."""
    out = patience.run(
        [sys.executable, "-c", PROBE.format(first=first)], capture_output=True, text=True, check=True, cpu_s=60
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["FleetSpec", True]
