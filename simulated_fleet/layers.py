"""The transport layers' own retries of one failed tool call, as a dispatch runs them.

A policy's ``transport`` (:class:`~fleetchaos.sim.transport.TransportRetry` layers,
nearest the tool first) retries what the layer below it gave up on; every try at the
bottom is a real tool call decided by :meth:`fleetchaos.sim.calls.CallModel.decide`,
keyed by :func:`fleetchaos.sim._rng.transport_key` (layer 0) or
:func:`fleetchaos.sim._rng.layer_key` (the layers above), and written to the task's
ledger record as it takes effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from fleetchaos.sim import _rng
from fleetchaos.sim.calls import CallModel, CallOutcome, StepRules
from fleetchaos.sim.journal import Journal
from fleetchaos.sim.kinds import FaultKind
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.state import NodeState
from fleetchaos.sim.template import Step
from fleetchaos.sim.transport import TransportRetry


def layered_retry(
    layers: tuple[TransportRetry, ...],
    calls: CallModel,
    journal: Journal,
    rec: TaskRecord,
    first: CallOutcome,
    w: NodeState,
    step: Step,
    rules: StepRules,
    task_key: int,
    item: int,
    key: int,
    now: float,
    batch_failed: Mapping[int, FaultKind],
    sources: dict[tuple[int, int], int],
    garbage: bool,
    level: int | None = None,
) -> CallOutcome:
    """The transport layers retry a failed call on their own: the outcome of the last try,
    with the duration of every try and wait between them.

    Layer ``level`` (the top one by default) handles one request whose first try
    below it gave ``first``: the layers under it retry that try first, then it retries
    what they gave up on, each of its retries going through them again.  Each try at
    the bottom is a real tool call (counted, priced, and able to commit a side effect
    that then happens twice); the tries and the waits between them run inside the
    step's slot, so they lengthen the call.  A try later than ``now`` meets the fleet
    as it stands at that instant (the token bucket only refills forward).  ``garbage``:
    the step ran on incomplete inputs, so nothing it does takes effect.
    """
    if level is None:
        level = len(layers) - 1
        if rec.layer_tries is None:
            rec.layer_tries = [0] * len(layers)
    if level > 0:
        first = layered_retry(
            layers, calls, journal, rec, first, w, step, rules, task_key, item, key, now, batch_failed, sources,
            garbage, level - 1,
        )  # fmt: skip
    layer = layers[level]
    stream = _rng.layer_stream(level)
    tries = cast("list[int]", rec.layer_tries)  # the top layer's call (level None) made the list
    tries[level] += 1
    fault, duration, committed, retry_at = first
    elapsed = 0.0
    for n in range(1, layer.attempts):
        if fault is None or not layer.retries(fault.name, step.name):
            break
        journal.fault(rec, fault.name, now, step.name, w.index)
        if committed and not garbage:
            rec.commits[step.index][item] += 1  # the failed try took effect anyway; the next try repeats it
        if fault.outcome_unknown:
            rec.tokens += step.tokens
        pause = layer.wait_s(n - 1, _rng.draw(key, stream + n))
        if retry_at is not None:
            pause = max(pause, retry_at - (now + elapsed + duration))
        elapsed += duration + pause
        rec.calls += 1
        rec.transport_retries += 1
        tries[level] += 1
        sub_key = try_key(level, n, key)
        outcome = calls.decide(w, step, rules, task_key, item, sub_key, now + elapsed, batch_failed, sources)
        if level > 0:
            outcome = layered_retry(
                layers, calls, journal, rec, outcome, w, step, rules, task_key, item, sub_key, now + elapsed,
                batch_failed, sources, garbage, level - 1,
            )  # fmt: skip
        fault, duration, committed, retry_at = outcome
    return fault, elapsed + duration, committed, retry_at


LayerTry = tuple[int, int, int]
"""A declared layer's retry: (the layer, nearest the tool 0; which retry of it; the key of the request it retries)."""


def try_key(level: int, n: int, request: int) -> int:
    """The key of layer ``level``'s ``n``-th retry of ``request``."""
    return _rng.transport_key(request, n) if level == 0 else _rng.layer_key(request, level, n)


def next_layer_try(
    layers: tuple[TransportRetry, ...], tool: str, kind: str, key: int, tried: LayerTry | None, stack: list
) -> tuple[LayerTry | None, list]:
    """After a call of ``tool`` keyed ``key`` failed with ``kind``, the layers' next try, as :func:`layered_retry`
    runs them: the nearest layer that retries ``kind`` and has tries left (its retry then passes through the layers
    under it, each meeting it as a request of its own), or None when the failure leaves the stack.

    ``tried`` is the try the failed call was (None: a request's first call); ``stack`` holds each layer's (retries
    made, the request it retries) from the previous call of the request, and the returned one replaces it.
    """
    if tried is None:
        stack = [(0, key)] * len(layers)
    else:
        level, n, request = tried
        stack = [(0, key)] * level + [(n, request)] + stack[level + 1 :]
    for level, layer in enumerate(layers):
        n, request = stack[level]
        if layer.retries(kind, tool) and n + 1 < layer.attempts:
            return (level, n + 1, request), stack
    return None, stack
