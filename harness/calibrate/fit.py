"""Fit a scenario to trace files: the whole calibration, from records to a scenario document.

Time: simulated second 0 is midnight (UTC) of the day of the first task; the horizon
runs to the hour after the last task's arrival.  Tasks still running then drain as in
any run.  What a trace cannot tell (side effects, tokens, the policy's own settings)
keeps the model's defaults and is listed in :attr:`Calibration.notes`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fleetchaos.calibrate import arrivals as A
from fleetchaos.calibrate import call_timeout as C
from fleetchaos.calibrate import faults as F
from fleetchaos.calibrate import outages as O
from fleetchaos.calibrate import provider as P
from fleetchaos.calibrate import pushes as G
from fleetchaos.calibrate import rate_limit as R
from fleetchaos.calibrate import state_faults as S
from fleetchaos.calibrate.latency import LatencyFit, fit_latency
from fleetchaos.calibrate.observed import Calls, Observations, TooManyTools
from fleetchaos.calibrate.templates import TemplateFit, fit_templates, partial_batch_seen, step_groups, tool_slots
from fleetchaos.traces.bounded import TraceFileError
from fleetchaos.traces.codes import FAULT_KINDS, CodeMap
from fleetchaos.traces.otlp_read import DEFAULT_WORKER_KEYS, ReadStats
from fleetchaos.traces.read import read_traces

DAY_S = 86_400.0
HOUR_S = 3_600.0

#: Default time bin of the change-point search (seconds).
BIN_S = 60.0

#: The longest horizon a calibrated scenario can have (a scenario's ``duration_s`` limit).
MAX_HORIZON_S = 365 * DAY_S

#: The most task templates (distinct tool sequences) a calibration writes.
MAX_TEMPLATES = 200

#: Kinds a trace cannot show (the call looks fine) or that this calibration does not fit.
NOT_FITTED = {
    "silent_suppression": "a swallowed failure looks like a success in a trace",
    "fabricated_defaults": "a fabricated result looks like a success in a trace",
    "schema_drift": "the envelope version a worker speaks is not a tool-call attribute",
    "latency_spike": "slow calls are in the latency fit; spikes as windows are not fitted",
    "network_partition": "a partition refuses dispatches, not tool calls; not fitted",
    "context_overflow": "it emerges from the context's size and the model's window (fleet.model), which a trace does "
    "not give; set fleet.model.context_window_tokens and result_tokens_sigma",
}


@dataclass
class Calibration:
    """A fitted scenario document with the provenance of its values, and what could not be fitted."""

    document: dict
    comments: dict[tuple, str]
    """Provenance per path into the document (("faults", 3), ("fleet", "workers"), ...)."""
    header: list[str]
    notes: list[str]
    unmapped: list[tuple[str, int]]
    latency: list[LatencyFit]
    templates: list[TemplateFit]
    stats: ReadStats
    origin_s: float
    duration_s: float
    calls: Calls = field(repr=False)
    hourly: list[tuple[int, float, int]] = field(default_factory=list)
    """(hour of day, exposure hours, arrivals)."""


def calibrate(
    paths: Iterable[Path],
    *,
    fmt: str = "auto",
    codes: CodeMap | None = None,
    name: str = "calibrated",
    bin_s: float = BIN_S,
    worker_keys: tuple[str, ...] = DEFAULT_WORKER_KEYS,
) -> Calibration:
    """Read the trace files and fit a scenario to them."""
    import numpy as np

    paths = list(paths)
    codes = codes if codes is not None else CodeMap()
    stats = ReadStats()
    observations = Observations(codes)
    sources = ", ".join(str(p) for p in paths)
    try:
        observations.add(read_traces(paths, fmt, stats=stats, worker_keys=worker_keys))
    except TooManyTools as exc:
        raise TraceFileError(f"{sources}: {exc}") from None
    calls = observations.finish()
    if len(calls) == 0:
        raise TraceFileError(
            f"{sources}: no tool calls found ({stats.spans} spans read); tool calls are execute_tool spans with "
            "gen_ai.tool.name (OTLP) or records of the plain form (docs/calibration.md)"
        )
    del observations
    notes: list[str] = []
    comments: dict[tuple, str] = {}
    starts = calls.task_start[np.isfinite(calls.task_start)]
    origin = math.floor(float(starts.min()) / DAY_S) * DAY_S
    duration = max(HOUR_S, math.ceil((float(starts.max()) - origin + 1e-9) / HOUR_S) * HOUR_S)
    if duration > MAX_HORIZON_S:
        raise TraceFileError(
            f"{sources}: the tasks arrive over {duration / DAY_S:,.0f} days (from {_utc(float(starts.min()))} to "
            f"{_utc(float(starts.max()))}); a scenario covers at most {MAX_HORIZON_S / DAY_S:g} days: calibrate "
            "from a shorter period (and check the times are seconds, not milliseconds)"
        )
    end_s = max(duration, float((calls.start + calls.duration).max()) - origin)
    group_start, item = step_groups(calls)
    templates, task_template = fit_templates(calls, group_start)
    if len(templates) > MAX_TEMPLATES:
        raise TraceFileError(
            f"{sources}: the tasks follow {len(templates):,} different tool sequences; a calibrated scenario has one "
            f"template per sequence and at most {MAX_TEMPLATES} (a scenario file stays readable): check that a task "
            "id groups the calls of one task (the trace id, or the plain form's task), or calibrate from the traces "
            "of fewer kinds of task"
        )
    api_tools, api_notes = S.uses_api(calls, [FAULT_KINDS.index(k) for k in F.API_KINDS])
    notes += api_notes
    bucket, other_api, bucket_notes = R.bucket_tools(calls, api_tools)
    notes += bucket_notes
    schedule, schedule_comment, hourly = A.arrival_schedule(calls, origin, notes)
    ctx = F.Context(calls, origin, duration, end_s, item, group_start, api_tools, bin_s, notes, bucket)
    ctx.tasks_per_hour = [float(p["tasks_per_hour"]) for p in schedule["points"]]

    timeout = C.fit_call_timeout(calls)
    provider = P.fit_provider(ctx) if timeout is None else P.fit_provider(ctx, timeout.candidates, timeout.seconds)
    if timeout is not None:
        provider, timeout_comment = _split_timeouts(ctx, timeout, provider)

    # -- latency per tool (a provider's calls without their wait in its queue) ------------------
    latency: dict[str, LatencyFit] = {}
    service = provider.service
    for t, tool in enumerate(calls.tools):
        ok = (calls.tool == t) & (calls.kind == -1)
        served = ok & np.isfinite(service)
        sample = (
            service[served] if served.any() else calls.duration[ok] if ok.any() else calls.duration[calls.tool == t]
        )
        left = ctx.gave_up & (calls.tool == t)
        censored = np.where(np.isfinite(provider.floor[left]), provider.floor[left], calls.duration[left])
        if not ok.any():
            notes.append(f"tool {tool!r}: no successful call, its duration is fitted on failed ones")
        fit = fit_latency(tool, sample, censored if ok.any() else ())
        if fit is not None:
            latency[tool] = fit
            if fit.n == 1:
                notes.append(f"tool {tool!r}: one call to fit its duration on, kept as a constant (cv 0)")
            if fit.best_family != "lognormal" and fit.ks_p < 0.01:  # only when the log-normal is rejected
                notes.append(
                    f"tool {tool!r}: a {fit.best_family} fits its durations better (KS "
                    f"{fit.alternatives[fit.best_family]:.3f} against the log-normal's {fit.ks_d:.3f}); the simulator "
                    "draws durations from a log-normal"
                )

    # -- fleet ----------------------------------------------------------------------------------
    slots = tool_slots(calls, group_start)
    fleet: dict = {
        "workers": max(1, len(calls.workers)),
        "tool_slots": min(max(1, slots), 64),
        "network_latency": {"mean_s": 0.0005, "cv": 0.0},
    }
    comments[("fleet", "workers")] = f"workers seen in the traces: {', '.join(calls.workers[:12])}" + (
        f" and {len(calls.workers) - 12} more" if len(calls.workers) > 12 else ""
    )
    comments[("fleet", "tool_slots")] = "the most steps one worker ran at once"
    if provider.doc is not None:
        fleet["providers"] = [provider.doc]
        comments[("fleet", "providers")] = provider.comment
    if timeout is not None:
        fleet["call_timeout_s"] = timeout.seconds
        comments[("fleet", "call_timeout_s")] = timeout_comment
    comments[("fleet", "network_latency")] = "traced call durations already include the network round trip"
    continued, told = partial_batch_seen(calls, group_start, templates, task_template)
    if told:
        fleet["partial_batch"] = "ok" if 2 * continued > told else "failed"
        comments[("fleet", "partial_batch")] = (
            f"{continued} of {told} partly failed fan-out step executions went on to the template's next step: "
            + ("the tools said ok" if fleet["partial_batch"] == "ok" else "the tools reported the failure")
        )

    # -- faults ---------------------------------------------------------------------------------
    fitted: list[F.Fitted] = []
    fitted += F.fit_transient(ctx, "network_blip")
    fitted += F.fit_transient(ctx, "timeout")
    rate_fits, rate_fleet, rate_comments = R.fit_rate_limit(ctx)
    fitted += rate_fits
    fleet.update(rate_fleet)
    comments[("fleet", "api_rate_per_s")] = "; ".join(rate_comments)
    if other_api:
        api_doc, comments[("fleet", "apis")] = R.other_api(ctx, other_api)
        fleet["apis"] = [api_doc]
    fitted += S.fit_worker_events(ctx, "disk_full")
    fitted += S.fit_worker_events(ctx, "expired_key")
    fitted += G.fit_push_conflicts(ctx)
    fitted += F.fit_missing_dependency(ctx)
    for kind in ("validation_error", "not_found", "permission_denied"):
        fitted += F.fit_persistent(ctx, kind)
    for kind in F.PER_CALL:  # the other per-call kinds (the model's own faults), from their records
        if kind not in ("network_blip", "timeout", "validation_error", "not_found", "permission_denied"):
            fitted += F.fit_per_call(ctx, kind)
    fitted += F.fit_partial_batch(ctx)
    fitted += S.fit_worker_events(ctx, "node_crash")
    fitted += O.fit_server_restarts(ctx)
    fitted += S.fit_quota(ctx)
    for kind, why in NOT_FITTED.items():
        k = int((calls.kind == FAULT_KINDS.index(kind)).sum())
        if k:
            notes.append(f"{kind}: {k} calls mapped to it, not fitted ({why})")
    unmapped = int((calls.kind == -2).sum())
    if unmapped:
        notes.append(f"{unmapped} failed calls have codes the mapping does not know: not fitted (listed below)")

    # -- workload ---------------------------------------------------------------------------------
    batched = A.batches(calls, origin, task_template, templates)
    workload: dict
    if batched is None:
        workload = {"arrival_schedule": schedule}
        comments[("workload", "arrival_schedule")] = schedule_comment
    else:
        workload = {"arrivals": batched[0]}
        comments[("workload", "arrivals")] = batched[1]
    template_docs = []
    disk_tools = set(np.unique(calls.tool[calls.kind == FAULT_KINDS.index("disk_full")]).tolist())
    total_tasks = sum(t.tasks for t in templates)
    for i, tpl in enumerate(templates):
        steps = []
        for tool, fan_out in tpl.steps:
            fit = latency[tool]  # every tool of a template made a call, so it has a fit
            step: dict = {"tool": tool, "duration": {"mean_s": F.sig(fit.mean_s), "cv": F.sig(min(fit.cv, 5.0))}}
            if fan_out > 1:
                step["fan_out"] = min(fan_out, 64)
            t_index = calls.tools.index(tool)
            if t_index not in api_tools:
                step["uses_api"] = False
            if t_index in disk_tools:
                step["disk_mb"] = 1.0
            steps.append(step)
        template_docs.append({"name": tpl.name, "weight": F.sig(tpl.tasks / total_tasks), "steps": steps})
        comments[("workload", "templates", i)] = (
            f"{tpl.tasks:,} tasks ({tpl.clean:,} with no failure, whose tool sequence defines it); "
            + "; ".join(
                f"{tool}: n={latency[tool].n:,}, mean {latency[tool].mean_s:.4g} s (95% CI "
                f"{latency[tool].mean_low_s:.4g}..{latency[tool].mean_high_s:.4g}), KS D {latency[tool].ks_d:.3f}"
                for tool, _ in tpl.steps
            )
        )
    if disk_tools:
        notes.append(
            "disk_mb: how much a step writes is not in traces; 1 MB for steps that met a full disk, 0 elsewhere"
        )
    notes.append(
        "not in traces, model defaults kept: side effects (append/idempotent), tokens per call, step inputs (needs), "
        "orchestrators, misread probability, heartbeat times, checkpoints, prices"
    )

    document = {
        "name": name,
        "description": f"Calibrated from {sources}: {len(calls):,} tool calls of {total_tasks:,} tasks on "
        f"{len(calls.workers)} workers.",
        "duration_s": duration,
        "fleet": fleet,
        "workload": {**workload, "templates": template_docs},
        "faults": [f.doc for f in fitted],
    }
    for i, f in enumerate(fitted):
        comments[("faults", i)] = f.comment
    header = [
        f"Calibrated by `fleetchaos calibrate` from {sources}.",
        f"{stats.spans:,} spans read: {len(calls):,} tool calls, {total_tasks:,} tasks, {len(calls.tools)} tools, "
        f"{len(calls.workers)} workers.",
        "Simulated second 0 is "
        + _utc(origin)
        + f"; the horizon runs {duration / HOUR_S:g} h, to the hour after the last arrival.",
        "Each value's provenance (counts, 95% intervals) is in the comment above it.",
    ]
    return Calibration(
        document=document,
        comments=comments,
        header=header,
        notes=notes,
        unmapped=codes.unmapped_rows(),
        latency=list(latency.values()),
        templates=templates,
        stats=stats,
        origin_s=origin,
        duration_s=duration,
        calls=calls,
        hourly=hourly,
    )


def _split_timeouts(ctx: F.Context, timeout: C.CallTimeout, provider: P.ProviderFit) -> tuple[P.ProviderFit, str]:
    """Which traced timeouts the client's call timeout accounts for (``ctx.gave_up``), and the provider's queue
    again without the hangs among them (a hang never reached it); the call timeout's provenance."""
    import numpy as np

    calls = ctx.calls
    chance = provider.chance.copy()
    reached = (calls.kind == -1) | timeout.at
    for t in np.unique(calls.tool[timeout.at & ~np.isfinite(chance)]).tolist():
        # A call no provider queued: its tool's own durations say how likely it was to outlast the timeout.
        logs = np.log(np.maximum(calls.duration[(calls.tool == t) & (calls.kind == -1)], 1e-6))
        if len(logs) > 1:
            mine = reached & (calls.tool == t)
            chance[mine] = P.outlasts(timeout.seconds, float(logs.mean()), float(logs.std()))[0]
    hang, found = C.hangs_at(timeout, calls, chance, reached)
    if (hang & np.isfinite(provider.chance)).any():
        provider = P.fit_provider(ctx, timeout.candidates & ~hang, timeout.seconds)
    ctx.gave_up = timeout.candidates & ~hang
    return provider, C.comment(timeout, calls, ctx.gave_up, found)


def _utc(unix_s: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(unix_s, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
