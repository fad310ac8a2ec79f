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
  rate-limit windows, partitions and latency spikes, full disks, key revocations and crashes
  as explicit events on workers;
* :func:`fault_mixes`: background fault *rates*: per-call probabilities, rate-limit
  windows per day, disk fills, key revocations and crashes per worker per day, quotas;
* :func:`fault_specs`: one fault of either style;
* :func:`fleets`, :func:`templates`, :func:`workloads` (explicit arrivals) and
  :func:`scenarios`: small worlds that simulate in milliseconds.

The strategies cover every fault kind (:data:`ALL_KINDS`, read from the kinds' table; each
kind's fields are drawn from its model by :mod:`fleetchaos.testing.kind_strategies`, so a new
kind is drawn with no code here).  :func:`scenarios` draws all of them; the fault strategies
draw the kinds their arguments let them place (a push conflict names tools, an overload a
provider: pass ``tools=`` and ``providers=``).  Installing fleetchaos also registers them with
hypothesis (through its ``hypothesis`` entry point), so ``st.from_type(FleetSpec)``,
``st.from_type(NetworkBlip)`` (any kind's model) or ``st.from_type(Scenario)`` draw the same
small, valid models.
"""

from __future__ import annotations


def _hypothesis_setup_hook() -> None:
    """Register fleetchaos's strategies for its model types (called by hypothesis at import).

    Defined before this module imports hypothesis, and resolving the strategies only when
    a type is first drawn, so it works whichever of the two modules is imported first.
    """
    import hypothesis.strategies as st_

    from fleetchaos.scenario.load import Scenario as _Scenario
    from fleetchaos.sim import config, kinds
    from fleetchaos.sim.fault_specs import FAULT_MODELS

    def kind_of(kind: str):
        # the default workload's tools and a provider named "api": a model of any kind, valid on its own
        return lambda _type: fault_specs(kinds=(kind,), tools=DEFAULT_TOOLS, providers=("api",))

    st_.register_type_strategy(config.FleetSpec, lambda _type: fleets())
    st_.register_type_strategy(config.Window, lambda _type: time_windows(min_size=1, max_size=1).map(lambda w: w[0]))
    st_.register_type_strategy(config.NodeEvent, lambda _type: node_events(min_size=1, max_size=1).map(lambda e: e[0]))
    st_.register_type_strategy(config.StepSpec, lambda _type: steps())
    st_.register_type_strategy(config.TemplateSpec, lambda _type: templates(max_templates=1).map(lambda ts: ts[0]))
    st_.register_type_strategy(config.WorkloadSpec, lambda _type: workloads())
    for kind, model in FAULT_MODELS.items():
        if kinds.KINDS[kind].stage != kinds.CONVERSATION:  # a conversation kind emerges: its model is never valid
            st_.register_type_strategy(model, kind_of(kind))
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
    Distribution,
    FleetSpec,
    ModelSpec,
    NodeEvent,
    ProviderSpec,
    StepSpec,
    TemplateSpec,
    Window,
    WorkloadSpec,
)
from fleetchaos.testing import kind_strategies as _kinds  # noqa: E402
from fleetchaos.testing.kind_strategies import ALL_KINDS, REPORTED_KINDS, Place, kind_strategy, styles  # noqa: E402

__all__ = [
    "ALL_KINDS",
    "CORE_KINDS",
    "DEFAULT_TOOLS",
    "REPORTED_KINDS",
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

#: The five core kinds of the simulator (the strategies draw every kind, :data:`ALL_KINDS`; pass
#: ``kinds=CORE_KINDS`` to keep to these).
CORE_KINDS: tuple[str, ...] = ("network_blip", "timeout", "rate_limit", "disk_full", "expired_key")

#: The tools of the default workload's templates (what a fault may name in a world that keeps them).
DEFAULT_TOOLS: tuple[str, ...] = tuple(sorted({s.tool for t in DEFAULT_TEMPLATES for s in t.steps}))

#: Defaults for strategies drawn without a fleet or horizon (e.g. through ``st.from_type``).
DEFAULT_WORKERS = 10
DEFAULT_HORIZON_S = DAY_S

Style = Literal["any", "schedule", "mix"]


def _check_kinds(kinds: Sequence[str] | None, place: Place, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """The kinds to draw, each in a style it allows among ``allowed``.

    ``None`` is every kind this place allows.  Of given kinds, those that never take these
    styles are left out (a quota is never placed in time, a partition never a rate); none left,
    an unknown kind, or a kind that needs a name the place lacks (a tool, a provider) is an error.
    """
    if kinds is None:
        return tuple(k for k in ALL_KINDS if any(_kinds.drawable(k, place, s) for s in allowed if s in styles(k)))
    kinds = tuple(kinds)
    if not kinds:
        raise InvalidArgument("kinds: give at least one fault kind")
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown:
        raise InvalidArgument(f"kinds: unknown fault kind {unknown[0]!r} (kinds: {', '.join(ALL_KINDS)})")
    fitting = tuple(k for k in kinds if any(s in styles(k) for s in allowed))
    if not fitting:
        ways = "; ".join(f"{k} as {' or '.join(styles(k))}" for k in kinds)
        raise InvalidArgument(f"kinds: none of them can be drawn as a {' or '.join(allowed)} (they can be: {ways})")
    for kind in fitting:
        for style in allowed:
            if style in styles(kind):
                kind_strategy(kind, place, style)  # raises InvalidArgument naming what the place lacks
    return fitting


def _check_world(workers: int, horizon_s: float) -> None:
    if not isinstance(workers, int) or workers < 1:
        raise InvalidArgument(f"workers: must be a whole number >= 1, got {workers!r}")
    if not horizon_s > 0:
        raise InvalidArgument(f"horizon_s: must be > 0, got {horizon_s!r}")


# -- time and place -------------------------------------------------------------------


def time_windows(
    horizon_s: float = DEFAULT_HORIZON_S, *, min_size: int = 0, max_size: int = 3
) -> st.SearchStrategy[list[Window]]:
    """Lists of windows, each starting and ending inside ``[0, horizon_s]``."""
    _check_world(1, horizon_s)
    return _kinds.time_windows(horizon_s, min_size=min_size, max_size=max_size)


def node_events(
    workers: int = DEFAULT_WORKERS, horizon_s: float = DEFAULT_HORIZON_S, *, min_size: int = 0, max_size: int = 3
) -> st.SearchStrategy[list[NodeEvent]]:
    """Lists of events on existing workers (``0..workers-1``) at instants inside the horizon."""
    _check_world(workers, horizon_s)
    return _kinds.node_events(workers, horizon_s, min_size=min_size, max_size=max_size)


def worker_subsets(workers: int = DEFAULT_WORKERS) -> st.SearchStrategy[list[int] | None]:
    """A fault's ``workers`` field: None (every worker) or a sorted, non-empty set of indices."""
    _check_world(workers, 1.0)
    return _kinds.worker_subsets(workers)


# -- faults ---------------------------------------------------------------------------


def _place(
    workers: int,
    horizon_s: float,
    orchestrators: int,
    tools: Sequence[str] | None,
    templates: Sequence[str] | None,
    providers: Sequence[str],
) -> Place:
    _check_world(workers, horizon_s)
    if not isinstance(orchestrators, int) or orchestrators < 1:
        raise InvalidArgument(f"orchestrators: must be a whole number >= 1, got {orchestrators!r}")
    return Place(workers, horizon_s, orchestrators, tuple(tools or ()), tuple(templates or ()), tuple(providers))


def fault_specs(
    *,
    workers: int = DEFAULT_WORKERS,
    horizon_s: float = DEFAULT_HORIZON_S,
    kinds: Sequence[str] | None = None,
    style: Style = "any",
    orchestrators: int = 1,
    tools: Sequence[str] | None = None,
    templates: Sequence[str] | None = None,
    providers: Sequence[str] = (),
) -> st.SearchStrategy:
    """One fault of one of ``kinds`` (default: every kind this place allows), valid for a fleet of
    ``workers`` (and ``orchestrators``) over ``horizon_s``.

    ``style="schedule"`` places it in time (windows, events), ``style="mix"`` gives it as a
    rate (probability, events per day) or always on; ``"any"`` draws either, as the kind allows.
    ``tools``, ``templates`` and ``providers`` are the names the world has: a fault may
    restrict itself to them, and the kinds that must name one (a push conflict's tools, an
    overload's provider) are drawn only when they are given.
    """
    if style not in ("any", "schedule", "mix"):
        raise InvalidArgument(f"style: expected 'any', 'schedule' or 'mix', got {style!r}")
    place = _place(workers, horizon_s, orchestrators, tools, templates, providers)
    allowed = ("schedule", "mix") if style == "any" else (style,)
    parts = [
        kind_strategy(kind, place, s)
        for kind in _check_kinds(kinds, place, allowed)
        for s in allowed
        if s in styles(kind) and _kinds.drawable(kind, place, s)
    ]
    return st.one_of(parts)


def fault_schedules(
    *,
    workers: int = DEFAULT_WORKERS,
    horizon_s: float = DEFAULT_HORIZON_S,
    kinds: Sequence[str] | None = None,
    min_faults: int = 0,
    max_faults: int = 4,
    orchestrators: int = 1,
    tools: Sequence[str] | None = None,
    templates: Sequence[str] | None = None,
    providers: Sequence[str] = (),
) -> st.SearchStrategy[list]:
    """Lists of faults placed in time: windows of per-call faults, rate cuts, partitions, spikes and
    overloads, node events (default: every kind that can be placed in time here; see :func:`fault_specs`).

    Shrinks towards fewer faults, fewer windows and events, and earlier, shorter windows.
    """
    one = fault_specs(
        workers=workers,
        horizon_s=horizon_s,
        kinds=kinds,
        style="schedule",
        orchestrators=orchestrators,
        tools=tools,
        templates=templates,
        providers=providers,
    )
    return st.lists(one, min_size=min_faults, max_size=max_faults)


@st.composite
def _mix(draw: st.DrawFn, place: Place, kinds: tuple[str, ...]) -> list:
    chosen = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=len(kinds), unique=True))
    return [draw(kind_strategy(kind, place, "mix")) for kind in kinds if kind in chosen]


def fault_mixes(
    *,
    workers: int = DEFAULT_WORKERS,
    horizon_s: float = DEFAULT_HORIZON_S,
    kinds: Sequence[str] | None = None,
    orchestrators: int = 1,
    tools: Sequence[str] | None = None,
    templates: Sequence[str] | None = None,
    providers: Sequence[str] = (),
) -> st.SearchStrategy[list]:
    """Background fault rates like a production day's: one fault per kind of a non-empty subset of ``kinds``
    (default: every kind that can be always on or a rate here; see :func:`fault_specs`), in their order."""
    place = _place(workers, horizon_s, orchestrators, tools, templates, providers)
    chosen = _check_kinds(kinds, place, ("mix",))
    return _mix(place, tuple(k for k in chosen if _kinds.drawable(k, place, "mix")))


# -- fleets and workloads -------------------------------------------------------------


def fleets(*, min_workers: int = 1, max_workers: int = 4) -> st.SearchStrategy[FleetSpec]:
    """Small fleets: 1-2 orchestrators, a few workers and tool slots, any latency and API rate.

    Credentials sometimes expire on their own within minutes, the API token bucket is
    sometimes small enough for rate limits to emerge from load, the orchestrator
    misreads failed dispatches as successes with any ``misread_probability`` (often 0),
    and the model's context window is sometimes small and its tool outputs heavy-tailed
    enough for context overflow to emerge.
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
        model=st.just(ModelSpec())
        | st.builds(
            ModelSpec, context_window_tokens=st.integers(2000, 200_000), result_tokens_sigma=st.floats(0.0, 3.0)
        ),
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


#: What any drawn world offers a fault: a worker, an orchestrator, a tool and a template, and the
#: provider :func:`scenarios` declares when a fault names it.
_ANY_WORLD = Place(workers=1, horizon_s=60.0, orchestrators=1, tools=("tool",), templates=("task",), providers=("api",))


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
    place = Place(
        workers=fleet.workers,
        horizon_s=horizon,
        orchestrators=fleet.orchestrators,
        tools=tuple(sorted({s.tool for t in workload.templates for s in t.steps})),
        templates=tuple(t.name for t in workload.templates),
        providers=("api",),
    )
    # The kinds first, then only their strategies: a draw builds a few strategies, not one per kind.
    timed = [k for k in kinds if "schedule" in styles(k)]
    chosen = draw(st.lists(st.sampled_from(timed), max_size=max_faults)) if timed else []
    faults = [draw(kind_strategy(kind, place, "schedule")) for kind in chosen]
    rates = tuple(k for k in kinds if "mix" in styles(k))
    if rates and (not timed or draw(st.booleans())):
        faults += draw(_mix(place, rates))
    if any(getattr(f, "provider", None) for f in faults):  # an overload slows a provider the fleet declares
        api = draw(st.builds(ProviderSpec, name=st.just("api"), max_in_flight=st.integers(1, 20)))
        fleet = fleet.model_copy(update={"providers": [api]})
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
    kinds: Sequence[str] | None = None,
    max_faults: int = 4,
) -> st.SearchStrategy[Scenario]:
    """Small scenarios that simulate in milliseconds: a fleet, explicit tasks, scheduled faults
    and sometimes a background fault mix, all consistent with the fleet and the horizon.

    ``kinds`` defaults to every fault kind (:data:`ALL_KINDS`); a fault that names a provider
    comes with the provider declared in the fleet.
    """
    kinds = _check_kinds(ALL_KINDS if kinds is None else kinds, _ANY_WORLD, ("schedule", "mix"))
    if not 0 < min_horizon_s <= max_horizon_s:
        raise InvalidArgument(f"need 0 < min_horizon_s <= max_horizon_s, got {min_horizon_s}, {max_horizon_s}")
    return _scenario(max_workers, max_tasks, min_horizon_s, max_horizon_s, kinds, max_faults)
