"""The client's call timeout and the timeouts it accounts for, on hand-counted calls.

Each world below is a handful of calls whose durations and kinds are written out, so which
timeouts end at the call timeout, which are lone (a wait before dispatch) and which are hangs
is known by construction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fleetchaos.calibrate.call_timeout import fit_call_timeout, hangs_at
from fleetchaos.calibrate.observed import Calls
from fleetchaos.calibrate.provider import outlasts
from fleetchaos.traces.codes import FAULT_KINDS

TIMEOUT = FAULT_KINDS.index("timeout")


def _calls(rows: list[tuple[str, float, int]]) -> Calls:
    """Calls of ``(tool, duration, kind)`` (kind -1: success), one task each, a second apart."""
    n = len(rows)
    tools = sorted({r[0] for r in rows})
    return Calls(
        task=np.arange(n, dtype=np.int32),
        start=np.arange(n, dtype=np.float64),
        duration=np.array([r[1] for r in rows], dtype=np.float64),
        tool=np.array([tools.index(r[0]) for r in rows], dtype=np.int32),
        worker=np.zeros(n, dtype=np.int32),
        kind=np.array([r[2] for r in rows], dtype=np.int8),
        attempt=np.zeros(n, dtype=np.int32),
        item=np.zeros(n, dtype=np.int32),
        retry_after=np.full(n, np.nan),
        tools=tools,
        workers=["w0"],
        task_start=np.arange(n, dtype=np.float64),
        task_template=np.zeros(n, dtype=np.int32),
        templates=["t"],
        task_ids=[f"t{i}" for i in range(n)],
    )


def test_the_longest_shared_timeout_is_the_call_timeout():
    """Four timeouts at 180 s, three hangs at 90 s (a cluster), two lone ones below (97.3 s, 151.2 s: a wait for
    a slot before the call went out), successes up to 179 s."""
    rows = [("a", 180.0, TIMEOUT)] * 3 + [("a", 180.02, TIMEOUT)]
    rows += [("a", 90.0, TIMEOUT)] * 3 + [("a", 97.3, TIMEOUT), ("a", 151.2, TIMEOUT)]
    rows += [("a", d, -1) for d in (10.0, 50.0, 179.0)]
    ct = fit_call_timeout(_calls(rows))
    assert ct is not None and ct.seconds == 180.02
    assert ct.at.tolist() == [True] * 4 + [False] * 8
    assert ct.lone.tolist() == [False] * 7 + [True, True] + [False] * 3


@pytest.mark.parametrize(
    "rows",
    [
        [("a", 180.0, TIMEOUT)] * 2 + [("a", 90.0, TIMEOUT)] * 5,  # two at the longest: not a cluster
        [("a", 180.0, TIMEOUT)] * 4 + [("a", 200.0, -1)],  # a success outlasted it: the client waited longer
        [("a", 180.0, -1)] * 5,  # no timeout at all
        # late replies at a backend whose queue ran away: their durations spread, none shared (they are 5 s apart,
        # within 0.1% of each other but a client's timeout is one number: never more than a second apart)
        [("a", 57_650.0 + 5 * i, TIMEOUT) for i in range(5)] + [("a", 164.0, -1)],
    ],
)
def test_no_call_timeout_without_its_mark(rows):
    assert fit_call_timeout(_calls(rows)) is None


def test_timeouts_at_it_beyond_what_the_calls_chances_explain_are_hangs():
    """Tool a: 10 timeouts at 60 s among 100 calls whose chances to outlast 60 s are 0.02 each (2 expected; the
    Poisson count's 99th percentile is 6): 10 - 2 = 8 are hangs, the lowest chances first.  Tool b: 3 at 60 s
    where 2.5 are expected: all three are the client giving up."""
    rows = [("a", 60.0, TIMEOUT)] * 10 + [("a", 5.0, -1)] * 90 + [("b", 60.0, TIMEOUT)] * 3 + [("b", 5.0, -1)] * 47
    calls = _calls(rows)
    ct = fit_call_timeout(calls)
    assert ct is not None and ct.seconds == 60
    chance = np.full(len(rows), 0.02)
    chance[:10] = [0.05, 0.01, 0.02, 0.03, 0.04, 0.06, 0.07, 0.08, 0.09, 0.001]  # sum 0.451 at it
    chance[100:150] = 0.05  # tool b: 50 calls, 2.5 expected
    reached = np.ones(len(rows), dtype=bool)
    hang, found = hangs_at(ct, calls, chance, reached)
    expected_a = 0.451 + 90 * 0.02  # 2.251: 2 to keep
    assert math.floor(expected_a + 0.5) == 2
    # The two kept are the two likeliest: 0.09 (index 8) and 0.08 (index 7).
    assert np.flatnonzero(hang).tolist() == [0, 1, 2, 3, 4, 5, 6, 9]
    assert found == ["a: 10 at it, 2.25 expected, 8 taken as hangs"]


@pytest.mark.parametrize(("bound", "mu", "sigma"), [(5.0, 2.0, 0.3), (20.0, 2.0, 0.3), (1.0, 0.5, 1.2)])
def test_a_service_outlasting_the_patience_against_scipy(bound, mu, sigma):
    """The chance a log-normal service outlasts ``bound`` and its median given that it does, against SciPy's own."""
    law = stats.lognorm(s=sigma, scale=math.exp(mu))
    chance, median = outlasts(bound, mu, sigma)
    assert chance == pytest.approx(law.sf(bound), rel=1e-9)
    assert median == pytest.approx(law.isf(law.sf(bound) / 2), rel=1e-7)
    assert median > bound
    assert outlasts(-1.0, mu, sigma) == (1.0, pytest.approx(math.exp(mu)))  # already past its patience: certain
