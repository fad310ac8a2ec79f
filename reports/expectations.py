"""The "Acceptance criteria" section of a report: the scenario's ``expect:`` gates and each verdict."""

from __future__ import annotations

from collections.abc import Sequence

from fleetchaos.reports.blocks import H2, TABLE, Block, P, literal
from fleetchaos.results.models import ExpectationResult


def _num(x: float | None) -> str:
    return "no value" if x is None else f"{x:.6g}"


def expectation_blocks(records: Sequence[ExpectationResult]) -> list[Block]:
    """The section for the verdicts ``records`` (one per gate and arm it applies to); [] when there are none."""
    if not records:
        return []
    failed = sum(not r.passed for r in records)
    verdict = f"**{failed} of {len(records)} verdicts failed.**" if failed else f"All {len(records)} verdicts passed."
    intro = P(
        "The scenario's `expect:` gates (its acceptance criteria), each judged on the arms it names (else the "
        "scenario's arms, else the arm leading the headline) by the one gate rule: the mean (or the worst seed) "
        "against the bound, with the evidence stated (decisive when the whole confidence interval is on the "
        f"verdict's side, weak when it straddles the bound). {verdict}"
    )
    rows = [
        [
            literal(f"expect[{r.gate}]"),
            literal(f"{r.policy} on {r.errors}") if r.policy else literal(f"arm {r.arm} (not run)"),
            r.metric,
            f"{r.rule} {_num(r.bound)}",
            r.statistic + (" (decisive evidence)" if r.mode == "decisive" else ""),
            _num(r.value),
            "passed" if r.passed else "**FAILED**",
            r.evidence or "-",
            literal(r.note),
        ]
        for r in records
    ]
    table = TABLE(["gate", "arm", "metric", "bound", "statistic", "value", "verdict", "evidence", "how"], rows,
                  align_right=0)  # fmt: skip
    return [H2("Acceptance criteria"), intro, table]
