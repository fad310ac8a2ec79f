"""Commands are thin shells over jobs: each job takes the command's options as fields and gives what it prints.

A job run from Python must give the very result the command prints (``--json``), and every
option of a command must be a field of its job (or only say how the result is shown), so
the two never drift apart.
"""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from fleetchaos import CompareJob, RobustnessJob, SweepJob, TuneJob
from fleetchaos.cli.job_options import HistoryOptions, TuneOptions
from fleetchaos.cli.main import main
from fleetchaos.cli.robustness import robustness
from fleetchaos.cli.running import compare
from fleetchaos.cli.sweeping import sweep
from fleetchaos.cli.tuning import tune

#: Options that only say how a result is shown.
SHOWN = {"as_json", "wide", "columns"}
#: Options that set the context of the whole command, not of its job: the run cache (--no-cache,
#: fleetchaos.cli.caching.command_cache) and where runs go (--executor, fleetchaos.runs.executors.using_factory).
#: A Python caller runs a job inside the same two context managers.
CONTEXT = {"no_cache", "executor_factory"}


def _fields(job: type) -> set[str]:
    names = {f.name for f in dataclasses.fields(job)}
    for group in (HistoryOptions, TuneOptions):
        if any(f.name in ("history", "tuning") and f.default_factory is group for f in dataclasses.fields(job)):
            names |= {f.name for f in dataclasses.fields(group)}
    return names


@pytest.mark.parametrize(
    ("command", "job", "spelled"),
    [
        (compare, CompareJob, {"no_expect": "expect", "traces_dir": "traces"}),
        (sweep, SweepJob, {"scenario_refs": "scenarios"}),
        (tune, TuneJob, {}),
        (robustness, RobustnessJob, {}),
    ],
)
def test_every_option_of_a_command_is_a_field_of_its_job(command, job, spelled):
    """Python callers get the command's whole set of options, under the same names."""
    options = {p.name for p in command.params} - SHOWN - CONTEXT
    fields = _fields(job)
    missing = sorted(spelled.get(name, name) for name in options if spelled.get(name, name) not in fields)
    assert missing == []
    assert set(spelled.values()) <= fields


def _cli_json(*args: str) -> str:
    out = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.stdout


def test_a_comparison_from_python_is_the_commands(small):
    """CompareJob(...).run() gives the result `compare --json` prints, byte for byte."""
    job = CompareJob(scenario=small, seeds=2, policies=("blind-retry", "structured"), errors=("generic", "structured"),
                     jobs=1, history=HistoryOptions(no_history=True), quiet=True)  # fmt: skip
    outcome = job.run()
    assert outcome is not None
    printed = _cli_json("compare", "--scenario", small, "--seeds", "2", "--policies", "blind-retry,structured",
                        "--errors", "generic,structured", "--jobs", "1", "--no-history")  # fmt: skip
    assert outcome.result.model_dump_json(indent=2) + "\n" == printed
    assert outcome.seeds == [1, 2] and outcome.gate(lambda line: None) == 0


def test_a_sweep_from_python_is_the_commands(small):
    """SweepJob(...).run() gives the result `sweep --json` prints, byte for byte."""
    job = SweepJob(scenarios=(small,), params=("fleet.misread_probability=0,0.1",), seeds=2,
                   policies=("structured",), errors=("generic",), jobs=1, no_history=True, quiet=True)  # fmt: skip
    printed = _cli_json("sweep", "--scenario", small, "--param", "fleet.misread_probability=0,0.1", "--seeds", "2",
                        "--policies", "structured", "--errors", "generic", "--jobs", "1", "--no-history")  # fmt: skip
    result = job.run()
    assert result is not None and result.model_dump_json(indent=2) + "\n" == printed
    assert [e.params for e in result.entries] == [
        {"fleet.misread_probability": 0.0},
        {"fleet.misread_probability": 0.1},
    ]


def test_a_mistake_stops_a_job_before_any_run_with_the_commands_message(small, tmp_path):
    """A job refuses what its command refuses, with the same message, before anything is stored."""
    from fleetchaos.errors import UserError

    history = HistoryOptions(history_path=tmp_path / "h.db")
    with pytest.raises(UserError, match="^--errors: unknown error format 'structurd'"):
        CompareJob(scenario=small, seeds=2, errors=("structurd",), history=history).run()
    with pytest.raises(UserError, match="^--arm: give at least two arms"):
        RobustnessJob(scenario=small, arms=(("structured", "structured"),)).run()
    with pytest.raises(UserError, match="^--param policy.base_s=...: tune searches policy parameters itself"):
        TuneJob(scenario=small, params=("policy.base_s=0.5",), tuning=TuneOptions(trials=1)).run()
    assert not (tmp_path / "h.db").exists()


def test_a_sweep_run_resolves_its_policy_once(monkeypatch, small):
    """A run of a swept policy parameter looks its policy up once: its spec was worked out when it was planned."""
    from fleetchaos.policies import registry
    from fleetchaos.runs.runner import _run_chunk
    from fleetchaos.runs.sweep import SweepSpec, plan_sweep

    plan = plan_sweep(SweepSpec(scenarios=[small], policies=["backoff"], errors=["generic"], seeds=1,
                                params={"policy.base_s": [0.5, 2]}))  # fmt: skip
    calls = []
    resolve = registry.resolve_policy
    monkeypatch.setattr(registry, "resolve_policy", lambda text: calls.append(text) or resolve(text))
    job = plan.jobs[1]
    ((_, result),) = _run_chunk((plan.variants[job.variant], ((0, job.policy, job.errors, job.seed),)))
    assert calls == ["backoff(base_s=2.0)"]
    assert result.policy == "backoff(base_s=2.0)" and result.params == {}  # the spec carries the policy's value
