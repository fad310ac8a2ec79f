"""Run the agent over the scenario's day with tracing on, as production exports its spans: ``python trace_day.py
OUT.jsonl [SEED]`` writes the OpenTelemetry SDK's OTLP JSON, in virtual time, for ``fleetchaos calibrate``."""

from __future__ import annotations

import sys

from bindings import BINDINGS
from crm_agent.tracing import export_to
from day import day_entry

import fleetchaos


def main(out: str, seed: int = 1) -> None:
    with export_to(out):
        run = fleetchaos.run_real(
            "chaos/crm_day.yaml", day_entry, seed=seed, bindings=BINDINGS, claim=lambda r: r.status, concurrency=4
        )
    m = run.metrics
    print(f"{m['tasks']:g} tasks, {m['tool_calls']:g} calls, success rate {m['success_rate']:g}: spans in {out}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
