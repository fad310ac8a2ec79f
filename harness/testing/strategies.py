"""Hypothesis strategies for fleetchaos: fault schedules, fault mixes, fleets and scenarios.

Use them to write property tests of a recovery policy or an error format over many small
worlds, for example::

    from hypothesis import given, settings
    from fleetchaos import run_one
    from fleetchaos.testing.strategies import scenarios

    @settings(max_examples=50, deadline=None)
    @given(scenarios(max_workers=3, max_tasks=8))
    def test_no_silent_failures(scenario):
        result = run_one(scenario, "structured", "structured", seed=1)
        assert result.metrics["silent_failure_rate"] in (0.0, None)

Every strategy builds validated models, so anything it draws is a world the simulator
accepts.  Times stay inside the horizon and worker indices inside the fleet.

* :func:`fault_schedules`: faults placed in time: per-call faults active inside windows,
  rate-limit windows, full disks and key revocations as explicit events on workers;
* :func:`fault_mixes`: background fault *rates*: per-call probabilities, rate-limit
  windows per day, disk fills and key revocations per worker per day;
* :func:`fault_specs`: one fault of either style;
* :func:`fleets`, :func:`templates`, :func:`workloads` (explicit arrivals) and
  :func:`scenarios`: small worlds that simulate in milliseconds.

The strategies cover the five core fault kinds (:data:`CORE_KINDS`).  Installing
fleetchaos also registers them with hypothesis (through its ``hypothesis`` entry point),
so ``st.from_type(FleetSpec)``, ``st.from_type(NetworkBlip)`` or ``st.from_type(Scenario)``
draw the same small, valid models.
"""

from __future__ import annotations


def _hypothesis_setup_hook() -> None:
    """Register fleetchaos's strategies for its model types (called by hypothesis at import).

    Defined before this module imports hypothesis, and resolving the strategies only when
    a type is first drawn, so it works whichever of the two modules is imported first.
    """
    import hypothesis.strategies as st_

    from fleetchaos.scenario.load import Scenario as _Scenario
    from fleetchaos.sim import config

    def kind_of(kind: str):
        return lambda _type: fault_specs(kinds=(kind,))

    st_.register_type_strategy(config.FleetSpec, lambda _type: fleets())
    st_.register_type_strategy(config.Window, lambda _type: _window(DEFAULT_HORIZON_S))
    st_.register_type_strategy(config.NodeEvent, lambda _type: _node_event(DEFAULT_WORKERS, DEFAULT_HORIZON_S))
    st_.register_type_strategy(config.StepSpec, lambda _type: steps())
    st_.register_type_strategy(config.TemplateSpec, lambda _type: templates(max_templates=1).map(lambda ts: ts[0]))
    st_.register_type_strategy(config.WorkloadSpec, lambda _type: workloads())
    st_.register_type_strategy(config.NetworkBlip, kind_of("network_blip"))
    st_.register_type_strategy(config.Timeout, kind_of("timeout"))
    st_.register_type_strategy(config.RateLimit, kind_of("rate_limit"))
    st_.register_type_strategy(config.DiskFull, kind_of("disk_full"))
    st_.register_type_strategy(config.ExpiredKey, kind_of("expired_key"))
    st_.register_type_strategy(config.WorldSpec, lambda _type: scenarios())
    st_.register_type_strategy(_Scenario, lambda _type: scenarios())


from collections.abc import Sequence  # noqa: E402
from typing import Literal  # noqa: E402

from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import InvalidArgument  # noqa: E402

from fleetchaos.scenario.load import Scenario  # noqa: E402
from fleetchaos.sim.config import (  # noqa: E402
    DAY_S,
    DEFAULT_TEMPLATES,
    Arrival,
    DiskFull,
    Distribution,
    ExpiredKey,
    FleetSpec,
    NetworkBlip,
    NodeEvent,
    RateLimit,
    StepSpec,
    TemplateSpec,
    Timeout,
    Window,
    WorkloadSpec,
)

__all__ = [
    "CORE_KINDS",
    "fault_mixes",
    "fault_schedules",
    "fault_specs",
    "fleets",
    "node_events",
    "scenarios",
    "steps",
    "templates",
    "time_windows",
    "worker_subsets",
    "workloads",
]

#: The fault kinds these strategies draw: the five core kinds of the simulator.
CORE_KINDS: tuple[str, ...] = ("network_blip", "timeout", "rate_limit", "disk_full", "expired_key")

#: Defaults for strategies drawn without a fleet or horizon (e.g. through ``st.from_type``).
DEFAULT_WORKERS = 10
DEFAULT_HORIZON_S = DAY_S

Style = Literal["any", "schedule", "mix"]


def _check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    kinds = tuple(kinds)
    if not kinds:
        raise InvalidArgument("kinds: give at least one fault kind")
    unknown = [k for k in kinds if k not in CORE_KINDS]
    if unknown:
        raise InvalidArgument(
            f"kinds: no strategy for {', '.join(map(repr, unknown))} (strategies cover {', '.join(CORE_KINDS)})"
        )
    return kinds


def _check_world(workers: int, horizon_s: float) -> None:
    if not isinstance(workers, int) or workers < 1:
        raise InvalidArgument(f"workers: must be a whole number >= 1, got {workers!r}")
    if not horizon_s > 0:
        raise InvalidArgument(f"horizon_s: must be > 0, got {horizon_s!r}")


def _probability() -> st.SearchStrategy[float]:
    return st.floats(0.0, 1.0)


# -- time and place -------------------------------------------------------------------


@st.composite
def _window(draw: st.DrawFn, horizon_s: float) -> Window:
    start = draw(st.floats(0.0, horizon_s, exclude_max=True))
    room = horizon_s - start
    duration = draw(st.floats(min(1.0, room), room))
    return Window(start_s=start, duration_s=duration)


def time_windows(
    horizon_s: float = DEFAULT_HORIZON_S, *, min_size: int = 0, max_size: int = 3
) -> st.SearchStrategy[list[Window]]:
    """Lists of windows, each starting and ending inside ``[0, horizon_s]``."""
    _check_world(1, horizon_s)
    return st.lists(_window(horizon_s), min_size=min_size, max_size=max_size)


def _node_event(workers: int, horizon_s: float) -> st.SearchStrategy[NodeEvent]:
    return st.builds(NodeEvent, worker=st.integers(0, workers - 1), at_s=st.floats(0.0, horizon_s, exclude_max=True))


def node_events(
    workers: int = DEFAULT_WORKERS, horizon_s: float = DEFAULT_HORIZON_S, *, min_size: int = 0, max_size: int = 3
) -> st.SearchStrategy[list[NodeEvent]]:
    """Lists of events on existing workers (``0..workers-1``) at instants inside the horizon."""
    _check_world(workers, horizon_s)
    return st.lists(_node_event(workers, horizon_s), min_size=min_size, max_size=max_size)


def worker_subsets(workers: int = DEFAULT_WORKERS) -> st.SearchStrategy[list[int] | None]:
    """A fault's ``workers`` field: None (every worker) or a sorted, non-empty set of indices."""
    _check_world(workers, 1.0)
    return st.none() | st.lists(st.integers(0, workers - 1), min_size=1, max_size=workers, unique=True).map(sorted)


# -- faults ---------------------------------------------------------------------------


def _scheduled(kind: str, workers: int, horizon_s: float) -> st.SearchStrategy:
    """A fault of ``kind`` placed in time: active inside windows, or at explicit events."""
    wins = time_windows(horizon_s, min_size=1, max_size=3)
    if kind == "network_blip":
        return st.builds(NetworkBlip, probability=_probability(), windows=wins, workers=worker_subsets(workers))
    if kind == "timeout":
        return st.builds(
            Timeout,
            probability=_probability(),
            committed_probability=_probability(),
            timeout_s=st.floats(0.5, 300.0),
            windows=wins,
            workers=worker_subsets(workers),
        )
    if kind == "rate_limit":
        return st.builds(RateLimit, capacity_factor=_probability(), windows=wins)
    events = node_events(workers, horizon_s, min_size=1, max_size=3)
    if kind == "disk_full":
        return st.builds(DiskFull, events=events, cleanup_after_s=st.floats(1.0, max(1.0, horizon_s)))
    return st.builds(ExpiredKey, events=events)


def _background(kind: str, workers: int, horizon_s: float) -> st.SearchStrategy:
    """A fault of ``kind`` as a rate: a per-call probability, or events per day drawn per seed."""
    # Zero, or a rate a scenario would state (at least one event per hundred days).
    per_day = st.just(0.0) | st.floats(0.01, 100.0)
    if kind == "network_blip":
        return st.builds(NetworkBlip, probability=_probability(), workers=worker_subsets(workers))
    if kind == "timeout":
        return st.builds(
            Timeout,
            probability=_probability(),
            committed_probability=_probability(),
            timeout_s=st.floats(0.5, 300.0),
            workers=worker_subsets(workers),
        )
    if kind == "rate_limit":
        return st.builds(
            RateLimit, capacity_factor=_probability(), per_day=per_day, window_s=st.floats(1.0, max(1.0, horizon_s))
        )
    if kind == "disk_full":
        return st.builds(
            DiskFull,
            per_worker_per_day=per_day,
            cleanup_after_s=st.floats(1.0, max(1.0, horizon_s)),
            workers=worker_subsets(workers),
        )
    return st.builds(ExpiredKey, per_worker_per_day=per_day, workers=worker_subsets(workers))


def fault_specs(
    *,
    workers: int = DEFAULT_WORKERS,
    horizon_s: float = DEFAULT_HORIZON_S,
    kinds: Sequence[str] = CORE_KINDS,
    style: Style = "any",
) -> st.SearchStrategy:
    """One fault of one of ``kinds``, valid for a fleet of ``workers`` over ``horizon_s``.

    ``style="schedule"`` places it in time (windows, events), ``style="mix"`` gives it as a
    rate (probability, events per day); ``"any"`` draws either.
    """
    kinds = _check_kinds(kinds)
    _check_world(workers, horizon_s)
    if style not in ("any", "schedule", "mix"):
        raise InvalidArgument(f"style: expected 'any', 'schedule' or 'mix', got {style!r}")
    parts = []
    for kind in kinds:
        if style in ("any", "schedule"):
            parts.append(_scheduled(kind, workers, horizon_s))
        if style in ("any", "mix"):
            parts.append(_background(kind, workers, horizon_s))
    return st.one_of(parts)


def fault_schedules(
    *,
    workers: int = DEFAULT_WORKERS,
    horizon_s: float = DEFAULT_HORIZON_S,
    kinds: Sequence[str] = CORE_KINDS,
    min_faults: int = 0,
    max_faults: int = 4,
) -> st.SearchStrategy[list]:
    """Lists of faults placed in time: windows of per-call faults and rate cuts, node events.

    Shrinks towards fewer faults, fewer windows and events, and earlier, shorter windows.
    """
    return st.lists(
        fault_specs(workers=workers, horizon_s=horizon_s, kinds=kinds, style="schedule"),
        min_size=min_faults,
        max_size=max_faults,
    )


@st.composite
def _mix(draw: st.DrawFn, workers: int, horizon_s: float, kinds: tuple[str, ...]) -> list:
    chosen = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=len(kinds), unique=True))
    return [draw(_background(kind, workers, horizon_s)) for kind in kinds if kind in chosen]


def fault_mixes(
    *, workers: int = DEFAULT_WORKERS, horizon_s: float = DEFAULT_HORIZON_S, kinds: Sequence[str] = CORE_KINDS
) -> st.SearchStrategy[list]:
    """Background fault rates like a production day's: one fault per kind of a non-empty subset of ``kinds``."""
    kinds = _check_kinds(kinds)
    _check_world(workers, horizon_s)
    return _mix(workers, horizon_s, kinds)


# -- fleets and workloads -------------------------------------------------------------


def fleets(*, min_workers: int = 1, max_workers: int = 4) -> st.SearchStrategy[FleetSpec]:
    """Small fleets: 1-2 orchestrators, a few workers and tool slots, any latency and API rate.

    Credentials sometimes expire on their own within minutes, the API token bucket is
    sometimes small enough for rate limits to emerge from load, and the orchestrator
    misreads failed dispatches as successes with any ``misread_probability`` (often 0).
    """
    if not 1 <= min_workers <= max_workers:
        raise InvalidArgument(f"need 1 <= min_workers <= max_workers, got {min_workers}, {max_workers}")
    return st.builds(
        FleetSpec,
        orchestrators=st.integers(1, 2),
        workers=st.integers(min_workers, max_workers),
        tool_slots=st.integers(1, 3),
        credential_lifetime_s=st.just(7 * DAY_S) | st.floats(60.0, 7 * DAY_S),
        credential_refresh_s=st.floats(0.0, 60.0),
        network_latency=st.builds(Distribution, mean_s=st.floats(0.01, 1.0), cv=st.floats(0.0, 1.0)),
        api_rate_per_s=st.floats(0.01, 100.0),
        api_burst=st.floats(1.0, 100.0),
        dispatch=st.sampled_from(["round_robin", "least_loaded"]),
        misread_probability=st.just(0.0) | st.floats(0.0, 1.0),
    )


def steps(*, tool: str | None = None) -> st.SearchStrategy[StepSpec]:
    """One tool step: a short duration, a small fan-out, maybe API use, disk writes and side effects."""
    return st.builds(
        StepSpec,
        tool=st.just(tool) if tool is not None else st.sampled_from(["fetch", "edit", "search", "write", "push"]),
        duration=st.builds(Distribution, mean_s=st.floats(0.1, 60.0), cv=st.floats(0.0, 1.0)),
        fan_out=st.integers(1, 4),
        uses_api=st.booleans(),
        disk_mb=st.just(0.0) | st.floats(1.0, 100.0),
        side_effect=st.sampled_from(["none", "idempotent", "append"]),
        tokens=st.integers(0, 5000),
    )


@st.composite
def _custom_templates(draw: st.DrawFn, max_templates: int, max_steps: int) -> list[TemplateSpec]:
    count = draw(st.integers(1, max_templates))
    out = []
    for i in range(count):
        n = draw(st.integers(1, max_steps))
        out.append(
            TemplateSpec(
                name=f"task{i}",
                weight=draw(st.floats(0.1, 10.0)),
                steps=[draw(steps(tool=f"step{j}")) for j in range(n)],
            )
        )
    return out


def templates(
    *, max_templates: int = 3, max_steps: int = 4, builtin: bool = True
) -> st.SearchStrategy[list[TemplateSpec]]:
    """Task templates: the built-in coding/research/CRM templates, or small generated ones."""
    if max_templates < 1 or max_steps < 1:
        raise InvalidArgument("max_templates and max_steps must be >= 1")
    custom = _custom_templates(max_templates, max_steps)
    return (st.just(list(DEFAULT_TEMPLATES)) | custom) if builtin else custom


@st.composite
def _workload(draw: st.DrawFn, horizon_s: float, min_tasks: int, max_tasks: int, builtin: bool) -> WorkloadSpec:
    tpl = draw(templates(builtin=builtin))
    names = [t.name for t in tpl]
    arrivals = draw(
        st.lists(
            st.builds(Arrival, at_s=st.floats(0.0, horizon_s, exclude_max=True), template=st.sampled_from(names)),
            min_size=min_tasks,
            max_size=max_tasks,
        )
    )
    return WorkloadSpec(templates=tpl, arrivals=arrivals)


def workloads(
    *, horizon_s: float = DEFAULT_HORIZON_S, min_tasks: int = 1, max_tasks: int = 10, builtin_templates: bool = True
) -> st.SearchStrategy[WorkloadSpec]:
    """Workloads of explicitly placed tasks (``arrivals``) inside the horizon."""
    _check_world(1, horizon_s)
    if not 0 <= min_tasks <= max_tasks:
        raise InvalidArgument(f"need 0 <= min_tasks <= max_tasks, got {min_tasks}, {max_tasks}")
    return _workload(horizon_s, min_tasks, max_tasks, builtin_templates)


# -- whole scenarios ------------------------------------------------------------------


@st.composite
def _scenario(
    draw: st.DrawFn,
    max_workers: int,
    max_tasks: int,
    min_horizon_s: float,
    max_horizon_s: float,
    kinds: tuple[str, ...],
    max_faults: int,
) -> Scenario:
    horizon = draw(st.floats(min_horizon_s, max_horizon_s))
    fleet = draw(fleets(max_workers=max_workers))
    workload = draw(workloads(horizon_s=horizon, max_tasks=max_tasks))
    faults = draw(fault_schedules(workers=fleet.workers, horizon_s=horizon, kinds=kinds, max_faults=max_faults))
    if draw(st.booleans()):
        faults += draw(fault_mixes(workers=fleet.workers, horizon_s=horizon, kinds=kinds))
    return Scenario(
        name="generated",
        description="a small world drawn by fleetchaos.testing.strategies.scenarios",
        duration_s=horizon,
        fleet=fleet,
        workload=workload,
        faults=faults,
    )


def scenarios(
    *,
    max_workers: int = 3,
    max_tasks: int = 10,
    min_horizon_s: float = 60.0,
    max_horizon_s: float = 3600.0,
    kinds: Sequence[str] = CORE_KINDS,
    max_faults: int = 4,
) -> st.SearchStrategy[Scenario]:
    """Small scenarios that simulate in milliseconds: a fleet, explicit tasks, scheduled faults
    and sometimes a background fault mix, all consistent with the fleet and the horizon."""
    kinds = _check_kinds(kinds)
    if not 0 < min_horizon_s <= max_horizon_s:
        raise InvalidArgument(f"need 0 < min_horizon_s <= max_horizon_s, got {min_horizon_s}, {max_horizon_s}")
    return _scenario(max_workers, max_tasks, min_horizon_s, max_horizon_s, kinds, max_faults)
