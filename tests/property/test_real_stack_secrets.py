"""No planted secret reaches a real stack's rendering that the stack sanitises; the others count what they leak.

MCP servers (the specification asks them to sanitise tool output), JSON-RPC servers,
RFC 9457 problems and google.rpc statuses put a sanitised message on the wire; an agent
SDK's and LangGraph's default texts pass the exception's message on as it is.  For any
run seed, task, worker, failing kind, tool name (so every vendor style) and retry-after
hint, the wire form of a sanitising format holds none of the run's planted values, and an
unsanitised one reports exactly the planted values its text holds.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats._vendor import planted
from fleetchaos.sim.kinds import KINDS
from fleetchaos.sim.truth import AttemptReport
from fleetchaos.sim.wire_shapes import wire_json

SANITISED = ("mcp", "mcp-structured", "jsonrpc", "problem-details", "google-rpc")
PASSED_ON = ("agent-sdk-default", "langgraph-toolnode")
FAILING = sorted(name for name, kind in KINDS.items() if kind.wire is not None)

reports = st.builds(
    lambda task, worker, tool, kind, hint: AttemptReport(
        task_id=task,
        worker=worker,
        start_step=0,
        failed_step=1,
        step_names=("fetch", tool),
        failure=kind,
        retry_after_s=hint,
    ),
    st.integers(0, 10**6),
    st.integers(0, 63),
    st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True),
    st.sampled_from(FAILING),
    st.none() | st.floats(0.001, 3600.0),
)


def shown(observation) -> str:
    """Everything the orchestrator gets: the text and the envelope as it travels."""
    return "\n".join(
        part for part in (observation.text, wire_json(observation.envelope) if observation.envelope else None) if part
    )


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 12), report=reports, name=st.sampled_from(SANITISED))
def test_no_planted_secret_reaches_a_sanitised_rendering(seed, report, name):
    obs = get_format(name, seed).render(report)
    leaked = [value for value in planted(seed).all() if value in shown(obs)]
    assert leaked == [] and obs.secrets == 0


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 12), report=reports, name=st.sampled_from(PASSED_ON))
def test_an_unsanitised_rendering_counts_what_it_leaks(seed, report, name):
    obs = get_format(name, seed).render(report)
    assert obs.secrets == sum(1 for value in planted(seed).all() if value in shown(obs))
