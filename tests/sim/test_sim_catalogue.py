"""The scenario catalogue: every scenario validates, runs through `fleetchaos compare`, and
exercises the faults it declares; the reference stories are each covered."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from long_worlds import catalogue_params

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.policies import get_policy
from fleetchaos.scenario.load import load_scenario
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.kinds import REPORTING, kinds_in
from fleetchaos.sim.world import World

#: The stories of the reference documents and the issue, by catalogue name.
STORIES = {
    "overnight_coding": "an overnight coding run on the 12-node fleet",
    "research_fanout": "a research fan-out to 5 sources where 2 time out",
    "coordinator_subagents": "a coordinator with parallel subagents",
    "crm_sync_403": "a CRM sync with 5 parallel writes where 3 hit 403",
    "expired_key_night": "an expired-key night",
    "disk_full_worker": "a disk-full worker",
    "rate_limit_storm": "a rate-limit storm",
    "git_push_contention": "git push contention",
    "flaky_network": "a flaky network",
    "schema_drift_rollout": "a schema-drift rollout",
    "crash_and_partition": "crash and partition",
    "mixed_production_day": "a mixed production day",
    "swarm_worlds": "worlds drawn from swarm ranges",
    "closed_loop_quota": "closed-loop clients",
    "imperfect_contracts": "envelopes that are sometimes wrong",
    "partial_results_tradeoff": "resuming keeps work a tool faked",
}

#: The arms every catalogue scenario is compared on here (2 policies x 2 error formats).
ARMS = {(p, e) for p in ("structured", "blind-retry") for e in ("structured", "generic")}


@pytest.fixture(scope="module")
def compared() -> dict[str, dict]:
    """A memo of `compare --json` documents by scenario name (one CLI run per scenario)."""
    return {}


def compare_json(name: str, memo: dict[str, dict], tmp_path_factory) -> dict:
    """`fleetchaos compare --scenario NAME --seeds 1 --jobs 1` on two arms, as parsed JSON."""
    if name not in memo:
        history = tmp_path_factory.mktemp("history") / "history.db"
        result = CliRunner(env={"FLEETCHAOS_HISTORY": str(history)}).invoke(
            main,
            [
                "compare",
                "--scenario",
                name,
                "--seeds",
                "1",
                "--jobs",
                "1",
                "--policies",
                "structured,blind-retry",
                "--errors",
                "structured,generic",
                "--json",
                "--no-expect",  # a scenario's own gates judge its own arms; these four run every scenario
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        memo[name] = json.loads(result.stdout)
    return memo[name]


def test_catalogue_has_every_story():
    """The catalogue holds a scenario for every story, plus default: at least 12 besides it."""
    names = catalogue.names()
    assert set(STORIES) <= set(names)
    assert len(set(names) - {"default"}) >= 12


@pytest.mark.parametrize("name", catalogue.names())
def test_scenario_is_described_and_validates(name):
    """Each scenario loads, carries its own name, a description and what it reveals, and has faults, a provider to
    overload or tool outputs whose tail can pass the model's window (context_pressure)."""
    sc = load_scenario(name)
    assert sc.name == name
    assert len(sc.description.split()) >= 15 and len(sc.reveals.split()) >= 10
    # injected faults, a provider whose capacity the load can exceed, or a context that can pass the window
    assert sc.faults or sc.fleet.providers or sc.fleet.model.result_tokens_sigma > 0
    assert "time scale" in (sc.description + sc.reveals).lower()  # which time scale a policy must reach


def test_cli_validates_the_whole_catalogue():
    """`fleetchaos scenarios validate` accepts every catalogue name at once (exit 0)."""
    result = CliRunner().invoke(main, ["scenarios", "validate", *catalogue.names()])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("ok: ") == len(catalogue.names())


@pytest.mark.parametrize("name", catalogue_params())  # the long worlds (tests/long_worlds.py) in `make test-all`
def test_scenario_runs_and_exercises_its_faults(name, compared, tmp_path_factory):
    """A 1-seed compare runs and every fault kind the scenario declares hits calls in some arm."""
    doc = compare_json(name, compared, tmp_path_factory)
    arms = {(a["policy"], a["errors"]): a for a in doc["arms"]}
    assert set(arms) == ARMS
    hits: dict[str, int] = {}
    for arm in arms.values():
        assert arm["metrics"]["tasks"] > 50
        assert arm["metrics"]["faulted_tasks"] > 0
        for kind, n in arm["breakdowns"]["fault_hits_by_kind"].items():
            hits[kind] = hits.get(kind, 0) + n
    declared = {f.kind for f in load_scenario(name).faults} - set(kinds_in(REPORTING))
    missing = sorted(k for k in declared if not hits.get(k))
    assert not missing, f"{name}: declared fault kinds never hit a call: {missing} (hits: {hits})"


def test_the_catalogue_covers_every_fault_kind():
    """Across the catalogue, every fault kind is declared by some scenario, and context_overflow, which none declares,
    emerges in context_pressure's."""
    from fleetchaos.testing.kind_strategies import ALL_KINDS

    declared = {f.kind for name in catalogue.names() for f in load_scenario(name).faults}
    assert declared == set(ALL_KINDS)
    assert load_scenario("context_pressure").fleet.model.result_tokens_sigma > 0


def test_overnight_coding_is_the_12_node_fleet_at_night():
    """The overnight run is 2 orchestrators and 10 workers, midnight to 08:00, coding only."""
    sc = load_scenario("overnight_coding")
    assert (sc.fleet.orchestrators, sc.fleet.workers, sc.duration_s) == (2, 10, 8 * 3600)
    assert [t.name for t in sc.workload.templates] == ["coding"]


def test_research_fanout_hides_gaps_behind_generic_ok(compared, tmp_path_factory):
    """5 parallel sources: the generic format passes partial searches on as success, the envelope far less often."""
    sc = load_scenario("research_fanout")
    assert sc.workload.templates[0].steps[0].fan_out == 5
    arms = {
        (a["policy"], a["errors"]): a["metrics"]
        for a in compare_json("research_fanout", compared, tmp_path_factory)["arms"]
    }
    generic = arms[("blind-retry", "generic")]["silent_failure_rate"]
    assert generic > 0.05
    assert arms[("structured", "structured")]["silent_failure_rate"] < generic / 5


def test_crm_sync_403_fails_3_of_5_writes(compared, tmp_path_factory):
    """Writes 2, 3 and 4 of the 5 are refused in the window; generic says 'sync complete', structured mostly escalates."""
    sc = load_scenario("crm_sync_403")
    (denied,) = [f for f in sc.faults if f.kind == "permission_denied"]
    assert denied.items == [2, 3, 4] and denied.tools == ["update_contact"]
    assert sc.workload.templates[0].steps[1].fan_out == 5
    arms = {
        (a["policy"], a["errors"]): a["metrics"]
        for a in compare_json("crm_sync_403", compared, tmp_path_factory)["arms"]
    }
    generic = arms[("blind-retry", "generic")]["silent_failure_rate"]
    assert generic > 0.1
    assert arms[("structured", "structured")]["silent_failure_rate"] < generic / 5
    assert arms[("structured", "structured")]["escalations"] > 0


def test_rate_limit_storm_outlives_its_window():
    """Refused requests cost tokens, so 429s continue after the provider's cut has ended."""
    sc = load_scenario("rate_limit_storm")
    assert sc.fleet.api_reject_cost > 0
    (cut,) = [f for f in sc.faults if f.kind == "rate_limit"]
    end = cut.windows[0].start_s + cut.windows[0].duration_s
    out = World(sc, get_policy("structured"), get_format("structured"), 1).run()
    after = [t for t, kind, *_ in out.fault_log if kind == "rate_limit" and t >= end]
    assert len(after) > 50


def test_git_push_contention_has_many_pushers_on_few_branches():
    """Many workers share few branches."""
    sc = load_scenario("git_push_contention")
    (push,) = [f for f in sc.faults if f.kind == "git_push_conflict"]
    assert sc.fleet.workers >= 30 and push.branches <= 3


def test_schema_drift_rollout_shows_older_envelopes():
    """Workers on the old contract emit envelopes with another schema_version during the rollout."""
    sc = load_scenario("schema_drift_rollout")
    out = World(sc, get_policy("structured"), get_format("structured"), 1).run()
    assert sum(r.schema_skews for r in out.records) > 0


def test_swarm_worlds_draw_different_parameters_per_seed():
    """Two seeds of the swarm scenario resolve its ranges to different fault parameters."""
    from fleetchaos.sim.faults import build_plan

    sc = load_scenario("swarm_worlds")
    assert all(f.swarm for f in sc.faults)
    assert build_plan(sc, 1).resolved != build_plan(sc, 2).resolved


def test_closed_loop_quota_is_closed_loop():
    """The closed-loop scenario uses clients with think time and a daily quota."""
    sc = load_scenario("closed_loop_quota")
    assert sc.workload.clients and sc.workload.arrivals is None
    assert any(f.kind == "quota_exhausted" for f in sc.faults)
