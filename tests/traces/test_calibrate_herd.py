"""A thundering herd comes back from its traces: tasks that all arrive at once, pushes that race for one branch,
and a bucket that refused none of them.

The hand-written world: 40 workers each push once at the same instant to one shared branch; push i takes
1 + i/10 s.  The first push to end (1 s) lands; each of the 39 others had that one push land while it ran, so
each is rejected.  One branch is the only count under which every raced push loses: B = 1.  No call was refused
by the API's bucket, though 40 went out at once: at the fitted rate the bucket must hold all 40 (twice: 80).
"""

from __future__ import annotations

import json

import pytest

from fleetchaos.calibrate.fit import calibrate
from fleetchaos.calibrate.pushes import branches_mle

EPOCH = 1_735_689_600.0 + 3_600.0  # 01:00 UTC


def _herd(path) -> None:
    records = []
    for i in range(40):
        record = {"time": EPOCH, "task": f"t{i}", "tool": "git_push", "worker": f"w{i}", "duration_s": 1 + i / 10}
        if i == 0:
            records.append({**record, "outcome": "ok"})
        else:
            records.append({**record, "outcome": "error", "error": "ERR_NON_FAST_FORWARD"})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_herd_is_replayed_at_its_instant_on_one_branch_through_a_bucket_that_holds_it(tmp_path):
    path = tmp_path / "herd.jsonl"
    _herd(path)
    fitted = calibrate([path])
    doc = fitted.document
    name = doc["workload"]["templates"][0]["name"]
    assert doc["workload"]["arrivals"] == [{"at_s": 3_600.0, "template": name, "count": 40}]
    assert "arrival_schedule" not in doc["workload"]
    [push] = [f for f in doc["faults"] if f["kind"] == "git_push_conflict"]
    assert push["branches"] == 1
    assert doc["fleet"]["api_burst"] == 80


@pytest.mark.parametrize(
    ("raced", "rejected", "branches"),
    [
        ([1, 1, 1, 1], [True] * 4, 1),  # every raced push lost: one branch
        ([1, 1, 1, 1], [True, True, False, False], 2),  # P(lost) = 1/B = 1/2
        ([1, 1, 1, 1], [True, False, False, False], 4),  # 1/B = 1/4
        ([2, 2, 2, 2], [True, True, True, False], 2),  # 1 - (1 - 1/B)^2 = 3/4: B = 2
        ([0, 0, 3], [False, False, True], 1),  # unraced pushes say nothing; the raced one lost
    ],
)
def test_the_branch_count_is_the_likeliest(raced, rejected, branches):
    assert branches_mle(raced, rejected) == branches
