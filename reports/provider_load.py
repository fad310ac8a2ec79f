"""Each provider's load over time: its queue and its servers' busy fraction, one line per arm.

A scenario that sets ``goodput_bin_s`` records, per run and provider, the call-seconds
spent waiting for a server, the call-seconds in the provider and the server-seconds busy
in each bin (the ``provider_*_by_time`` breakdowns, summed over seeds in a comparison).
A chart per provider divides them by the seeds and the bin's width: the mean queue and
the mean share of its servers at work, per arm on one pair of axes, so a run that
collapsed shows why: a queue that grows while its servers never rest.  A provider without
servers queues nothing; its chart draws the calls in it instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleetchaos.reports.cells import arm_label
from fleetchaos.reports.drawing import Chart
from fleetchaos.results.models import CompareResult

#: The breakdowns the charts read (``fleetchaos.sim.provider_load.BREAKDOWNS``).
QUEUE, IN_FLIGHT, BUSY = "provider_queue_by_time", "provider_in_flight_by_time", "provider_busy_by_time"

__all__ = ["BUSY", "IN_FLIGHT", "QUEUE", "load_captions", "load_charts", "load_series", "provider_load_chart"]


def load_series(counts: dict[str, int], provider: str, width_s: float, seeds: int, bins: int) -> list[float]:
    """``provider``'s mean per bin and seed from a summed ``provider_*_by_time`` breakdown (zero where none)."""
    per_bin: dict[int, int] = {}
    for key, seconds in counts.items():
        name, _, start = key.rpartition(" ")
        if name == provider:
            per_bin[round(float(start) / width_s)] = seconds
    return [per_bin.get(k, 0) / seeds / width_s for k in range(bins)]


def _providers(result: CompareResult) -> list[dict[str, Any]]:
    """The scenario's providers whose load the arms recorded, as declared (name, servers, ...)."""
    declared = (result.scenario_config.get("fleet") or {}).get("providers") or []
    recorded = {key.rpartition(" ")[0] for arm in result.arms for key in arm.breakdowns.get(IN_FLIGHT, {})}
    return [p for p in declared if p.get("name") in recorded]


def load_charts(result: CompareResult) -> list[Chart]:
    """One chart per provider whose load the comparison recorded (none without ``goodput_bin_s``)."""
    out = []
    for i, provider in enumerate(_providers(result)):
        slug = re.sub(r"[^a-z0-9]+", "_", str(provider["name"]).lower()).strip("_")
        filename = f"provider_load_{i + 1}{'_' + slug if slug else ''}.png"
        out.append(Chart(f"provider_load{i}", filename, f"{__name__}:provider_load_chart", (result, provider["name"])))
    return out


def load_captions(result: CompareResult, quote: Callable[[str], str]) -> dict[str, str]:
    """The report's caption of each provider chart, by chart key; ``quote`` escapes the provider's name."""
    seeds = len(result.seeds)
    out = {}
    for i, provider in enumerate(_providers(result)):
        what = "queue and the busy share of its servers" if provider.get("servers") else "calls in it"
        out[f"provider_load{i}"] = (
            f"Provider {quote(str(provider['name']))} over time: its {what} per arm, mean of {seeds} seeds"
        )
    return out


def provider_load_chart(result: CompareResult, provider: str, path: Path) -> Path | None:
    """``provider``'s queue (or calls in it) and its servers' busy share over simulated time, one line per arm."""
    from matplotlib.figure import Figure

    from fleetchaos.reports import palette
    from fleetchaos.reports.charts import LINESTYLES, errors_colour, save_png

    width_s = result.scenario_config.get("goodput_bin_s")
    spec = next((p for p in _providers(result) if p.get("name") == provider), None)
    if not width_s or spec is None:
        return None
    width_s = float(width_s)
    servers = spec.get("servers")
    seeds = max(1, len(result.seeds))
    end_s = float(result.scenario_config.get("duration_s", 0.0))
    bins = max(1, int(end_s // width_s))
    xs = [k * width_s / 60.0 for k in range(bins + 1)]  # minutes, as the goodput chart beside it
    fig = Figure(figsize=(9, 6.4 if servers else 4.2))
    axes = fig.subplots(2, 1, sharex=True) if servers else [fig.add_subplot()]
    several_formats = len({a.errors for a in result.arms}) > 1
    for i, arm in enumerate(result.arms):
        style: dict[str, Any] = {
            "label": arm_label(arm),
            "color": errors_colour(result, arm.errors) if several_formats else palette.category(i)[0],
            "linestyle": LINESTYLES[i % len(LINESTYLES)],
            "linewidth": 1.6,
        }
        top = load_series(arm.breakdowns.get(QUEUE if servers else IN_FLIGHT, {}), provider, width_s, seeds, bins)
        axes[0].step(xs, [*top, top[-1]], where="post", **style)
        if servers:
            busy = load_series(arm.breakdowns.get(BUSY, {}), provider, width_s, seeds, bins)
            share = [100.0 * b / servers for b in busy]
            axes[1].step(xs, [*share, share[-1]], where="post", **style)
    axes[0].set_ylabel("calls waiting for a server" if servers else "calls in the provider")
    axes[0].set_title(f"Provider {provider}: load over time (mean per {width_s / 60:g}-minute bin, {seeds} seeds)")
    if servers:
        axes[1].set_ylabel(f"busy share of its {servers} server{'s' if servers != 1 else ''} (%)")
        axes[1].set_ylim(0, 105)
    for ax in axes:
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("simulated minutes")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return save_png(fig, path)
