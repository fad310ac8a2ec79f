"""Contract conformance and sim/real parity on catalogue scenarios and the built-in policies."""

from __future__ import annotations

import pytest

import fleetchaos
from fleetchaos import check_contract, parity
from fleetchaos.policies import get_policy
from fleetchaos.real import InjectedFault
from fleetchaos.real.parity_check import _run
from fleetchaos.real.runtime import load_real_scenario
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.world import World


@fleetchaos.tool("search", item=lambda query, slot: slot)
def search_api(query: str, slot: int) -> list[str]:
    return [f"{query}-{slot}"]


def contract_tool(fn):
    """A tool that reports every injected fault in the structured contract."""

    def call(*args):
        try:
            return fn(*args)
        except InjectedFault as exc:
            return {"error": exc.fault.envelope()}

    return call


def bare_tool(fn):
    """A tool that answers every failure with a bare "failed"."""

    def call(*args):
        try:
            return fn(*args)
        except Exception:
            return "failed"

    return call


def test_a_bare_failed_for_a_rate_limit_is_a_mismatch_naming_the_expected_fields():
    """A tool returning "failed" on a 429 is reported with the code, category, flag, action and retry-after it lacks."""
    report = check_contract(
        "research_fanout", samples={"search": lambda: bare_tool(search_api)("q", 0)}, kinds=["rate_limit"]
    )
    (row,) = report.rows
    assert not row.conforms
    text = "; ".join(row.mismatches)
    for expected in (
        "RATE_LIMITED",
        "transient",
        "recoverable: expected True",
        "wait_retry_after",
        "retry_after_ms: expected >= 7000",
    ):
        assert expected in text
    with pytest.raises(AssertionError, match="search x rate_limit"):
        report.assert_conforms()
    assert "**mismatch**" in report.to_markdown()


def test_a_tool_that_follows_the_contract_conforms_for_every_applicable_kind():
    """The contract-following tool passes for each kind the scenario can hit it with."""
    report = check_contract("research_fanout", samples={"search": lambda: contract_tool(search_api)("q", 0)})
    assert {r.kind for r in report.rows} == {"rate_limit", "expired_key", "timeout", "not_found"}
    report.assert_conforms()


def test_a_providers_overload_can_still_be_forced_to_check_how_a_tool_surfaces_a_503():
    """kinds=["overloaded"] checks a tool against the overload contract though real runs refuse providers."""
    good = check_contract(
        "research_fanout", samples={"search": lambda: contract_tool(search_api)("q", 0)}, kinds=["overloaded"]
    )
    bare = check_contract(
        "research_fanout", samples={"search": lambda: bare_tool(search_api)("q", 0)}, kinds=["overloaded"]
    )
    assert [r.conforms for r in good.rows] == [True]
    assert [r.conforms for r in bare.rows] == [False] and "SERVICE_OVERLOADED" in "; ".join(bare.rows[0].mismatches)


def test_a_tool_that_passes_the_vendor_error_through_leaks_its_secrets():
    """Surfacing str(exception) carries the planted secrets of the vendor text: reported as a leak."""

    def leaky():
        try:
            return search_api("q", 0)
        except InjectedFault as exc:
            return {"error": {**exc.fault.envelope(), "message": str(exc)}}

    report = check_contract("research_fanout", samples={"search": leaky}, kinds=["expired_key"])
    assert any("planted secret" in m for m in report.rows[0].mismatches)


def test_a_sample_that_never_reaches_the_binding_is_reported():
    """A sample calling the undecorated function never meets the forced fault: the row says so."""
    report = check_contract(
        "research_fanout", samples={"search": lambda: search_api.__wrapped__("q", 0)}, kinds=["rate_limit"]
    )
    assert "never fired" in report.rows[0].mismatches[0]


# -- parity -------------------------------------------------------------------------------


@fleetchaos.tool("synthesise")
def synthesise_api(title: str) -> str:
    return title


@fleetchaos.tool("fetch_contacts")
def fetch_api(title: str) -> list[str]:
    return ["a"]


@fleetchaos.tool("update_contact", item=lambda slot: slot)
def update_api(slot: int) -> None:
    return None


@fleetchaos.tool("post_note")
def note_api(task_id: int) -> None:
    return None


TOOLS = {
    "research_fanout": {
        "search": contract_tool(lambda c: search_api(c.title, c.item)),
        "synthesise": contract_tool(lambda c: synthesise_api(c.title)),
    },
    "crm_sync_403": {
        "fetch_contacts": contract_tool(lambda c: fetch_api(c.title)),
        "update_contact": contract_tool(lambda c: update_api(c.item)),
        "post_note": contract_tool(lambda c: note_api(c.task_id)),
    },
}


@pytest.mark.parametrize("scenario", sorted(TOOLS))
@pytest.mark.parametrize("policy", ["blind-retry", "backoff", "structured"])
def test_real_tools_under_the_policy_driver_reproduce_the_simulated_records(scenario, policy):
    """For two catalogue scenarios and each built-in policy, contract-following real tools give identical records."""
    report = parity(scenario, policy=policy, tools=TOOLS[scenario], seed=3)
    assert report.identical, report.describe()
    assert report.tasks > 100
    assert any(claim != "success" or truth != "full" for _t, _tpl, claim, truth, *_ in report.rows)


def test_the_simulated_run_of_a_parity_check_reads_the_scenarios_misread_factor():
    """The parity check's simulated run is the simulator's own run, the scenario's misread factor for the format
    included (its format wrapper used to fall back to the format's default factor)."""
    spec, _ = load_real_scenario("research_fanout")
    factors = spec.fleet.misread_factor.model_copy(update={"structured": 3.0})
    spec = spec.model_copy(
        update={"fleet": spec.fleet.model_copy(update={"misread_probability": 0.3, "misread_factor": factors})}
    )
    _, checked = _run(spec, "structured", "structured", 3, None, None)
    simulated = World(spec, get_policy("structured"), get_format("structured"), 3).run().records

    def outcomes(records):
        return sorted((r.id, r.claim, r.misreads) for r in records)

    assert outcomes(checked) == outcomes(simulated)
    assert sum(r.misreads for r in simulated) > 0


def test_a_deliberately_wrong_tool_is_reported_at_its_first_divergent_call():
    """A search tool that answers a not-found with a bare "failed" diverges at that call, and the report names it."""
    tools = {**TOOLS["research_fanout"], "search": bare_tool(lambda c: search_api(c.title, c.item))}
    report = parity("research_fanout", policy="structured", tools=tools, seed=3)
    assert not report.identical
    first = report.first_divergence
    assert first is not None and first.what == "what a dispatch is seen as"
    assert first.call[2] == "search" and first.call[6] == "not_found"
    assert first.sim[4] == "NOT_FOUND" and first.real[4] is None
    assert "after the call: task" in report.describe() and "search item" in report.describe()
    assert "| **no** |" in report.to_markdown()


def test_a_tool_that_swallows_a_fault_diverges_as_a_silent_success():
    """A tool that returns a default on any failure is logged as swallowing the fault at its first faulted call."""

    def swallowing(c):
        try:
            return search_api(c.title, c.item)
        except InjectedFault:
            return ["cached"]

    tools = {**TOOLS["research_fanout"], "search": swallowing}
    report = parity("research_fanout", policy="structured", tools=tools, seed=3)
    assert report.first_divergence.what == "a tool call"
    assert "swallowed" in report.first_divergence.real[8]


# -- a team's own error contract ----------------------------------------------------------------


class SearchError(Exception):
    """The team's own error: its own code names, a retryable flag and seconds to wait."""

    def __init__(self, code: str, retryable: bool, retry_in: float | None = None, maybe_done: bool = False):
        super().__init__(code)
        self.code, self.retryable, self.retry_in, self.maybe_done = code, retryable, retry_in, maybe_done


#: How the team's tool reports each fault, in its own words.
TEAM_WORDS = {"rate_limit": "SLOW_DOWN", "expired_key": "LOGIN_AGAIN", "timeout": "NO_ANSWER", "not_found": "GONE"}


def team_tool(fn):
    """A tool that raises the team's own SearchError for every injected fault (no fleetchaos field names)."""

    def call(*args):
        try:
            return fn(*args)
        except InjectedFault as exc:
            f = exc.fault
            raise SearchError(TEAM_WORDS[f.kind], f.contract.recoverable, f.retry_after_s, f.outcome_unknown) from None

    return call


#: The team's contract, written once: their code -> (error code, category, suggested action) of the benchmark's.
TEAM_CONTRACT = {
    "SLOW_DOWN": ("RATE_LIMITED", "transient", "wait_retry_after"),
    "LOGIN_AGAIN": ("AUTH_EXPIRED", "auth", "refresh_credentials"),
    "NO_ANSWER": ("TOOL_TIMEOUT", "transient", "retry_with_backoff"),
    "GONE": ("NOT_FOUND", "dependency", "use_alternative_source"),
}


def read_team_error(surfaced):
    """The documented hook: the team's SearchError in fleetchaos' contract fields (None: anything else)."""
    if not isinstance(surfaced, SearchError):
        return None
    code, category, action = TEAM_CONTRACT[surfaced.code]
    out = {"error_code": code, "category": category, "recoverable": surfaced.retryable, "suggested_action": action}
    if surfaced.retry_in is not None:
        out["retry_after_s"] = surfaced.retry_in
    if surfaced.maybe_done:
        out["context"] = {"outcome": "unknown"}
    return out


def test_a_teams_own_error_contract_conforms_through_its_mapping_and_mismatches_without_it():
    """The team's SearchError carries its own code and flags: read with fleetchaos' field names every pair misses
    the contract; with Bindings(contract=...) mapping them, every pair conforms; per tool, "*" covers the rest."""
    sample = {"search": lambda: team_tool(search_api)("q", 0)}
    plain = check_contract("research_fanout", samples=sample)
    assert len(plain.rows) == 4 and len(plain.mismatches) == 4
    mapped = check_contract("research_fanout", samples=sample, bindings=fleetchaos.Bindings(contract=read_team_error))
    mapped.assert_conforms()
    per_tool = fleetchaos.Bindings(contract={"synthesise": lambda s: None, "*": read_team_error})
    check_contract("research_fanout", samples=sample, bindings=per_tool).assert_conforms()


def test_a_contract_mapping_that_raises_is_a_mismatch_not_a_crash():
    """A mapping that raises turns the pair into a bare failure naming the mapping's error."""

    def broken(surfaced):
        raise KeyError("no such code")

    report = check_contract(
        "research_fanout",
        samples={"search": lambda: team_tool(search_api)("q", 0)},
        kinds=["rate_limit"],
        bindings=fleetchaos.Bindings(contract=broken),
    )
    (row,) = report.rows
    assert not row.conforms and "the contract mapping raised KeyError" in row.observed


def test_parity_reads_a_teams_own_errors_through_its_contract_mapping():
    """Under the structured policy, tools raising the team's own errors diverge from the simulation when read with
    fleetchaos' names (the policy sees bare failures) and reproduce it through the mapping."""
    tools = {
        "search": team_tool(lambda c: search_api(c.title, c.item)),
        "synthesise": team_tool(lambda c: synthesise_api(c.title)),
    }
    assert not parity("research_fanout", policy="structured", tools=tools, seed=3).identical
    bindings = fleetchaos.Bindings(contract=read_team_error)
    report = parity("research_fanout", policy="structured", tools=tools, seed=3, bindings=bindings)
    assert report.identical, report.describe()


def test_a_tool_that_retries_inside_diverges_as_its_own_retry_not_as_a_silent_failure():
    """A search tool that calls its binding again after a failure (its own retry loop) and gets through is named as
    such at the first divergent call: it took effect, nothing was swallowed (it used to be logged as a swallowed
    fault that took no effect, the silent_suppression kind)."""

    def retrying(c):
        for _ in range(3):
            try:
                return search_api(c.title, c.item)
            except InjectedFault:
                continue
        raise RuntimeError("gave up")

    tools = {**TOOLS["research_fanout"], "search": retrying}
    report = parity("research_fanout", policy="structured", tools=tools, seed=3)
    first = report.first_divergence
    assert first is not None and first.what == "a tool call"
    assert first.real[6] == "ok" and first.real[7] is True
    assert "retried the" in first.real[8] and "inside (1 more call(s) of its binding) and succeeded" in first.real[8]
    assert "swallowed" not in first.real[8]
