"""The calibration round trip's figures, as docs/calibration.md tabulates them.

For each scenario and arm: simulate seed 1 with traces, calibrate from them, simulate the
calibrated scenario on seed 2, and read both runs back through the same trace reader
(:func:`fleetchaos.calibrate.roundtrip.round_trip`).  Prints one markdown row per arm (fault
shares of tool calls, first -> calibrated, then the headline metrics) and the largest gap
between the two runs' per-tool p50, p90 or p95.

    .venv/bin/python benchmarks/roundtrip.py                      # the table's six rows
    .venv/bin/python benchmarks/roundtrip.py crm_sync_403:backoff:generic
"""

from __future__ import annotations

import argparse

#: The rows of docs/calibration.md's round-trip table: scenario, policy, errors.
ROWS = (
    ("crm_sync_403", "backoff", "generic"),
    ("crm_sync_403", "structured", "structured"),
    ("default", "backoff", "generic"),
    ("default", "structured", "structured"),
    ("mixed_production_day", "backoff", "generic"),
    ("flaky_network", "backoff", "generic"),
)


def _share(count: int, calls: int) -> str:
    return f"{100 * count / calls:.2f}%" if calls else "-"


def _metric(name: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if name == "wasted_retries" else f"{100 * value:.1f}%"


def row(scenario_name: str, policy: str, errors: str) -> tuple[str, str]:
    """One markdown row of the table, and the largest per-tool quantile gap in words."""
    from fleetchaos.calibrate.fit import NOT_FITTED
    from fleetchaos.calibrate.roundtrip import HEADLINE, round_trip
    from fleetchaos.scenario.load import load_scenario

    trip = round_trip(load_scenario(scenario_name), policy, errors, 1, second_seed=2)
    first, second = trip.first, trip.second
    kinds = sorted(first.kind_counts, key=lambda k: -first.kind_counts[k])
    shares = ", ".join(
        f"{k} {_share(first.kind_counts[k], first.calls)} -> {_share(second.kind_counts.get(k, 0), second.calls)}"
        + (" (not fitted)" if k in NOT_FITTED else "")
        for k in kinds
    )
    headline = ", ".join(
        f"{name} {_metric(name, first.metrics[name])} -> {_metric(name, second.metrics[name])}" for name in HEADLINE
    )
    gaps = [
        abs(b - a) / a
        for tool, (_, *qa) in first.quantiles.items()
        if tool in second.quantiles
        for a, b in zip(qa, second.quantiles[tool][1:])
        if a > 0
    ]
    gap = f"{100 * max(gaps):.1f}%" if gaps else "no tool in both runs"
    return (
        f"| {scenario_name}, {policy}/{errors} | {shares} | {headline} |",
        f"{scenario_name}, {policy}/{errors}: {gap}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", nargs="*", help="SCENARIO:POLICY:ERRORS (default: the table's rows)")
    args = parser.parse_args()
    rows = [tuple(r.split(":")) for r in args.rows] or list(ROWS)
    print("| scenario, arm | fault shares, first -> calibrated | headline, first -> calibrated |")
    print("|---|---|---|")
    gaps = []
    for scenario_name, policy, errors in rows:
        line, gap = row(scenario_name, policy, errors)
        print(line, flush=True)
        gaps.append(gap)
    print("\nLargest gap between the two runs' p50, p90 or p95 of any tool:")
    print("\n".join(f"- {g}" for g in gaps))


if __name__ == "__main__":
    main()
