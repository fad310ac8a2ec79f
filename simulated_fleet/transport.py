"""Transport layers under the agent runtime: per-call retries the policy never sees.

Real agent runtimes sit on HTTP clients and SDKs that retry on their own (botocore,
gRPC, urllib3's ``Retry``), often several deep (an SDK over a service mesh over a
client library).  A policy's ``transport`` is one :class:`TransportRetry` or a list of
them, the layer nearest the tool first; each layer retries the failures of the layer
below it.  The attempts multiply: a dependency that always fails costs the product of
every layer's attempts in calls for each request, times the agent's dispatches.  These
layers make that product a measured figure rather than an assumption.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fleetchaos.sim.kinds import KINDS


def transport_kinds() -> frozenset[str]:
    """Failure kinds a transport layer can see and retry (``FaultKind.transport_retryable``).

    Connection errors, timeouts, 429s, refused connections of a crashed node; application
    errors (a missing source, a validation error, an expired key) pass through to the
    agent untouched.
    """
    return frozenset(name for name, kind in KINDS.items() if kind.transport_retryable)


#: :func:`transport_kinds` as the catalogue stands at import.
TRANSPORT_KINDS = transport_kinds()


@dataclass(frozen=True, slots=True, repr=False)
class TransportRetry:
    """Retry a failed tool call inside the transport, up to ``attempts`` tries in all.

    Between tries it waits ``min(cap_s, base_s * 2**n)`` for try ``n`` (0-based count of
    retries so far) with the chosen jitter: ``"none"`` (the full value), ``"full"``
    (uniform in [0, value)) or ``"equal"`` (half plus uniform in [0, half)).  A 429's
    retry-after is honoured when it is longer.  Only kinds in ``on`` are retried, and with
    ``tools`` only calls of those tools (a tool's own client retry, declared per tool;
    :func:`fleetchaos.policies.transport_from_tenacity` reads it from a tenacity config).
    """

    attempts: int = 3
    base_s: float = 0.5
    cap_s: float = 8.0
    jitter: Literal["none", "full", "equal"] = "full"
    on: frozenset[str] = field(default_factory=transport_kinds)
    tools: frozenset[str] | None = None
    """Only calls of these tools are retried (None: every tool's)."""

    def __post_init__(self) -> None:
        if self.tools is not None:
            if isinstance(self.tools, str) or not all(isinstance(t, str) and t for t in self.tools):
                raise ValueError(f"TransportRetry.tools must be tool names, got {self.tools!r}")
            object.__setattr__(self, "tools", frozenset(self.tools))
        if self.attempts < 1:
            raise ValueError(f"TransportRetry.attempts must be >= 1, got {self.attempts}")
        if self.base_s < 0 or self.cap_s < 0:
            raise ValueError("TransportRetry.base_s and cap_s must be >= 0")
        if self.jitter not in ("none", "full", "equal"):
            raise ValueError(f"TransportRetry.jitter must be none, full or equal, got {self.jitter!r}")
        retryable = transport_kinds()
        unknown = set(self.on) - retryable
        if unknown:
            raise ValueError(
                f"TransportRetry.on: {sorted(unknown)} are not transport-level failures ({sorted(retryable)})"
            )

    def __repr__(self) -> str:
        # ``on`` sorted: a frozenset's own repr follows string hashing, which is salted per
        # process, and results record this repr (the policy's recipe) byte for byte.
        tools = "" if self.tools is None else f", tools=frozenset({sorted(self.tools)!r})"
        return (
            f"TransportRetry(attempts={self.attempts!r}, base_s={self.base_s!r}, cap_s={self.cap_s!r}, "
            f"jitter={self.jitter!r}, on=frozenset({sorted(self.on)!r}){tools})"
        )

    def retries(self, kind: str, tool: str) -> bool:
        """Whether this layer retries a call of ``tool`` that failed with ``kind``."""
        return kind in self.on and (self.tools is None or tool in self.tools)

    def wait_s(self, retries_so_far: int, uniform: float) -> float:
        """The wait before the next try, given a uniform draw in [0, 1)."""
        value = min(self.cap_s, self.base_s * 2.0**retries_so_far)
        if self.jitter == "full":
            return value * uniform
        if self.jitter == "equal":
            return value / 2.0 + value / 2.0 * uniform
        return value


class TransportSpecError(ValueError):
    """A policy's ``transport`` that is not a TransportRetry or a list of them (the message says the fix)."""


def transport_layers(transport: object) -> tuple[TransportRetry, ...]:
    """A policy's ``transport`` as its layers, nearest the tool first, without layers that never retry.

    Raises :class:`TransportSpecError` naming the field, what it got and the fix; the CLI
    checks every policy with it before any run.
    """
    if transport is None:
        return ()
    fix = "give a TransportRetry(attempts=..., base_s=..., cap_s=..., jitter=...) or a list of them, nearest the tool first"
    if isinstance(transport, TransportRetry):
        layers: tuple = (transport,)
    elif isinstance(transport, (list, tuple)):
        layers = tuple(transport)
        for i, layer in enumerate(layers):
            if not isinstance(layer, TransportRetry):
                raise TransportSpecError(f"policy.transport[{i}] must be a TransportRetry, got {_shown(layer)}; {fix}")
    else:
        raise TransportSpecError(
            f"policy.transport must be a TransportRetry or a list of them, got {_shown(transport)}; {fix}"
        )
    return tuple(layer for layer in layers if layer.attempts > 1)


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}" if len(text) <= 60 else type(value).__name__
