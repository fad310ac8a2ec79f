"""Composable recovery blocks and the classic retry controls, as pure functions."""

from __future__ import annotations

import ast
import dataclasses
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from fleetchaos.policies import (
    AdaptiveThrottle,
    AwsRetryQuota,
    BreakerBoard,
    BreakerState,
    CircuitBreaker,
    EnvoyLoad,
    EnvoyRetryBudget,
    GrpcRetryThrottle,
    GrpcTokens,
    Policy,
    QuotaState,
    breaker_key,
    category_of,
    code_of,
    decorrelated_jitter,
    full_jitter,
    instead_accept_partial,
    instead_alternative,
    instead_escalate,
    instead_give_up,
    instead_refresh,
    instead_reroute,
    resume_of,
    retry_after_s_of,
    retry_all,
    retry_always,
    retry_any,
    retry_if_category,
    retry_if_code,
    retry_if_retryable,
    retry_never,
    retryable_of,
    stop_after_attempt,
    stop_after_delay,
    stop_after_same_failure,
    stop_all,
    stop_any,
    stop_never,
    wait_decorrelated_jitter,
    wait_equal_jitter,
    wait_exponential,
    wait_fixed,
    wait_full_jitter,
    wait_max,
    wait_retry_after,
    wait_sum,
)
from fleetchaos.policies import blocks as B
from fleetchaos.sim.envelope import AgentToolError, PartialSuccess
from fleetchaos.sim.envelopes import FailureTypeError, SubagentResult, ToolEnvelope
from fleetchaos.sim.observation import (
    Escalate,
    GiveUp,
    Observation,
    RecoveryPolicy,
    RefreshCredentials,
    Reroute,
    Retry,
    TaskHistory,
    UseAlternative,
)

# ---------------------------------------------------------------------------------------
# builders


def hist(retries: int = 0, streak: int = 0, elapsed: float = 0.0, seed: int = 99) -> TaskHistory:
    """A hand-built history with an explicitly seeded RNG."""
    return TaskHistory(
        task_id=3,
        attempts=retries + 1,
        retries=retries,
        same_failure_streak=streak,
        elapsed_s=elapsed,
        rng=random.Random(seed),
    )


def obs(envelope=None) -> Observation:
    """A failed observation carrying ``envelope``."""
    return Observation(ok=False, status="failed", worker=1, envelope=envelope)


def ate(category="transient", code="NETWORK_UNREACHABLE", recoverable=True, retry_after_ms=None, partial=None):
    """An AgentToolError."""
    return AgentToolError(
        error_code=code,
        category=category,
        recoverable=recoverable,
        suggested_action="x",
        retry_after_ms=retry_after_ms,
        partial_success=partial,
    )


GENERIC = obs()
TRANSIENT = obs(ate())
RATE = obs(ate(code="RATE_LIMITED", retry_after_ms=2500))
FATAL = obs(ate(category="fatal", code="DISK_CORRUPT", recoverable=False))
# steps 0 and 1 done, items 1 and 3 of step 2 done: resume at step 2 skipping items 1, 3
PARTIAL = obs(ate(partial=PartialSuccess(completed_steps=("0:plan", "1:edit"), artifacts=("2:search#3", "2:search#1"))))


# ---------------------------------------------------------------------------------------
# envelope readers


def test_category_reads_every_contract():
    """category_of reads category, error_category or failure_type, and None elsewhere."""
    assert category_of(TRANSIENT) == "transient"
    assert category_of(obs(SubagentResult(status="failed", task_id="t", error_category="permission"))) == "permission"
    assert category_of(obs(FailureTypeError(failure_type="rate_limited"))) == "rate_limited"
    assert category_of(obs(ToolEnvelope(status="error", error_code="X"))) is None
    assert category_of(GENERIC) is None


def test_code_reads_fields_and_properties():
    """code_of reads error_code as a field or a property; None without an envelope."""
    assert code_of(RATE) == "RATE_LIMITED"
    assert code_of(obs(FailureTypeError(failure_type="timeout"))) == "TIMEOUT"
    assert code_of(obs(ToolEnvelope(status="error"))) is None
    assert code_of(GENERIC) is None


def test_retryable_reads_every_flag():
    """retryable_of reads recoverable, retriable, is_retryable, retry_recommended; None when not told."""
    assert retryable_of(TRANSIENT) is True
    assert retryable_of(FATAL) is False
    assert retryable_of(obs(ToolEnvelope(status="error", retriable=True))) is True
    assert retryable_of(obs(SubagentResult(status="failed", task_id="t", is_retryable=False))) is False
    assert retryable_of(obs(FailureTypeError(failure_type="timeout", retry_recommended=True))) is True
    assert retryable_of(obs(FailureTypeError(failure_type="timeout"))) is None
    assert retryable_of(GENERIC) is None


def test_retry_after_reads_every_field():
    """retry_after_s_of reads retry_after_ms, retry_after_s and metadata['retry_after_ms']."""
    assert retry_after_s_of(RATE) == 2.5
    assert retry_after_s_of(obs(SubagentResult(status="failed", task_id="t", retry_after_s=4.0))) == 4.0
    assert retry_after_s_of(obs(ToolEnvelope(status="error", metadata={"retry_after_ms": "750"}))) == 0.75
    assert retry_after_s_of(obs(ToolEnvelope(status="error", metadata={"retry_after_ms": "soon"}))) is None
    assert retry_after_s_of(TRANSIENT) is None
    assert retry_after_s_of(GENERIC) is None


def test_resume_reads_every_partial_field():
    """resume_of finds the resume point in partial_success, partial_results, partial_data and data."""
    refs = ("0:plan", "1:edit", "2:search#1", "2:search#3")
    assert resume_of(PARTIAL) == (2, (1, 3))
    assert resume_of(obs(FailureTypeError(failure_type="timeout", partial_results=refs))) == (2, (1, 3))
    assert resume_of(obs(SubagentResult(status="partial", task_id="t", partial_data=refs))) == (2, (1, 3))
    data = {"completed_steps": ("0:plan", "1:edit"), "completed_items": ("2:search#3",)}
    assert resume_of(obs(ToolEnvelope(status="partial", data=data))) == (2, (3,))
    assert resume_of(obs(FailureTypeError(failure_type="timeout"))) == (0, ())
    assert resume_of(GENERIC) == (0, ())


# ---------------------------------------------------------------------------------------
# retry predicates


def test_retry_predicates_hold_on_what_they_name():
    """Each predicate holds exactly on the failures it names."""
    h = hist()
    assert retry_if_category("transient")(TRANSIENT, h)
    assert not retry_if_category("resource", "auth")(TRANSIENT, h)
    assert retry_if_code("RATE_LIMITED", "TIMEOUT")(RATE, h)
    assert not retry_if_code("RATE_LIMITED")(TRANSIENT, h)
    assert retry_if_retryable()(TRANSIENT, h) and not retry_if_retryable()(FATAL, h)
    assert not retry_if_retryable()(GENERIC, h) and retry_if_retryable(unknown=True)(GENERIC, h)
    assert retry_always()(GENERIC, h) and not retry_never()(TRANSIENT, h)


def test_retry_or_flattens_and_reprs():
    """(a | b) | c has three members and a flat repr."""
    a, b, c = retry_if_category("transient"), retry_if_code("RATE_LIMITED"), retry_if_retryable()
    joined = (a | b) | c
    assert isinstance(joined, retry_any) and joined.members == (a, b, c)
    assert a | (b | c) == joined
    assert repr(a | b) == "retry_if_category('transient') | retry_if_code('RATE_LIMITED')"


def test_retry_and_or_mix_parenthesises():
    """A join of the other kind inside a join is parenthesised in the repr."""
    a, b = retry_if_category("transient"), retry_if_code("RATE_LIMITED")
    mixed = (a | b) & retry_if_retryable(unknown=True)
    assert isinstance(mixed, retry_all) and len(mixed.members) == 2
    assert repr(mixed) == (
        "(retry_if_category('transient') | retry_if_code('RATE_LIMITED')) & retry_if_retryable(unknown=True)"
    )


def test_retry_any_all_semantics():
    """| holds when any member holds, & only when all do; empty joins are False and True."""
    h = hist()
    assert (retry_never() | retry_always())(GENERIC, h)
    assert not (retry_never() & retry_always())(GENERIC, h)
    assert not retry_any()(GENERIC, h) and retry_all()(GENERIC, h)


def test_plain_callables_join_and_name():
    """A plain function joins with | on either side and shows by its qualified name."""

    def is_worker_one(observation, history):
        return observation.worker == 1

    joined = is_worker_one | retry_never()
    assert joined(GENERIC, hist())
    assert repr(joined).startswith("test_plain_callables_join_and_name.<locals>.is_worker_one | retry_never()")
    with pytest.raises(TypeError, match="not a block or a callable"):
        retry_always() | 5


def test_predicates_need_a_name():
    """retry_if_category() and retry_if_code() without arguments say what to pass."""
    with pytest.raises(ValueError, match="retry_if_category\\('transient'\\)"):
        retry_if_category()
    with pytest.raises(ValueError, match="at least one code"):
        retry_if_code()


# ---------------------------------------------------------------------------------------
# stops


def test_stop_after_attempt_counts_dispatches():
    """stop_after_attempt(3) allows attempts 1 and 2 to be retried, stops at 3."""
    stop = stop_after_attempt(3)
    assert [stop(GENERIC, hist(retries=r)) for r in range(4)] == [False, False, True, True]
    with pytest.raises(ValueError, match=">= 1"):
        stop_after_attempt(0)


def test_stop_after_delay_and_same_failure():
    """stop_after_delay reads elapsed_s; stop_after_same_failure reads the streak."""
    assert not stop_after_delay(60.0)(GENERIC, hist(elapsed=59.9))
    assert stop_after_delay(60.0)(GENERIC, hist(elapsed=60.0))
    assert not stop_after_same_failure(3)(GENERIC, hist(streak=2))
    assert stop_after_same_failure(3)(GENERIC, hist(streak=3))
    assert not stop_never()(GENERIC, hist(retries=10**6))


def test_stop_joins():
    """| stops on any member, & only on all; both flatten and repr readably."""
    either = stop_after_attempt(5) | stop_after_delay(30.0) | stop_after_same_failure(2)
    both = stop_after_attempt(5) & stop_after_delay(30.0)
    assert isinstance(either, stop_any) and len(either.members) == 3
    assert isinstance(both, stop_all)
    assert repr(either) == "stop_after_attempt(5) | stop_after_delay(30.0) | stop_after_same_failure(2)"
    assert either(GENERIC, hist(retries=1, elapsed=31.0)) and not both(GENERIC, hist(retries=1, elapsed=31.0))
    assert both(GENERIC, hist(retries=4, elapsed=31.0))


# ---------------------------------------------------------------------------------------
# waits


def test_wait_fixed_and_exponential():
    """wait_exponential(2, 30) gives 2, 4, 8, 16, 30, 30 (capped) and draws nothing."""
    w = wait_exponential(2.0, 30.0)
    h = hist()
    state = h.rng.getstate()
    assert [w(GENERIC, hist(retries=n)) for n in range(6)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert w(GENERIC, hist(retries=5000)) == 30.0
    assert wait_fixed(1.5)(GENERIC, h) == 1.5 and h.rng.getstate() == state


def test_full_jitter_range_and_draw():
    """Full jitter is uniform(0, min(cap, base*2^n)): in range, and the draw matches the existing helper."""
    w = wait_full_jitter(1.0, 10.0)
    for n in range(8):
        top = min(10.0, 2.0**n)
        values = [w(GENERIC, hist(retries=n, seed=s)) for s in range(200)]
        assert all(0.0 <= v < top for v in values)
        assert max(values) > 0.8 * top  # it spreads over the range
    for n in range(5):
        assert w(GENERIC, hist(retries=n, seed=7)) == full_jitter(hist(retries=n, seed=7), 1.0, 10.0)


def test_equal_jitter_range():
    """Equal jitter lies in [t/2, t] with t = min(cap, base*2^n); hand value for seed 5."""
    w = wait_equal_jitter(2.0, 20.0)
    for n in range(6):
        t = min(20.0, 2.0 * 2**n)
        values = [w(GENERIC, hist(retries=n, seed=s)) for s in range(200)]
        assert all(t / 2 <= v <= t for v in values)
    # n=2: t=8, so 4 + uniform(0, 4) from Random(5)
    assert w(GENERIC, hist(retries=2, seed=5)) == 4.0 + random.Random(5).uniform(0.0, 4.0)


def test_decorrelated_jitter_replays_the_chain():
    """Decorrelated jitter replays sleep=min(cap, uniform(base, 3*sleep)) from base for n+1 steps."""
    rng = random.Random(11)
    sleep = 1.0
    chain = []
    for _ in range(6):
        sleep = min(8.0, rng.uniform(1.0, sleep * 3.0))
        chain.append(sleep)
    w = wait_decorrelated_jitter(1.0, 8.0)
    assert [w(GENERIC, hist(retries=n, seed=11)) for n in range(6)] == chain
    assert decorrelated_jitter(random.Random(11), 5, 1.0, 8.0) == chain[-1]


def test_decorrelated_jitter_range():
    """Every decorrelated sleep lies in [base, cap], the first in [base, 3*base]."""
    w = wait_decorrelated_jitter(0.5, 4.0)
    for n in range(8):
        values = [w(GENERIC, hist(retries=n, seed=s)) for s in range(100)]
        assert all(0.5 <= v <= 4.0 for v in values)
    assert all(0.5 <= w(GENERIC, hist(retries=0, seed=s)) <= 1.5 for s in range(100))


def test_decorrelated_jitter_uses_a_known_previous_sleep():
    """Given prev (or the block's own last sleep in history.waits), one step is drawn: min(cap, uniform(base, 3*prev))."""
    assert decorrelated_jitter(random.Random(3), 4, 1.0, 100.0, prev_s=2.0) == random.Random(3).uniform(1.0, 6.0)
    w = wait_decorrelated_jitter(1.0, 100.0)
    h = SimpleNamespace(retries=4, rng=random.Random(3), last_delay_s=50.0, waits={id(w): 2.0})
    assert w(GENERIC, h) == random.Random(3).uniform(1.0, 6.0)  # its own 2.0, not the task's 50.0
    assert h.waits[id(w)] == random.Random(3).uniform(1.0, 6.0)


def _driven_delays(wait, seed: int, retries: int = 4) -> list[float]:
    """The delays a wait gives one task's successive retries, with the history updated as the driver does."""
    h = hist(seed=seed)
    delays = []
    for _ in range(retries):
        delay = wait(GENERIC, h)
        delays.append(delay)
        h.last_delay_s = delay  # the driver records the whole delay of the retry
        h.retries += 1
    return delays


def test_decorrelated_jitter_combined_with_other_waits_chains_on_its_own_sleeps():
    """wait_fixed(x) + jitter is x + the jitter's own chain, wait_max(...) the max of them: the sum never feeds back."""
    for seed in range(20):
        alone = _driven_delays(wait_decorrelated_jitter(0.005, 10.0), seed)
        summed = _driven_delays(wait_fixed(0.02) + wait_decorrelated_jitter(0.005, 10.0), seed)
        largest = _driven_delays(wait_max(wait_fixed(0.02), wait_decorrelated_jitter(0.005, 10.0)), seed)
        assert summed == pytest.approx([0.02 + a for a in alone], rel=1e-12)
        assert largest == [max(0.02, a) for a in alone]


def test_decorrelated_jitter_mean_delays_under_a_fixed_offset():
    """wait_fixed(20 ms) + decorrelated(5 ms): mean delays 30, 37.5, 48.75, 65.6 ms (E[s'] = (b + 3 E[s]) / 2), not 30, 67, 121, 202."""
    seeds = 4000
    sums = [0.0] * 4
    for seed in range(seeds):
        for n, delay in enumerate(_driven_delays(wait_fixed(0.02) + wait_decorrelated_jitter(0.005, 10.0), seed)):
            sums[n] += delay
    means = [total / seeds for total in sums]
    assert means == pytest.approx([0.030, 0.0375, 0.04875, 0.065625], rel=0.04)


def test_wait_retry_after():
    """wait_retry_after honours the hint and is 0 without one."""
    assert wait_retry_after()(RATE, hist()) == 2.5
    assert wait_retry_after()(TRANSIENT, hist()) == 0.0


def test_wait_sum_and_max():
    """+ sums waits (numbers become wait_fixed; sum() works); wait_max takes the largest."""
    h = hist(retries=2)
    total = wait_retry_after() + wait_exponential(1.0, 60.0) + 0.5
    assert isinstance(total, wait_sum) and len(total.members) == 3
    assert total(RATE, h) == 2.5 + 4.0 + 0.5
    assert sum([wait_fixed(1.0), wait_fixed(2.0)])(GENERIC, h) == 3.0
    assert repr(total) == "wait_retry_after() + wait_exponential(1.0, 60.0) + wait_fixed(0.5)"
    biggest = wait_max(wait_retry_after(), wait_exponential(1.0, 60.0))
    assert biggest(RATE, hist(retries=0)) == 2.5 and biggest(RATE, hist(retries=3)) == 8.0
    assert repr(wait_max(biggest, wait_fixed(1.0))) == (
        "wait_max(wait_retry_after(), wait_exponential(1.0, 60.0), wait_fixed(1.0))"
    )
    with pytest.raises(ValueError):
        wait_max()


def test_wait_max_draws_from_every_member():
    """wait_max evaluates every member, so the RNG advances the same whichever wins."""
    a, b = hist(seed=4), hist(seed=4)
    wait_max(wait_fixed(100.0), wait_full_jitter(1.0, 2.0))(GENERIC, a)
    wait_full_jitter(1.0, 2.0)(GENERIC, b)
    assert a.rng.getstate() == b.rng.getstate()


# ---------------------------------------------------------------------------------------
# fallbacks


def test_fallbacks_carry_the_resume_point():
    """Reroute, refresh and alternative resume where the envelope says; escalate names the code."""
    h = hist()
    assert instead_reroute()(PARTIAL, h) == Reroute(0.0, 2, (1, 3))
    assert instead_refresh()(PARTIAL, h) == RefreshCredentials(2, (1, 3))
    assert instead_alternative(delay_s=1.0)(PARTIAL, h) == UseAlternative(1.0, 2, (1, 3))
    assert instead_escalate()(FATAL, h) == Escalate("DISK_CORRUPT: recovery exhausted")
    assert instead_escalate("needs triage")(GENERIC, h) == Escalate("needs triage")
    assert instead_give_up()(PARTIAL, h) == GiveUp("failed")


def test_accept_partial_needs_evidence():
    """accept_partial claims partial only when progress was revealed, unless told otherwise."""
    assert instead_accept_partial()(PARTIAL, hist()) == GiveUp("partial")
    assert instead_accept_partial()(TRANSIENT, hist()) == GiveUp("failed")
    assert instead_accept_partial(require_evidence=False)(TRANSIENT, hist()) == GiveUp("partial")
    assert repr(instead_accept_partial(require_evidence=False)) == "instead_accept_partial(require_evidence=False)"


# ---------------------------------------------------------------------------------------
# the composite


def coordinator() -> Policy:
    """The coordinator recipe: retry transient failures once, else report what is missing."""
    return Policy(
        retry=retry_if_category("transient"),
        stop=stop_after_attempt(2),
        wait=wait_fixed(1.0),
        instead=instead_accept_partial(),
        name="coordinator",
    )


def test_policy_retries_then_falls_back():
    """Retry while the predicate holds and the stop is not reached, then the fallback."""
    p = coordinator()
    assert p.decide(PARTIAL, hist(retries=0)) == Retry(1.0, 2, (1, 3))
    assert p.decide(PARTIAL, hist(retries=1)) == GiveUp("partial")
    assert p.decide(FATAL, hist(retries=0)) == GiveUp("failed")


def test_policy_resume_off_restarts():
    """resume=False retries from the first step and shows in the repr."""
    p = Policy(resume=False)
    assert p.decide(PARTIAL, hist()) == Retry(0.0, 0, ())
    assert repr(p).endswith("resume=False)")


def test_policy_draws_no_wait_when_stopped():
    """A stopped or non-retried task draws nothing from the RNG."""
    p = Policy(stop=stop_after_attempt(1), wait=wait_full_jitter(1.0, 10.0))
    h = hist()
    state = h.rng.getstate()
    assert p.decide(TRANSIENT, h) == GiveUp("failed") and h.rng.getstate() == state


def test_policy_is_reproducible_from_its_inputs():
    """Same observation, history and seed give the same action."""
    p = Policy(wait=wait_retry_after() + wait_full_jitter(1.0, 60.0))
    assert p.decide(RATE, hist(retries=1, seed=8)) == p.decide(RATE, hist(retries=1, seed=8))
    assert 2.5 <= p.decide(RATE, hist(retries=1, seed=8)).delay_s < 4.5


def test_policy_repr_is_the_flat_recipe():
    """The policy's repr records every block, flattened."""
    p = Policy(
        retry=retry_if_category("transient") | retry_if_code("RATE_LIMITED"),
        stop=stop_after_attempt(4) | stop_after_same_failure(3),
        wait=wait_max(wait_retry_after(), wait_full_jitter(2.0, 60.0)),
        instead=instead_escalate(),
        name="tree",
    )
    assert repr(p) == (
        "Policy(name='tree', retry=retry_if_category('transient') | retry_if_code('RATE_LIMITED'), "
        "stop=stop_after_attempt(4) | stop_after_same_failure(3), "
        "wait=wait_max(wait_retry_after(), wait_full_jitter(2.0, 60.0)), instead=instead_escalate())"
    )


def test_policy_fits_the_socket_and_takes_callables():
    """Policy satisfies RecoveryPolicy; plain callables work as blocks; non-callables are refused."""
    p = Policy(retry=lambda o, h: o.worker == 1, instead=lambda o, h: Escalate("custom"))
    assert isinstance(p, RecoveryPolicy)
    assert isinstance(p.decide(GENERIC, hist()), Retry)
    assert p.decide(GENERIC, hist(retries=3)) == Escalate("custom")
    with pytest.raises(TypeError, match="Policy.stop"):
        Policy(stop=3)


def test_failure_type_routing_from_blocks():
    """A router in blocks: rate limits honour retry-after, auth refreshes (via a callable fallback)."""

    def route(observation, history):
        return {"auth_error": instead_refresh(), "unavailable": instead_reroute()}.get(
            category_of(observation), instead_escalate()
        )(observation, history)

    p = Policy(
        retry=retry_if_category("timeout", "rate_limited") & retry_if_retryable(unknown=True),
        stop=stop_after_attempt(5),
        wait=wait_max(wait_retry_after(), wait_exponential(1.0, 30.0)),
        instead=route,
        name="router",
    )
    assert p.decide(obs(FailureTypeError(failure_type="timeout")), hist(retries=1)) == Retry(2.0)
    assert isinstance(p.decide(obs(FailureTypeError(failure_type="auth_error")), hist()), RefreshCredentials)
    assert p.decide(obs(FailureTypeError(failure_type="timeout", retry_recommended=False)), hist()) == Escalate(
        "TIMEOUT: recovery exhausted"
    )


def test_blocks_are_frozen_and_slotted():
    """Every block is immutable and has no __dict__."""
    for block in (
        retry_if_code("A"),
        stop_after_attempt(2),
        wait_fixed(1.0),
        instead_escalate(),
        retry_always() | retry_never(),
        wait_max(wait_fixed(1.0)),
        Policy(),
    ):
        assert not hasattr(block, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(block, dataclasses.fields(block)[0].name, "x")


def test_policy_modules_are_pure():
    """No module of fleetchaos.policies imports simpy, a clock or the random module (draws come from history.rng)."""
    found = {}
    for path in sorted(Path(B.__file__).parent.glob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                names.add((node.module or "").split(".")[0])
        found[path.name] = names & {"simpy", "time", "datetime", "random"}
    assert "blocks.py" in found and "registry.py" in found
    assert {name: bad for name, bad in found.items() if bad} == {}


def test_all_is_sorted_and_complete():
    """__all__ is sorted and names only things that exist."""
    assert B.__all__ == sorted(B.__all__)
    assert all(hasattr(B, n) for n in B.__all__)


# ---------------------------------------------------------------------------------------
# AWS SDK standard retry quota


def test_aws_quota_hand_sequence():
    """Token accounting of a 20-token bucket against a hand-computed sequence."""
    q = AwsRetryQuota(initial=20)
    s = q.initial_state()  # 20
    s, paid = q.acquire(s)  # retry: 20 - 5 = 15
    assert (s, paid) == (QuotaState(15), 5)
    s, paid = q.acquire(s, timeout=True)  # timeout retry: 15 - 10 = 5
    assert (s, paid) == (QuotaState(5), 10)
    s, paid = q.acquire(s, timeout=True)  # 5 < 10: refused, still 5
    assert (s, paid) == (QuotaState(5), None)
    s, paid = q.acquire(s)  # 5 - 5 = 0
    assert (s, paid) == (QuotaState(0), 5)
    s, paid = q.acquire(s)  # 0 < 5: refused
    assert paid is None
    s = q.on_success(s, paid=5)  # retry succeeded: refund 5 -> 5
    s = q.on_success(s)  # first attempt succeeded: +1 -> 6
    s = q.on_success(s, paid=10)  # refund 10 -> 16
    assert s == QuotaState(16)
    s = q.on_success(s, paid=10)  # 26 capped at 20
    assert s == QuotaState(20)


def test_aws_quota_defaults_allow_100_retries():
    """The default 500-token bucket pays for 100 retries (or 50 timeouts), then refuses."""
    q = AwsRetryQuota()
    s = q.initial_state()
    granted = 0
    while True:
        s, paid = q.acquire(s)
        if paid is None:
            break
        granted += 1
    assert granted == 100 and s.available == 0
    s = q.initial_state()
    for _ in range(50):
        s, paid = q.acquire(s, timeout=True)
        assert paid == 10
    assert q.acquire(s, timeout=True)[1] is None


# ---------------------------------------------------------------------------------------
# gRPC retry throttling


def test_grpc_throttle_hand_sequence():
    """max_tokens=10, ratio=0.1: retries allowed while tokens > 5 (hand-computed sequence)."""
    g = GrpcRetryThrottle(max_tokens=10, token_ratio=0.1)
    s = g.initial_state()  # 10.0
    seen = []
    for _ in range(5):  # failures: 9, 8, 7, 6, 5
        s = g.on_failure(s)
        seen.append((s.tokens, g.allows_retry(s)))
    assert seen == [(9.0, True), (8.0, True), (7.0, True), (6.0, True), (5.0, False)]  # 5 is not > 5
    s = g.on_success(s)  # 5.1 -> allowed
    assert (s.tokens, g.allows_retry(s)) == (5.1, True)
    s = g.on_failure(s)  # 4.1
    for _ in range(9):  # 4.1 + 0.9 = 5.0: exactly, not allowed
        s = g.on_success(s)
    assert (s, g.allows_retry(s)) == (GrpcTokens(5000), False)
    s = g.on_success(s)  # 5.1
    assert g.allows_retry(s)


def test_grpc_throttle_bounds():
    """Tokens stay in [0, max_tokens]; invalid parameters are refused."""
    g = GrpcRetryThrottle(max_tokens=3, token_ratio=0.5)
    s = g.initial_state()
    for _ in range(10):
        s = g.on_failure(s)
    assert s == GrpcTokens(0)
    for _ in range(10):
        s = g.on_success(s)
    assert s == GrpcTokens(3000)
    with pytest.raises(ValueError, match="max_tokens"):
        GrpcRetryThrottle(max_tokens=0)
    with pytest.raises(ValueError, match="token_ratio"):
        GrpcRetryThrottle(token_ratio=0.0)


# ---------------------------------------------------------------------------------------
# Envoy retry budget


def test_envoy_budget_hand_sequence():
    """20% of active requests, at least 3: a hand-computed sequence of starts and finishes."""
    e = EnvoyRetryBudget()
    s = e.initial_state()
    for _ in range(10):
        s = e.start_request(s)  # 10 active, limit max(3, floor(2.0)) = 3
    assert e.limit(s) == 3
    s, ok1 = e.start_retry(s)  # (11, 1)
    s, ok2 = e.start_retry(s)  # (12, 2)
    s, ok3 = e.start_retry(s)  # (13, 3): 2 < max(3, floor(2.4)) = 3
    s, ok4 = e.start_retry(s)  # 3 < max(3, floor(2.6)) = 3 fails: refused
    assert (ok1, ok2, ok3, ok4) == (True, True, True, False) and s == EnvoyLoad(13, 3)
    for _ in range(10):
        s = e.start_request(s)  # 23 active, limit floor(4.6) = 4
    s, ok5 = e.start_retry(s)  # (24, 4)
    s, ok6 = e.start_retry(s)  # 4 < floor(4.8) = 4 fails: refused
    assert (ok5, ok6, s) == (True, False, EnvoyLoad(24, 4))
    s = e.finish(s, was_retry=True)  # (23, 3)
    s = e.finish(s)  # (22, 3)
    assert s == EnvoyLoad(22, 3) and e.allows_retry(s)  # limit floor(4.4) = 4


def test_envoy_budget_exact_percent_boundary():
    """budget_percent=50 at 10 active gives exactly 5 concurrent retries (no float undershoot)."""
    e = EnvoyRetryBudget(budget_percent=50.0, min_retry_concurrency=1)
    assert e.limit(EnvoyLoad(10, 0)) == 5
    assert e.limit(EnvoyLoad(0, 0)) == 1


# ---------------------------------------------------------------------------------------
# Google SRE adaptive throttling


def test_adaptive_throttle_hand_sequence():
    """Reject probability max(0, (requests - 2*accepts)/(requests+1)) over a 120 s window."""
    t = AdaptiveThrottle()
    s = t.initial_state()
    assert t.reject_probability(s, 0.0) == 0.0
    for _ in range(10):  # t=0: 10 requests, all accepted
        s, allowed = t.request(s, 0.0, 0.0)
        assert allowed
        s = t.on_accept(s, 0.0)
    assert t.reject_probability(s, 0.0) == 0.0  # (10 - 20) / 11 < 0
    for _ in range(30):  # t=10: 30 requests, none accepted
        s, _ = t.request(s, 10.0, 0.99)
    assert s.totals() == (40, 10)
    assert t.reject_probability(s, 10.0) == pytest.approx(20 / 41)  # (40 - 20) / 41
    s, allowed = t.request(s, 10.0, 0.48)  # 0.48 < 0.4878: rejected, still counted
    assert not allowed and t.reject_probability(s, 10.0) == pytest.approx(21 / 42)
    _s2, allowed = t.request(s, 10.0, 0.51)  # 0.51 >= 0.5: allowed
    assert allowed
    # t=121: the t=0 bucket (start 0 <= 1) has left the window: 31 requests, 0 accepts
    assert t.reject_probability(s, 121.0) == pytest.approx(31 / 32)
    # t=130.5: the t=10 bucket has left too
    assert t.reject_probability(s, 130.5) == 0.0


def test_adaptive_throttle_keeps_few_buckets():
    """Requests in the same bucket share one entry; old buckets are pruned on write."""
    t = AdaptiveThrottle(window_s=10.0, bucket_s=1.0)
    s = t.initial_state()
    for i in range(100):
        s, _ = t.request(s, i * 0.5, 1.0)
    assert len(s.buckets) <= 11


# ---------------------------------------------------------------------------------------
# circuit breaker


def test_breaker_hand_sequence():
    """threshold 3, cool-down 10 s, 2 half-open trials: a hand-computed walk through every state."""
    b = CircuitBreaker(failure_threshold=3, cooldown_s=10.0, half_open_trials=2)
    s = b.initial_state()
    s = b.on_failure(s, 0.0)  # closed, 1
    s = b.on_failure(s, 1.0)  # closed, 2
    s = b.on_success(s, 2.0)  # closed, reset to 0
    assert s == BreakerState()
    for t in (3.0, 4.0, 5.0):  # three in a row: open at t=5
        s = b.on_failure(s, t)
    assert (s.mode, s.opened_at_s) == ("open", 5.0)
    s, ok = b.allow(s, 14.9)  # still cooling down
    assert not ok
    s, ok1 = b.allow(s, 15.0)  # half-open, trial 1
    s, ok2 = b.allow(s, 15.0)  # trial 2
    s, ok3 = b.allow(s, 15.0)  # trials used up
    assert (ok1, ok2, ok3, s.mode) == (True, True, False, "half_open")
    s = b.on_success(s, 15.5)  # 1 of 2 successes
    s = b.on_failure(s, 16.0)  # a trial failed: open again at 16
    assert (s.mode, s.opened_at_s) == ("open", 16.0)
    assert not b.allow(s, 25.9)[1]
    s, _ = b.allow(s, 26.0)
    s, _ = b.allow(s, 26.0)
    s = b.on_success(s, 27.0)
    s = b.on_success(s, 27.0)  # 2 of 2: closed
    assert s == BreakerState() and b.allow(s, 27.0) == (s, True)


def test_breaker_ignores_results_while_open():
    """Results of calls let through before the breaker opened change nothing while it is open."""
    b = CircuitBreaker(failure_threshold=1, cooldown_s=5.0)
    s = b.on_failure(b.initial_state(), 0.0)
    assert b.on_success(s, 1.0) == s and b.on_failure(s, 2.0) == s
    with pytest.raises(ValueError, match="failure_threshold"):
        CircuitBreaker(failure_threshold=0)


def test_breaker_board_keys_are_independent():
    """Breakers per worker and per tool are keyed apart; an unknown key is closed."""
    board = BreakerBoard(CircuitBreaker(failure_threshold=2, cooldown_s=10.0))
    w3, search = breaker_key(worker=3), breaker_key(tool="search")
    assert (w3, search) == (("worker", 3), ("tool", "search"))
    board = board.on_failure(w3, 0.0).on_failure(w3, 1.0)
    assert board.state(w3).mode == "open" and board.state(search).mode == "closed"
    board, ok = board.allow(search, 2.0)
    assert ok and not board.allow(w3, 2.0)[1]
    board, ok = board.allow(w3, 11.0)
    assert ok and board.state(w3).mode == "half_open"
    with pytest.raises(ValueError, match="exactly one"):
        breaker_key(worker=1, tool="x")


def test_controls_record_their_parameters():
    """Each control's repr names its parameters, for results files."""
    assert repr(AwsRetryQuota()) == "AwsRetryQuota(initial=500, retry_cost=5, timeout_cost=10, success_refund=1)"
    assert repr(GrpcRetryThrottle()) == "GrpcRetryThrottle(max_tokens=10, token_ratio=0.1)"
    assert repr(EnvoyRetryBudget()) == "EnvoyRetryBudget(budget_percent=20.0, min_retry_concurrency=3)"
    assert repr(AdaptiveThrottle()) == "AdaptiveThrottle(k=2.0, window_s=120.0, bucket_s=1.0, timeouts_accepted=False)"
    assert repr(CircuitBreaker()) == "CircuitBreaker(failure_threshold=5, cooldown_s=30.0, half_open_trials=1)"
