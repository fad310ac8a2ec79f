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
