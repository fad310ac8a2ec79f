"""The fit report: the traces against one simulated run of the scenario fitted to them.

Markdown and HTML in the comparison reports' style (``summary.md``, ``report.html``
with its charts embedded, the PNGs beside them): per-tool call durations as ECDFs,
observed and simulated; the share of failed calls by hour of day; fault kinds' shares;
the windows the change-point search found; and everything that could not be fitted.
The simulated side is read back through the same trace reader as the observed one.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from fleetchaos.calibrate.fit import HOUR_S, Calibration
from fleetchaos.calibrate.observed import Calls
from fleetchaos.calibrate.verdict import ALPHA, FitCheck, SimulatedDay
from fleetchaos.reports.blocks import H1, H2, IMG, TABLE, UL, P, write_pages
from fleetchaos.traces.codes import FAULT_KINDS

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

OBSERVED = "#7f7f7f"
SIMULATED = "#4f81bd"


def _hourly_failure_share(calls: Calls, origin_s: float):
    import numpy as np

    hours = ((calls.start - origin_s) // HOUR_S).astype(np.int64) % 24
    total = np.bincount(hours, minlength=24)
    failed = np.bincount(hours[calls.kind != -1], minlength=24)
    return np.where(total > 0, failed / np.maximum(total, 1), np.nan), total


def _ecdf_chart(observed: Calls, simulated: Calls, path: Path) -> Path:
    import numpy as np
    from matplotlib.figure import Figure

    from fleetchaos.reports.charts import save_png

    tools = observed.tools
    cols = min(3, len(tools))
    rows = math.ceil(len(tools) / cols)
    fig = Figure(figsize=(4.2 * cols, 2.8 * rows))
    for i, tool in enumerate(tools):
        ax = fig.add_subplot(rows, cols, i + 1)
        for calls, colour, label in ((observed, OBSERVED, "observed"), (simulated, SIMULATED, "simulated")):
            if tool not in calls.tools:
                continue
            t = calls.tools.index(tool)
            d = np.sort(calls.duration[(calls.tool == t) & (calls.kind == -1)])
            if len(d):
                ax.step(d, np.arange(1, len(d) + 1) / len(d), where="post", color=colour, label=label)
        ax.set_xscale("log")
        ax.set_title(tool, fontsize=9)
        ax.set_ylim(0, 1)
        ax.tick_params(labelsize=7)
        if i == 0:
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Successful call durations (s), ECDF: observed against simulated", fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)


def _hourly_chart(observed: Calls, simulated: Calls, origin_s: float, path: Path) -> Path:
    from matplotlib.figure import Figure

    from fleetchaos.reports.charts import save_png

    fig = Figure(figsize=(8, 3.2))
    ax = fig.add_subplot(1, 1, 1)
    for calls, colour, label in ((observed, OBSERVED, "observed"), (simulated, SIMULATED, "simulated")):
        share, _ = _hourly_failure_share(calls, origin_s)
        ax.plot(range(24), 100 * share, marker="o", color=colour, label=label)
    ax.set_xlabel("hour of day (UTC)")
    ax.set_ylabel("failed calls (%)")
    ax.set_xticks(range(0, 24, 2))
    ax.legend(fontsize=8)
    ax.set_title("Share of tool calls that failed, by hour of day", fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)


def _share(calls: Calls, i: int) -> str:
    n = len(calls)
    return f"{100 * int((calls.kind == i).sum()) / n:.2f}%" if n else "n/a"


def write_fit_report(
    calibration: Calibration,
    scenario: Scenario,
    out_dir: Path,
    *,
    policy: str,
    errors: str,
    day: SimulatedDay,
    check: FitCheck | None = None,
) -> list[Path]:
    """Write summary.md, report.html and the charts; returns the paths written.

    ``day`` is the simulated run drawn against the traces; ``check`` the fit check's verdict.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    observed = calibration.calls
    simulated, metrics, seed = day.calls, day.metrics, day.seed
    sim_origin = math.floor(float(simulated.task_start.min()) / 86_400) * 86_400 if len(simulated) else 0.0
    made = {
        "ecdf": _ecdf_chart(observed, simulated, out_dir / "latency_ecdf.png"),
        "hourly": _hourly_chart(observed, _shifted(simulated, sim_origin - calibration.origin_s), calibration.origin_s,
                                out_dir / "errors_by_hour.png"),
    }  # fmt: skip
    blocks = [
        H1(f"Fit report: {scenario.name}"),
        P(" ".join(calibration.header)),
        P(
            f"The simulated side is one run of the fitted scenario (policy `{policy}`, error format `{errors}`, "
            f"seed {seed}): {len(simulated):,} tool calls of {len(simulated.task_ids):,} tasks against "
            f"{len(observed):,} calls of {len(observed.task_ids):,} tasks observed. It illustrates the fit; the "
            "round-trip figures in docs/calibration.md measure it."
        ),
        H2("Call durations per tool"),
        TABLE(
            ["tool", "calls", "mean (s)", "cv", "mean 95% CI", "KS D", "KS p", "best family", "sim p50 / obs p50"],
            [_latency_row(fit, observed, simulated) for fit in calibration.latency],
            align_right=1,
        ),
        P(
            "KS D is the largest gap between the fitted log-normal's CDF and the observed one; its p-value is "
            "optimistic, since the parameters were fitted to the same calls. 'best family' names a Weibull or gamma "
            "fit when its KS distance is smaller. A provider's tools are fitted on their service (their wait in its "
            "queue left out: the simulated queue makes it again), so their mean is below their traced durations'; "
            "the last column compares the simulated durations' median with the traced one."
        ),
        IMG(made["ecdf"].name, "Successful call durations per tool, observed and simulated (ECDF, log scale)"),
        H2("Failures"),
        TABLE(
            ["fault kind", "observed share of calls", "simulated share of calls"],
            [
                (k, _share(observed, i), _share(simulated, i))
                for i, k in enumerate(FAULT_KINDS)
                if (observed.kind == i).any() or (simulated.kind == i).any()
            ],
        ),
        IMG(made["hourly"].name, "Share of tool calls that failed by hour of day, observed and simulated"),
        *_check_blocks(check, policy, errors),
        H2("Windows found"),
        _windows_block(scenario),
        H2("Not fitted"),
        UL(calibration.notes or ["everything observed was fitted"]),
    ]
    if calibration.unmapped:
        blocks += [
            H2("Unmapped failures"),
            P("Failed calls whose code and HTTP status the mapping does not know; map them with `--codes`."),
            TABLE(["code", "calls"], [(text, f"{count:,}") for text, count in calibration.unmapped]),
        ]
    blocks += [
        H2("Headline metrics of the simulated run"),
        TABLE(
            ["metric", "value"],
            [(k, _fmt(metrics.get(k))) for k in ("recovery_rate", "silent_failure_rate", "wasted_retries")],
        ),
    ]
    return [*write_pages(out_dir, blocks, f"Fit report: {scenario.name}", made), *made.values()]


def _check_blocks(check: FitCheck | None, policy: str, errors: str) -> list:
    if check is None:
        return [H2("Fit check"), P("Not run (`--check-seeds 0`).")]
    days = len(check.seeds)
    verdict = (
        "The fitted scenario **fits**: every fault kind's share of the traces' calls, and every checked duration "
        "quantile, lies within its interval."
        if check.fits
        else f"The fitted scenario **misses** the traces on {len(check.misses)} fault kind(s) and "
        f"{len(check.latency_misses)} duration quantile(s): "
        + ", ".join(
            [k.kind for k in check.misses] + [f"{q.tool} p{round(100 * q.quantile)}" for q in check.latency_misses]
        )
        + "."
    )
    return [
        H2("Fit check"),
        P(
            f"{verdict} The fitted scenario was simulated on {days} seeds ({', '.join(map(str, check.seeds))}; policy "
            f"`{policy}`, error format `{errors}`), each day read back like the traces. A kind's share of the traces' "
            f"calls must lie within the {100 * (1 - ALPHA):g}% prediction interval of one simulated day: Student's t "
            f"over the days' spread (never less than binomial error), so a right fit is called a miss once in "
            f"{1 / ALPHA:,.0f} kinds. How your fleet recovers moves these shares: simulate with the policy and "
            "error format closest to it."
        ),
        TABLE(
            ["fault kind", "observed share", "simulated share (mean)", "interval for one day", "verdict"],
            [
                (
                    k.kind + ("" if k.fitted else " (not fitted)"),
                    f"{100 * k.observed_share:.2f}%",
                    f"{100 * k.simulated_share:.2f}%",
                    f"{100 * k.low:.2f}%..{100 * k.high:.2f}%",
                    "misses" if k.misses else "fits",
                )
                for k in check.kinds
            ],
            align_right=1,
        ),
        P(
            "Each tool with enough successful calls in the traces has its p50 and p90 durations held to the "
            "simulated days the same way (the wider of Student's t over the days' quantiles and the "
            "distribution-free bound on a quantile)."
        ),
        TABLE(
            ["tool", "quantile", "observed", "simulated (mean)", "interval for one day", "verdict"],
            [
                (
                    q.tool,
                    f"p{round(100 * q.quantile)}",
                    f"{q.observed:.3g} s",
                    f"{sum(q.simulated) / len(q.simulated):.3g} s",
                    f"{q.low:.3g}..{q.high:.3g} s",
                    "misses" if q.misses else "fits",
                )
                for q in check.latencies
            ],
            align_right=2,
        ),
    ]


def _shifted(calls: Calls, offset: float) -> Calls:
    """``calls`` with their times moved by ``-offset`` (the simulated run's epoch onto the observed one)."""
    from dataclasses import replace

    return replace(calls, start=calls.start - offset, task_start=calls.task_start - offset)


def _latency_row(fit, observed: Calls, simulated: Calls) -> tuple[str, ...]:
    """One tool's fit, and its simulated successful calls' median duration over its traced ones'."""
    import numpy as np

    def median(calls: Calls) -> float | None:
        if fit.tool not in calls.tools:
            return None
        d = calls.duration[(calls.tool == calls.tools.index(fit.tool)) & (calls.kind == -1)]
        return float(np.median(d)) if len(d) else None

    sim, obs = median(simulated), median(observed)
    ratio = f"{sim / obs:.3f}" if sim is not None and obs else "n/a"
    return (
        fit.tool,
        f"{fit.n:,}",
        f"{fit.mean_s:.4g}",
        f"{fit.cv:.3f}",
        f"{fit.mean_low_s:.4g}..{fit.mean_high_s:.4g}",
        f"{fit.ks_d:.3f}",
        f"{fit.ks_p:.2g}",
        fit.best_family,
        ratio,
    )


def _windows_block(scenario):
    rows = []
    for i, fault in enumerate(scenario.faults):
        for w in getattr(fault, "windows", None) or ():
            detail = (
                f"capacity x{fault.capacity_factor:g}"
                if fault.kind == "rate_limit"
                else f"p = {getattr(fault, 'probability', 0):g}"
            )
            rows.append(
                (f"faults[{i}]", fault.kind, f"{w.start_s / HOUR_S:.2f} h", f"{w.duration_s / 60:.1f} min", detail)
            )
    if not rows:
        return P("No window of elevated error rate was found.")
    return TABLE(["fault", "kind", "starts", "lasts", "inside"], rows, align_right=2)


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.4g}"
