"""The report's opening paragraph: what a comparison found, in words generated from its results.

Every figure in it is read from the :class:`~fleetchaos.results.models.CompareResult`
(means, intervals, per-seed values, breakdowns, the robustness section when present):
which arm leads on the arm-independent figures (:func:`fleetchaos.results.registry.lead_metrics`)
and by how much, paired by seed; whether own-denominator recovery would tell another
story; which fault kinds carry the gap; what changing only the error format does for each
policy; where the ordering flips; and what each leading arm costs, split into tokens,
tool calls and paged humans.  Names are passed through :func:`~fleetchaos.reports.blocks.literal`,
so a policy's name is shown as it is in Markdown and in HTML alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetchaos.reports.blocks import literal
from fleetchaos.reports.naming import arm_names
from fleetchaos.results.models import ArmResult, CompareResult
from fleetchaos.results.registry import is_rate, lead_metrics
from fleetchaos.results.stats import (
    MIN_SEEDS,
    NO_DIFFERENCE,
    TOO_FEW_SEEDS,
    PairedDifference,
    bounded,
    paired_difference,
    verdict,
)

__all__ = ["finding", "paired", "ranked"]

#: How the paragraph names each metric it leads with: (short name, what it counts).
_WORDS = {
    "success_rate": ("success rate", "tasks fully done and claimed a success, of all tasks"),
    "common_recovery_rate": ("recovery on the common set", "faulted tasks saved, of every task faulted in any arm"),
    "goodput_per_day": ("goodput", "tasks fully done and claimed a success per simulated day"),
}


def _short(metric: str) -> str:
    return _WORDS[metric][0] if metric in _WORDS else metric.replace("_", " ")


#: Fault kinds named as the drivers of the gap, at most.
_DRIVERS = 2
#: Flips named in the paragraph, at most (the robustness section lists them all).
_FLIPS = 3


def ranked(arms: Sequence[ArmResult], metric: str) -> list[ArmResult]:
    """Arms with a value of ``metric``, best first (ties keep the comparison's order)."""
    have = [a for a in arms if a.metrics.get(metric) is not None]
    return sorted(have, key=lambda a: -float(a.metrics[metric]))  # type: ignore[arg-type]  # metrics are higher-better here


def paired(arm: ArmResult, other: ArmResult, metric: str, confidence: float) -> PairedDifference:
    """``arm - other`` on ``metric``, seed by seed (a rate's interval cut to [-1, 1])."""
    diff = paired_difference(arm.per_seed.get(metric, []), other.per_seed.get(metric, []), confidence)
    return bounded(diff, -1.0, 1.0) if is_rate(metric) else diff


def _value(arm: ArmResult, metric: str) -> str:
    mean = arm.metrics.get(metric)
    lo, hi = (arm.ci.get(metric) or [None, None])[:2]
    if mean is None:
        return "no value"
    if is_rate(metric):
        text = f"{100 * mean:.1f}%"
        return text + (f" [{100 * lo:.1f}, {100 * hi:.1f}]" if lo is not None and hi is not None else "")
    text = f"{mean:,.1f}"
    return text + (f" [{lo:,.1f}, {hi:,.1f}]" if lo is not None and hi is not None else "")


def _difference(metric: str, diff: PairedDifference) -> str:
    if diff.mean is None:
        return "an unknown margin"
    if is_rate(metric):
        text = f"{100 * diff.mean:+.1f} pp"
        if diff.low is not None and diff.high is not None:
            text += f" [{100 * diff.low:+.1f}, {100 * diff.high:+.1f}]"
        return text
    text = f"{diff.mean:+,.1f}"
    if diff.low is not None and diff.high is not None:
        text += f" [{diff.low:+,.1f}, {diff.high:+,.1f}]"
    return text


def _verdict_words(diff: PairedDifference) -> str:
    word = verdict(diff, True)
    if word == TOO_FEW_SEEDS:
        return f"paired over {diff.n} seeds: too few to call, {MIN_SEEDS} or more are needed"
    if word == NO_DIFFERENCE:
        return f"paired over {diff.n} seeds: no difference on any seed"
    return f"paired over {diff.n} seeds: {word}"


def _lead_sentence(result: CompareResult, names: dict[int, str], metric: str, first: bool) -> str:
    order = ranked(result.arms, metric)
    if not order:
        if not any(metric in a.metrics for a in result.arms):
            return f"These results carry no {literal(metric)} (written by an earlier version)."
        return f"No arm has a value of {literal(metric)} (no task in its denominator)."
    best = order[0]
    short, counts = _WORDS.get(metric, (metric.replace("_", " "), ""))
    if metric == "common_recovery_rate":
        sizes = [p.trials for a in result.arms if (p := a.pooled.get(metric)) is not None]
        if sizes and result.seeds:
            counts = f"faulted tasks saved, of the {sizes[0] / len(result.seeds):,.0f} per seed faulted in any arm"
    what = f"{short} ({counts})" if counts else short
    if first:
        lead = f"**{names[id(best)]}** leads on {what}: {_value(best, metric)}"
    elif best is ranked(result.arms, lead_metrics(result.closed_loop)[0])[0]:
        lead = f"It also leads on {what}: {_value(best, metric)}"
    else:
        lead = f"On {what}, **{names[id(best)]}** leads: {_value(best, metric)}"
    if len(order) == 1:
        return lead + "."
    second = order[1]
    diff = paired(best, second, metric, result.confidence)
    return (
        f"{lead}, ahead of {names[id(second)]} ({_value(second, metric)}) by {_difference(metric, diff)} "
        f"({_verdict_words(diff)})."
    )


def _own_denominator_note(result: CompareResult, names: dict[int, str], lead: str) -> str:
    """A sentence when own-denominator recovery ranks the top two the other way round."""
    if lead == "goodput_per_day" or len(result.arms) < 2:
        return ""
    order = ranked(result.arms, lead)
    if len(order) < 2:
        return ""
    best, second = order[0], order[1]
    own_b, own_s = best.metrics.get("recovery_rate"), second.metrics.get("recovery_rate")
    if own_b is None or own_s is None or own_b >= own_s:
        return ""
    faulted_b, faulted_s = best.metrics.get("faulted_tasks") or 0.0, second.metrics.get("faulted_tasks") or 0.0
    return (
        f"Recovery on each arm's own faulted tasks (a secondary figure) would rank them the other way "
        f"({100 * own_s:.1f}% against {100 * own_b:.1f}%), because the two arms meet different faults: "
        f"{faulted_s:,.1f} faulted tasks per run against {faulted_b:,.1f}."
    )


def _drivers(result: CompareResult, names: dict[int, str], best: ArmResult, second: ArmResult) -> str:
    """The fault kinds where the two arms' recovered tasks differ most (tasks pooled over seeds)."""
    recovered_b = best.breakdowns.get("recovered_tasks_by_first_fault", {})
    recovered_s = second.breakdowns.get("recovered_tasks_by_first_fault", {})
    gaps = {k: recovered_b.get(k, 0) - recovered_s.get(k, 0) for k in set(recovered_b) | set(recovered_s)}
    ahead = sorted((k for k, g in gaps.items() if g > 0), key=lambda k: (-gaps[k], k))[:_DRIVERS]
    behind = sorted((k for k, g in gaps.items() if g < 0), key=lambda k: (gaps[k], k))[:1]
    if not ahead and not behind:
        return ""
    n = len(result.seeds)
    parts = [f"{gaps[k]:+,} recovered tasks whose first fault was {literal(k)}" for k in ahead]
    text = f"Against {names[id(second)]}, the gap comes mostly from " + " and ".join(parts) if parts else ""
    if behind:
        k = behind[0]
        tail = f"{literal(k)} ({gaps[k]:+,} recovered tasks)"
        text = (
            f"{text}, while it does worse on {tail}"
            if text
            else f"Against {names[id(second)]}, it does worse on {tail}"
        )
    return text + f" (over {n} seed{'s' if n != 1 else ''})."


def _format_effect(result: CompareResult, names: dict[int, str], metric: str) -> str:
    """What changing only the error format does, for each policy run on more than one format."""
    formats = list(dict.fromkeys(a.errors for a in result.arms))
    if len(formats) < 2:
        return ""
    base_format = formats[0]
    clauses = []
    for errors in formats[1:]:
        parts = []
        for policy in dict.fromkeys(a.policy for a in result.arms):
            mine = {a.errors: a for a in result.arms if a.policy == policy}
            if base_format in mine and errors in mine:
                diff = paired(mine[errors], mine[base_format], metric, result.confidence)
                label = names[id(mine[errors])].rsplit(" on ", 1)[0]
                parts.append(f"{_difference(metric, diff)} for {label}")
        if parts:
            clauses.append(
                f"{literal(errors)} errors instead of {literal(base_format)} change it by " + ", ".join(parts)
            )
    if not clauses:
        return ""
    return f"Holding the policy fixed ({_short(metric)}): " + "; ".join(clauses) + "."


def _setting_words(config: dict) -> str:
    """The outcome-deciding settings a result's scenario ran with, briefly (docs/assumptions.md has them all)."""
    fleet = config.get("fleet") or {}
    parts = []
    if "partial_batch" in fleet:
        parts.append(f"fleet.partial_batch {fleet['partial_batch']}")
    if "checkpoints" in fleet:
        parts.append(f"fleet.checkpoints {'on' if fleet['checkpoints'] else 'off'}")
    admissions = sorted({str(p.get("admission")) for p in fleet.get("providers") or [] if p.get("admission")})
    if admissions:
        parts.append(f"providers that {' or '.join(admissions)} past max_in_flight")
    wrong = [f for f in config.get("faults") or [] if f.get("kind") == "wrong_envelope"]
    parts.append("envelopes wrong at the wrong_envelope rates" if wrong else "envelopes that never lie")
    return ", ".join(parts)


def _rests_on(result: CompareResult) -> str:
    """Best against best: the assumptions the answer rests on and where it would reverse (its sensitivity study)."""
    from fleetchaos.reports.sensitivity import difference, rests_on

    study = getattr(result, "sensitivity", None)
    if study is None:
        settings = _setting_words(result.scenario_config) if result.scenario_config else ""
        return (
            "This answer rests on the scenario's assumptions"
            + (f" ({literal(settings)}; every one under Modelling assumptions)" if settings else "")
            + ": where it would reverse was not tested here; `fleetchaos robustness` or `compare --robustness N` "
            "varies each over its plausible range."
        )
    widest = rests_on(study)
    sentences = []
    if widest:
        parts = [
            f"{literal(b.parameter)} ({difference(b.metric, b.least)} to {difference(b.metric, b.most)})"
            for b in widest
        ]
        sentences.append(
            f"Over each assumption's plausible range ({len(study.settings)} varied one at a time, each format's best "
            f"{'tuned again' if study.retune else 'kept'} at each value), the envelope's lead rests most on "
            + ", ".join(parts)
            + "."
        )
    reversals = [f for f in study.flips if f.reverses]
    if reversals:
        parts = [
            f"{literal(f.parameter)} goes from {literal(str(f.holds_at))} to {literal(str(f.flips_at))} "
            f"({literal(f.behind)} then leads)"
            for f in reversals[:_FLIPS]
        ]
        more = len(reversals) - _FLIPS
        sentences.append(
            "It reverses (the best without an envelope leads) when "
            + "; ".join(parts)
            + (f"; and {more} more (see What the answer depends on)." if more > 0 else ".")
        )
    else:
        sentences.append("The envelope's lead kept its sign at every value tried.")
    others = [f for f in study.flips if not f.reverses]
    if others:
        sentences.append(
            f"The winning format changes without reversing it at {len(others)} place{'s' if len(others) != 1 else ''} "
            f"({', '.join(literal(f.parameter) for f in others[:_FLIPS])})."
        )
    return " ".join(sentences)


def _flips(result: CompareResult) -> str:
    if getattr(result, "tuning", None) is not None:
        return _rests_on(result)
    robustness = result.robustness
    if robustness is None:
        return (
            "No flip analysis is in these results: whether this ordering holds when the scenario's "
            "assumptions change (fault mix, load, misreads) was not tested."
        )
    if not robustness.flips:
        varied = ", ".join(
            f"{literal(p)} from {literal(str(v[0]))} to {literal(str(v[-1]))}"
            for p, v in robustness.varied.items()
            if v
        )
        return f"The ordering held over every value tried ({varied or 'nothing varied'})."
    parts = [
        f"on {literal(f.metric)}, {literal(f.behind)} overtakes {literal(f.ahead)} when {literal(f.parameter)} "
        f"goes from {literal(str(f.holds_at))} to {literal(str(f.flips_at))}"
        for f in robustness.flips[:_FLIPS]
    ]
    more = len(robustness.flips) - _FLIPS
    return "The ordering flips: " + "; ".join(parts) + (f"; and {more} more (see Robustness)." if more > 0 else ".")


def _tuned_split(result: CompareResult) -> str:
    """Best against best: each format's lead over the next, the envelope's lead, then the format alone."""
    tuning = getattr(result, "tuning", None)
    if tuning is None or not tuning.gaps:
        return ""

    def text(gap) -> str:
        low, high = [*gap.ci, None, None][:2]
        return _difference(gap.metric, PairedDifference(gap.n, gap.mean_difference, low, high, ()))

    where = "shipped with the scenario" if tuning.source == "shipped" else "tuned for this comparison"
    sentences = []
    leads = [g for g in tuning.gaps if g.kind == "lead"]
    if leads:
        chain = "; ".join(
            f"best on {literal(g.errors)} over best on {literal(g.reference_errors)} {text(g)}" for g in leads
        )
        sentences.append(
            f"Best against best ({_short(tuning.objective)}, each format's own policy {where}, trained on seeds the "
            f"comparison does not use), each format's lead over the next: {chain}."
        )
    for g in (g for g in tuning.gaps if g.kind == "envelope"):
        sentences.append(
            f"The envelope's lead, the best with an envelope ({literal(g.errors)}) minus the best without one "
            f"({literal(g.reference_errors)}): {text(g)}."
        )
    alone = [g for g in tuning.gaps if g.kind == "format"]
    if alone:
        parts = [f"{literal(g.errors)} instead of {literal(g.reference_errors)} {text(g)}" for g in alone]
        sentences.append(
            "A separate figure, the format alone (one tuned policy on several formats): " + "; ".join(parts) + "."
        )
    if not tuning.matches_world:
        sentences.append(
            "The shipped policies were tuned for another world (the scenario was edited or a --param changed it); "
            "`--tune` tunes them for this one."
        )
    return " ".join(sentences)


def _cost(arm: ArmResult, name: str) -> str:
    m = arm.metrics
    total = m.get("cost_usd")
    if total is None:
        return f"{name}: not priced"
    token, tool, human = m.get("token_cost_usd"), m.get("tool_call_cost_usd"), m.get("human_cost_usd")
    if token is None or tool is None or human is None:
        return f"{name} ${total:,.2f} per run"
    hours = m.get("human_hours") or 0.0
    outcomes = ""
    silent, undone, refused = (
        m.get(k) for k in ("silent_failure_cost_usd", "undone_task_cost_usd", "refused_call_cost_usd")
    )
    if silent is not None and undone is not None and refused is not None:
        outcomes = (
            f", silent failures ${silent:,.2f}, tasks left undone ${undone:,.2f}, refused requests ${refused:,.2f}"
        )
    return (
        f"{name} ${total:,.2f} per run (tokens ${token:,.2f}, tool calls ${tool:,.2f}, "
        f"paged humans ${human:,.2f} for {hours:,.1f} h{outcomes})"
    )


def finding(result: CompareResult) -> str:
    """The opening paragraph of a comparison's report (Markdown inline text; names escaped)."""
    n = len(result.seeds)
    names = {id(a): literal(name) for a, name in zip(result.arms, arm_names(result.arms))}
    leads = lead_metrics(result.closed_loop)
    head = f"On {literal(result.scenario)} over {n} seed{'s' if n != 1 else ''}"
    if result.closed_loop:
        head += " (a closed loop: each arm runs its own tasks, so arms are compared by successful tasks per day)"
    sentences = [head + ":"]
    if not result.arms:
        return head + ": no arm ran."
    sentences.append(_lead_sentence(result, names, leads[0], first=True))
    for metric in leads[1:]:
        sentences.append(_lead_sentence(result, names, metric, first=False))
    sentences.append(_own_denominator_note(result, names, leads[-1]))
    order = ranked(result.arms, leads[0])
    if len(order) >= 2:
        best, second = order[0], order[1]
        sentences.append(_drivers(result, names, best, second))
        tuned = _tuned_split(result)
        sentences.append(tuned or _format_effect(result, names, leads[0]))
        sentences.append(_flips(result))
        sentences.append(f"Cost: {_cost(best, names[id(best)])}; {_cost(second, names[id(second)])}.")
    elif order:
        sentences.append(_flips(result))
        sentences.append(f"Cost: {_cost(order[0], names[id(order[0])])}.")
    return " ".join(s for s in sentences if s)
