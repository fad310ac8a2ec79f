"""HTTP bindings: which requests belong to which scenario tool.

A :class:`Route` maps ``"METHOD URL-glob"`` to a scenario tool (or a pseudo-tool such as
``"llm"`` when a template has such a step), with an optional item extractor for fan-out
requests and the bodies a masked request answers with.  :class:`Bindings` gathers the
routes, the route whose hit refreshes the task's worker credentials, and what happens
to a request no route matches: refused by default, so nothing bypasses the fault plan
silently.  Glob matching plus an extractor, nothing more: teams that need richer
matching put respx or pytest-httpx underneath as the inner transport.

Standard library only.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Bindings", "ContractMapping", "Route"]

#: A team's own error contract read into fleetchaos' fields: given what a tool surfaced (the
#: exception it raised, else the value it returned), the contract's fields (``error_code``,
#: ``category``, ``recoverable``, ``suggested_action``, ``retry_after_ms`` or
#: ``retry_after_s``, ``context``), or None to read it as fleetchaos reads any surface.
ContractMapping = Callable[[Any], "Mapping[str, Any] | None"]


def _parse(match: str, what: str) -> tuple[str, str]:
    method, sep, pattern = match.strip().partition(" ")
    if not sep or not pattern.strip() or not method.isalpha():
        raise ValueError(f"{what}: expected 'METHOD URL-glob' such as 'GET https://crm.test/v1/*', got {match!r}")
    return method.upper(), pattern.strip()


@dataclass(frozen=True)
class Route:
    """An HTTP binding: requests matching ``match`` are calls of scenario tool ``tool``."""

    tool: str
    match: str
    """``"METHOD URL-glob"``, e.g. ``"GET https://search.test/v1/*"`` (``*`` for any method)."""
    item: Callable[[Any], Hashable] | None = None
    """Which fan-out item a request is (an int is used as is), from the request."""
    empty: bytes | Callable[[Any], bytes] = b"{}"
    """The body of a silently suppressed request's 200."""
    fabricate: Callable[[Any], bytes] | None = None
    """The body of a request answered with fabricated defaults (default: ``empty``)."""
    model: bool = False
    """The route is the model provider's chat completions (or messages) endpoint: each call is a turn of the
    task's conversation, and its tokens are the response's ``usage`` when it reports them."""
    mcp: bool = False
    """The route is an MCP server's streamable-HTTP endpoint: a ``tools/call`` is a call of the tool its
    ``params.name`` names (``tool`` when it names none), an ``initialize`` after a failure renews the task's MCP
    session and a ``tools/list`` its tool list, and the MCP kinds are answered as the server puts them on the wire
    (:mod:`fleetchaos.real.mcp_wire`); its other requests pass untouched."""

    def __post_init__(self) -> None:
        _parse(self.match, f"Route({self.tool!r})")

    def matches(self, method: str, url: str) -> bool:
        """Whether a request with ``method`` to ``url`` belongs to this route."""
        want, pattern = _parse(self.match, f"Route({self.tool!r})")
        return (want in ("*", method.upper())) and fnmatch.fnmatchcase(url, pattern)

    def body(self, kind: str, request: Any) -> bytes:
        """What a masked request's 200 carries."""
        make = self.fabricate if kind == "fabricated_defaults" and self.fabricate is not None else self.empty
        return make(request) if callable(make) else make


@dataclass(frozen=True)
class Bindings:
    """Every HTTP route of a run, its credential-refresh route, and what an unmatched request meets."""

    routes: Sequence[Route] = ()
    refresh: str | None = None
    """``"METHOD URL-glob"`` whose hit refreshes the current task's worker credentials."""
    unbound: Literal["refuse", "pass"] = "refuse"
    """``refuse``: a call no binding matches raises :class:`~fleetchaos.real.faults.UnboundCall`;
    ``pass``: it goes through untouched (and is still counted)."""
    contract: ContractMapping | Mapping[str, ContractMapping] | None = None
    """The team's own error contract (:data:`ContractMapping`), for every tool or per tool name
    (``"*"`` for the others): the contract check and parity read each surface through it."""
    layers: Sequence[Any] = ()
    """The team's own retry layers around its tools, nearest the tool first: a
    :class:`~fleetchaos.sim.transport.TransportRetry` each, usually read from the team's tenacity
    configuration per tool (``fleetchaos.policies.transport_from_tenacity(retrying, tools=[...])``).
    A call of a layer's tool that repeats a failure the layer retries is that layer's next try
    (a transport retry, keyed as the simulator keys its layer's tries), not the orchestrator's
    retry; parity runs the simulated side with the same layers."""

    def __post_init__(self) -> None:
        if self.unbound not in ("refuse", "pass"):
            raise ValueError(f"Bindings.unbound: must be 'refuse' or 'pass', got {self.unbound!r}")
        if self.refresh is not None:
            _parse(self.refresh, "Bindings.refresh")
        object.__setattr__(self, "routes", tuple(self.routes))
        from fleetchaos.sim.transport import TransportRetry

        layers = tuple(self.layers)
        for i, layer in enumerate(layers):
            if not isinstance(layer, TransportRetry):
                raise ValueError(
                    f"Bindings.layers[{i}]: expected a TransportRetry (transport_from_tenacity(retrying, "
                    f"tools=[...])), got {type(layer).__name__}"
                )
        object.__setattr__(self, "layers", layers)

    def layer_for(self, tool: str, kind: str) -> int | None:
        """The nearest declared layer that retries ``tool``'s ``kind`` failures (None: none does)."""
        for level, layer in enumerate(self.layers):
            if layer.retries(kind, tool):
                return level
        return None

    def transport(self, inner: Any = None, *, module: Any = None) -> Any:
        """A chaos transport over ``inner`` for these routes (httpx or httpx2, as ``inner`` or ``module`` is).

        Inert outside a run: it forwards every request to ``inner`` untouched.
        """
        from fleetchaos.real.transport import chaos_transport

        return chaos_transport(self, inner, module)

    def route(self, method: str, url: str) -> Route | None:
        """The first route a request matches (None: unbound)."""
        for route in self.routes:
            if route.matches(method, url):
                return route
        return None

    def contract_for(self, tool: str) -> ContractMapping | None:
        """The contract mapping that reads ``tool``'s surfaces (None: fleetchaos' own field names)."""
        found = self.contract
        if found is None or callable(found):
            return found
        return found.get(tool, found.get("*"))

    def is_refresh(self, method: str, url: str) -> bool:
        """Whether a request is the credential refresh."""
        if self.refresh is None:
            return False
        want, pattern = _parse(self.refresh, "Bindings.refresh")
        return want in ("*", method.upper()) and fnmatch.fnmatchcase(url, pattern)
