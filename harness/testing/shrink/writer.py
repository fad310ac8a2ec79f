"""The regression test `fleetchaos shrink` writes: a pytest module that fails while the bug exists."""

from __future__ import annotations

from fleetchaos.testing.shrink.properties import ARRIVAL_TOLERANCE_S, TaskSilent
from fleetchaos.testing.shrink.runner import ShrinkResult

__all__ = ["regression_test"]


#: The comparisons a metric property may use (written into the generated assert as code).
_OPERATORS = ("<", "<=", ">", ">=", "==", "!=")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def regression_test(result: ShrinkResult, scenario_file: str) -> str:
    """A pytest module that runs the minimal scenario and asserts the property does NOT hold.

    It fails while the bug exists and passes once it is fixed.  ``scenario_file`` is the
    YAML file's name, looked up next to the test module.

    Every value that comes from the scenario or the command line (names, the property,
    the schedule) is written as a Python literal (``repr``), docstrings included, so no
    text in a scenario can become code in the generated module.
    """
    p = result.prop
    schedule = "\n".join(f"  {line}" for line in result.schedule_lines()) or "  (no fault events)"
    doc = (
        "Regression test written by `fleetchaos shrink`: fails while the bug exists.\n\n"
        f"Property that must not hold: {p.describe()}.\n\n"
        f"Minimal failing schedule ({_count(len(result.events), 'fault event')}, {result.tasks} tasks, "
        f"{result.duration_s:g} s, {result.workers} workers; shrunk from {result.original_events} fault events "
        f"and {result.original_tasks} tasks in {result.trials} trial runs):\n{schedule}\n"
    )
    header = f"""{doc!r}

from pathlib import Path

from fleetchaos.runs.runner import run_one
from fleetchaos.scenario.load import load_scenario

SCENARIO = Path(__file__).with_name({scenario_file!r})
POLICY = {result.policy!r}
ERRORS = {result.errors!r}
SEED = {int(result.seed)!r}


def _run():
    return run_one(load_scenario(str(SCENARIO)), POLICY, ERRORS, SEED, scenario_ref=str(SCENARIO), keep_tasks=True)
"""
    if isinstance(p, TaskSilent):
        test_doc = f"The {p.template} task arriving at {p.arrival_s:.3f} s must not end as a silent failure."
        body = f"""

ARRIVAL_S = {float(p.arrival_s)!r}
TEMPLATE = {p.template!r}


def test_task_is_not_a_silent_failure():
    {test_doc!r}
    result = _run()
    task = [t for t in result.tasks if t["template"] == TEMPLATE and abs(t["arrival_s"] - ARRIVAL_S) <= {float(ARRIVAL_TOLERANCE_S)!r}]
    assert task, f"no {{TEMPLATE}} task arrived at {{ARRIVAL_S}} s; replay: {{result.replay}}"
    assert not task[0]["silent_failure"], (
        f"task {{task[0]['id']}} ({{TEMPLATE}}, arrived {{ARRIVAL_S:.3f}} s) ended as a silent failure: "
        f"claim {{task[0]['claim']}}, truth {{task[0]['truth']}}, faults {{task[0]['faults']}}; replay: {{result.replay}}"
    )
"""
    else:
        if p.op not in _OPERATORS:
            raise ValueError(f"unknown comparison {p.op!r}")
        name = f"test_{p.metric}_property_does_not_hold"
        name = name if name.isidentifier() and name.isascii() else "test_property_does_not_hold"
        body = f"""

METRIC = {p.metric!r}
THRESHOLD = {float(p.threshold)!r}
EXPRESSION = {p.expression()!r}


def {name}():
    {f"{p.expression()} must not hold on the minimal run."!r}
    result = _run()
    value = result.metrics.get(METRIC)
    assert value is None or not (value {p.op} THRESHOLD), (
        f"{{METRIC}} = {{value}} still satisfies {{EXPRESSION}}; replay: {{result.replay}}"
    )
"""
    return header + body
