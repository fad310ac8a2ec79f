"""Classic retry budgets as pure transitions over explicit frozen state.

The AWS SDK retry quota, gRPC retry throttling, the Envoy retry budget and Google SRE
client-side adaptive throttling.  Each is a frozen configuration (what a results file
records) with pure transitions over an explicit frozen state (what the driver keeps,
shared across tasks; see :class:`fleetchaos.policies.controls.Controlled`).  Draws and
times are inputs: nothing here reads a clock or a random generator of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "AdaptiveThrottle",
    "AwsRetryQuota",
    "EnvoyLoad",
    "EnvoyRetryBudget",
    "GrpcRetryThrottle",
    "GrpcTokens",
    "QuotaState",
    "ThrottleWindow",
]


@dataclass(frozen=True, slots=True)
class QuotaState:
    """Tokens left in an AWS-style retry quota."""

    available: int


@dataclass(frozen=True, slots=True)
class AwsRetryQuota:
    """The AWS SDK "standard" retry mode's client-side retry quota (a token bucket).

    Source: AWS SDKs and Tools Reference Guide, "Retry behavior" (standard mode), as
    implemented in botocore ``retries/standard.py`` (``RetryQuotaChecker``):

    * the bucket starts full at ``initial`` = 500 tokens and never exceeds it;
    * a retry costs ``retry_cost`` = 5 tokens, or ``timeout_cost`` = 10 after a timeout;
      when fewer tokens are left than the cost, the retry is refused (not attempted);
    * a successful response refunds what its retry paid, or ``success_refund`` = 1 when
      it was a first attempt that paid nothing (capped at ``initial``).

    The driver keeps one :class:`QuotaState` per client (per orchestrator, or per worker).
    """

    initial: int = 500
    retry_cost: int = 5
    timeout_cost: int = 10
    success_refund: int = 1

    def initial_state(self) -> QuotaState:
        """A full bucket."""
        return QuotaState(self.initial)

    def acquire(self, state: QuotaState, timeout: bool = False) -> tuple[QuotaState, int | None]:
        """Try to pay for one retry: (new state, cost paid), or (unchanged state, None) when refused."""
        cost = self.timeout_cost if timeout else self.retry_cost
        if state.available < cost:
            return state, None
        return QuotaState(state.available - cost), cost

    def on_success(self, state: QuotaState, paid: int | None = None) -> QuotaState:
        """A successful response: refund the retry's cost if it paid one, else ``success_refund``; capped at ``initial``."""
        gain = paid if paid else self.success_refund
        return QuotaState(min(self.initial, state.available + gain))


@dataclass(frozen=True, slots=True)
class GrpcTokens:
    """gRPC retry-throttling token count, in thousandths of a token (exact arithmetic, as gRPC does)."""

    milli: int

    @property
    def tokens(self) -> float:
        """The token count as a number of tokens."""
        return self.milli / 1000.0


@dataclass(frozen=True, slots=True)
class GrpcRetryThrottle:
    """gRPC retry throttling (gRFC A6 "Client Retries", ``retryThrottling`` in the service config).

    * ``token_count`` starts at ``max_tokens`` (1..1000) and stays in [0, max_tokens];
    * each failed RPC (a retryable or non-fatal status) decrements it by 1;
    * each successful RPC increments it by ``token_ratio`` (0 < ratio <= 1, three decimals);
    * retries (and hedges) are allowed only while ``token_count > max_tokens / 2``.

    Counts are kept in thousandths, so ``token_ratio`` is applied exactly.  One state per
    client channel (the orchestrator's, or one per worker).
    """

    max_tokens: int = 10
    token_ratio: float = 0.1

    def __post_init__(self) -> None:
        if not 1 <= self.max_tokens <= 1000:
            raise ValueError(f"GrpcRetryThrottle: max_tokens must be in 1..1000, got {self.max_tokens}")
        if not 0 < self.token_ratio <= 1:
            raise ValueError(f"GrpcRetryThrottle: token_ratio must be in (0, 1], got {self.token_ratio}")

    def initial_state(self) -> GrpcTokens:
        """A full bucket of ``max_tokens``."""
        return GrpcTokens(self.max_tokens * 1000)

    def allows_retry(self, state: GrpcTokens) -> bool:
        """True while ``token_count > max_tokens / 2``."""
        return state.milli * 2 > self.max_tokens * 1000

    def on_failure(self, state: GrpcTokens) -> GrpcTokens:
        """One failed RPC: ``token_count - 1``, not below 0."""
        return GrpcTokens(max(0, state.milli - 1000))

    def on_success(self, state: GrpcTokens) -> GrpcTokens:
        """One successful RPC: ``token_count + token_ratio``, not above ``max_tokens``."""
        return GrpcTokens(min(self.max_tokens * 1000, state.milli + round(self.token_ratio * 1000)))


@dataclass(frozen=True, slots=True)
class EnvoyLoad:
    """Requests and retries in flight to one upstream (what an Envoy retry budget reads)."""

    active_requests: int = 0
    active_retries: int = 0


@dataclass(frozen=True, slots=True)
class EnvoyRetryBudget:
    """Envoy's retry budget (``envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget``).

    A retry may start while ``active_retries < max(min_retry_concurrency,
    floor(budget_percent / 100 * active_requests))``; defaults 20% and 3.  A retry is
    itself a request in flight, so starting one raises both counts.  One state per
    upstream (per worker pool or per tool).
    """

    budget_percent: float = 20.0
    min_retry_concurrency: int = 3

    def initial_state(self) -> EnvoyLoad:
        """Nothing in flight."""
        return EnvoyLoad()

    def limit(self, state: EnvoyLoad) -> int:
        """The concurrent-retry limit for the current load."""
        return max(self.min_retry_concurrency, math.floor(self.budget_percent / 100.0 * state.active_requests + 1e-9))

    def allows_retry(self, state: EnvoyLoad) -> bool:
        """True while active retries are below the limit."""
        return state.active_retries < self.limit(state)

    def start_request(self, state: EnvoyLoad) -> EnvoyLoad:
        """A first attempt goes out."""
        return EnvoyLoad(state.active_requests + 1, state.active_retries)

    def start_retry(self, state: EnvoyLoad) -> tuple[EnvoyLoad, bool]:
        """A retry goes out if the budget allows: (new state, allowed); unchanged when refused."""
        if not self.allows_retry(state):
            return state, False
        return EnvoyLoad(state.active_requests + 1, state.active_retries + 1), True

    def finish(self, state: EnvoyLoad, was_retry: bool = False) -> EnvoyLoad:
        """A request (or retry) in flight completes, whatever its outcome."""
        return EnvoyLoad(max(0, state.active_requests - 1), max(0, state.active_retries - (1 if was_retry else 0)))


@dataclass(frozen=True, slots=True)
class ThrottleWindow:
    """Recent request and accept counts in time buckets: ``((bucket start s, requests, accepts), ...)``, oldest first."""

    buckets: tuple[tuple[float, int, int], ...] = ()

    def totals(self) -> tuple[int, int]:
        """(requests, accepts) over the kept buckets."""
        return sum(b[1] for b in self.buckets), sum(b[2] for b in self.buckets)


@dataclass(frozen=True, slots=True)
class AdaptiveThrottle:
    """Client-side adaptive throttling (Google, *Site Reliability Engineering*, ch. 21 "Handling Overload").

    Over the last ``window_s`` (two minutes in the book) the client counts ``requests``
    (every attempt the application made, including ones rejected locally) and
    ``accepts`` (requests the backend accepted).  A new request is rejected locally with
    probability ``max(0, (requests - K * accepts) / (requests + 1))``; K = 2 by default.
    The window is kept in ``bucket_s`` buckets; a bucket leaves the window when its
    start is ``window_s`` or more before now.  The uniform draw is an input
    (``history.rng.random()`` from the caller), so the transition stays pure.

    A request that timed out was not seen accepted, so by default it counts against the
    backend, as every other request the client cannot tell was accepted
    (:func:`fleetchaos.policies.controls.accepted`).  ``timeouts_accepted`` counts a timeout
    as accepted instead: for a backend known to keep working on calls its clients gave up
    on, where a timeout says the client was impatient, not that the backend shed the load.
    """

    k: float = 2.0
    window_s: float = 120.0
    bucket_s: float = 1.0
    timeouts_accepted: bool = False

    def initial_state(self) -> ThrottleWindow:
        """An empty window."""
        return ThrottleWindow()

    def _prune(self, state: ThrottleWindow, now_s: float) -> tuple[tuple[float, int, int], ...]:
        return tuple(b for b in state.buckets if b[0] > now_s - self.window_s)

    def _add(self, state: ThrottleWindow, now_s: float, requests: int, accepts: int) -> ThrottleWindow:
        start = math.floor(now_s / self.bucket_s) * self.bucket_s
        buckets = list(self._prune(state, now_s))
        if buckets and buckets[-1][0] == start:
            _, r, a = buckets[-1]
            buckets[-1] = (start, r + requests, a + accepts)
        else:
            buckets.append((start, requests, accepts))
        return ThrottleWindow(tuple(buckets))

    def reject_probability(self, state: ThrottleWindow, now_s: float) -> float:
        """``max(0, (requests - K * accepts) / (requests + 1))`` over the window ending at ``now_s``."""
        pruned = ThrottleWindow(self._prune(state, now_s))
        requests, accepts = pruned.totals()
        return max(0.0, (requests - self.k * accepts) / (requests + 1))

    def request(self, state: ThrottleWindow, now_s: float, draw: float) -> tuple[ThrottleWindow, bool]:
        """One attempt at ``now_s`` with a uniform ``draw`` in [0, 1): (new state, allowed); counted either way."""
        allowed = draw >= self.reject_probability(state, now_s)
        return self.on_request(state, now_s), allowed

    def on_request(self, state: ThrottleWindow, now_s: float) -> ThrottleWindow:
        """Count one request at ``now_s`` whose admission was decided elsewhere (sent, or refused locally)."""
        return self._add(state, now_s, 1, 0)

    def on_accept(self, state: ThrottleWindow, now_s: float) -> ThrottleWindow:
        """The backend accepted a request (it was served, not rejected for overload)."""
        return self._add(state, now_s, 0, 1)
