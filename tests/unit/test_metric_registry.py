"""The metric registry: one record per metric, and everything that names metrics reads it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import patience
import pytest

from fleetchaos.gates.fail_on import parse_fail_on
from fleetchaos.results.registry import (
    CLOSED_LOOP_LEAD,
    DIRECTIONLESS,
    GATED_METRICS,
    HEADLINE_METRICS,
    METRICS,
    OPEN_LOOP_LEAD,
    POOLED_RATES,
    RATES,
    REGISTRY,
    VERDICT_METRICS,
    direction,
    is_rate,
    lead_metrics,
    markdown_table,
)

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "metrics.md"


def _doc_table() -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"<!-- metric table:[^\n]*-->\n(.*?)<!-- end of metric table -->", text, re.S)
    assert match, "docs/metrics.md lost its metric-table markers"
    return match.group(1)


def test_docs_metric_table_is_the_registry():
    """docs/metrics.md's metric table is exactly the registry's markdown_table() (regenerate it if not)."""
    assert _doc_table() == markdown_table(), (
        "docs/metrics.md's metric table differs from fleetchaos.results.registry: regenerate it with "
        "python -c \"from fleetchaos.results.registry import markdown_table; print(markdown_table(), end='')\""
    )


def test_docs_verdict_list_is_the_registry_order():
    """The verdict metrics docs/metrics.md lists in prose are the registry's, in its order."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### Paired differences and verdicts") : text.index("* `mean_difference`")]
    named = re.findall(r"`([a-z0-9_]+)`", section.split("in the order the list holds them:")[1])
    assert tuple(named) == VERDICT_METRICS


def test_a_run_reports_every_registered_metric_in_registry_order():
    """The accumulator's metrics are the registry's metrics, in the registry's order (the order results serialise in)."""
    from fleetchaos.results.metrics import RunAccumulator

    assert tuple(RunAccumulator(None).metrics()) == METRICS
    assert len(set(METRICS)) == len(METRICS)


def test_records_agree_with_themselves():
    """Proportions are exactly the pooled rates shown in percent; judged metrics have a direction; definitions are one line."""
    for m in REGISTRY.values():
        assert m.better in ("higher", "lower", None), m.name
        assert m.definition and "\n" not in m.definition and "|" not in m.definition, m.name
        assert m.unit and m.denominator, m.name
        assert (m.unit == "proportion") == (m.pooled is not None) == (m.shown_as == "percent") == is_rate(m.name)
        assert (m.better is None) == (m.name in DIRECTIONLESS) == (direction(m.name) is None)
        if m.headline or m.verdict or m.gate is not None:
            assert m.better is not None, f"{m.name} is judged but has no better direction"
    assert set(RATES) == set(POOLED_RATES) == {n for n in METRICS if n.endswith("_rate")}
    assert set(VERDICT_METRICS) <= set(METRICS) and set(HEADLINE_METRICS) <= set(VERDICT_METRICS)
    assert HEADLINE_METRICS == (
        "success_rate",
        "common_recovery_rate",
        "silent_failure_rate",
        "wasted_retries",
        "failed_retries",
    )
    # the arm-independent leads are headline metrics with a verdict and a default gate
    for name in (*OPEN_LOOP_LEAD, *CLOSED_LOOP_LEAD):
        assert REGISTRY[name].verdict and (REGISTRY[name].headline or name == "goodput_per_day"), name
    assert lead_metrics(False) == OPEN_LOOP_LEAD == ("success_rate", "common_recovery_rate")
    assert lead_metrics(True) == CLOSED_LOOP_LEAD == ("goodput_per_day",)
    # own-denominator recovery stays, as a secondary figure: no headline, no default gate
    assert not REGISTRY["recovery_rate"].headline and REGISTRY["recovery_rate"].gate is None
    assert "own faulted tasks" in REGISTRY["recovery_rate"].denominator


def test_directionless_metrics_are_the_workload_and_neutral_counts():
    """The directionless metrics are the ones the docs mark '-', and no other: the workload, and counts neither good
    nor bad in themselves (a partial result, what a policy's model-side actions chose)."""
    workload = {"tasks", "logical_calls", "rollbacks", "deduplicated_side_effects", "partial_results"}
    actions = {"repair_turns", "schema_reprompts", "fallback_turns", "stream_resumes", "compactions"}
    assert workload | actions == DIRECTIONLESS
    assert direction("recovery_rate") is True and direction("cost_usd") is False
    assert direction("no_such_metric") is None


@pytest.mark.parametrize("name", sorted(GATED_METRICS))
def test_each_default_gate_is_a_valid_threshold_the_worse_way(name):
    """A gated metric's default threshold parses as a --fail-on spec, relative, signed its worse way."""
    rule = parse_fail_on(f"{name}:{GATED_METRICS[name]}")
    assert rule.relative and rule.threshold == pytest.approx(0.02)
    assert rule.allowed() == ("-2%" if direction(name) else "+2%")


def test_every_user_of_metric_names_reads_the_registry():
    """An arm's verdicts and pooled rates, the suite's proportions, the tables' formats and the ablation read it."""
    from fleetchaos.reports.ablation import PANELS
    from fleetchaos.reports.tables import COLUMNS, display_kind
    from fleetchaos.runs import ablation, arm_stats
    from fleetchaos.testing import suite

    assert arm_stats.VERDICT_METRICS is VERDICT_METRICS and arm_stats.POOLED_RATES is POOLED_RATES
    assert suite.PROPORTIONS is POOLED_RATES
    assert set(suite.HEADLINE) == set(HEADLINE_METRICS)
    assert set(ablation.HEADLINE) <= set(HEADLINE_METRICS) and set(ablation.HEADLINE) == {m for m, _ in PANELS}
    for metric, _, kind in COLUMNS:
        assert kind == display_kind(metric) == ("pct" if is_rate(metric) else "num")


def test_the_registry_imports_without_simpy_or_pydantic():
    """The registry is standard library only, and the gate that reads it needs no simulation."""
    code = (
        "import sys, fleetchaos.results.registry; assert 'pydantic' not in sys.modules; "
        "import fleetchaos.gates.session; assert 'simpy' not in sys.modules"
    )
    proc = patience.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, cpu_s=120)
    assert proc.returncode == 0, proc.stderr
