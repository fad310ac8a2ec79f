"""``@fleetchaos.tool(name)``: bind a team's sync or async callable to a scenario tool.

The wrapper does nothing while no run is active in its context (one context-variable
lookup per call), so the decorator can stay in production code; ``functools.wraps``
keeps the signature, name and docstring, so SDKs that build tool schemas from them
still see the original function.  Inside a run each call is decided by the run's
injector and realised here:

* no fault: wait the call's virtual duration, run the function; its return commits;
* a fail-fast fault: wait, raise (the team's own exception type when ``errors=`` maps the kind);
* a timeout: when the keyed draw says it committed, run the function first; then hang
  for the timeout (the caller's own ``asyncio.wait_for`` may cancel the hang) and raise;
* a masking fault: return ``empty(...)`` or ``fabricate(...)`` without running the function.

Standard library only.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from fleetchaos.real.context import ACTIVE, orphaned
from fleetchaos.real.decision import Decision
from fleetchaos.real.faults import Fault, UnboundCall, error_for

__all__ = ["ToolBinding", "binding_of", "tool"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class ToolBinding:
    """How one decorated callable meets the fault plan."""

    name: str
    item: Callable[..., Hashable] | None = None
    """Which fan-out item a call is, from its arguments (None: item 0, or call order for a fan-out step)."""
    errors: Mapping[str, Callable[[Fault], BaseException]] | None = None
    empty: Callable[..., Any] | None = None
    """What a silently suppressed call returns (default None)."""
    fabricate: Callable[..., Any] | None = None
    """What a call with fabricated defaults returns (default: ``empty``'s value)."""
    idempotency_key: Callable[..., str | None] | None = None
    """The call's idempotency key, from its arguments: a repeated key's commit takes effect once."""

    def item_of(self, args: tuple, kwargs: dict) -> Hashable | None:
        """The item the call's arguments name (None without an extractor)."""
        return None if self.item is None else self.item(*args, **kwargs)

    def key_of(self, args: tuple, kwargs: dict) -> str | None:
        """The call's idempotency key (None without an extractor)."""
        return None if self.idempotency_key is None else self.idempotency_key(*args, **kwargs)

    def masked(self, kind: str, args: tuple, kwargs: dict) -> Any:
        """What a masked call returns instead of running."""
        make = self.fabricate if kind == "fabricated_defaults" and self.fabricate is not None else self.empty
        return None if make is None else make(*args, **kwargs)


def binding_of(fn: Callable[..., Any]) -> ToolBinding | None:
    """The binding of a decorated callable (None when it is not decorated)."""
    return getattr(fn, "__fleetchaos_tool__", None)


def tool(
    name: str,
    *,
    item: Callable[..., Hashable] | None = None,
    errors: Mapping[str, Callable[[Fault], BaseException]] | None = None,
    empty: Callable[..., Any] | None = None,
    fabricate: Callable[..., Any] | None = None,
    idempotency_key: Callable[..., str | None] | None = None,
) -> Callable[[F], F]:
    """Bind a sync or async callable to the scenario tool ``name``.

    ``item(*args, **kwargs)`` names the fan-out item a call is (an int is used as is;
    other values are numbered in first-seen order, which threads can reorder); ``errors``
    maps fault kinds to the team's exception types (``{"rate_limit": lambda f:
    RateLimited(f.retry_after_s)}``); ``empty`` and ``fabricate`` give what a masked call
    returns; ``idempotency_key`` names a call's key so a repeated commit takes effect once.
    Inert outside a run.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"fleetchaos.tool: name must be a scenario tool name, got {name!r}")
    binding = ToolBinding(name, item, errors, empty, fabricate, idempotency_key)

    def wrap(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                injector = ACTIVE.get()
                if injector is None:
                    if orphaned():
                        raise _orphan(name)
                    return await fn(*args, **kwargs)
                return await _call_async(injector, binding, fn, args, kwargs)

            wrapper: Any = async_wrapper
        else:

            @functools.wraps(fn)
            def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
                injector = ACTIVE.get()
                if injector is None:
                    if orphaned():
                        raise _orphan(name)
                    return fn(*args, **kwargs)
                return _call_sync(injector, binding, fn, args, kwargs)

            wrapper = sync_wrapper
        wrapper.__fleetchaos_tool__ = binding
        return wrapper

    return wrap


def _orphan(name: str) -> UnboundCall:
    return UnboundCall(
        f"{name}: called from a thread that does not carry the run's context while a fleetchaos run is "
        "active; start the thread with contextvars.copy_context().run(...) or use asyncio.to_thread"
    )


def _begin(injector: Any, binding: ToolBinding, args: tuple, kwargs: dict) -> Decision | None:
    return injector.begin(binding.name, binding.item_of(args, kwargs), idempotency_key=binding.key_of(args, kwargs))


def _call_sync(injector: Any, binding: ToolBinding, fn: Callable, args: tuple, kwargs: dict) -> Any:
    d = _begin(injector, binding, args, kwargs)
    if d is None:
        return fn(*args, **kwargs)
    kind = d.kind
    if kind is not None and d.masking:
        if d.sleeps:
            injector.sleep_sync(d.duration_s)
        d.fire()
        value = binding.masked(kind.name, args, kwargs)
        d.meet()
        return value
    if kind is None or (kind.outcome_unknown and d.commits):
        if kind is None and d.sleeps:
            injector.sleep_sync(d.duration_s)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            d.raised(exc)
            raise
        d.commit()
        if kind is None:
            return result
    assert d.fault is not None
    if not kind.outcome_unknown:
        if d.sleeps:
            injector.sleep_sync(d.duration_s)
        d.fire()
    else:
        d.fire()  # the hang starts
        if d.sleeps:
            injector.sleep_sync(d.duration_s)
    d.meet()
    raise error_for(d.fault, binding.errors)


async def _call_async(injector: Any, binding: ToolBinding, fn: Callable, args: tuple, kwargs: dict) -> Any:
    d = _begin(injector, binding, args, kwargs)
    if d is None:
        return await fn(*args, **kwargs)
    kind = d.kind
    if kind is not None and d.masking:
        if d.sleeps:
            await asyncio.sleep(d.duration_s)
        d.fire()
        value = binding.masked(kind.name, args, kwargs)
        d.meet()
        return value
    if kind is None or (kind.outcome_unknown and d.commits):
        if kind is None and d.sleeps:
            await asyncio.sleep(d.duration_s)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:
            d.raised(exc)
            raise
        d.commit()
        if kind is None:
            return result
    assert d.fault is not None
    if not kind.outcome_unknown:
        if d.sleeps:
            await asyncio.sleep(d.duration_s)
        d.fire()
    else:
        d.fire()  # the hang starts: the caller's own timeout may cancel it here
        if d.sleeps:
            try:
                await asyncio.sleep(d.duration_s)
            except asyncio.CancelledError:
                d.meet()  # met through the caller's own timeout
                raise
    d.meet()
    raise error_for(d.fault, binding.errors)
