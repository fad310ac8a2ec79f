"""Failures turned into per-call fault specs: rates, windows and persistent faults.

State faults (per-worker events, quotas) are in :mod:`fleetchaos.calibrate.state_faults`, the
API bucket's rate cuts in :mod:`fleetchaos.calibrate.rate_limit`.  Every function returns
:class:`Fitted` entries (a fault's document and the provenance
comment that goes above it in the YAML) and appends to ``notes`` what it could not fit.

Denominators follow the order in which the simulator meets faults on a call (a crashed
worker, then expired credentials, then persistent faults, a full disk, the rate limit,
the quota, transient faults, a failing batch item): a kind's rate is its failures over
the calls that got as far as its stage, so a call refused earlier is not counted as one
the kind spared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fleetchaos.calibrate.changepoint import find_windows
from fleetchaos.sim.kind_record import PERSISTENT, RENEWED, TASK_STEP, TRANSIENT, WORKER_TOOL
from fleetchaos.sim.kinds import KINDS
from fleetchaos.traces.codes import FAULT_KINDS

if TYPE_CHECKING:  # NumPy is loaded by the fitters, not on import
    import numpy as np
    from numpy.typing import NDArray

    from fleetchaos.calibrate.observed import Calls

#: The per-call kinds fitted from their record alone (:func:`fit_per_call`): every transient kind, drawn afresh
#: for each call, and every persistent kind keyed per task and step (or item): the model's own faults and any
#: kind added since among them.  missing_dependency, keyed per worker and tool, has a fitter of its own.
PER_CALL: dict[str, str] = {
    name: kind.stage
    for name, kind in KINDS.items()
    if kind.stage == TRANSIENT or (kind.stage == PERSISTENT and kind.persistent_scope != WORKER_TOOL)
}

#: Stage of each kind in a call (lower is met first); kinds not listed have no per-call stage.
STAGE = {
    "node_crash": 0,
    "expired_key": 1,
    "missing_dependency": 2,
    "disk_full": 3,
    "mcp_server_restart": 3,  # a server down: met where a full disk is (what the call consumes)
    "rate_limit": 4,
    "quota_exhausted": 5,
    "partial_batch": 7,
    **{name: 2 if stage == PERSISTENT else 6 for name, stage in PER_CALL.items()},
}
API_KINDS = ("expired_key", "rate_limit", "quota_exhausted")

#: A worker's rate counts as its own (an extra rule) when this unlikely under the fleet's rate.
WORKER_ALPHA = 1e-4


def sig(value: float, digits: int = 6) -> float:
    """``value`` to ``digits`` significant digits: a rate of one in ten million keeps its value (6 decimals would make it 0)."""
    return float(f"{value:.{digits}g}")


@dataclass
class Fitted:
    """One fault as written: its document and where its values came from."""

    doc: dict
    comment: str


@dataclass
class Context:
    """What the fitters share: the calls, the time frame and derived columns."""

    calls: Calls
    origin_s: float
    duration_s: float
    end_s: float
    """Seconds from the origin to the last call's end (windows may reach into the drain)."""
    item: NDArray[np.int32]
    group_start: NDArray[np.intp]
    api_tools: set[int]
    bin_s: float
    notes: list[str] = field(default_factory=list)
    bucket_tools: set[int] = field(default_factory=set)
    """The API tools that take from the model provider's bucket (:func:`~fleetchaos.calibrate.rate_limit.bucket_tools`)."""
    tasks_per_hour: list[float] = field(default_factory=list)
    """The fitted arrival rate in each hour of the day (the fitted world's demand)."""
    gave_up: NDArray[np.bool_] = field(init=False)
    """Timeouts that are the client's call timeout (:mod:`fleetchaos.calibrate.call_timeout`), not a hang: none
    until the fit finds one."""

    def __post_init__(self) -> None:
        import numpy as np

        self.gave_up = np.zeros(len(self.calls), dtype=bool)

    def sim_time(self, unix: NDArray[np.float64]) -> NDArray[np.float64]:
        """Unix seconds as simulated seconds from the origin."""
        return unix - self.origin_s

    def kind_code(self, name: str) -> int:
        return FAULT_KINDS.index(name)

    def eligible(self, name: str) -> NDArray[np.bool_]:
        """Calls that reached ``name``'s stage: no earlier-stage failure, not unmapped (and API calls for API kinds)."""
        import numpy as np

        calls = self.calls
        stage = STAGE[name]
        earlier = [FAULT_KINDS.index(k) for k, s in STAGE.items() if s < stage]
        mask = (calls.kind != -2) & ~np.isin(calls.kind, earlier)
        if name in API_KINDS:
            mask &= np.isin(calls.tool, list(self.bucket_tools if name == "rate_limit" else self.api_tools))
        return mask


def _pct(p: float) -> str:
    return f"{100 * p:.3g}%"


def _wilson(k: float, n: float, z: float = 1.96) -> tuple[float, float]:
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


#: Per-tool rates are pooled into one when a chi-square test cannot tell them apart at this level.
HOMOGENEITY_ALPHA = 0.01


def _homogeneous(rows: list[tuple[int, int]]) -> tuple[bool, float]:
    """Whether failure rates (k of n per row) are the same but for chance, and the test's p-value."""
    from scipy import stats

    rows = [(k, n) for k, n in rows if n > 0]
    if len(rows) < 2:
        return True, 1.0
    table = [[k, n - k] for k, n in rows]
    if sum(k for k, _ in rows) == 0 or all(n - k == 0 for k, n in rows):
        return True, 1.0
    p_value = float(stats.chi2_contingency(table)[1])
    return p_value >= HOMOGENEITY_ALPHA, p_value


def _rate_comment(what: str, k: int, n: int) -> str:
    lo, hi = _wilson(k, n)
    return f"{what}: {k:,} of {n:,} ({_pct(k / n if n else 0.0)}, 95% CI {_pct(lo)}..{_pct(hi)})"


def _window_doc(start_s: float, end_s: float) -> dict:
    return {"start_s": round(start_s, 3), "duration_s": round(end_s - start_s, 3)}


def _clip_windows(ctx: Context, windows, what: str):
    kept = [w for w in windows if w.start_s < ctx.duration_s]
    if len(kept) < len(windows):
        ctx.notes.append(f"{what}: {len(windows) - len(kept)} window(s) after the last arrival dropped (drain only)")
    return kept


def _per_worker_extras(ctx, name, base_p, units_worker, units_failed, label, tools=None) -> list[Fitted]:
    """Extra rules for workers whose rate is well above ``base_p``."""
    import numpy as np
    from scipy import stats

    out = []
    for w in np.unique(units_worker).tolist():
        mask = units_worker == w
        n, k = int(mask.sum()), int(units_failed[mask].sum())
        if n == 0 or k == 0:
            continue
        rate = k / n
        if rate >= 2 * base_p and stats.binom.sf(k - 1, n, base_p) < WORKER_ALPHA:
            q = (rate - base_p) / (1 - base_p) if base_p < 1 else 1.0
            doc = {"kind": name, "probability": sig(min(q, 1.0)), "workers": [int(w)]}
            if tools:
                doc["tools"] = tools
            out.append(
                Fitted(
                    doc,
                    f"worker {ctx.calls.workers[w]!r}: "
                    + _rate_comment(label, k, n)
                    + f" vs {_pct(base_p)} fleet-wide",
                )
            )
    return out


def _rate_rules(ctx, name: str, times, failed, tools_of_unit, worker_of_unit, label: str, extra: dict) -> list[Fitted]:
    """Per-tool rates outside windows, windows found by change-point, and per-worker extras."""
    import numpy as np

    calls = ctx.calls
    out: list[Fitted] = []
    if not failed.any():
        return out
    windows, _baseline = find_windows(ctx.sim_time(times), failed, 0.0, ctx.end_s, ctx.bin_s)
    windows = _clip_windows(ctx, windows, name)
    inside = np.zeros(len(times), dtype=bool)
    rel = ctx.sim_time(times)
    for w in windows:
        inside |= (rel >= w.start_s) & (rel < w.end_s)
    out_failed, out_tools, out_workers = failed[~inside], tools_of_unit[~inside], worker_of_unit[~inside]
    tool_rates = {}
    for t in np.unique(out_tools).tolist():
        mask = out_tools == t
        tool_rates[t] = (int(out_failed[mask].sum()), int(mask.sum()))
    pooled_k, pooled_n = int(out_failed.sum()), len(out_failed)
    same, p_value = _homogeneous(list(tool_rates.values()))
    if pooled_k and same:
        p = pooled_k / pooled_n
        doc = {"kind": name, "probability": sig(p), **extra}
        out.append(
            Fitted(
                doc,
                _rate_comment(f"{label} outside windows, every tool", pooled_k, pooled_n)
                + f"; one rate for all {len(tool_rates)} tools (their rates differ no more than chance: "
                f"chi-square p = {p_value:.2g})",
            )
        )
        out += _per_worker_extras(ctx, name, p, out_workers, out_failed, label)
    elif pooled_k:
        for t, (k, n) in sorted(tool_rates.items(), key=lambda kv: calls.tools[kv[0]]):
            if k == 0:
                continue
            p = k / n
            doc = {"kind": name, "probability": sig(p), "tools": [calls.tools[t]], **extra}
            out.append(
                Fitted(
                    doc,
                    _rate_comment(f"{label} of {calls.tools[t]!r} outside windows", k, n)
                    + f"; rates differ by tool (chi-square p = {p_value:.2g})",
                )
            )
            mask = out_tools == t
            out += _per_worker_extras(ctx, name, p, out_workers[mask], out_failed[mask], label, [calls.tools[t]])
    for w in windows:
        q = (w.rate - w.baseline) / (1 - w.baseline) if w.baseline < 1 else 1.0
        doc = {
            "kind": name,
            "probability": sig(min(max(q, 0.0), 1.0)),
            "windows": [_window_doc(w.start_s, w.end_s)],
            **extra,
        }
        out.append(
            Fitted(
                doc,
                f"window found by change-point: {_rate_comment(label, w.failures, w.trials)} "
                f"against {_pct(w.baseline)} outside windows",
            )
        )
    return out


def fit_transient(ctx: Context, name: str) -> list[Fitted]:
    """network_blip, timeout and the model's per-call faults: per-call probabilities (a fresh draw on every try).

    A kind whose outcome is unknown (a timeout, a cut stream, an MCP tool's isError) also gets its
    ``timeout_s``, the median duration of its failed calls, when its model has one; whether such a call
    committed is not in traces.
    """
    from fleetchaos.sim.fault_specs import FAULT_MODELS

    calls = ctx.calls
    mask = ctx.eligible(name)
    failed = (calls.kind[mask] == ctx.kind_code(name)) & ~ctx.gave_up[mask]
    extra: dict = {}
    unknown = KINDS[name].outcome_unknown
    if unknown and failed.any():
        import numpy as np

        if "timeout_s" in FAULT_MODELS[name].model_fields:
            extra["timeout_s"] = round(float(np.median(calls.duration[mask][failed])), 3)
        extra["committed_probability"] = 0.5
    fits = _rate_rules(
        ctx, name, calls.start[mask], failed, calls.tool[mask], calls.worker[mask], "failed calls", extra
    )
    if unknown and fits:
        ctx.notes.append(f"{name}: whether a call that met it committed its side effect is not in traces; 0.5 kept")
    return fits


def fit_per_call(ctx: Context, name: str) -> list[Fitted]:
    """A kind of :data:`PER_CALL`, as its record says it is met: keyed (persistent) or drawn per call (transient)."""
    return fit_persistent(ctx, name) if PER_CALL[name] == PERSISTENT else fit_transient(ctx, name)


def _units(ctx: Context, name: str, per_item: bool):
    """Persistent kinds' units ((task, tool[, item]) keys): first execution time, worker, tool, failed?, repeats."""
    import numpy as np

    calls = ctx.calls
    mask = ctx.eligible(name)
    idx = np.flatnonzero(mask)
    code = ctx.kind_code(name)
    keys = calls.task[idx].astype(np.int64) * 1_000_003 + calls.tool[idx]
    if per_item:
        keys = keys * 4096 + np.minimum(ctx.item[idx], 4095)
    order = np.lexsort((calls.start[idx], keys))
    keys, idx = keys[order], idx[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    unit = np.cumsum(first) - 1
    failed_call = calls.kind[idx] == code
    n_units = int(first.sum())
    unit_failed = np.zeros(n_units, dtype=bool)
    np.logical_or.at(unit_failed, unit, failed_call)
    heads = idx[first]
    # Repeated identical failures: units that failed first and were tried again.
    first_failed = failed_call[first]
    tried = np.bincount(unit, minlength=n_units)
    again_failed = np.bincount(unit, weights=failed_call.astype(float), minlength=n_units)
    retried = first_failed & (tried > 1)
    repeats = (int(retried.sum()), int(((again_failed == tried) & retried).sum()))
    return calls.start[heads], calls.tool[heads], calls.worker[heads], unit_failed, ctx.item[heads], repeats


def fit_persistent(ctx: Context, name: str) -> list[Fitted]:
    """validation_error and the model's denials (per task and step), not_found and permission_denied (per task,
    step and item)."""
    import numpy as np

    per_item = KINDS[name].persistent_scope not in (TASK_STEP, RENEWED)  # an MCP session or tool list: per task, step
    times, tools, workers, failed, items, (retried, same) = _units(ctx, name, per_item)
    if not failed.any():
        return []
    unit = "task, step and item" if per_item else "task and step"
    label = f"({unit}) keys that failed"
    fits = _rate_rules(ctx, name, times, failed, tools, workers, label, {})
    if retried:
        ratio = same / retried
        text = f"{name}: {same} of {retried} failed keys that were tried again failed every time ({_pct(ratio)})"
        if ratio < 0.5 and retried >= 5:
            ctx.notes.append(text + ": they look transient, not persistent; check the code mapping")
        for f in fits:
            f.comment += f"; persistent: {same} of {retried} retried keys failed again every time"
    if name == "permission_denied":
        for f in fits:
            if "windows" in f.doc:
                _items_in_window(ctx, f, times, failed, items)
    del np
    return fits


def _items_in_window(ctx: Context, fitted: Fitted, times, failed, items) -> None:
    """A permission change that hits some items of a fan-out step: name them when the failures pick them."""
    import numpy as np

    w = fitted.doc["windows"][0]
    rel = ctx.sim_time(times)
    mask = (rel >= w["start_s"]) & (rel < w["start_s"] + w["duration_s"])
    rates = {}
    for i in np.unique(items[mask]).tolist():
        m = mask & (items == i)
        rates[int(i)] = (int(failed[m].sum()), int(m.sum()))
    if len(rates) < 2:
        return
    top = max(k / n for k, n in rates.values())
    hit = sorted(i for i, (k, n) in rates.items() if k / n >= top / 2)
    if len(hit) == len(rates):
        return
    k = sum(rates[i][0] for i in hit)
    n = sum(rates[i][1] for i in hit)
    fitted.doc["items"] = hit
    fitted.doc["probability"] = sig(k / n)
    fitted.comment += f"; the failures pick items {hit} ({_rate_comment('their keys', k, n)})"


def fit_missing_dependency(ctx: Context) -> list[Fitted]:
    """A tool missing on some workers: (worker, tool) pairs whose calls mostly fail with it."""
    import numpy as np

    calls = ctx.calls
    mask = ctx.eligible("missing_dependency")
    code = ctx.kind_code("missing_dependency")
    out = []
    tools = calls.tool[mask]
    workers = calls.worker[mask]
    failed = calls.kind[mask] == code
    for t in np.unique(tools[failed]).tolist():
        broken = []
        for w in np.unique(workers[failed & (tools == t)]).tolist():
            m = (tools == t) & (workers == w)
            if failed[m].mean() >= 0.5:
                broken.append((w, int(failed[m].sum()), int(m.sum())))
        if broken:
            doc = {"kind": "missing_dependency", "probability": 1.0, "tools": [calls.tools[t]],
                   "workers": [w for w, _, _ in broken]}  # fmt: skip
            detail = ", ".join(f"{calls.workers[w]!r} {k}/{n}" for w, k, n in broken)
            out.append(Fitted(doc, f"{calls.tools[t]!r} fails on every call on these workers (failed/calls: {detail})"))
        sporadic = int(failed[tools == t].sum()) - sum(k for _, k, _ in broken)
        if sporadic:
            ctx.notes.append(f"missing_dependency: {sporadic} sporadic failures of {calls.tools[t]!r} not fitted")
    return out


def fit_partial_batch(ctx: Context) -> list[Fitted]:
    """Fan-out step executions in which some items failed together."""
    import numpy as np

    calls = ctx.calls
    code = ctx.kind_code("partial_batch")
    if not (calls.kind == code).any():
        return []
    starts = ctx.group_start
    sizes = np.diff(np.append(starts, len(calls)))
    fan = sizes > 1
    failed_items = np.add.reduceat((calls.kind == code).astype(np.int64), starts) if len(starts) else np.zeros(0)
    tools = calls.tool[starts]
    out = []
    for t in np.unique(tools[fan & (failed_items > 0)]).tolist():
        m = fan & (tools == t)
        k, n = int((failed_items[m] > 0).sum()), int(m.sum())
        typical = int(np.median(failed_items[m & (failed_items > 0)]))
        doc = {
            "kind": "partial_batch",
            "probability": sig(k / n),
            "failures": max(1, typical),
            "tools": [calls.tools[t]],
        }
        out.append(Fitted(doc, _rate_comment(f"fan-out executions of {calls.tools[t]!r} with failed items", k, n)))
    return out
