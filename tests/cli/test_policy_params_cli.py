"""Policy parameters on the command line: specs in run, compare and sweep, --param policy.NAME, replays, errors."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml
from click.testing import CliRunner

from fleetchaos.cli.main import main


def invoke(*args: str):
    """Run the CLI in-process without history."""
    return CliRunner().invoke(main, [*args, "--no-history"], catch_exceptions=False)


def test_run_with_a_spec_records_it_and_its_replay_reproduces_the_run(small):
    """A spec's canonical spelling is the result's policy; the printed replay command gives the same JSON."""
    first = invoke(
        "run", "--scenario", small, "--policy", "backoff(base_s=0.5,cap_s=5)", "--errors", "generic", "--json"
    )
    assert first.exit_code == 0, first.output
    result = json.loads(first.output)
    assert result["policy"] == "backoff(base_s=0.5,cap_s=5.0)"
    assert "Backoff(max_retries=3, base_s=0.5, cap_s=5.0" in result["recipe"]
    argv = shlex.split(result["replay"])
    assert argv[argv.index("--policy") + 1] == "backoff(base_s=0.5,cap_s=5.0)"
    again = invoke(*argv[1:], "--json")
    assert json.loads(again.output)["metrics"] == result["metrics"]


def test_run_param_policy_sets_the_parameter_like_the_spec(small):
    """``--param policy.cap_s=5`` on --policy backoff runs backoff(cap_s=5.0), scenario --param alongside."""
    by_param = invoke(
        "run", "--scenario", small, "--policy", "backoff", "--param", "policy.cap_s=5", "--param",
        "fleet.workers=8", "--json",
    )  # fmt: skip
    by_spec = invoke("run", "--scenario", small, "--policy", "backoff(cap_s=5)", "--param", "fleet.workers=8", "--json")
    one, two = json.loads(by_param.output), json.loads(by_spec.output)
    assert one["policy"] == two["policy"] == "backoff(cap_s=5.0)"
    assert one["params"] == {"fleet.workers": 8}
    assert one["metrics"] == two["metrics"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", "--policy", "backoff(base=1)"), "unknown parameter 'base' (valid: max_retries, base_s, cap_s)"),
        (("run", "--policy", "backoff(base_s=open('x'))"), "is not a literal"),
        (("run", "--policy", "backoff", "--param", "policy.bogus=1"), "unknown parameter 'bogus'"),
        (("run", "--param", "policy.base_s=1,2"), "run takes one value per parameter"),
        (("compare", "--policies", "blind-retry,backoff", "--param", "policy.base_s=1"), "policy 'blind-retry'"),
    ],
)
def test_bad_policy_parameters_exit_2_with_one_line(small, args, needle):
    """A mistake in a policy parameter is one message naming the policy and parameter, exit 2, no traceback."""
    result = invoke(*args[:1], "--scenario", small, *args[1:])
    assert result.exit_code == 2
    assert needle in result.output
    assert "Traceback" not in result.output


def test_compare_runs_specs_and_scenario_params_and_records_them(small):
    """compare takes specs (commas inside parentheses) and --param; every run's replay carries both."""
    result = invoke(
        "compare", "--scenario", small, "--policies", "backoff(base_s=0.5,cap_s=5),structured",
        "--errors", "generic", "--seeds", "2", "--param", "fleet.workers=8", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [a["policy"] for a in doc["arms"]] == ["backoff(base_s=0.5,cap_s=5.0)", "structured"]
    assert doc["scenario_config"]["fleet"]["workers"] == 8


def test_compare_param_policy_applies_to_every_arm(small):
    """``compare --param policy.cap_s=5`` sets the parameter on each arm's spec."""
    result = invoke(
        "compare", "--scenario", small, "--policies", "backoff,breaker-worker", "--errors", "generic",
        "--seeds", "1", "--param", "policy.max_retries=2", "--json",
    )  # fmt: skip
    assert result.exit_code == 2  # breaker-worker's own max_retries lives on its inner policy
    assert "policy 'breaker-worker': unknown parameter 'max_retries'" in result.output
    assert "policy.max_retries" in result.output  # the valid names point at the nested one


def test_sweep_over_a_policy_parameter_draws_its_curve(small, tmp_path):
    """A sweep over policy.base_s has one entry per value and arm, each run under the spec with that value."""
    report = tmp_path / "report"
    result = invoke(
        "sweep", "--scenario", small, "--policies", "backoff", "--errors", "generic", "--seeds", "2",
        "--param", "policy.base_s=0.5,30", "--metric", "success_rate", "--json", "--report", str(report),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output[result.output.index("{") :])
    assert doc["grid"] == {"policy.base_s": [0.5, 30.0]} and doc["x"] == "policy.base_s"
    assert [(e["policy"], e["params"]) for e in doc["entries"]] == [
        ("backoff", {"policy.base_s": 0.5}),
        ("backoff", {"policy.base_s": 30.0}),
    ]
    assert doc["entries"][0]["recipe"].startswith("Backoff(max_retries=3, base_s=0.5")
    assert doc["entries"][1]["recipe"].startswith("Backoff(max_retries=3, base_s=30.0")
    assert (report / "curve_success_rate.png").stat().st_size > 0


def test_sweep_file_takes_specs_and_policy_parameters(small, tmp_path):
    """A sweep file may list specs and sweep policy parameters; a policy lacking one is refused before any run."""
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({
        "scenarios": [small], "policies": ["backoff(cap_s=5)", "structured"], "errors": ["generic"],
        "seeds": 1, "params": {"policy.base_s": [1, 4]},
    }))  # fmt: skip
    result = invoke("sweep", "--file", str(good), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output[result.output.index("{") :])
    assert doc["policies"] == ["backoff(cap_s=5.0)", "structured"]
    assert len(doc["entries"]) == 4
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump({"scenarios": [small], "policies": ["blind-retry"], "params": {"policy.base_s": [1]}})
    )
    refused = invoke("sweep", "--file", str(bad))
    assert refused.exit_code == 2
    assert "policy 'blind-retry': unknown parameter 'base_s'" in refused.output
