"""The MCP boundary's kinds in hand-computed worlds: what each does to the truth, and what a retry or a renewal does.

Every figure below is computed by hand from the world's constants: a round trip of 0.1 s
(latency 0.05 s each way, cv 0), one ``post`` step of 2 s that appends, and the records'
fail-fast seconds (a protocol error 0.2 s, a closed connection 0.05 s, an expired session and
an unknown tool 0.1 s).  Where a keyed draw decides (an expired session or a drifted list is
drawn per task, step and renewal), the seed is chosen here from the documented key chain
(``task_key(run_key(seed), task)``, ``persistent_key(task, step, 0, renewals)``, the rule's
stream ``call:KIND:INDEX``) so that the first session is expired and the renewed one is not.
"""

from __future__ import annotations

import pytest

from fleetchaos.policies.mcp_recovery import StructuredMcpTree, renewal_of
from fleetchaos.policies.registry import get_policy
from fleetchaos.results.metrics import compute_run
from fleetchaos.sim import _rng
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.kinds import EXHAUSTED_RESOURCE, PERMANENT_ERROR
from fleetchaos.sim.observation import (
    GiveUp,
    RefreshCredentials,
    RefreshTools,
    ReinitSession,
    Retry,
)
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import CallToolResult, McpProtocolError

POST = {"tool": "post", "duration": {"mean_s": 2, "cv": 0}, "side_effect": "append"}


class Then:
    """Answers the first failures with ``actions`` in order (each after ``delay_s``), then gives up."""

    def __init__(self, *actions: type, delay_s: float = 5.0):
        self.actions = actions
        self.delay_s = delay_s
        self.name = "then"

    def decide(self, observation, history):
        if history.retries >= len(self.actions):
            return GiveUp()
        action = self.actions[history.retries]
        if action is RefreshCredentials:
            return RefreshCredentials()
        return action(self.delay_s)


def _families(r, sim) -> dict[str, int]:
    """The run's wasted retries by family, as the metrics count them."""
    _, breakdowns, _ = compute_run(r.output, sim.scenario({"t": [POST]}).fleet)
    return breakdowns["wasted_retries_by_family"]


def _world(sim, fault: dict, steps: list[dict] | None = None):
    return sim.scenario({"t": steps or [POST]}, faults=[fault])


@pytest.mark.parametrize(
    "kind, fails_at, duplicates",
    [
        # the tool never ran: 0.1 s round trip + 0.2 s; retried at 5.3 s, done at 7.4 s; one ticket
        ("mcp_protocol_error", 0.3, 0),
        # the tool ran 3 s, created the ticket, and returned isError; retried at 8 s, done at 10.1 s: two tickets
        ("mcp_tool_error", 3.0, 1),
    ],
)
def test_a_protocol_error_retried_is_safe_and_an_is_error_retried_runs_twice(sim, kind, fails_at, duplicates):
    fault = {"kind": kind, "tools": ["post"], "probability": 1.0, "windows": [{"start_s": 0, "duration_s": 1}]}
    if kind == "mcp_tool_error":
        fault.update(committed_probability=1.0, ran_s=3.0)
    r = sim.run(_world(sim, fault), Then(Retry), "generic")
    rec = r.rec
    assert (rec.claim, rec.retries, rec.wasted_retries, rec.fault_hits) == ("success", 1, 0, {kind: 1})
    assert rec.end_s == pytest.approx(fails_at + 5.0 + 0.1 + 2.0)
    assert rec.commits == [[1 + duplicates]]
    assert r.metrics["duplicate_side_effects"] == duplicates


def _restart(sim):
    return _world(sim, {"kind": "mcp_server_restart", "tools": ["post"], "at_s": [0], "respawn_s": 30, "respawn_cv": 0})


def test_a_restarting_server_refuses_its_tools_until_it_is_back_and_retries_inside_the_respawn_are_wasted(sim):
    """Down from 0 s to 30 s: the call at 0 fails after 0.15 s, retries at 5.15 s and 10.3 s fail (both wasted)."""
    r = sim.run(_restart(sim), Then(Retry, Retry), "generic")
    rec = r.rec
    assert (rec.claim, rec.retries, rec.fault_hits) == ("failed", 2, {"mcp_server_restart": 3})
    assert rec.end_s == pytest.approx(3 * 0.15 + 2 * 5.0)
    assert rec.wasted_reasons == {"MCP server still respawning": 2}
    assert _families(r, sim) == {EXHAUSTED_RESOURCE: 2}
    assert r.output.plan.describe() == ["tool post: MCP server down from 0s, back at 30s"]


def test_a_policy_that_waits_out_the_respawn_recovers_without_waste(sim):
    """Waiting 40 s: the retry at 40.15 s finds the server back and ends at 42.25 s."""
    r = sim.run(_restart(sim), Then(Retry, delay_s=40.0), "generic")
    rec = r.rec
    assert (rec.claim, rec.retries, rec.wasted_retries) == ("success", 1, 0)
    assert rec.end_s == pytest.approx(0.15 + 40.0 + 0.1 + 2.0)
    assert r.out.recovered


def test_the_respawn_time_is_drawn_per_restart():
    """Two restarts with cv 1 get their own respawn times; cv 0 gives the mean exactly."""
    from fleetchaos.sim.fault_specs_mcp import McpServerRestart
    from fleetchaos.sim.plan import Placement
    from fleetchaos.sim.state_kinds_mcp import respawn_times

    at = Placement(seed=3, position=0, targets=(0,), horizon_s=10_000.0)
    varied = respawn_times(McpServerRestart(tools=["post"], at_s=[100, 500], respawn_s=30, respawn_cv=1.0), at)
    lengths = [end - start for start, end in varied]
    assert [start for start, _ in varied] == [100, 500] and lengths[0] != lengths[1] and min(lengths) > 0
    fixed = respawn_times(McpServerRestart(tools=["post"], at_s=[100], respawn_s=30, respawn_cv=0.0), at)
    assert fixed == [(100, pytest.approx(130))]


def _renewable_seed(kind: str, p: float) -> int:
    """A seed whose task 0 meets ``kind`` on step 0 with its first session or list and not with the renewed one."""
    stream = _rng.stream_id(f"call:{kind}:0")
    for seed in range(1000):
        task = _rng.task_key(_rng.run_key(seed), 0)
        first, renewed = (_rng.draw(_rng.persistent_key(task, 0, 0, n), stream) for n in (0, 1))
        if first < p <= renewed:
            return seed
    raise AssertionError("no such seed in 1000")


@pytest.mark.parametrize(
    "kind, renewal, other, reason",
    [
        ("mcp_session_expired", ReinitSession, RefreshTools, "the MCP session is still expired"),
        ("mcp_tool_drift", RefreshTools, ReinitSession, "the tool list is still stale"),
    ],
)
def test_a_retry_never_gets_past_a_stale_session_or_list_and_the_renewal_does(sim, kind, renewal, other, reason):
    """Retried on the same session or list, the call fails every time (each retry wasted, a permanent error retried);
    the other renewal, or refreshing credentials, renews nothing; the renewal made for it gets the call through."""
    world = _world(sim, {"kind": kind, "tools": ["post"], "probability": 0.5})
    seed = _renewable_seed(kind, 0.5)
    for stuck in (Then(Retry, Retry, Retry), Then(other), Then(RefreshCredentials)):
        r = sim.run(world, stuck, "structured", seed=seed)
        rec = r.rec
        assert rec.claim == "failed" and rec.fault_hits == {kind: rec.retries + 1}
        assert rec.wasted_reasons == {reason: rec.retries}
        assert _families(r, sim) == {PERMANENT_ERROR: rec.retries}
    r = sim.run(world, Then(renewal), "structured", seed=seed)
    rec = r.rec
    # failed at 0.2 s, renewed and retried at 5.2 s, done at 7.3 s; the renewal is not wasted
    assert (rec.claim, rec.retries, rec.wasted_retries, rec.fault_hits) == ("success", 1, 0, {kind: 1})
    assert rec.end_s == pytest.approx(0.2 + 5.0 + 0.1 + 2.0)
    assert rec.commits == [[1]] and r.out.recovered


def test_a_renewal_holds_for_the_rest_of_the_task(sim):
    """After a new session on step 0, a redo of the task from step 0 (a blip on step 1 retried from the start) goes out
    on the renewed session: step 0 is not refused again."""
    blip = {
        "kind": "network_blip",
        "tools": ["check"],
        "probability": 1.0,
        "windows": [{"start_s": 0, "duration_s": 8}],
    }
    session = {"kind": "mcp_session_expired", "tools": ["post"], "probability": 0.5}
    steps = [POST, {"tool": "check", "duration": {"mean_s": 1, "cv": 0}}]
    world = sim.scenario({"t": steps}, faults=[session, blip])
    seed = _renewable_seed("mcp_session_expired", 0.5)

    class FromTheStart:
        name = "from-the-start"

        def decide(self, observation, history):
            if history.retries >= 2:
                return GiveUp()
            return ReinitSession(5.0) if history.retries == 0 else Retry(5.0)  # resume_from 0: the whole task again

    r = sim.run(world, FromTheStart(), "generic", seed=seed)
    rec = r.rec
    # 0.2 s refused; renewed at 5.2 s: post done 7.3 s, check blips at 7.3 + 0.1 + 1 = 8.4 s; redo at 13.4 s:
    # post (the renewed session) 15.5 s, check 16.6 s
    assert rec.fault_hits == {"mcp_session_expired": 1, "network_blip": 1}
    assert (rec.claim, rec.retries) == ("success", 2)
    assert rec.end_s == pytest.approx(0.2 + 5.0 + 2.1 + 1.1 + 5.0 + 2.1 + 1.1)
    assert rec.commits == [[2], [1]]  # the redo posts again: a duplicate of a generic retry from the start


def observe(errors: str, kind: str):
    """Format ``errors``'s observation of ``kind`` failing step 1 of task 17."""
    report = AttemptReport(
        task_id=17, worker=3, start_step=0, failed_step=1, step_names=("fetch", "plan"), failure=kind
    )
    return get_format(errors).render(report)


@pytest.mark.parametrize("errors", ["structured", "tool-envelope", "mcp", "mcp-structured"])
def test_structured_mcp_renews_what_the_error_names(errors):
    """The session's and the tool list's renewals are read from each contract's code, or from the MCP client's
    protocol error message; a bare "failed" names nothing, and the tree renews what it reads."""
    tree = get_policy("structured-mcp")
    assert isinstance(tree, StructuredMcpTree)
    for kind, action in (("mcp_session_expired", ReinitSession), ("mcp_tool_drift", RefreshTools)):
        obs = observe(errors, kind)
        assert renewal_of(obs) is action, (errors, kind)
    for blind in ("generic", "subagent-result"):  # a bare word; a category (permission, validation) and no code
        assert renewal_of(observe(blind, "mcp_session_expired")) is None


def test_the_mcp_client_sees_each_boundary_failure_on_its_channel():
    """An expired session, an unknown tool and a server error are JSON-RPC errors to the client; an isError a result."""
    codes = {}
    for kind in ("mcp_session_expired", "mcp_tool_drift", "mcp_protocol_error", "mcp_server_restart"):
        envelope = observe("mcp", kind).envelope
        assert isinstance(envelope, McpProtocolError), kind
        codes[kind] = (envelope.error.code, envelope.error.message)
    assert codes == {
        "mcp_session_expired": (-32001, "Session not found"),
        "mcp_tool_drift": (-32602, "Unknown tool"),
        "mcp_protocol_error": (-32603, "Internal error"),
        "mcp_server_restart": (-32000, "Connection closed"),
    }
    shown = observe("mcp", "mcp_tool_error").envelope
    assert isinstance(shown, CallToolResult) and shown.is_error
