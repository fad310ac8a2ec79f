"""compare --errors takes the real stacks' error texts by name and runs them like any format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FLEETCHAOS = str(Path(sys.executable).parent / "fleetchaos")
SANITISED = ("mcp", "mcp-structured", "jsonrpc", "problem-details", "google-rpc")
PASSED_ON = ("agent-sdk-default", "langgraph-toolnode")


def test_compare_runs_every_real_stack_format(small, tmp_path):
    errors = ",".join((*PASSED_ON, *SANITISED))
    out = subprocess.run(
        [FLEETCHAOS, "compare", "--scenario", small, "--policies", "raw-parse,structured", "--errors", errors,
         "--seeds", "1", "--jobs", "1", "--json", "--no-history", "--no-cache"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    arms = {(arm["policy"], arm["errors"]): arm["metrics"] for arm in json.loads(out.stdout)["arms"]}
    assert {errors for _, errors in arms} == {*PASSED_ON, *SANITISED}
    for (policy, name), metrics in arms.items():
        assert metrics["faulted_tasks"] > 0, (policy, name)
        if name in SANITISED:
            assert metrics["secrets_leaked"] == 0, (policy, name)
    # The two agent frameworks pass the client's message on, URL and key included (the same leak in both).
    for policy in ("raw-parse", "structured"):
        assert arms[(policy, "agent-sdk-default")]["secrets_leaked"] > 0
        assert (
            arms[(policy, "agent-sdk-default")]["secrets_leaked"]
            == arms[(policy, "langgraph-toolnode")]["secrets_leaked"]
        )


def test_faults_show_prints_each_formats_text_with_planted_secrets_masked():
    from click.testing import CliRunner

    from fleetchaos.cli.main import main
    from fleetchaos.sim.formats._vendor import planted

    out = CliRunner().invoke(main, ["faults", "show", "expired_key", "--errors", "agent-sdk-default,problem-details"])
    assert out.exit_code == 0, out.output
    sdk = "An error occurred while running the tool. Please try again. Error: "
    assert sdk + "401 Client Error: Unauthorized for url: <internal URL>/edit?api_key=<api key>" in out.output
    assert "agent-sdk-default (python client): " in out.output and "2 planted secrets let through" in out.output
    assert '"status":401' in out.output and '"instance":"/tools/search"' in out.output
    assert not [value for value in planted(0).all() if value in out.output]
    listed = CliRunner().invoke(main, ["faults", "show", "expired_key", "--errors", "mcp", "--json"])
    rows = json.loads(listed.output)
    assert [(r["errors"], r["vendor"]) for r in rows] == [("mcp", "jvm"), ("mcp", "python"), ("mcp", "node")]
    assert rows[2] == {
        "errors": "mcp",
        "vendor": "node",
        "chars": len("Error executing tool search: ERR_TOKEN_EXPIRED search request failed"),
        "text": "Error executing tool search: ERR_TOKEN_EXPIRED search request failed",
        "secrets": 0,
    }


def test_faults_show_refuses_a_format_or_kind_it_cannot_render():
    from click.testing import CliRunner

    from fleetchaos.cli.main import main

    for args, words in (
        (["rate_limit", "--errors", "mpc"], "did you mean 'mcp'"),
        (["silent_suppression", "--errors", "mcp"], "never reported as a failure"),
    ):
        out = CliRunner().invoke(main, ["faults", "show", *args])
        assert out.exit_code == 2 and words in out.output, out.output
