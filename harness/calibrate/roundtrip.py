"""The round trip: simulate, export the traces, calibrate from them, simulate the fit, compare.

What it compares, per run, through the same trace reader (so both sides are measured
alike): each fault kind's share of tool calls, each tool's call-duration quantiles, and
the run's headline metrics.  ``docs/calibration.md`` gives the figures and the
tolerances the tests hold them to.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fleetchaos.calibrate.fit import Calibration, calibrate
from fleetchaos.calibrate.observed import Calls, Observations
from fleetchaos.calibrate.yaml_out import to_yaml
from fleetchaos.traces.codes import FAULT_KINDS, CodeMap
from fleetchaos.traces.read import read_file

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

#: The metrics compared: the headline trio, and the tasks that succeeded.
HEADLINE = ("success_rate", "recovery_rate", "silent_failure_rate", "wasted_retries")

#: The quantiles of each tool's successful call durations compared.
QUANTILES = (0.5, 0.9, 0.95)


@dataclass(frozen=True)
class Side:
    """One run of the round trip, as measured from its exported traces."""

    calls: int
    tasks: int
    kind_counts: dict[str, int]
    quantiles: dict[str, tuple[int, float, float, float]]
    """tool -> (successful calls, p50, p90, p95 of their durations)."""
    metrics: dict[str, float | None]


@dataclass(frozen=True)
class RoundTrip:
    """Both runs and the calibration between them."""

    first: Side
    second: Side
    calibration: Calibration
    scenario_yaml: str


def measure(path: Path, metrics: dict) -> Side:
    """A run's kind counts and duration quantiles, read back from its exported traces."""
    observations = Observations(CodeMap())
    observations.add(read_file(path))
    return side_of(observations.finish(), metrics)


def side_of(calls: Calls, metrics: dict) -> Side:
    """A run's kind counts and duration quantiles from the calls read back from its traces."""
    import numpy as np

    counts = {k: int((calls.kind == i).sum()) for i, k in enumerate(FAULT_KINDS) if (calls.kind == i).any()}
    quantiles = {}
    for t, tool in enumerate(calls.tools):
        d = calls.duration[(calls.tool == t) & (calls.kind == -1)]
        if len(d):
            p50, p90, p95 = np.quantile(d, QUANTILES).tolist()
            quantiles[tool] = (len(d), p50, p90, p95)
    return Side(
        calls=len(calls),
        tasks=len(calls.task_ids),
        kind_counts=counts,
        quantiles=quantiles,
        metrics={k: metrics.get(k) for k in HEADLINE},
    )


def measure_run(scenario: Scenario, policy: str, errors: str, seed: int) -> Side:
    """One run of ``scenario``, measured from its exported traces like either side of a round trip."""
    from fleetchaos.calibrate.verdict import simulated_day

    day = simulated_day((scenario, policy, errors, seed))
    return side_of(day.calls, day.metrics)


def round_trip(scenario: Scenario, policy: str, errors: str, seed: int, *, second_seed: int | None = None) -> RoundTrip:
    """Run ``scenario``, calibrate from its traces, run the calibrated scenario (on ``second_seed``, default ``seed``)."""
    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.load import parse_scenario
    from fleetchaos.traces.otlp_write import write_run_traces

    with tempfile.TemporaryDirectory(prefix="fleetchaos-roundtrip-") as folder:
        first_path = Path(folder) / "first.otlp.jsonl"
        second_path = Path(folder) / "second.otlp.jsonl"

        def writer(path: Path, name: str, s: int):
            return lambda output: write_run_traces(output, path, scenario=name, policy=policy, errors=errors, seed=s)

        first = run_one(scenario, policy, errors, seed, trace=True, on_trace=writer(first_path, scenario.name, seed))
        calibration = calibrate([first_path], name=f"{scenario.name}_calibrated")
        text = to_yaml(calibration)
        fitted = parse_scenario(text, "calibrated.yaml")
        s2 = seed if second_seed is None else second_seed
        second = run_one(fitted, policy, errors, s2, trace=True, on_trace=writer(second_path, fitted.name, s2))
        return RoundTrip(
            first=measure(first_path, first.metrics),
            second=measure(second_path, second.metrics),
            calibration=calibration,
            scenario_yaml=text,
        )
