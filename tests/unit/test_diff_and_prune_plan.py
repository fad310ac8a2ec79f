"""The diff of two sides and the prune plan, on hand-made runs: pairing, the common set, warnings, what is kept."""

from __future__ import annotations

import json

import pytest

from fleetchaos.errors import UserError
from fleetchaos.gates.diff import diff_sides
from fleetchaos.gates.diff_sides import DiffRun, Side, load_side
from fleetchaos.gates.history_rows import Group
from fleetchaos.gates.prune import parse_before, plan_prune
from fleetchaos.results.common_set import encode


def bits(*tasks: int) -> str:
    """A task-set bitmap holding ``tasks``."""
    raw = bytearray(8)
    for t in tasks:
        raw[t // 8] |= 1 << (t % 8)
    return encode(raw)


def run(seed, success, *, policy="p", scenario="s", params="{}", sets=None) -> DiffRun:
    """A run of ``policy`` on e with the given success rate (and task sets, for the common set)."""
    return DiffRun(
        scenario, params, policy, "e", seed, {"success_rate": success, "common_recovery_rate": 0.5}, sets or {}
    )


def test_the_difference_is_b_minus_a_over_the_common_seeds():
    """Seeds 1-3 pair; seed 4 only in B is listed, not used; means are over the pairs."""
    a = Side("a", "A", [run(1, 0.5), run(2, 0.6), run(3, 0.7)])
    b = Side("b", "B", [run(1, 0.6), run(2, 0.8), run(3, 0.7), run(4, 0.0)])
    (arm,) = diff_sides(a, b, metrics=("success_rate",)).arms
    (m,) = arm.metrics
    assert arm.paired_seeds == (1, 2, 3) and arm.only_b == (4,) and arm.only_a == ()
    assert m.pairs == 3 and m.difference == pytest.approx(0.1)
    assert m.a_mean == pytest.approx(0.6) and m.b_mean == pytest.approx(0.7)
    assert m.low < 0.1 < m.high and m.low >= -1 and m.high <= 1


def test_common_recovery_is_recomputed_on_each_pairs_union():
    """A faulted {0, 1} recovering 0; B faulted {1, 2} recovering 1 and 2: on the union {0, 1, 2}, 1/3 against 2/3."""
    a = Side("a", "A", [run(1, 0.5, sets={"faulted": bits(0, 1), "succeeded": bits(0)})])
    b = Side("b", "B", [run(1, 0.5, sets={"faulted": bits(1, 2), "succeeded": bits(1, 2)})])
    (m,) = diff_sides(a, b, metrics=("common_recovery_rate",)).arms[0].metrics
    assert (m.a_mean, m.b_mean) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert "recomputed on the tasks faulted in the arms both ran" in m.note


def test_arms_and_scenarios_that_differ_are_said():
    """Other arm names are unpaired; another scenario name and another fingerprint are warnings."""
    a = Side("a", "A", [run(1, 0.5, policy="p"), run(1, 0.5, policy="q")], fingerprints={"s": "1" * 16})
    b = Side("b", "B", [run(1, 0.5, policy="p", scenario="t")], fingerprints={"t": "2" * 16})
    result = diff_sides(a, b)
    assert [(u.side, u.policy) for u in result.unpaired] == [("A", "q")]
    assert any("different scenarios: A ran 's', B ran 't'" in w for w in result.warnings)
    same_name = diff_sides(a, Side("b", "B", [run(1, 0.5)], fingerprints={"s": "3" * 16}))
    assert any("scenario 's' differs between the sides" in w for w in same_name.warnings)
    unknown = diff_sides(a, Side("b", "B", [run(1, 0.5)]))
    assert unknown.warnings == [] and any("recorded no fingerprint" in n for n in unknown.notes)


def test_sweep_points_are_paired_point_by_point():
    """Two variants a side: arms pair within a variant; a point only one side has is listed."""
    low, high = json.dumps({"x": 0.1}), json.dumps({"x": 0.2})
    a = Side("a", "A", [run(1, 0.5, params=low), run(1, 0.4, params=high)])
    b = Side("b", "B", [run(1, 0.7, params=low), run(1, 0.1, params=json.dumps({"x": 0.3}))])
    result = diff_sides(a, b, metrics=("success_rate",))
    assert [(arm.params, arm.metrics[0].difference) for arm in result.arms] == [(low, pytest.approx(0.2))]
    assert sorted((u.side, u.params) for u in result.unpaired) == [("A", high), ("B", json.dumps({"x": 0.3}))]


def test_a_sweep_results_file_is_read_point_by_point(tmp_path):
    """A sweep's results.json gives one run per entry and seed, with the entry's parameters."""
    entry = {"scenario": "s", "params": {"x": 1}, "policy": "p", "errors": "e",
             "per_seed": {"success_rate": [0.5, 0.6]}}  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"grid": {"x": [1]}, "seeds": [3, 4], "entries": [entry]}))
    side = load_side(str(path))
    assert [(r.seed, r.params, r.metrics["success_rate"]) for r in side.runs] == [
        (3, '{"x":1}', 0.5),
        (4, '{"x":1}', 0.6),
    ]
    path.write_text(json.dumps({"grid": {}, "seeds": "3", "entries": []}))
    with pytest.raises(UserError, match="field 'seeds' must be a list"):
        load_side(str(path))


def group(gid, scenario="s", label=None, status="complete", created="2025-01-0{}T00:00:00+00:00") -> Group:
    """A stored group created on day ``gid`` of January 2025."""
    return Group(gid, "compare", scenario, label, status, created.format(gid), {}, 1)


def test_prune_keeps_the_newest_per_scenario_running_groups_and_each_labels_newest():
    """--keep 1 removes older groups of each scenario, but never a running group or the newest of a label."""
    groups = [
        group(6),
        group(5, "t"),
        group(4, label="main"),
        group(3, status="running"),
        group(2),
        group(1, label="main"),
    ]
    plan = plan_prune(groups, keep=1)
    assert [g.id for g in plan.remove] == [2, 1]
    assert [(g.id, why.split(":")[0]) for g, why in plan.kept] == [
        (4, "the newest group labelled 'main' (what --baseline main names)"),
        (3, "running"),
    ]
    both = plan_prune(groups, keep=1, before=parse_before("2025-01-02"))
    assert [g.id for g in both.remove] == [1]  # a group is removed when every rule says so
    with pytest.raises(UserError, match="give --keep N"):
        plan_prune(groups)
