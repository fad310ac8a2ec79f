"""A hypothesis strategy for every fault kind, read from the kind's model: a new kind needs no code here.

:data:`fleetchaos.sim.fault_specs.FAULT_MODELS` has one pydantic model per kind (one per
record of :data:`fleetchaos.sim.kinds.KINDS`).  Each field of a model is drawn from what it
is: windows and node events inside the horizon, worker and orchestrator indices inside the
fleet, tools, templates and providers the world has, kind names a wrong envelope may report,
numbers within the field's own bounds (seconds within the horizon), booleans, lists of
literals.  A field left out keeps its default; a required field nothing here can draw makes
:func:`kind_strategy` raise, so a kind the strategies cannot cover fails its test at once
(tests/unit/test_strategies.py) rather than being skipped.

A kind can be *scheduled* (placed in time by windows or node events) and drawn as a *rate*
(per-call probabilities and events per day, always on): :func:`styles` says which a kind
allows, from its model (required windows: only scheduled; no windows or events: only a rate).
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types

from fleetchaos.sim.fault_specs import FAULT_MODELS, NodeEvent, Window
from fleetchaos.sim.kind_record import CONVERSATION
from fleetchaos.sim.kinds import KINDS

__all__ = [
    "ALL_KINDS",
    "REPORTED_KINDS",
    "Place",
    "drawable",
    "kind_strategy",
    "node_events",
    "styles",
    "time_windows",
    "worker_subsets",
]

#: Every fault kind a scenario declares, in catalogue order.  A conversation kind (``context_overflow``) is not
#: declared: it emerges from ``fleet.model`` (the window, the tool outputs' tail), which :func:`fleetchaos.testing.strategies.fleets` draws.
ALL_KINDS: tuple[str, ...] = tuple(k for k, record in KINDS.items() if record.stage != CONVERSATION)

#: The kinds whose failures the tool reports as they are: every kind but those that mask a failure
#: (a false success, fabricated values) or misreport it (a drifted or wrong envelope).  A property
#: such as "no task is claimed done whose work did not take effect" can hold only for these.
REPORTED_KINDS: tuple[str, ...] = tuple(k for k in ALL_KINDS if KINDS[k].stage not in ("masking", "reporting"))

#: Kind names a wrong envelope may report (``failures``, ``reported_as``): those reported as a failure.
_WIRE_KINDS: tuple[str, ...] = tuple(k for k, record in KINDS.items() if record.wire is not None)

Style = Literal["schedule", "mix"]


@dataclass(frozen=True)
class Place:
    """What a drawn fault may name in the world it goes into."""

    workers: int
    horizon_s: float
    orchestrators: int = 1
    tools: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()


# -- time and place -------------------------------------------------------------------


def _window(horizon_s: float) -> st.SearchStrategy[Window]:
    def lasting(start: float) -> st.SearchStrategy[Window]:
        room = horizon_s - start
        return st.floats(min(1.0, room), room).map(lambda duration: Window(start_s=start, duration_s=duration))

    return st.floats(0.0, horizon_s, exclude_max=True).flatmap(lasting)


def time_windows(horizon_s: float, *, min_size: int = 0, max_size: int = 3) -> st.SearchStrategy[list[Window]]:
    """Lists of windows, each starting and ending inside ``[0, horizon_s]``."""
    return st.lists(_window(horizon_s), min_size=min_size, max_size=max_size)


def _node_event(workers: int, horizon_s: float) -> st.SearchStrategy[NodeEvent]:
    return st.builds(NodeEvent, worker=st.integers(0, workers - 1), at_s=st.floats(0.0, horizon_s, exclude_max=True))


def node_events(
    workers: int, horizon_s: float, *, min_size: int = 0, max_size: int = 3
) -> st.SearchStrategy[list[NodeEvent]]:
    """Lists of events on existing workers (``0..workers-1``) at instants inside the horizon."""
    return st.lists(_node_event(workers, horizon_s), min_size=min_size, max_size=max_size)


def worker_subsets(workers: int) -> st.SearchStrategy[list[int] | None]:
    """A fault's ``workers`` field: None (every worker) or a sorted, non-empty set of indices."""
    return st.none() | st.lists(st.integers(0, workers - 1), min_size=1, max_size=workers, unique=True).map(sorted)


# -- reading a model's fields ------------------------------------------------------------


def _parts(annotation: Any) -> tuple[Any, bool]:
    """(the type without None, whether None is allowed)."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), len(args) < len(get_args(annotation))
    return annotation, False


def _min_length(field) -> int:
    return max((m.min_length for m in field.metadata if isinstance(m, annotated_types.MinLen)), default=0)


def _bounds(field) -> tuple[float | None, bool, float | None, bool]:
    """(low, low is open, high, high is open) from the field's constraints."""
    low: Any = None
    high: Any = None
    low_open = high_open = False
    for m in field.metadata:
        if isinstance(m, annotated_types.Ge):
            low = m.ge
        elif isinstance(m, annotated_types.Gt):
            low, low_open = m.gt, True
        elif isinstance(m, annotated_types.Le):
            high = m.le
        elif isinstance(m, annotated_types.Lt):
            high, high_open = m.lt, True
    return low, low_open, high, high_open


def _number(name: str, field, base: type, place: Place) -> st.SearchStrategy:
    """A number within the field's bounds: small counts, seconds within the horizon."""
    low, low_open, high, high_open = _bounds(field)
    if base is int:
        first = int(low or 0) + (1 if low_open else 0)
        last = first + 100 if high is None else int(high) - (1 if high_open else 0)
        return st.integers(first, min(last, first + 100))
    start = float(low or 0.0)
    if name.endswith("_s"):  # seconds: from half a second (or the bound) to the horizon
        start = max(start, 0.5) if low_open else start
        end = max(place.horizon_s, start + 1.0)
        return st.floats(start, end if high is None else min(end, float(high)))
    end = start + 100.0 if high is None else min(float(high), start + 100.0)
    # A field that must be > 0 refuses a subnormal number (too close to zero to compute with).
    return st.floats(start, end, exclude_min=low_open, exclude_max=high_open and end == high, allow_subnormal=False)


def _subset(names: Sequence[str], optional: bool) -> st.SearchStrategy:
    some = st.lists(st.sampled_from(list(names)), min_size=1, max_size=len(names), unique=True)
    return (st.none() | some) if optional else some


def _field(kind: str, name: str, field, place: Place, style: Style) -> st.SearchStrategy | None:
    """A strategy for one field of a kind's model, or None to keep its default."""
    base, optional = _parts(field.annotation)
    origin, args = get_origin(base), get_args(base)
    if name in ("kind", "swarm"):
        return None
    if name == "windows":
        needed = _min_length(field)
        if style == "schedule" or needed:
            return time_windows(place.horizon_s, min_size=max(1, needed))
        return st.just([])
    if name == "events":
        return node_events(place.workers, place.horizon_s, min_size=1) if style == "schedule" else st.just([])
    if name.endswith("per_day") and base is float:  # a rate of events: drawn for a mix, none when scheduled
        # zero, or a rate a scenario would state (at least one event per hundred days)
        top = _bounds(field)[2]
        return (st.just(0.0) | st.floats(0.01, 100.0 if top is None else float(top))) if style == "mix" else None
    if name == "workers":
        return worker_subsets(place.workers)
    if name == "orchestrators":
        return st.lists(st.integers(0, place.orchestrators - 1), min_size=1, unique=True).map(sorted)
    if name in ("tools", "templates", "provider"):
        names = {"tools": place.tools, "templates": place.templates, "provider": place.providers}[name]
        if not names:  # the world names none: an optional field keeps None, any other cannot be drawn
            return None if optional else _missing(kind, name)
        return st.sampled_from(names) if base is str else _subset(names, optional)
    if origin is list and args == (str,):  # kind names (a wrong envelope's failures and reported_as)
        return _subset(_WIRE_KINDS, optional)
    if origin is list and get_origin(args[0] if args else None) is Literal:
        return st.lists(st.sampled_from(get_args(args[0])), min_size=_min_length(field), unique=True)
    if origin is list and args == (int,):  # item indices of a fan-out
        some = st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True).map(sorted)
        return (st.none() | some) if optional else some
    if origin is tuple and args == (float, float):  # a [low, high] factor range
        return st.floats(0.01, 10.0).flatmap(lambda lo: st.floats(lo, lo * 100.0).map(lambda hi: (lo, hi)))
    if base is bool:
        return st.booleans()
    if base in (int, float):
        return _number(name, field, base, place)
    return _missing(kind, name) if field.is_required() else None


def _missing(kind: str, name: str) -> st.SearchStrategy:
    raise InvalidArgument(
        f"kinds: no strategy for the field {name!r} of {kind!r} in this place "
        "(tools, templates and providers come from the world: pass them, or leave the kind out)"
    )


def styles(kind: str) -> tuple[Style, ...]:
    """How a kind can be drawn: placed in time (``schedule``), as an always-on rate (``mix``), or both."""
    if KINDS[kind].stage == CONVERSATION:
        return ()
    fields = FAULT_MODELS[kind].model_fields
    timed = [fields[n] for n in ("windows", "events") if n in fields]
    if not timed:
        return ("mix",)
    if any(_min_length(f) for f in timed):
        return ("schedule",)
    return ("schedule", "mix")


def drawable(kind: str, place: Place, style: Style) -> bool:
    """Whether :func:`kind_strategy` can draw ``kind`` in ``place`` as ``style``."""
    try:
        kind_strategy(kind, place, style)
    except InvalidArgument:
        return False
    return True


def kind_strategy(kind: str, place: Place, style: Style) -> st.SearchStrategy:
    """Valid faults of ``kind`` for ``place``, drawn in ``style`` (one of :func:`styles`)."""
    if kind not in FAULT_MODELS:
        raise InvalidArgument(f"kinds: unknown fault kind {kind!r} (kinds: {', '.join(ALL_KINDS)})")
    if KINDS[kind].stage == CONVERSATION:
        raise InvalidArgument(f"kinds: {kind!r} emerges from fleet.model and is never declared: no fault draws it")
    if style not in styles(kind):
        raise InvalidArgument(f"kinds: {kind!r} cannot be drawn as a {style} (it can as: {', '.join(styles(kind))})")
    model = FAULT_MODELS[kind]
    fields = {}
    for name, field in model.model_fields.items():
        strategy = _field(kind, name, field, place, style)
        if strategy is not None:
            fields[name] = strategy
    return st.builds(model, **fields)


# Imported last, as in fleetchaos.testing.strategies: importing hypothesis runs its entry points, which
# import fleetchaos.testing.strategies, which imports the names above from this module.
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import InvalidArgument  # noqa: E402
