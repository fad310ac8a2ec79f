"""A fault kind added in one place (its record and its model) is realised, rendered, listed and documented.

Each test registers a throwaway kind the way a newcomer adds one: a
:class:`~fleetchaos.sim.kinds.FaultKind` record in ``KINDS`` and a pydantic model in
``FAULT_MODELS`` (monkeypatched, so nothing leaks into other tests), and nothing else.
Two throwaways cover the two per-call stages whose realisation is generic: a transient
kind that fails fast, and a persistent kind keyed per task and step (whose retries the
wasted-retry judge counts under the record's reason and family).

The scenario is built without the new fault and then given it with ``model_copy``: the
scenario loader's ``FaultSpec`` union is fixed when ``fault_specs`` is imported, so a
file naming the kind validates only once its model is in that module.
"""

from __future__ import annotations

import json
from typing import Literal

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.results.metrics import compute_run
from fleetchaos.scenario.docs import render as render_docs
from fleetchaos.sim.envelope import AgentToolError
from fleetchaos.sim.envelopes import FailureTypeError, SubagentResult, ToolEnvelope
from fleetchaos.sim.fault_specs import FAULT_MODELS, _CallFault
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.kinds import (
    KINDS,
    PERMANENT_ERROR,
    PERSISTENT,
    TASK_STEP,
    TRANSIENT,
    FailureContract,
    FaultKind,
    Waste,
    Wire,
)
from fleetchaos.sim.observation import GiveUp, Retry
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import CallToolResult, GoogleRpcError, JsonRpcErrorResponse, ProblemDetails


class FlakyGateway(_CallFault):
    """Transient: a gateway in front of the tool drops the call; a retry normally gets through."""

    kind: Literal["flaky_gateway"] = "flaky_gateway"


class GatewayRefusal(_CallFault):
    """A gateway refuses one step of a task on every execution, whatever the worker."""

    kind: Literal["gateway_refusal"] = "gateway_refusal"
    probability: float = 1.0


def _record(name: str, stage: str, **fields) -> FaultKind:
    base = dict(
        name=name,
        stage=stage,
        contract=FailureContract("GATEWAY_" + name.upper(), "transient", True, "retry_with_backoff"),
        fail_fast_s=0.7,
        outcome_unknown=False,
        retry_after=False,
        transport_retryable=False,
        retry_helps=True,
        failure_type="unavailable",
        subagent_category="transient",
        alternative=None,
        wire=Wire(502, "Bad Gateway", "ERR_" + name.upper()),
        waste=None,
        remedy=None,
        persistent_scope=None,
        effect=f"The call meets a {name.replace('_', ' ')} at the gateway and takes no effect.",
    )
    return FaultKind(**{**base, **fields})


THROWAWAYS = {
    "flaky_gateway": (_record("flaky_gateway", TRANSIENT), FlakyGateway),
    "gateway_refusal": (
        _record(
            "gateway_refusal",
            PERSISTENT,
            contract=FailureContract("GATEWAY_REFUSED", "dependency", False, "reroute_or_escalate"),
            retry_helps=False,
            failure_type="permanent",
            subagent_category="business",
            waste=Waste("persistent", "gateway still refuses", PERMANENT_ERROR),
            persistent_scope=TASK_STEP,
        ),
        GatewayRefusal,
    ),
}


@pytest.fixture(params=sorted(THROWAWAYS))
def new_kind(request, monkeypatch) -> tuple[FaultKind, type[_CallFault]]:
    """Register a throwaway kind in the two places a kind lives (undone after the test)."""
    record, model = THROWAWAYS[request.param]
    assert record.name not in KINDS and record.name not in FAULT_MODELS
    monkeypatch.setitem(KINDS, record.name, record)
    monkeypatch.setitem(FAULT_MODELS, record.name, model)
    return record, model


class RetryTwiceAfter5s:
    """Retries the whole task twice, 5 s apart, then gives up."""

    name = "retry-twice"

    def decide(self, observation, history):
        return Retry(delay_s=5.0) if history.retries < 2 else GiveUp()


def test_the_new_kind_is_realised_in_a_small_world(new_kind, sim):
    """One task meets the new kind at its stage: the fault is logged, timed by the record and reported with its contract."""
    record, model = new_kind
    base = sim.scenario({"fetch_only": [sim.step("fetch", 5)]})
    if record.stage == TRANSIENT:
        fault = model(probability=1.0, windows=[{"start_s": 0, "duration_s": 1}])  # only the first call
    else:
        fault = model()  # every execution of the step, as its persistent key says
    scenario = base.model_copy(update={"faults": [fault]})
    r = sim.run(scenario, RetryTwiceAfter5s(), "structured")
    rec = r.rec
    first = r.reports[0]
    assert first.failure == record.name and first.failed_step == 0
    assert r.rendered[0][1].envelope.error_code == record.contract.error_code
    assert rec.first_fault == record.name and rec.first_fault_s == 0.0
    assert [kind for _, kind, _, _, _ in r.output.fault_log][:1] == [record.name]
    assert r.output.fault_tally[(record.name, "fetch", 0)] == rec.fault_hits[record.name]
    if record.stage == TRANSIENT:
        # failed fast (round trip 0.1 + the record's 0.7), waited 5 s, then ran the step (0.1 + 5)
        assert (rec.fault_hits, rec.claim, rec.retries) == ({record.name: 1}, "success", 1)
        assert rec.end_s == pytest.approx(0.1 + 0.7 + 5.0 + 0.1 + 5.0)
        assert r.out.truth == "full" and rec.wasted_retries == 0
    else:
        # every execution fails: both retries were wasted, under the record's reason and family
        assert (rec.fault_hits, rec.claim, rec.retries) == ({record.name: 3}, "failed", 2)
        assert rec.end_s == pytest.approx(3 * (0.1 + 0.7) + 2 * 5.0)
        assert rec.wasted_reasons == {"gateway still refuses": 2}
        _, breakdowns, _ = compute_run(r.output, scenario.fleet)
        assert breakdowns["wasted_retries_by_family"] == {PERMANENT_ERROR: 2}
        assert breakdowns["fault_hits_by_error_code"] == {record.contract.error_code: 3}


def _report(kind: str) -> AttemptReport:
    """A dispatch that stopped in step 1 (fan-out 3): item 0 done, items 1 and 2 failed with ``kind``."""
    return AttemptReport(
        task_id=3,
        worker=1,
        start_step=0,
        failed_step=1,
        step_names=("plan", "fetch"),
        failure=kind,
        fan_out=3,
        done_items=(0,),
        item_failures=((1, kind), (2, kind)),
    )


@pytest.mark.parametrize("format_name", sorted(builtin_formats()))
def test_the_new_kind_is_rendered_by_every_error_format(new_kind, format_name):
    """Every built-in format renders the new kind from its record's fields (or hides it, for a suppressing format)."""
    record, _ = new_kind
    fmt = get_format(format_name)
    obs = fmt.render(_report(record.name))
    env = obs.envelope
    if getattr(fmt, "partial_batch", None) == "ok" and obs.ok:  # empty-success, fabricated-defaults
        assert obs.text and env is None
    elif format_name == "generic":
        assert (obs.ok, obs.status, env, obs.text) == (False, "failed", None, None)
    elif format_name == "status":
        assert (obs.ok, env) == (False, None) and obs.text.startswith(f"HTTP {record.wire.status} ")
    elif format_name in ("raw", "agent-sdk-default", "langgraph-toolnode"):
        assert not obs.ok and env is None
        assert f"{record.wire.status} " in obs.text or record.wire.errno in obs.text
    elif isinstance(env, CallToolResult):  # an MCP tool error: neither a timeout nor a lost server
        assert env.is_error and (f"{record.wire.status} " in env.text or record.wire.errno in env.text)
        if env.structured_content is not None:
            assert env.structured_content.error.code == record.contract.error_code
    elif isinstance(env, JsonRpcErrorResponse):
        assert env.error.code == -32002  # 502: EIP-1474's Resource unavailable
    elif isinstance(env, ProblemDetails):
        assert (env.status, env.title) == (502, "Bad Gateway")
    elif isinstance(env, GoogleRpcError):
        assert (env.error.status, env.error_code) == ("UNAVAILABLE", record.contract.error_code)
    elif isinstance(env, AgentToolError):
        assert (env.error_code, env.category, env.recoverable, env.suggested_action) == tuple(record.contract)
    elif isinstance(env, FailureTypeError):
        assert env.failure_type == record.failure_type
        assert env.retry_recommended in (None, record.retry_helps)  # None: an ablation step without the field
    elif isinstance(env, SubagentResult):
        assert env.error_category == record.subagent_category
    elif isinstance(env, ToolEnvelope):
        assert env.error_code == record.contract.error_code
        assert [i.error_code for i in env.manifest] == [None, record.contract.error_code, record.contract.error_code]
    else:
        pytest.fail(f"format {format_name!r} is not covered by this test: add how it shows a kind")


def test_the_new_kind_is_listed_by_faults_list_and_show(new_kind):
    """`fleetchaos faults list` lists the new kind with its code and effect; `faults show` describes it."""
    record, _ = new_kind
    listed = CliRunner().invoke(main, ["faults", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {row["kind"]: row for row in json.loads(listed.output)}
    assert rows[record.name]["error_code"] == record.contract.error_code
    assert rows[record.name]["effect"] == record.effect
    shown = CliRunner().invoke(main, ["faults", "show", record.name])
    assert shown.exit_code == 0, shown.output
    assert record.contract.error_code in shown.output and "probability" in shown.output


def test_the_new_kind_is_documented_in_scenarios_md(new_kind):
    """The docs/scenarios.md generator gives the new kind a row, a section, its effect and its parameters."""
    record, _ = new_kind
    text = render_docs()
    assert f"| [`{record.name}`](#{record.name}) | `{record.contract.error_code}` |" in text
    assert f"#### {record.name}\n" in text
    assert f"*Effect on the truth:* {record.effect}" in text


def test_the_new_kind_is_drawn_by_the_hypothesis_strategies(new_kind):
    """The kind's strategy is read from its model: each style it allows draws valid faults of it, no code added."""
    from hypothesis import HealthCheck, given, settings

    from fleetchaos.testing.kind_strategies import Place, kind_strategy, styles

    record, model = new_kind
    place = Place(workers=2, horizon_s=600.0, tools=("search",), templates=("job",))
    assert styles(record.name) == ("schedule", "mix")
    for style in styles(record.name):

        @settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(kind_strategy(record.name, place, style))
        def drawn(fault):
            assert isinstance(fault, model) and fault.kind == record.name

        drawn()
