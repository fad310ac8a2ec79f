"""The MCP boundary's faults met by real code: a team's MCP client over streamable HTTP meets each injected kind as
the server puts it on the wire, and the run's records count it with the kind's ground truth.

The client is written as a team writes one over httpx: ``initialize`` (the server's ``Mcp-Session-Id`` kept), then a
``tools/call`` of ``post`` (the ticket it creates is the side effect), against a fake streamable-HTTP server (a
MockTransport) that counts the tickets it created.  On a 404 it initialises again, on an unknown tool it lists the
tools again, on a refused connection it waits 40 s, and on any other failure it retries after 2 s; the naive client
only retries.  One task, one step (``post``, 1 s), no model.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from fleetchaos import Bindings, Route
from fleetchaos.real import run_real
from fleetchaos.scenario.load import Scenario
from fleetchaos.sim import _rng
from fleetchaos.sim.kinds import PERMANENT_ERROR
from fleetchaos.sim.kinds_mcp import MCP_KINDS

URL = "https://mcp.test/mcp"
BINDINGS = Bindings(routes=[Route("post", f"POST {URL}", mcp=True)])


class Server:
    """A streamable-HTTP MCP server with one tool, ``post``, that creates a ticket each time it runs."""

    def __init__(self) -> None:
        self.tickets = 0
        self.methods: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.methods.append(body["method"])
        if body["method"] == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "t"}}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result},
                                  headers={"mcp-session-id": f"s{len(self.methods)}"})  # fmt: skip
        if body["method"] == "tools/list":
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": {"tools": [{"name": "post"}]}}
            )
        self.tickets += 1
        result = {"content": [{"type": "text", "text": f"ticket {self.tickets}"}], "isError": False}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})


def make_client(seen: list, server: Server, *, naive: bool = False, tries: int = 4):
    """The team's MCP client loop; ``seen`` gets each failure it met, as (what, detail)."""

    def agent(task, rt):
        http = httpx.Client(transport=BINDINGS.transport(httpx.MockTransport(server)))
        ids = iter(range(1, 100))

        def rpc(method: str, params: dict) -> httpx.Response:
            return http.post(URL, json={"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params})

        rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}})
        for attempt in range(tries):
            if attempt:
                time.sleep(2.0)  # virtual: past a fault's one-second window
            try:
                response = rpc("tools/call", {"name": "post", "arguments": {"task": task.id}})
            except httpx.ConnectError:
                seen.append(("connection refused", None))
                time.sleep(38.0)  # virtual in a run: with the retry's 2 s, past the server's 30 s respawn
                continue
            body = response.json()
            if response.status_code == 404:
                seen.append(("404", body["error"]["message"]))
                if not naive:
                    rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}})
                continue
            if "error" in body:
                seen.append(("json-rpc error", (body["error"]["code"], body["error"]["message"])))
                if body["error"]["code"] == -32602 and not naive:
                    rpc("tools/list", {})
                continue
            if body["result"].get("isError"):
                seen.append(("isError", body["result"]["content"][0]["text"]))
                continue
            return "success"
        return "failed"

    return agent


def _scenario(faults: list[dict]) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "real-mcp",
            "duration_s": 3600,
            "fleet": {"orchestrators": 1, "workers": 1, "api_burst": 1000},
            "workload": {
                "templates": [
                    {"name": "t", "steps": [{"tool": "post", "duration": {"mean_s": 1, "cv": 0}, "uses_api": False}]}
                ],
                "arrivals": [{"at_s": 0.0, "template": "t"}],
            },
            "faults": faults,
        }
    )


WINDOW = [{"start_s": 0, "duration_s": 1}]

#: kind -> (the fault, what the client meets first)
SURFACES = {
    "mcp_protocol_error": ({"probability": 1.0, "windows": WINDOW}, ("json-rpc error", (-32603, "Internal error"))),
    "mcp_tool_error": (
        {"probability": 1.0, "windows": WINDOW, "committed_probability": 1.0, "ran_s": 0.5},
        ("isError", "Error executing tool post: Internal Server Error (tool result isError: true)"),
    ),
    "mcp_session_expired": ({"probability": 1.0, "windows": WINDOW}, ("404", "Session not found")),
    "mcp_tool_drift": ({"probability": 1.0, "windows": WINDOW}, ("json-rpc error", (-32602, "Unknown tool: post"))),
    "mcp_server_restart": ({"at_s": [0], "respawn_s": 30, "respawn_cv": 0}, ("connection refused", None)),
}


def test_every_mcp_kind_has_a_wire_answer():
    assert set(SURFACES) == {k.name for k in MCP_KINDS}


@pytest.mark.parametrize("kind", sorted(SURFACES))
def test_each_mcp_kind_reaches_the_client_as_the_server_answers_and_is_counted_with_its_truth(kind):
    """The first call meets the kind as the wire carries it; the client's next try gets through (past the window, or
    after the restart) and the record counts one hit.  Only the isError created a ticket before it failed: its
    retry creates a second one (a duplicate in the ledger); the other kinds never reached the tool."""
    fault, first = SURFACES[kind]
    server, seen = Server(), []
    run = run_real(_scenario([{"kind": kind, "tools": ["post"], **fault}]), make_client(seen, server), seed=1,
                   bindings=BINDINGS, tasks=1)  # fmt: skip
    (rec,) = run.records
    assert seen == [first]
    assert rec.fault_hits == {kind: 1} and (rec.claim, rec.retries, rec.wasted_retries) == ("success", 1, 0)
    tickets = 2 if kind == "mcp_tool_error" else 1
    assert server.tickets == tickets and rec.commits == [[tickets]]


def _renewable_seed(kind: str, p: float) -> int:
    """A seed whose task 0 meets ``kind`` on step 0 with its first session or list and not with the renewed one."""
    stream = _rng.stream_id(f"call:{kind}:0")
    for seed in range(1000):
        task = _rng.task_key(_rng.run_key(seed), 0)
        if (
            _rng.draw(_rng.persistent_key(task, 0, 0, 0), stream)
            < p
            <= _rng.draw(_rng.persistent_key(task, 0, 0, 1), stream)
        ):
            return seed
    raise AssertionError("no such seed in 1000")


@pytest.mark.parametrize("kind, renewal", [("mcp_session_expired", "initialize"), ("mcp_tool_drift", "tools/list")])
def test_a_stale_session_or_list_fails_every_retry_until_the_client_renews_it(kind, renewal):
    """Retried on the same session or list, every try fails (three retries, all wasted: a permanent error retried);
    the client that initialises again, or lists the tools again, gets through on its first retry, not wasted.  The
    initialize that opens each task's first session renews nothing (no call has failed yet)."""
    world = _scenario([{"kind": kind, "tools": ["post"], "probability": 0.5}])
    seed = _renewable_seed(kind, 0.5)
    server, seen = Server(), []
    run = run_real(world, make_client(seen, server, naive=True), seed=seed, bindings=BINDINGS, tasks=1)
    (rec,) = run.records
    assert (rec.claim, rec.retries, rec.wasted_retries, rec.fault_hits) == ("failed", 3, 3, {kind: 4})
    assert run.result.breakdowns["wasted_retries_by_family"] == {PERMANENT_ERROR: 3}
    assert server.tickets == 0
    server, seen = Server(), []
    run = run_real(world, make_client(seen, server), seed=seed, bindings=BINDINGS, tasks=1)
    (rec,) = run.records
    assert (rec.claim, rec.retries, rec.wasted_retries, rec.fault_hits) == ("success", 1, 0, {kind: 1})
    assert server.tickets == 1 and renewal in server.methods
