"""Keyed random streams, the shared API token bucket, workers, and fault-plan realisation."""

from __future__ import annotations

import itertools
import math
import os
import sys
import zlib

import patience
import pytest
import simpy

from fleetchaos.sim import _rng
from fleetchaos.sim.config import (
    DiskFull,
    ExpiredKey,
    FleetSpec,
    NetworkBlip,
    NodeEvent,
    RateLimit,
    Timeout,
    Window,
    WorldSpec,
)
from fleetchaos.sim.faults import build_plan
from fleetchaos.sim.fleet import SlotPool, TokenBucket, Worker
from fleetchaos.sim.schedules import disjoint_windows

# ---------------------------------------------------------------------------------------
# keyed streams


def test_mix_matches_splitmix64_reference():
    """mix(0) is the first output of SplitMix64 seeded with 0 (0xE220A8397B1DCDAF)."""
    assert _rng.mix(0) == 0xE220A8397B1DCDAF


def test_mix_stays_64_bit():
    """mix maps into [0, 2**64) even for the largest 64-bit input."""
    for z in (0, 1, 2**63, 2**64 - 1):
        assert 0 <= _rng.mix(z) < 2**64


def test_stream_id_is_mixed_crc32():
    """stream_id(name) is mix(crc32(name)): a pure function of the name bytes."""
    assert _rng.stream_id("fault:disk_full") == _rng.mix(zlib.crc32(b"fault:disk_full"))
    assert _rng.stream_id("a") != _rng.stream_id("b")


def test_stream_id_stable_across_processes():
    """stream_id gives the same values in a process with a different PYTHONHASHSEED."""
    names = ["fault:disk_full", "fault:expired_key", "fault:rate_limit", "latency"]
    code = (
        "import sys; from simulated_fleet import _rng; "
        "print(hash('fault:disk_full')); "
        "print(' '.join(str(_rng.stream_id(n)) for n in sys.argv[1:]))"
    )
    outputs = []
    for hashseed in ("1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        proc = patience.run(
            [sys.executable, "-c", code, *names],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cpu_s=60,
        )
        outputs.append(proc.stdout.split("\n"))
    (hash1, ids1, _), (hash2, ids2, _) = outputs
    # the two processes really do salt str hashes differently ...
    assert hash1 != hash2
    # ... yet the stream ids agree with each other and with this process
    assert ids1 == ids2 == " ".join(str(_rng.stream_id(n)) for n in names)


def test_key_is_deterministic_and_order_sensitive():
    """key() of the same parts is equal; a different order or part gives a different key."""
    assert _rng.key(7, 3, 2, 1) == _rng.key(7, 3, 2, 1)
    assert _rng.key(7, 3, 2, 1) != _rng.key(7, 3, 1, 2)
    assert _rng.key(7, 3, 2, 1) != _rng.key(7, 3, 2, 2)
    assert _rng.key(1) != _rng.key(1, 0)  # a trailing zero part still changes the key


def test_key_masks_negative_parts():
    """Negative parts are folded as their 64-bit two's complement."""
    assert _rng.key(-1) == _rng.key(2**64 - 1)


def test_draws_independent_of_call_order():
    """A draw depends only on its key and stream, not on which draws came before it."""
    stream = _rng.stream_id("test")
    keys = [_rng.key(42, task, step) for task in range(20) for step in range(4)]
    forward = {k: _rng.draw(k, stream) for k in keys}
    # interleave unrelated draws and go backwards: every value must be the same
    backward = {}
    for k in reversed(keys):
        _rng.draw(k, _rng.stream_id("other"))
        _rng.uniform(k + 1)
        backward[k] = _rng.draw(k, stream)
    assert forward == backward


def test_streams_of_one_key_differ():
    """Two named streams of the same key give different draws."""
    k = _rng.key(1, 2, 3)
    assert _rng.draw(k, _rng.stream_id("a")) != _rng.draw(k, _rng.stream_id("b"))


def test_different_seeds_give_different_draws():
    """The same identifiers under different seeds draw different numbers."""
    s = _rng.stream_id("fault:disk_full")
    a = [_rng.draw(_rng.key(1, t), s) for t in range(50)]
    b = [_rng.draw(_rng.key(2, t), s) for t in range(50)]
    assert all(x != y for x, y in zip(a, b))


def test_uniform_in_unit_interval_and_roughly_uniform():
    """uniform() lies in [0, 1) and 20k draws have mean ~0.5 and fill all ten deciles."""
    xs = [_rng.uniform(_rng.key(9, i)) for i in range(20_000)]
    assert all(0.0 <= x < 1.0 for x in xs)
    # standard error of the mean: sqrt(1/12/20000) = 0.002; allow 5 se
    assert abs(sum(xs) / len(xs) - 0.5) < 0.01
    deciles = [0] * 10
    for x in xs:
        deciles[int(x * 10)] += 1
    assert all(1800 < c < 2200 for c in deciles)  # expected 2000, sd ~42


def test_uniform_top_value_below_one():
    """The largest possible mixed value maps strictly below 1."""
    # uniform uses the top 53 bits: (2**64 - 1) >> 11 = 2**53 - 1 -> (2**53 - 1) / 2**53
    assert ((2**64 - 1) >> 11) * 2.0**-53 < 1.0
    # and the real function at that edge: this key mixes to the largest 64-bit value
    top = 3558559446808474027
    assert _rng.mix(top) == 2**64 - 1
    assert _rng.uniform(top) == 1.0 - 2.0**-53 == 0.9999999999999999
    assert _rng.uniform(top) < 1.0


def test_draw_in_unit_interval():
    """draw() lies in [0, 1)."""
    s = _rng.stream_id("x")
    assert all(0.0 <= _rng.draw(_rng.key(i), s) < 1.0 for i in range(5000))


def test_normal_moments():
    """normal() over 20k keys has mean ~0 and variance ~1."""
    s = _rng.stream_id("latency")
    xs = [_rng.normal(_rng.key(3, i), s) for i in range(20_000)]
    mean = sum(xs) / len(xs)
    var = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    assert abs(mean) < 0.05  # se 0.007
    assert abs(var - 1.0) < 0.05  # se of the variance ~0.01
    assert all(math.isfinite(x) for x in xs)


# ---------------------------------------------------------------------------------------
# TokenBucket


def _wait(bucket: TokenBucket, now: float) -> float:
    """A take at ``now`` as the seconds until a token is due (0.0: granted)."""
    due = bucket.take(now)
    return 0.0 if due is None else due - now


def test_bucket_burst_then_refused_with_retry_after():
    """Rate 1/s, burst 2: two takes at t=0 succeed, the third waits 1.0 s."""
    bucket = TokenBucket(1.0, 2.0, [])
    assert _wait(bucket, 0.0) == 0.0
    assert _wait(bucket, 0.0) == 0.0
    assert _wait(bucket, 0.0) == 1.0  # need 1 token at 1 token/s


def test_bucket_refused_take_consumes_nothing():
    """A refused take leaves the bucket unchanged: repeated refusals report the same wait."""
    bucket = TokenBucket(1.0, 1.0, [])
    _wait(bucket, 0.0)
    assert _wait(bucket, 0.0) == 1.0
    assert _wait(bucket, 0.0) == 1.0


def test_bucket_partial_refill():
    """Half a second after emptying at 1/s, half a token is missing: wait 0.5 s, then take at 1.0."""
    bucket = TokenBucket(1.0, 2.0, [])
    _wait(bucket, 0.0)
    _wait(bucket, 0.0)
    assert _wait(bucket, 0.5) == 0.5  # tokens 0.5, need 0.5 more at 1/s
    assert _wait(bucket, 1.0) == 0.0  # tokens 1.0 -> take


def test_bucket_slow_rate_retry_after():
    """Rate 0.25/s, burst 1: after emptying at t=0, a take at t=1 waits 3 s."""
    bucket = TokenBucket(0.25, 1.0, [])
    assert _wait(bucket, 0.0) == 0.0
    assert _wait(bucket, 1.0) == 3.0  # tokens 0.25; need 0.75 at 0.25/s


def test_bucket_refill_capped_at_burst():
    """A long idle period refills only up to burst: 2 takes succeed, the third waits 1 s."""
    bucket = TokenBucket(1.0, 2.0, [])
    _wait(bucket, 0.0)
    _wait(bucket, 0.0)
    # 100 s at 1/s would be 100 tokens, capped at 2
    assert _wait(bucket, 100.0) == 0.0
    assert _wait(bucket, 100.0) == 0.0
    assert _wait(bucket, 100.0) == 1.0
    assert bucket.tokens == 0.0


def test_bucket_window_slows_refill_exactly():
    """A window (2, 4, 0.5) halves refill inside it, integrated exactly across its edges."""
    # rate 0.25/s, burst 1. take at 0 -> tokens 0.
    # take at 2: refill 0..2 outside the window = 0.5 tokens -> refused.
    #   need 0.5: 2..4 at 0.125/s gives 0.25 (need 0.25 left), then 4..5 at 0.25/s -> t = 5
    #   retry-after = 5 - 2 = 3.0 (without the window it would be 2.0)
    bucket = TokenBucket(0.25, 1.0, [(2.0, 4.0, 0.5)])
    assert _wait(bucket, 0.0) == 0.0
    assert _wait(bucket, 2.0) == 3.0
    # refill 2..4.5: 0.25 + 0.125 = 0.375 -> 0.875 tokens, still refused, 0.5 s to go
    assert _wait(bucket, 4.5) == 0.5
    # at 5: 0.875 + 0.125 = 1.0 -> take
    assert _wait(bucket, 5.0) == 0.0


def test_bucket_window_across_whole_interval():
    """Refill over an interval that spans a window counts the window's reduced rate."""
    # rate 1/s, burst 10, window (1, 3, 0.25). Empty the bucket at t=0 (10 takes).
    # refill 0..4 = 1 + 2*0.25 + 1 = 2.5 tokens: two takes succeed at t=4, the third is refused
    # with need 0.5 at 1/s (window over) -> 0.5 s
    bucket = TokenBucket(1.0, 10.0, [(1.0, 3.0, 0.25)])
    for _ in range(10):
        assert _wait(bucket, 0.0) == 0.0
    assert _wait(bucket, 4.0) == 0.0
    assert _wait(bucket, 4.0) == 0.0
    assert _wait(bucket, 4.0) == 0.5


def test_bucket_wait_crosses_into_future_window():
    """A wait that runs into a window starting later is stretched by it."""
    # rate 1/s, burst 1, window (0.5, 10, 0.0). Empty at t=0, then: 0..0.5 gives 0.5 tokens,
    # 0.5..10 gives nothing, 10..10.5 gives the last 0.5 -> retry-after 10.5
    bucket = TokenBucket(1.0, 1.0, [(0.5, 10.0, 0.0)])
    assert _wait(bucket, 0.0) == 0.0
    assert _wait(bucket, 0.0) == 10.5


def test_bucket_zero_factor_window_waits_past_its_end():
    """In a factor-0 window nothing refills: the retry-after reaches past the window end."""
    # rate 1/s, burst 1, window (0, 10, 0). Empty at 0; at 5 no refill happened (tokens 0);
    # the token arrives 1 s after the window closes at 10 -> retry-after 11 - 5 = 6.0
    bucket = TokenBucket(1.0, 1.0, [(0.0, 10.0, 0.0)])
    assert _wait(bucket, 0.0) == 0.0
    wait = _wait(bucket, 5.0)
    assert wait == 6.0
    assert 5.0 + wait > 10.0
    assert _wait(bucket, 10.5) == 0.5
    assert _wait(bucket, 11.0) == 0.0


def test_bucket_rate_at():
    """rate_at applies a window's factor for start <= now < end only."""
    bucket = TokenBucket(2.0, 1.0, [(10.0, 20.0, 0.25)])
    assert bucket.rate_at(9.999) == 2.0
    assert bucket.rate_at(10.0) == 0.5
    assert bucket.rate_at(19.999) == 0.5
    assert bucket.rate_at(20.0) == 2.0


def test_bucket_time_does_not_run_backwards():
    """A take at an earlier time than the last one adds no tokens."""
    bucket = TokenBucket(1.0, 1.0, [])
    _wait(bucket, 0.0)
    assert _wait(bucket, 0.5) == 0.5
    assert _wait(bucket, 0.2) > 0.0  # still refused: going back in time refills nothing
    assert bucket.tokens == 0.5
    assert bucket.last == 0.5


# ---------------------------------------------------------------------------------------
# Worker


def make_worker(spans=(), expiries=(), lifetime=1000.0) -> Worker:
    return Worker(simpy.Environment(), 0, 2, list(spans), list(expiries), lifetime)


def test_worker_disk_full_over_spans():
    """disk_full is True for start <= now < end of each span and False elsewhere."""
    w = make_worker(spans=[(10.0, 20.0), (30.0, 40.0)])
    checks = [
        (0.0, False),
        (9.99, False),
        (10.0, True),
        (19.99, True),
        (20.0, False),
        (25.0, False),
        (30.0, True),
        (39.0, True),
        (40.0, False),
        (1e9, False),
    ]
    assert [(t, w.disk_full(t)) for t, _ in checks] == checks


def test_worker_disk_full_skips_several_spans_at_once():
    """A query jumping over several spans lands in the right one."""
    w = make_worker(spans=[(1.0, 2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.0)])
    assert w.disk_full(5.5) is True
    assert w.disk_full(6.5) is False
    assert w.disk_full(7.0) is True


def test_worker_without_spans_never_full():
    """A worker with no spans is never full."""
    w = make_worker()
    assert not any(w.disk_full(t) for t in (0.0, 1.0, 1e6))


def test_worker_credentials_expire_by_scheduled_revocation():
    """Credentials become invalid at a scheduled revocation and stay invalid until refreshed."""
    w = make_worker(expiries=[100.0, 200.0], lifetime=1e9)
    assert not w.credentials_expired(0.0)
    assert not w.credentials_expired(99.9)
    assert w.credentials_expired(100.0)
    assert w.credentials_expired(150.0)
    assert w.credentials_expired(500.0)


def test_worker_credentials_expire_by_lifetime():
    """Credentials become invalid once issued + lifetime is reached, and a refresh renews them."""
    w = make_worker(lifetime=1000.0)
    assert not w.credentials_expired(999.9)
    assert w.credentials_expired(1000.0)
    w.refresh_credentials(1500.0)
    assert not w.credentials_expired(1500.0)
    assert not w.credentials_expired(2499.9)
    assert w.credentials_expired(2500.0)  # 1500 + 1000


def test_worker_refresh_clears_past_revocations_not_future():
    """A refresh clears revocations at or before its time, but later ones still apply."""
    w = make_worker(expiries=[100.0, 120.0, 200.0], lifetime=1e9)
    assert w.credentials_expired(130.0)
    w.refresh_credentials(150.0)  # clears 100 and 120
    assert not w.credentials_expired(150.0)
    assert not w.credentials_expired(199.9)
    assert w.credentials_expired(200.0)  # future revocation still scheduled
    w.refresh_credentials(200.0)  # a revocation at the refresh instant is cleared too
    assert not w.credentials_expired(200.0)
    assert not w.credentials_expired(1e6)


def test_worker_refresh_before_revocation_keeps_it():
    """Refreshing before any revocation does not remove the scheduled one."""
    w = make_worker(expiries=[100.0], lifetime=1e9)
    w.refresh_credentials(50.0)
    assert not w.credentials_expired(99.0)
    assert w.credentials_expired(100.0)


# ---------------------------------------------------------------------------------------
# build_plan


def world(faults, workers: int = 3, duration_s: float = 86_400.0) -> WorldSpec:
    return WorldSpec(duration_s=duration_s, fleet=FleetSpec(workers=workers), faults=faults)


POISSON = [
    DiskFull(per_worker_per_day=10, cleanup_after_s=600),
    ExpiredKey(per_worker_per_day=10),
    RateLimit(per_day=3, window_s=1800, capacity_factor=0.1),
]


def test_build_plan_same_seed_same_plan():
    """The same spec and seed realise the same plan."""
    spec = world(POISSON)
    assert build_plan(spec, 7) == build_plan(spec, 7)


def test_build_plan_different_seed_different_poisson_faults():
    """A different seed realises different disk fills, key expiries and rate windows."""
    spec = world(POISSON)
    a, b = build_plan(spec, 7), build_plan(spec, 8)
    assert a.disk_full != b.disk_full
    assert a.key_expiries != b.key_expiries
    assert a.rate_windows != b.rate_windows


def test_build_plan_poisson_times_within_horizon_and_sorted():
    """Drawn fault times lie within the horizon, key expiries are sorted, disk spans disjoint."""
    spec = world(POISSON, duration_s=20_000)
    plan = build_plan(spec, 3)
    assert len(plan.disk_full) == len(plan.key_expiries) == 3
    for times in plan.key_expiries:
        assert times == sorted(times)
        assert all(0.0 <= t < 20_000 for t in times)
    for spans in plan.disk_full:
        for s, e in spans:
            assert 0.0 <= s < 20_000 and e > s
        for (_, e1), (s2, _) in itertools.pairwise(spans):
            assert e1 < s2
    # per_day 3 over 20000 s -> round(0.694) = 1 drawn window of 1800 s, factor 0.1
    assert len(plan.rate_windows) == 1
    s, e, f = plan.rate_windows[0]
    assert e - s == pytest.approx(1800.0) and f == 0.1
    assert 0.0 <= s <= 20_000 - 1800


def test_build_plan_poisson_rate_roughly_right():
    """With 10 disk fills per worker per day over 10 days, each worker sees ~100 (within 5 sd)."""
    spec = world([ExpiredKey(per_worker_per_day=10)], duration_s=10 * 86_400.0)
    plan = build_plan(spec, 1)
    for times in plan.key_expiries:
        assert 50 < len(times) < 150  # Poisson mean 100, sd 10


def test_build_plan_explicit_events_honoured():
    """Explicit disk and key events land on the named worker at the given time."""
    spec = world(
        [
            DiskFull(events=[NodeEvent(worker=1, at_s=100.0)], cleanup_after_s=50.0),
            ExpiredKey(events=[NodeEvent(worker=2, at_s=500.0), NodeEvent(worker=2, at_s=300.0)]),
        ]
    )
    plan = build_plan(spec, 0)
    assert plan.disk_full == [[], [(100.0, 150.0)], []]
    assert plan.key_expiries == [[], [], [300.0, 500.0]]
    assert plan.rate_windows == []


def test_build_plan_overlapping_disk_events_merge():
    """Overlapping disk-full spans of one worker merge into one span."""
    spec = world(
        [DiskFull(events=[NodeEvent(worker=0, at_s=100.0), NodeEvent(worker=0, at_s=120.0)], cleanup_after_s=50.0)]
    )
    assert build_plan(spec, 0).disk_full[0] == [(100.0, 170.0)]


def test_build_plan_worker_targeting_per_call_rules():
    """Per-call faults restricted to workers apply to those workers only."""
    spec = world(
        [
            NetworkBlip(probability=0.3, workers=[0, 2]),
            Timeout(
                probability=0.1,
                committed_probability=0.25,
                timeout_s=30,
                workers=[1],
                windows=[Window(start_s=10, duration_s=5)],
            ),
        ]
    )
    plan = build_plan(spec, 0)
    blip, timeout = plan.rules
    assert [blip.applies(w, "plan", "job") for w in range(3)] == [True, False, True]
    assert [timeout.applies(w, "plan", "job") for w in range(3)] == [False, True, False]
    assert blip.probability_at(0.0, 0) == 0.3
    assert timeout.spans.spans == [(10.0, 15.0)]
    assert timeout.spec.committed_probability == 0.25 and timeout.spec.timeout_s == 30.0


def test_build_plan_worker_targeting_scheduled_faults():
    """Poisson disk fills restricted to worker 1 leave the other workers untouched."""
    spec = world([DiskFull(per_worker_per_day=50, cleanup_after_s=60, workers=[1])])
    plan = build_plan(spec, 4)
    assert plan.disk_full[0] == [] and plan.disk_full[2] == []
    assert len(plan.disk_full[1]) > 10  # mean 50 events, P(<= 10) negligible


def test_build_plan_untargeted_applies_to_all_workers():
    """A fault without a workers list applies to every worker, each with its own draws."""
    spec = world([DiskFull(per_worker_per_day=20, cleanup_after_s=60)])
    plan = build_plan(spec, 4)
    assert all(plan.disk_full)
    assert plan.disk_full[0] != plan.disk_full[1]


def test_call_rule_probability_in_windows():
    """A windowed call rule fires only for start <= now < end."""
    spec = world(
        [NetworkBlip(probability=0.2, windows=[Window(start_s=10, duration_s=5)]), NetworkBlip(probability=0.2)]
    )
    rule, always = build_plan(spec, 0).rules
    assert rule.probability_at(9.99, 0) == 0.0
    assert rule.probability_at(10.0, 0) == 0.2
    assert rule.probability_at(14.99, 0) == 0.2
    assert rule.probability_at(15.0, 0) == 0.0
    assert always.probability_at(1e9, 0) == 0.2


def test_build_plan_overlapping_rate_windows_of_one_fault_merge():
    """Overlapping windows of one rate-limit fault are one cut, not two."""
    spec = world(
        [
            RateLimit(
                capacity_factor=0.5, windows=[Window(start_s=100, duration_s=100), Window(start_s=150, duration_s=100)]
            )
        ]
    )
    assert build_plan(spec, 0).rate_windows == [(100.0, 250.0, 0.5)]


def test_build_plan_overlapping_rate_windows_multiply():
    """Two rate-limit faults of factor 0.5 overlapping become 0.5, 0.25, 0.5 pieces."""
    spec = world(
        [
            RateLimit(capacity_factor=0.5, windows=[Window(start_s=100, duration_s=100)]),
            RateLimit(capacity_factor=0.5, windows=[Window(start_s=150, duration_s=100)]),
        ]
    )
    assert build_plan(spec, 0).rate_windows == [
        (100.0, 150.0, 0.5),
        (150.0, 200.0, 0.25),
        (200.0, 250.0, 0.5),
    ]


def test_build_plan_rate_windows_of_two_faults_multiply():
    """Windows of two rate-limit faults multiply where they overlap."""
    spec = world(
        [
            RateLimit(capacity_factor=0.5, windows=[Window(start_s=0, duration_s=100)]),
            RateLimit(capacity_factor=0.2, windows=[Window(start_s=50, duration_s=100)]),
        ]
    )
    # 0..50: 0.5; 50..100: 0.5*0.2 = 0.1; 100..150: 0.2
    assert build_plan(spec, 0).rate_windows == [(0.0, 50.0, 0.5), (50.0, 100.0, 0.1), (100.0, 150.0, 0.2)]


def test_disjoint_merges_adjacent_equal_factors_and_drops_factor_one():
    """disjoint_windows joins touching windows with the same factor and drops factor-1 windows."""
    assert disjoint_windows([(0.0, 10.0, 0.5), (10.0, 20.0, 0.5), (30.0, 40.0, 1.0)]) == [(0.0, 20.0, 0.5)]


def test_disjoint_nested_window():
    """A window nested in another splits it into three pieces."""
    # outer 0..30 x0.5, inner 10..20 x0.5 -> 0..10 0.5, 10..20 0.25, 20..30 0.5
    assert disjoint_windows([(0.0, 30.0, 0.5), (10.0, 20.0, 0.5)]) == [
        (0.0, 10.0, 0.5),
        (10.0, 20.0, 0.25),
        (20.0, 30.0, 0.5),
    ]


def test_disjoint_gap_between_windows():
    """Disjoint windows with a gap stay separate and the gap is not a window."""
    assert disjoint_windows([(30.0, 40.0, 0.1), (0.0, 10.0, 0.1)]) == [(0.0, 10.0, 0.1), (30.0, 40.0, 0.1)]


def test_fault_plan_describe():
    """describe() lists the scheduled faults in words."""
    spec = world(
        [
            DiskFull(events=[NodeEvent(worker=1, at_s=100.0)], cleanup_after_s=50.0),
            ExpiredKey(events=[NodeEvent(worker=2, at_s=300.0)]),
            RateLimit(capacity_factor=0.05, windows=[Window(start_s=60, duration_s=60)]),
        ]
    )
    assert build_plan(spec, 0).describe() == [
        "worker 1: disk full from 100s to 150s",
        "worker 2: API key expires at 300s",
        "fleet: API rate x0.05 from 60s to 120s",
    ]


def _grants(pool_kind: str, capacity: int, jobs: list[tuple[float, float]]) -> list[tuple[float, int]]:
    """(time, job) of each slot grant when ``jobs`` (arrival, hold) contend for ``capacity`` slots."""
    env = simpy.Environment()
    grants: list[tuple[float, int]] = []
    if pool_kind == "resource":
        res = simpy.Resource(env, capacity=capacity)

        def job(i, hold):
            with res.request() as req:
                yield req
                grants.append((env.now, i))
                yield env.timeout(hold)
    else:
        pool = SlotPool(env, capacity)

        def job(i, hold):
            wait = pool.acquire(env.now)
            if wait is not None:
                yield wait
            grants.append((env.now, i))
            yield env.timeout(hold)
            pool.release()

    def source():
        for i, (arrival, hold) in enumerate(jobs):
            yield env.timeout(arrival - env.now)
            env.process(job(i, hold))

    env.process(source())
    env.run()
    return grants


@pytest.mark.parametrize("capacity", [1, 2, 3])
@pytest.mark.parametrize("ties", [False, True], ids=["continuous-times", "integer-times"])
def test_slot_pool_grants_like_a_simpy_resource(capacity, ties):
    """Same grants, same instants, same order as simpy.Resource under heavy contention.

    With integer times, arrivals, releases and new requests fall on the same instants, so
    the order of events due at one instant matters (a free slot must not be taken before
    events already due, a released slot passes on when its release event is processed).
    """
    import random

    rng = random.Random(capacity)
    t = 0.0
    jobs = []
    for _ in range(300):
        if ties:
            t += rng.choice([0, 0, 1, 2])
            jobs.append((t, float(rng.choice([1, 2, 3]))))
        else:
            t += rng.expovariate(1.0)
            jobs.append((t, rng.expovariate(1.0 / (1.5 * capacity))))
    resource = _grants("resource", capacity, jobs)
    assert _grants("pool", capacity, jobs) == resource
    assert sum(1 for (when, i) in resource if when > jobs[i][0]) > 50  # many jobs really waited


def test_slot_pool_takes_a_free_slot_without_an_event_and_hands_over_in_order():
    env = simpy.Environment()
    pool = SlotPool(env, 2)
    assert pool.acquire(env.now) is None and pool.acquire(env.now) is None  # nothing else due now: no event
    assert pool.count == 2 and pool.queued == 0
    first, second = pool.acquire(env.now), pool.acquire(env.now)
    assert first is not None and second is not None and pool.queued == 2
    pool.release()  # handed to the longest waiter when the release event is processed
    assert not first.triggered and pool.count == 1
    env.step()
    assert first.triggered and not second.triggered and pool.count == 2 and pool.queued == 1
    pool.release()
    env.run()
    assert second.triggered and pool.queued == 0 and pool.count == 2
    pool.release()
    pool.release()
    assert pool.count == 0


def test_a_free_slot_taken_while_events_are_due_waits_behind_them():
    env = simpy.Environment()
    pool = SlotPool(env, 1)
    env.timeout(0)  # another event due at this instant
    granted = pool.acquire(env.now)
    assert granted is not None and granted.triggered and pool.count == 1


def _resource_backed_pool():
    """A SlotPool stand-in built on simpy.Resource, the semantics SlotPool must reproduce."""

    class ResourcePool:
        def __init__(self, env, capacity):
            self.env = env
            self.resource = simpy.Resource(env, capacity=capacity)
            self.held: dict = {}

        def acquire(self, now):
            request = self.resource.request()
            self.held.setdefault(self.env.active_process, []).append(request)
            return request

        def release(self):
            self.resource.release(self.held[self.env.active_process].pop())

    return ResourcePool


TIED_WORLD = {
    # Every time is an integer or a half: two tasks reach the shared branch at the same instant.
    "name": "same-instant-pushes",
    "duration_s": 600,
    "fleet": {
        "orchestrators": 1, "workers": 2, "tool_slots": 1, "network_latency": {"mean_s": 0.5, "cv": 0},
        "api_rate_per_s": 100, "api_burst": 100, "misread_probability": 0,
    },
    "workload": {
        "templates": [
            {"name": "slowpush", "steps": [
                {"tool": "plan", "duration": {"mean_s": 3, "cv": 0}, "tokens": 0},
                {"tool": "git_push", "duration": {"mean_s": 1, "cv": 0}, "uses_api": False, "side_effect": "append",
                 "tokens": 0}]},
            {"name": "fastpush", "steps": [
                {"tool": "plan", "duration": {"mean_s": 1, "cv": 0}, "tokens": 0},
                {"tool": "git_push", "duration": {"mean_s": 1, "cv": 0}, "uses_api": False, "side_effect": "append",
                 "tokens": 0}]},
        ],
        "arrivals": [{"at_s": 0, "template": "slowpush", "count": 3}, {"at_s": 0, "template": "fastpush", "count": 3},
                     {"at_s": 2, "template": "fastpush", "count": 2}],
    },
    "faults": [{"kind": "git_push_conflict", "branches": 1}],
}  # fmt: skip


@pytest.mark.parametrize("policy", ["blind-retry", "backoff", "structured"])
def test_a_world_on_slot_pools_runs_as_one_on_simpy_resources(monkeypatch, policy):
    """Ties everywhere (constant durations, simultaneous arrivals, one shared branch): the
    same records, call for call, as the world built on simpy.Resource."""
    import json

    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.load import Scenario
    from fleetchaos.sim import fleet

    scenario = Scenario.model_validate(TIED_WORLD)
    pooled = run_one(scenario, policy, "structured", 1, keep_tasks=True)
    monkeypatch.setattr(fleet, "SlotPool", _resource_backed_pool())
    on_resources = run_one(scenario, policy, "structured", 1, keep_tasks=True)
    assert json.dumps([pooled.metrics, pooled.tasks], sort_keys=True) == json.dumps(
        [on_resources.metrics, on_resources.tasks], sort_keys=True
    )
    assert pooled.breakdowns["fault_hits_by_kind"].get("git_push_conflict", 0) > 0  # the pushes really contend


@pytest.mark.parametrize("template", ["coding", "research", "crm_sync", "triage"])
def test_a_title_picks_what_choosing_from_the_pools_would(template):
    """Titles drawn lazily read exactly as drawing from built pools with the same stream."""
    import random

    from fleetchaos.sim.workload import NamePools, TitleSource

    pools = NamePools.build(7)
    lazy, eager = random.Random(11), random.Random(11)
    source = TitleSource(7)
    titles = [source.pick(template, lazy) for _ in range(30)]
    assert source._pools is None  # nothing built until a title is read
    for title in titles:
        if template == "coding":
            expected = f"fix {eager.choice(pools.files)} in {eager.choice(pools.repos)}"
        elif template == "research":
            expected = f"research: {eager.choice(pools.topics)}"
        elif template == "crm_sync":
            expected = f"sync contacts of {eager.choice(pools.companies)}"
        else:
            expected = f"{template}: {eager.choice(pools.topics)}"
        assert str(title) == expected
    assert lazy.random() == eager.random()  # the stream is left where picking from the pools leaves it


def test_bisecting_cumulative_weights_draws_what_random_choices_draws():
    """The workload picks a task's template with bisect over cumulative weights: the same
    index and the same use of the stream as ``rng.choices(..., cum_weights=...)``."""
    import bisect
    import itertools
    import random

    for seed in range(100):
        shape = random.Random(seed)
        weights = [shape.uniform(0.1, 5.0) for _ in range(shape.randint(1, 6))]
        cum = list(itertools.accumulate(weights))
        chooser, bisector = random.Random(seed * 7), random.Random(seed * 7)
        for _ in range(100):
            expected = chooser.choices(range(len(cum)), cum_weights=cum)[0]
            assert bisect.bisect(cum, bisector.random() * (cum[-1] + 0.0), 0, len(cum) - 1) == expected


def _reference_arrivals(spec, seed: int, horizon_s: float, orchestrators: int) -> list[tuple]:
    """The Poisson workload drawn the plain way: ``rng.choices(range(n), cum_weights=...)`` per task.

    Mirrors :func:`fleetchaos.sim.workload.arrivals` draw for draw: an exponential gap at
    the peak rate, diurnal thinning with one ``rng.random()``, then the template, then the
    title picks (``TitleSource.pick``, which consumes the same stream).
    """
    import itertools
    import random

    from fleetchaos.sim.config import DAY_S
    from fleetchaos.sim.workload import PEAK_HOUR_S, S_WORKLOAD, TitleSource

    rng = random.Random(_rng.key(seed, S_WORKLOAD))
    titles = TitleSource(seed)
    names = [t.name for t in spec.templates]
    cum = list(itertools.accumulate(t.weight for t in spec.templates))
    base = spec.tasks_per_day / DAY_S
    amp = spec.diurnal_amplitude
    peak = base * (1.0 + amp)
    out, t = [], 0.0
    while True:
        t += rng.expovariate(peak)
        if t >= horizon_s:
            return out
        if amp > 0:
            rate = base * (1.0 + amp * math.cos(2.0 * math.pi * (t - PEAK_HOUR_S) / DAY_S))
            if rng.random() * peak > rate:
                continue
        template = rng.choices(range(len(cum)), cum_weights=cum)[0]
        title = titles.pick(names[template], rng)
        out.append((len(out), t, template, len(out) % orchestrators, names[template], title.picks))


@pytest.mark.parametrize(
    "weights, amplitude",
    [
        (None, 0.5),  # the default templates (coding 0.55, research 0.3, crm_sync 0.15), diurnal
        (None, 0.0),  # flat arrivals: no thinning draw
        ([("triage", 0.05), ("coding", 3.0), ("crm_sync", 0.4), ("research", 1.7), ("ops", 0.01)], 0.8),
    ],
    ids=["default", "flat", "five-uneven"],
)
def test_arrivals_pick_the_templates_random_choices_would_pick(weights, amplitude):
    """workload.arrivals() itself: every task's time, template, orchestrator and title picks equal
    a reference loop that draws the template with ``rng.choices(..., cum_weights=...)`` on the same stream."""
    from collections import Counter

    from fleetchaos.sim.config import TemplateSpec, WorkloadSpec
    from fleetchaos.sim.workload import arrivals

    kw: dict = {"tasks_per_day": 2000, "diurnal_amplitude": amplitude}
    if weights is not None:
        kw["templates"] = [
            TemplateSpec(name=n, weight=w, steps=[{"tool": "t", "duration": {"mean_s": 1}}]) for n, w in weights
        ]
    spec = WorkloadSpec(**kw)
    for seed in (1, 7, 123):
        got = [
            (task.id, task.arrival_s, task.template, task.orchestrator, task.title.template_name, task.title.picks)
            for task in arrivals(spec, seed, 86_400.0, 3)
        ]
        expected = _reference_arrivals(spec, seed, 86_400.0, 3)
        assert len(got) > 1000  # about 2,000 tasks a day
        assert got == expected
        # every template really drawn, so a wrong index could not hide behind an unused one
        assert len(Counter(g[2] for g in got)) == len(spec.templates)


class _LinearScanBucket(TokenBucket):
    """The bucket as it was before binary search: every lookup scans every window."""

    __slots__ = ()

    def _refill_amount(self, a: float, b: float) -> float:
        amount = self.rate * (b - a)
        for start, end, factor in self.windows:
            lo, hi = max(start, a), min(end, b)
            if hi > lo:
                amount -= self.rate * (1.0 - factor) * (hi - lo)
        return amount

    def rate_at(self, now: float) -> float:
        rate = self.rate
        for start, end, factor in self.windows:
            if start <= now < end:
                rate *= factor
        return rate

    def _window_at(self, t: float) -> int:
        for i, (_, end, _) in enumerate(self.windows):
            if end > t:
                return i
        return len(self.windows)


def test_token_bucket_binary_search_gives_the_linear_scans_floats():
    """Takes, refusals and retry-after hints, bit for bit, over random disjoint windows
    (touching ones, zero factors, requests inside, between and past them)."""
    import random

    rng = random.Random(11)
    for _ in range(40):
        windows, t = [], 0.0
        for _ in range(rng.randint(1, 12)):
            t += rng.choice([0.0, rng.uniform(0.1, 50.0)])  # 0.0: touching the previous window
            end = t + rng.uniform(0.5, 40.0)
            windows.append((t, end, rng.choice([0.0, 0.02, 0.5])))
            t = end
        rate, burst = rng.uniform(0.2, 3.0), rng.randint(1, 5)
        fast, slow = TokenBucket(rate, burst, list(windows)), _LinearScanBucket(rate, burst, list(windows))
        now = 0.0
        for _ in range(300):
            now += rng.expovariate(1.0)
            assert fast.take(now) == slow.take(now)
            assert fast.tokens == slow.tokens
            if rng.random() < 0.1:
                assert fast.charge_refusal(now, 0.5) == slow.charge_refusal(now, 0.5)


def test_token_bucket_refuses_overlapping_windows():
    with pytest.raises(ValueError, match="disjoint and sorted"):
        TokenBucket(1.0, 1.0, [(0.0, 10.0, 0.5), (5.0, 20.0, 0.5)])


def test_disjoint_rate_windows_match_the_pairwise_definition():
    """The sweep gives, float for float, what multiplying every covering window per elementary span gives."""
    import random

    from fleetchaos.sim.schedules import disjoint_windows

    def pairwise(windows):
        edges = sorted({t for s, e, _ in windows for t in (s, e)})
        out = []
        for a, b in itertools.pairwise(edges):
            factor = 1.0
            for s, e, f in windows:
                if s <= a and b <= e:
                    factor *= f
            if factor < 1.0:
                if out and out[-1][1] == a and out[-1][2] == factor:
                    out[-1] = (out[-1][0], b, factor)
                else:
                    out.append((a, b, factor))
        return out

    rng = random.Random(3)
    for _ in range(200):
        windows = []
        for _ in range(rng.randint(0, 15)):
            start = float(rng.randint(0, 60))  # integers: many shared and touching edges
            windows.append((start, start + rng.randint(1, 30), rng.choice([0.0, 0.3, 0.5, 0.9, 1.0])))
        assert disjoint_windows(windows) == pairwise(windows)


def test_span_table_gives_the_first_span_in_force_as_a_scan_would():
    """Overlapping spans with payloads: the binary search returns, at every instant, what a
    scan of the sorted spans for the first one in force returns (edges, gaps, nesting)."""
    import random

    from fleetchaos.sim.schedules import SpanTable

    rng = random.Random(8)
    for _ in range(200):
        entries = []
        for _ in range(rng.randint(0, 12)):
            start = float(rng.randint(0, 50))
            entries.append((start, start + rng.randint(1, 20), rng.choice([2.0, 3.0, 5.0]), rng.choice([0.0, 1.5])))
        table = SpanTable(entries)
        ordered = sorted(entries)
        for now in [x / 2 for x in range(0, 150)]:
            expected = next((e[2:] for e in ordered if e[0] <= now < e[1]), None)
            assert table.at(now) == expected, (entries, now)
        assert bool(table) == bool(entries)
