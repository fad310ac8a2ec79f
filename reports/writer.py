"""Report folders: results JSON, a Markdown summary, one self-contained HTML page, charts and per-task CSV.

A report is first built as a list of blocks (headings, paragraphs, tables, images,
lists); the same blocks render to Markdown (``summary.md``, which links the PNG files
beside it) and to HTML (``report.html``, with every chart embedded as a base64 PNG and
inline CSS, so it opens offline).  Nothing in a report depends on the clock or on the
machine: the same result gives the same bytes.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetchaos.reports import charts
from fleetchaos.reports.goodput import GOODPUT, goodput_chart
from fleetchaos.reports.tables import COLUMNS, RATES, fmt, policy_error_tasks
from fleetchaos.results.models import HEADLINE_METRICS, ArmResult, CompareResult, RunResult, Timeline
from fleetchaos.results.stats import MIN_SEEDS

#: Modelling assumptions every report states, so readers can judge the figures.
ASSUMPTIONS: tuple[str, ...] = (
    "Each seed is one simulated run of the whole fleet over the scenario's horizon (one day by default), "
    "followed by a drain period in which no task arrives.",
    "Every arm faces the same fault realisation for a seed: per-call faults are drawn from streams keyed by "
    "(task, step, item, execution number); scheduled faults (full disks, key expiries, rate-limit cuts, crashes, "
    "partitions) are drawn once per seed.",
    "Rate limiting is not a coin flip: a fleet-wide API token bucket refuses calls when load exceeds its rate; "
    "a rate-limit fault cuts that rate for a window.",
    "A full disk stays full until cleanup (cleanup_after_s); an expired key fails every API call until the orchestrator refreshes it.",
    "A timeout is ambiguous: the call's side effect commits with committed_probability; retrying a committed "
    "non-idempotent step duplicates its side effect.",
    "Generic errors carry only a status word; a generic fan-out tool returns what it gathered as 'ok' "
    "(no per-item status), so a partly failed batch is passed on as success.",
    "Structured errors carry error_code, category, recoverable, suggested_action, partial_success, retry_after_ms, "
    "context and schema_version; a policy can only resume from what partial_success reveals.",
    "Escalation hands the task to a human and ends automatic recovery; it is reported honestly, not counted as recovered. "
    "Each escalation pages a human once, and the human's response time is drawn from the fleet's human_response "
    "(charged as human hours; the human's own work is outside the simulation).",
    "A task that never reports back (lost with a crashed worker, or still running at the drain limit) counts as data loss.",
    "Tasks are dispatched round-robin (or to the least-loaded worker when the scenario says so); a reroute goes to the next worker.",
    "Costs are modelled, not measured: model tokens per API call that ran, a price per tool call and a price per hour "
    "of paged human time, all from the scenario's fleet settings.",
    "An LLM orchestrator misreads a reported failure as a success with the fleet's misread_probability (default 0.05) "
    "times the error format's misread_factor (raw 3, generic 1, envelopes 0.2, tool-envelope 0.05); a guardrail policy "
    "blocks the misread when the format carries a machine-readable failure flag (docs/formats.md).",
    "Raw vendor errors carry secrets planted per run; secrets_leaked counts those that reached the orchestrator. "
    "Reports hold the count, never the text.",
)

#: How to read the statistics, stated in every comparison report.
READING_NOTES: tuple[str, ...] = (
    "Figures are means over seeds; intervals are Student-t intervals of that mean (seeds are independent replications).",
    "Verdicts compare each arm with the reference arm on the same seeds: the per-seed differences are paired "
    "(both arms met the same faults), and their mean gets a Student-t interval. 'better' or 'worse' means the whole "
    "interval lies on one side of zero, in the metric's good or bad direction; 'inconclusive' means it contains zero.",
    f"With fewer than {MIN_SEEDS} paired seeds a verdict reads 'too few seeds': no winner is named. "
    "Compare arms on 10 seeds or more.",
    "Pooled rates count every task of every seed as one trial and carry Wilson score intervals. Tasks of one simulated "
    "day share fault windows, so they are not fully independent and these intervals are narrower than the truth; "
    "prefer the across-seed intervals and the paired verdicts.",
    "p50 and p95 are per-seed percentiles (linear interpolation between closest ranks), averaged over seeds. "
    "The time-to-recovery ECDF pools the recovered tasks of every seed.",
    "Recovery by fault kind groups faulted tasks by the kind of the first fault they met; counts are pooled over seeds.",
    "The timeline and error-code charts each show one traced run: the first seed of the arm with the best and of the "
    "arm with the worst mean recovery rate. They illustrate; the tables measure.",
)

# -- blocks ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One piece of a report: ``kind`` is h1, h2, h3, p, table, img, ul or pre."""

    kind: str
    text: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    items: tuple[str, ...] = ()
    align_right: int = 0
    """Table columns from this index on are numeric (right-aligned); 0 for none."""


def H1(text: str) -> Block:
    """A level-1 heading."""
    return Block("h1", text)


def H2(text: str) -> Block:
    """A level-2 heading."""
    return Block("h2", text)


def H3(text: str) -> Block:
    """A level-3 heading."""
    return Block("h3", text)


def P(text: str) -> Block:
    """A paragraph (``code`` in backticks is kept as code)."""
    return Block("p", text)


def UL(items: Iterable[str]) -> Block:
    """A bulleted list."""
    return Block("ul", items=tuple(items))


def PRE(text: str) -> Block:
    """A preformatted block."""
    return Block("pre", text)


def IMG(file: str, alt: str) -> Block:
    """A chart: a PNG file name beside the report."""
    return Block("img", file, items=(alt,))


def TABLE(headers: Iterable[str], rows: Iterable[Iterable[str]], align_right: int = 1) -> Block:
    """A table; columns from ``align_right`` on are right-aligned."""
    return Block("table", headers=tuple(headers), rows=tuple(tuple(r) for r in rows), align_right=align_right)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list[Block]) -> str:
    """Render blocks as GitHub-flavoured Markdown."""
    out: list[str] = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out += ["#" * int(b.kind[1]) + " " + b.text, ""]
        elif b.kind == "p":
            out += [b.text, ""]
        elif b.kind == "ul":
            out += [f"- {item}" for item in b.items] + [""]
        elif b.kind == "pre":
            out += ["```", b.text.rstrip("\n"), "```", ""]
        elif b.kind == "img":
            out += [f"![{b.items[0]}]({b.text})", ""]
        elif b.kind == "table":
            aligns = ["---:" if b.align_right and i >= b.align_right else "---" for i in range(len(b.headers))]
            out.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            out.append("|" + "|".join(aligns) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", html.escape(text, quote=True))


CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #4f81bd; padding-bottom: .3rem; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .8rem 0 1.2rem; font-size: .88rem; }
th, td { border: 1px solid #d0d0d0; padding: .3rem .55rem; vertical-align: top; }
th { background: #f0f3f8; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1rem 0 1.8rem; }
figure img { max-width: 100%; border: 1px solid #e3e3e3; }
figcaption { font-size: .85rem; color: #555; }
pre { background: #f6f8fa; padding: .8rem; overflow-x: auto; font-size: .8rem; }
code { background: #f6f8fa; padding: 0 .2rem; font-size: .88em; }
.verdict-better { color: #1a7f37; font-weight: 600; }
.verdict-worse { color: #c0392b; font-weight: 600; }
"""


def to_html(blocks: list[Block], title: str, images: dict[str, bytes]) -> str:
    """Render blocks as one self-contained HTML page; every ``img`` block is embedded from ``images``."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
    ]
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append(f"<{b.kind}>{_inline(b.text)}</{b.kind}>")
        elif b.kind == "p":
            out.append(f"<p>{_inline(b.text)}</p>")
        elif b.kind == "ul":
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
        elif b.kind == "pre":
            out.append(f"<pre>{html.escape(b.text)}</pre>")
        elif b.kind == "img":
            data = base64.b64encode(images[b.text]).decode("ascii")
            alt = html.escape(b.items[0], quote=True)
            out.append(
                f'<figure><img alt="{alt}" src="data:image/png;base64,{data}"><figcaption>{alt}</figcaption></figure>'
            )
        elif b.kind == "table":
            head = "".join(f"<th>{_inline(h)}</th>" for h in b.headers)
            body = []
            for row in b.rows:
                cells = []
                for i, c in enumerate(row):
                    cls = ' class="n"' if b.align_right and i >= b.align_right else ""
                    if c in ("better", "worse"):
                        cls = f' class="n verdict-{c}"' if cls else f' class="verdict-{c}"'
                    cells.append(f"<td{cls}>{_inline(c)}</td>")
                body.append("<tr>" + "".join(cells) + "</tr>")
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


# -- JSON --------------------------------------------------------------------------------


def _scalar(x: Any) -> bool:
    return not isinstance(x, (dict, list))


def _encode(obj: Any, level: int, in_list: bool) -> str:
    if _scalar(obj):
        return json.dumps(obj)
    values = list(obj.values()) if isinstance(obj, dict) else obj
    inline = json.dumps(obj, separators=(", ", ": "))
    flat = all(_scalar(v) for v in values)
    if not values or (flat and (isinstance(obj, list) or in_list)) or len(inline) + 2 * level <= 100:
        return inline
    pad = "  " * (level + 1)
    if isinstance(obj, dict):
        parts = [f"{pad}{json.dumps(k)}: {_encode(v, level + 1, False)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(parts) + "\n" + "  " * level + "}"
    parts = [pad + _encode(v, level + 1, True) for v in obj]
    return "[\n" + ",\n".join(parts) + "\n" + "  " * level + "]"


def dumps(model) -> str:
    """A result model as readable, compact JSON: short and flat containers stay on one line.

    Values are exactly pydantic's JSON serialisation; only the whitespace differs.
    """
    return _encode(json.loads(model.model_dump_json()), 0, False) + "\n"


# -- per-task CSV ------------------------------------------------------------------------


class TaskCsvWriter:
    """Streams the per-task rows of runs into a CSV while a comparison runs.

    Rows go to ``<path>.partial`` as each run arrives (whatever order the runs finish
    in); :meth:`close` sorts them by arm (in ``arms`` order), seed and task id and writes
    ``path``, so the file does not depend on the number of processes.  Runs without task
    rows are ignored.
    """

    LEAD = ("policy", "errors", "seed")

    def __init__(self, path: Path, arms: list[tuple[str, str]] | None = None):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.arms = list(arms or [])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.partial.open("w", newline="", encoding="utf-8")
        self._writer: csv.DictWriter | None = None
        self.rows = 0

    def add(self, result: RunResult) -> None:
        """Append the task rows of one run."""
        if not result.tasks:
            return
        if self._writer is None:
            self._writer = csv.DictWriter(self._fh, fieldnames=[*self.LEAD, *result.tasks[0]], lineterminator="\n")
            self._writer.writeheader()
        for row in result.tasks:
            self._writer.writerow({"policy": result.policy, "errors": result.errors, "seed": result.seed, **row})
        self.rows += len(result.tasks)
        self._fh.flush()

    def close(self) -> Path | None:
        """Sort the rows into ``path``; returns it, or None when no run had task rows."""
        self._fh.close()
        if self._writer is None:
            self.partial.unlink(missing_ok=True)
            return None
        order = {arm: i for i, arm in enumerate(self.arms)}
        with self.partial.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            fields = list(reader.fieldnames or [])
            rows = list(reader)

        def key(row: dict) -> tuple:
            arm = (row["policy"], row["errors"])
            return (order.get(arm, len(order)), arm, int(row["seed"]), int(row["id"]))

        rows.sort(key=key)
        with self.path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        self.partial.unlink()
        return self.path

    def abort(self) -> None:
        """Close without sorting: keep ``<path>.partial`` (rows of the runs that finished)."""
        self._fh.close()


def write_task_csv(tasks: list[dict[str, Any]], path: Path) -> Path | None:
    """Write one run's per-task rows; None when there are none."""
    if not tasks:
        return None
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(tasks[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(tasks)
    return path


# -- formatting helpers ------------------------------------------------------------------


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def _interval(lo: float | None, hi: float | None, pct: bool, digits: int = 1) -> str:
    if lo is None or hi is None:
        return ""
    if pct:
        return f" [{100 * lo:.{digits}f}, {100 * hi:.{digits}f}]"
    return f" [{lo:,.{digits}f}, {hi:,.{digits}f}]"


def _is_rate(metric: str) -> bool:
    return metric in RATES


def _metric_cell(arm: ArmResult, metric: str, digits: int = 1) -> str:
    value = arm.metrics.get(metric)
    lo, hi = (arm.ci.get(metric) or [None, None])[:2]
    if _is_rate(metric):
        return _pct(value, digits) + _interval(lo, hi, True, digits)
    return _num(value, digits) + _interval(lo, hi, False, digits)


def _sorted_keys(keys: Iterable[str]) -> list[str]:
    keys = list(keys)
    if keys and all(k.isdigit() for k in keys):
        return sorted(keys, key=int)
    return sorted(keys)


def _counts(d: dict[str, int], limit: int = 12) -> str:
    if not d:
        return "none"
    items = sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{k}: {v}" for k, v in items[:limit])
    if len(items) > limit:
        text += f", and {len(items) - limit} more ({sum(v for _, v in items[limit:])})"
    return text


# -- comparison report -------------------------------------------------------------------

#: Extra metrics in the comparison report's second table, with their headers and digits.
DETAIL_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("data_loss_tasks", "data loss (tasks)", 1),
    ("escalation_rate", "escalation rate", 1),
    ("human_pages_per_day", "pages / day", 1),
    ("mean_time_to_recovery_s", "time to rec. mean (s)", 1),
    ("p50_time_to_recovery_s", "p50 (s)", 1),
    ("p95_time_to_recovery_s", "p95 (s)", 1),
    ("p95_steps_to_recovery", "steps to rec. p95", 1),
    ("retry_amplification", "calls per logical call", 3),
    ("tokens", "tokens", 0),
    ("cost_usd", "cost (USD)", 2),
)

CHART_FILES = {
    "recovery": "recovery.png",
    "silent_and_wasted": "silent_and_wasted.png",
    "cost_vs_recovery": "cost_vs_recovery.png",
    "heatmap": "recovery_by_fault_kind.png",
    "ecdf": "time_to_recovery_ecdf.png",
    "error_codes": "error_codes.png",
    "goodput": "goodput_over_time.png",
}


def _timeline_file(index: int, t: Timeline) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", t.label.lower()).strip("_") or str(index)
    return f"timeline_{slug}.png"


def _render_compare_charts(result: CompareResult, out_dir: Path) -> dict[str, Path]:
    made: dict[str, Path | None] = {
        "recovery": charts.recovery_chart(result, out_dir / CHART_FILES["recovery"]),
        "silent_and_wasted": charts.cost_chart(result, out_dir / CHART_FILES["silent_and_wasted"]),
        "cost_vs_recovery": charts.pareto_chart(result, out_dir / CHART_FILES["cost_vs_recovery"]),
        "heatmap": charts.heatmap_chart(result, out_dir / CHART_FILES["heatmap"]),
        "ecdf": charts.ecdf_chart(result, out_dir / CHART_FILES["ecdf"]),
        "goodput": goodput_chart(result, out_dir / CHART_FILES["goodput"]),
    }
    for i, t in enumerate(result.timelines):
        made[f"timeline{i}"] = charts.timeline_chart(t, out_dir / _timeline_file(i, t))
    made["error_codes"] = charts.error_codes_chart(result.timelines, out_dir / CHART_FILES["error_codes"])
    return {k: v for k, v in made.items() if v is not None}


def compare_blocks(
    result: CompareResult, made: dict[str, Path] | None = None, tasks_csv: str | None = None
) -> list[Block]:
    """The blocks of a comparison report; ``made`` maps chart keys to the PNGs written (None: link every chart)."""
    pct = round(result.confidence * 100)
    n = len(result.seeds)
    blocks = [H1(f"fleetchaos comparison: {result.scenario}")]
    if result.description.strip():
        blocks.append(P(" ".join(result.description.split())))
    reference = result.arms[0] if result.arms else None
    seeds = (
        ", ".join(map(str, result.seeds)) if n <= 30 else f"{n} seeds from {min(result.seeds)} to {max(result.seeds)}"
    )
    setup = [
        f"Scenario: `{result.scenario}`",
        f"Seeds: {seeds} ({n} independent simulated runs per arm; every arm meets the same faults for a seed)",
        f"Arms: {len(result.arms)} ({', '.join(charts.arm_label(a) for a in result.arms)})",
        f"Confidence: {pct}%",
        "Versions: " + (", ".join(f"{k} {v}" for k, v in result.versions.items()) or "not recorded"),
    ]
    if reference is not None and len(result.arms) > 1:
        setup.append(f"Reference arm for verdicts: {charts.arm_label(reference)}")
    blocks += [H2("Setup"), UL(setup)]
    if n < MIN_SEEDS:
        blocks.append(
            P(
                f"Only {n} seed{'s' if n != 1 else ''}: too few to name a winner. Intervals are wide or missing; "
                "run with `--seeds 10` or more before deciding."
            )
        )

    blocks += [
        H2("Headline figures"),
        P(f"Mean per seed with its {pct}% confidence interval [low, high] across seeds."),
        TABLE(
            ["policy", "errors"] + [h for _, h, _ in COLUMNS],
            [
                [a.policy, a.errors]
                + [
                    _metric_cell(a, key) if key in HEADLINE_METRICS else fmt(a.metrics.get(key), kind)
                    for key, _, kind in COLUMNS
                ]
                for a in result.arms
            ],
            align_right=2,
        ),
        TABLE(
            ["policy", "errors"] + [h for _, h, _ in DETAIL_COLUMNS],
            [
                [a.policy, a.errors]
                + [
                    _metric_cell(a, key, d) if _is_rate(key) else _num(a.metrics.get(key), d)
                    for key, _, d in DETAIL_COLUMNS
                ]
                for a in result.arms
            ],
            align_right=2,
        ),
    ]

    blocks += policy_error_blocks(
        [(a.policy, a.errors, a.metrics, a.breakdowns) for a in result.arms], runs=len(result.seeds)
    )
    recipes = {a.policy: a.recipe for a in result.arms if a.recipe}
    if recipes:
        blocks += [
            H2("Policies as run"),
            UL([f"`{name}`: `{recipe}`" for name, recipe in recipes.items()]),
        ]

    if result.comparisons:
        ref = result.comparisons[0]
        blocks += [
            H2("Verdicts against the reference arm"),
            P(
                f"Each arm minus {ref.reference_policy} on {ref.reference_errors}, seed by seed on the same seeds: "
                f"mean difference with its {pct}% interval, and the verdict in the metric's direction."
            ),
            TABLE(
                ["arm", "metric", "better", "paired seeds", "mean difference", f"{pct}% interval", "verdict"],
                [
                    [
                        f"{c.policy} on {c.errors}",
                        c.metric,
                        {True: "higher", False: "lower", None: "-"}[c.higher_is_better],
                        str(c.n),
                        _diff(c.metric, c.mean_difference),
                        _diff_ci(c.metric, c.ci),
                        c.verdict,
                    ]
                    for c in result.comparisons
                ],
                align_right=3,
            ),
        ]

    pooled_names = sorted({k for a in result.arms for k in a.pooled})
    if pooled_names:
        blocks += [
            H2("Pooled task-level rates"),
            P(f"Every task of every seed counted as one trial, with the Wilson {pct}% interval (see How to read)."),
            TABLE(
                ["policy", "errors", *pooled_names],
                [[a.policy, a.errors] + [_proportion(a.pooled.get(k)) for k in pooled_names] for a in result.arms],
                align_right=2,
            ),
        ]

    made = made if made is not None else {k: Path(v) for k, v in CHART_FILES.items()}
    blocks.append(H2("Charts"))
    captions = {
        "recovery": f"Recovery rate per arm (% of faulted tasks), mean of {n} seeds with {pct}% CI bars",
        "silent_and_wasted": "Silent failures (% of tasks) and wasted retries (count per run) per arm, with CI bars",
        "cost_vs_recovery": "Cost per simulated run (USD) against recovery rate; the dashed line joins the Pareto front",
        "heatmap": "Recovery rate by arm and kind of the task's first fault, tasks pooled over seeds",
        "ecdf": "ECDF of time to recovery (simulated seconds, log scale), recovered tasks pooled over seeds",
    }
    if any(a.breakdowns.get(GOODPUT) for a in result.arms):  # only scenarios that set goodput_bin_s record it
        captions["goodput"] = f"Goodput over time: tasks completed per minute per arm, mean of {n} seeds"
    for key, caption in captions.items():
        if key in made:
            blocks.append(IMG(made[key].name, caption))
    for i, t in enumerate(result.timelines):
        key = f"timeline{i}"
        if key in made:
            blocks.append(
                IMG(made[key].name, f"Fleet timeline, {t.label}: {t.policy} on {t.errors} errors, seed {t.seed}")
            )
    if "error_codes" in made:
        blocks.append(
            IMG(made["error_codes"].name, "Faulted calls per error code over time in the traced runs, spikes marked")
        )
    if not result.timelines:
        blocks.append(P("No traced run is stored in these results, so there is no fleet timeline or error-code chart: "
                        "`fleetchaos compare --report DIR` records one for the best and the worst arm."))  # fmt: skip
    else:
        blocks.append(UL(f"{t.label}: `{t.replay}`" for t in result.timelines))

    blocks += _breakdown_blocks(result)
    blocks += [H2("How to read these figures"), UL(READING_NOTES)]
    blocks += [H2("Modelling assumptions"), UL(ASSUMPTIONS)]
    if result.scenario_config:
        blocks += [
            H3("The scenario as it ran (every modelling parameter)"),
            PRE(json.dumps(result.scenario_config, indent=2, sort_keys=True)),
        ]
    files = ["`results.json`: every figure above, per seed, with intervals"]
    if tasks_csv:
        files.append(f"`{tasks_csv}`: one row per task, arm and seed (truth, claim, effort)")
    files.append("Metric definitions, denominators and directions: docs/metrics.md")
    files.append("Replay any arm and seed: `fleetchaos run --scenario NAME --policy POLICY --errors FORMAT --seed N`")
    blocks += [H2("Files and replay"), UL(files)]
    return blocks


def _diff(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{100 * value:+.2f} pp" if _is_rate(metric) else f"{value:+,.3f}"


def _diff_ci(metric: str, ci: list[float | None]) -> str:
    lo, hi = ([*ci, None, None])[:2]
    if lo is None or hi is None:
        return "-"
    if _is_rate(metric):
        return f"[{100 * lo:+.2f}, {100 * hi:+.2f}] pp"
    return f"[{lo:+,.3f}, {hi:+,.3f}]"


def _proportion(p) -> str:
    if p is None or p.rate is None:
        return "-"
    return f"{100 * p.rate:.1f}% [{100 * p.low:.1f}, {100 * p.high:.1f}] ({p.successes}/{p.trials})"


def _breakdown_blocks(result: CompareResult) -> list[Block]:
    blocks = [H2("Breakdowns (all seeds pooled)")]
    kinds = sorted({k for a in result.arms for k in a.breakdowns.get("faulted_tasks_by_first_fault", {})})
    if kinds:
        rows = []
        for a in result.arms:
            d = charts.kind_recovery(a)
            rows.append([a.policy, a.errors] + [
                (f"{100 * d[k][0] / d[k][1]:.0f}% ({d[k][0]}/{d[k][1]})" if d.get(k, (0, 0))[1] else "-") for k in kinds
            ])  # fmt: skip
        blocks += [
            H3("Recovery by kind of first fault (recovered / faulted tasks)"),
            TABLE(["policy", "errors", *kinds], rows, 2),
        ]
    sections = (
        ("wasted_retries_by_reason", "Wasted retries by reason"),
        ("fault_hits_by_error_code", "Faulted calls by error code"),
        ("fault_hits_by_tool", "Faulted calls by tool"),
        ("fault_hits_by_worker", "Faulted calls by worker"),
        ("claims", "Final claims"),
    )
    for key, title in sections:
        rows = [[a.policy, a.errors, _counts(a.breakdowns.get(key, {}))] for a in result.arms]
        if any(a.breakdowns.get(key) for a in result.arms) or key == "wasted_retries_by_reason":
            blocks += [H3(title), TABLE(["policy", "errors", "counts"], rows, 0)]
    return blocks


#: What each kind of policy error the driver records means, by the start of its message
#: (simulated_fleet/world.py, ``World._decide``).
POLICY_ERROR_KINDS: tuple[tuple[str, str], ...] = (
    ("policy raised", "raised an exception"),
    ("policy returned an invalid action", "returned an invalid action (not one of the actions, or a bad field)"),
    ("action cap reached", "never gave up: hit the action cap for one task"),
)

#: Distinct messages listed per arm before the rest are summed into one row.
POLICY_ERROR_MESSAGES = 20


def _policy_error_kind(message: str) -> str:
    for prefix, meaning in POLICY_ERROR_KINDS:
        if message.startswith(prefix):
            return meaning
    return "other"


def policy_error_blocks(arms: list[tuple[str, str, dict, dict]], runs: int) -> list[Block]:
    """A "Policy errors" section for the arms ``(policy, errors, metrics, breakdowns)`` with any; [] if none.

    Each arm gets its task count and every distinct message with its problem and task
    count (pooled over ``runs`` seeds), the most frequent first.
    """
    blocks: list[Block] = []
    broken = 0
    for policy, errors, metrics, breakdowns in arms:
        tasks = policy_error_tasks(metrics, breakdowns, runs)
        if not tasks:
            continue
        broken += 1
        messages = sorted((breakdowns.get("policy_errors_by_message") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        blocks.append(H3(f"{policy} on {errors}: {tasks} task{'s' if tasks != 1 else ''} ended by a policy error"))
        if not messages:
            blocks.append(P("The messages were not recorded (results written by an older version): "
                            "replay a seed with `fleetchaos run ... --report DIR` to see them."))  # fmt: skip
            continue
        rows = [[_policy_error_kind(m), m, str(n)] for m, n in messages[:POLICY_ERROR_MESSAGES]]
        rest = messages[POLICY_ERROR_MESSAGES:]
        if rest:
            rows.append(["", f"and {len(rest)} more distinct messages", str(sum(n for _, n in rest))])
        blocks.append(TABLE(["problem", "message", "tasks"], rows, align_right=2))
    if not broken:
        return []
    intro = P(
        f"The policy of {'these arms' if broken > 1 else 'this arm'} misbehaved on some tasks: it raised, returned "
        "something that is not a valid action, or never gave up (the driver's per-task action cap). Each such task "
        "was given up and counted in `policy_errors`, and the run went on. The figures of an arm with policy "
        "errors measure the bug, not a recovery strategy: fix the policy, then compare again."
    )
    return [H2("Policy errors"), intro, *blocks]


def _write_pages(out_dir: Path, blocks: list[Block], title: str, made: dict[str, Path]) -> list[Path]:
    """Write ``blocks`` as summary.md (charts linked) and report.html (the ``made`` charts embedded); both paths."""
    summary = out_dir / "summary.md"
    summary.write_text(to_markdown(blocks), encoding="utf-8")
    page = out_dir / "report.html"
    images = {p.name: p.read_bytes() for p in made.values()}
    page.write_text(to_html(blocks, title, images), encoding="utf-8")
    return [summary, page]


def compare_markdown(result: CompareResult) -> str:
    """The Markdown summary of a comparison (charts linked by their file names)."""
    return to_markdown(compare_blocks(result))


def write_compare_report(result: CompareResult, out_dir: Path, *, tasks_csv: Path | None = None) -> list[Path]:
    """Write the report of a comparison into ``out_dir``; returns the files written.

    Writes results.json, summary.md, report.html and the charts.  ``tasks_csv`` names a
    per-task CSV already written into ``out_dir`` (by :class:`TaskCsvWriter`) for the
    report to point at.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    results_path = out_dir / "results.json"
    results_path.write_text(dumps(result), encoding="utf-8")
    written.append(results_path)
    made = _render_compare_charts(result, out_dir)
    written += list(made.values())
    csv_name = tasks_csv.name if tasks_csv is not None else None
    blocks = compare_blocks(result, made, csv_name)
    written += _write_pages(out_dir, blocks, f"fleetchaos comparison: {result.scenario}", made)
    if tasks_csv is not None:
        written.append(tasks_csv)
    return written


# -- run report --------------------------------------------------------------------------

RUN_DETAIL_BREAKDOWNS = (
    ("wasted_retries_by_reason", "Wasted retries by reason"),
    ("faulted_tasks_by_first_fault", "Faulted tasks by kind of first fault"),
    ("recovered_tasks_by_first_fault", "Recovered tasks by kind of first fault"),
    ("fault_hits_by_error_code", "Faulted calls by error code"),
    ("fault_hits_by_tool", "Faulted calls by tool"),
    ("fault_hits_by_worker", "Faulted calls by worker"),
    ("claims", "Final claims"),
)


def run_blocks(result: RunResult, made: dict[str, Path], tasks_csv: str | None) -> list[Block]:
    """The blocks of a single run's report."""
    blocks = [
        H1(f"fleetchaos run: {result.scenario}"),
        UL(
            [
                f"Policy `{result.policy}` on `{result.errors}` errors, seed {result.seed}"
                + (f", parameters {json.dumps(result.params, sort_keys=True)}" if result.params else ""),
                f"Replay: `{result.replay}`",
                "Versions: " + (", ".join(f"{k} {v}" for k, v in result.versions.items()) or "not recorded"),
                "One seed: no confidence intervals; compare arms on 10 seeds or more with `fleetchaos compare`.",
            ]
        ),
        H2("Metrics"),
        TABLE(
            ["metric", "value"],
            [[k, _pct(v, 2) if _is_rate(k) else _num(v, 3)] for k, v in result.metrics.items()],
            align_right=1,
        ),
    ]
    blocks += policy_error_blocks([(result.policy, result.errors, result.metrics, result.breakdowns)], runs=1)
    blocks.append(H2("Breakdowns"))
    rows = []
    for key, title in RUN_DETAIL_BREAKDOWNS:
        d = result.breakdowns.get(key)
        if d is None:
            continue
        if key == "fault_hits_by_worker":
            d = {f"worker {k}": d[k] for k in _sorted_keys(d)}
        rows.append([title, _counts(d, 20)])
    blocks.append(TABLE(["breakdown", "counts"], rows, 0))
    captions = {
        "timeline": "Fleet timeline: one lane per worker",
        "error_codes": "Faulted calls per error code over time, spikes marked",
        "ecdf": "ECDF of time to recovery (simulated seconds, log scale)",
    }
    if made:
        blocks.append(H2("Charts"))
        for key, caption in captions.items():
            if key in made:
                blocks.append(IMG(made[key].name, caption))
    blocks += [H2("Scheduled faults"), UL(result.fault_schedule or ["none (per-call faults only)"])]
    blocks += [H2("Modelling assumptions"), UL(ASSUMPTIONS)]
    files = ["`results.json`: this run's figures" + (" and its per-task rows" if result.tasks else "")]
    if tasks_csv:
        files.append(f"`{tasks_csv}`: one row per task (truth, claim, effort)")
    files.append("Metric definitions, denominators and directions: docs/metrics.md")
    blocks += [H2("Files"), UL(files)]
    return blocks


def write_run_report(result: RunResult, out_dir: Path) -> list[Path]:
    """Write one run's results.json, tasks.csv (if it kept task rows), charts, summary.md and report.html."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.json"
    results_path.write_text(dumps(result), encoding="utf-8")
    written = [results_path]
    csv_path = write_task_csv(result.tasks, out_dir / "tasks.csv")
    if csv_path is not None:
        written.append(csv_path)
    made: dict[str, Path] = {}
    if result.timeline is not None:
        made["timeline"] = charts.timeline_chart(result.timeline, out_dir / "timeline.png")
        codes = charts.error_codes_chart([result.timeline], out_dir / CHART_FILES["error_codes"])
        if codes is not None:
            made["error_codes"] = codes
    ecdf = charts.run_ecdf_chart(result.samples.get("time_to_recovery_s", []), f"{result.policy} on {result.errors}",
                                 out_dir / CHART_FILES["ecdf"])  # fmt: skip
    if ecdf is not None:
        made["ecdf"] = ecdf
    written += list(made.values())
    blocks = run_blocks(result, made, csv_path.name if csv_path else None)
    written += _write_pages(out_dir, blocks, f"fleetchaos run: {result.scenario}", made)
    return written


# -- reports from a results file ---------------------------------------------------------


def load_results(path: Path) -> CompareResult | RunResult:
    """Read a results.json written by run or compare; ValueError with a readable reason otherwise."""
    from pydantic import ValidationError

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder; give the results.json inside it") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it ({exc})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise ValueError(
            f"{path}: expected a JSON object from `fleetchaos run` or `compare`, got a {type(doc).__name__}"
        )
    model = CompareResult if "arms" in doc else RunResult
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        kind = "comparison" if model is CompareResult else "run"
        raise ValueError(
            f"{path}: not a fleetchaos {kind} result: {where}: {first['msg']} ({exc.error_count()} problem(s)); "
            "give a results.json written by `fleetchaos run` or `fleetchaos compare`"
        ) from None


def write_report(results: Path, out_dir: Path, *, prepare: Callable[[Any], Any] | None = None) -> list[Path]:
    """Rebuild a report folder from a results.json; a tasks.csv beside it is copied along.

    ``prepare`` may complete the loaded result before it is written (the CLI uses it to
    compute verdicts missing from results of older versions).
    """
    result = load_results(results)
    if prepare is not None:
        result = prepare(result)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(result, RunResult):
        return write_run_report(result, out_dir)
    source_csv = Path(results).with_name("tasks.csv")
    tasks_csv = None
    if source_csv.is_file():
        tasks_csv = out_dir / "tasks.csv"
        if source_csv.resolve() != tasks_csv.resolve():
            shutil.copyfile(source_csv, tasks_csv)
    return write_compare_report(result, out_dir, tasks_csv=tasks_csv)
