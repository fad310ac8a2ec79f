"""The regression test `fleetchaos shrink` writes: a pytest module that fails while the bug exists."""

from __future__ import annotations

from fleetchaos.testing.shrink.properties import ARRIVAL_TOLERANCE_S, TaskSilent
from fleetchaos.testing.shrink.runner import ShrinkResult

__all__ = ["regression_test"]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def regression_test(result: ShrinkResult, scenario_file: str) -> str:
    """A pytest module that runs the minimal scenario and asserts the property does NOT hold.

    It fails while the bug exists and passes once it is fixed.  ``scenario_file`` is the
    YAML file's name, looked up next to the test module.
    """
    p = result.prop
    lines = "\n".join(f"#   {line}" for line in result.schedule_lines()) or "#   (no fault events)"
    header = f'''"""Regression test written by `fleetchaos shrink`: fails while the bug exists.

Property that must not hold: {p.describe()}.
"""

# Minimal failing schedule ({_count(len(result.events), "fault event")}, {result.tasks} tasks, {result.duration_s:g} s,
# {result.workers} workers; shrunk from {result.original_events} fault events and {result.original_tasks} tasks
# in {result.trials} trial runs):
{lines}

from pathlib import Path

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario

SCENARIO = Path(__file__).with_name({scenario_file!r})
POLICY = {result.policy!r}
ERRORS = {result.errors!r}
SEED = {result.seed!r}


def _run():
    return run_one(load_scenario(str(SCENARIO)), POLICY, ERRORS, SEED, scenario_ref=str(SCENARIO), keep_tasks=True)
'''
    if isinstance(p, TaskSilent):
        body = f'''

ARRIVAL_S = {p.arrival_s!r}
TEMPLATE = {p.template!r}


def test_task_is_not_a_silent_failure():
    """The {p.template} task arriving at {p.arrival_s:.3f} s must not end as a silent failure."""
    result = _run()
    task = [t for t in result.tasks if t["template"] == TEMPLATE and abs(t["arrival_s"] - ARRIVAL_S) <= {ARRIVAL_TOLERANCE_S!r}]
    assert task, f"no {{TEMPLATE}} task arrived at {{ARRIVAL_S}} s; replay: {{result.replay}}"
    assert not task[0]["silent_failure"], (
        f"task {{task[0]['id']}} ({{TEMPLATE}}, arrived {{ARRIVAL_S:.3f}} s) ended as a silent failure: "
        f"claim {{task[0]['claim']}}, truth {{task[0]['truth']}}, faults {{task[0]['faults']}}; replay: {{result.replay}}"
    )
'''
    else:
        body = f'''

METRIC = {p.metric!r}
THRESHOLD = {p.threshold!r}


def test_{p.metric}_property_does_not_hold():
    """{p.expression()} must not hold on the minimal run."""
    result = _run()
    value = result.metrics.get(METRIC)
    assert value is None or not (value {p.op} THRESHOLD), (
        f"{{METRIC}} = {{value}} still satisfies {p.expression()}; replay: {{result.replay}}"
    )
'''
    return header + body
