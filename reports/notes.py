"""What every report states in words: the modelling assumptions and how to read the statistics."""

from __future__ import annotations

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
    "Generic errors carry only a status word, status errors an HTTP status and exception class, raw errors the "
    "vendor's text; how a tool without an envelope reports a partly failed fan-out step is the scenario's "
    "fleet.partial_batch (stated below).",
    "Structured errors carry error_code, category, recoverable, suggested_action, partial_success, retry_after_ms, "
    "context and schema_version; a policy resumes from what partial_success reveals, and from where the last "
    "dispatch stopped when the workers checkpoint (fleet.checkpoints).",
    "Escalation hands the task to a human and ends automatic recovery; it is reported honestly, not counted as recovered. "
    "Each escalation pages a human once, billed at the human's handling time drawn from the fleet's page_handling "
    "(the wait before the human looks is not billed; the human's own work is outside the simulation).",
    "A task that never reports back (lost with a crashed worker, or still running at the drain limit) counts as data loss.",
    "Tasks are dispatched round-robin (or to the least-loaded worker when the scenario says so); a reroute goes to the next worker.",
    "Costs are modelled, not measured: model tokens per API call that ran, a price per tool call, a price per hour "
    "of paged human time, and a price per silent failure, per task left undone and per refused request, all from "
    "the scenario's fleet settings (docs/assumptions.md).",
    "Raw vendor errors carry secrets planted per run; secrets_leaked counts those that reached the orchestrator. "
    "Reports hold the count, never the text.",
)

#: How to read the statistics, stated in every comparison report.
READING_NOTES: tuple[str, ...] = (
    "Figures are means over seeds; intervals are Student-t intervals of that mean (seeds are independent "
    "replications), taken on the logit scale for rates so that they stay inside [0, 1] (docs/metrics.md).",
    "The headline figures share one denominator across arms: success over all tasks, and recovery on the common set "
    "(every task faulted in any arm on the same seed), or in a closed loop successful tasks per day. Recovery on an "
    "arm's own faulted tasks is secondary: a policy that causes fewer faults has a smaller, easier denominator.",
    "Verdicts compare each arm with the reference arm on the same seeds: the per-seed differences are paired "
    "(both arms met the same faults), and their mean gets a Student-t interval. 'better' or 'worse' means the whole "
    "interval lies on one side of zero, in the metric's good or bad direction; 'inconclusive' means it contains zero; "
    "'no difference' means the two arms were equal on every seed.",
    "A wasted retry was sent while the true cause of the failure before it still held (the bucket still empty, the "
    "key still expired, the same blip drawn again), whatever hint the error carried; a failed retry is one whose "
    "dispatch failed again. A policy that waits exactly the hinted time wastes few retries and can still fail many.",
    f"With fewer than {MIN_SEEDS} paired seeds a verdict reads 'too few seeds': no winner is named. "
    "Compare arms on 10 seeds or more.",
    "Pooled rates count every task of every seed as one trial and carry Wilson score intervals. Tasks of one simulated "
    "day share fault windows, so they are not fully independent and these intervals are narrower than the truth; "
    "prefer the across-seed intervals and the paired verdicts.",
    "p50 and p95 are per-seed percentiles (linear interpolation between closest ranks), averaged over seeds. "
    "The time-to-recovery ECDF pools the recovered tasks of every seed.",
    "Recovery by fault kind groups faulted tasks by the kind of the first fault they met; counts are pooled over seeds.",
    "The timeline and error-code charts each show one traced run: the first seed of the arm with the best and of the "
    "arm with the worst mean on the first headline figure. They illustrate; the tables measure.",
)
