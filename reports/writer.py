"""Report folders from a results file: ``fleetchaos report RESULTS.json -o DIR``.

A report folder holds results JSON, a Markdown summary, one self-contained HTML page,
charts and per-task CSV; nothing in it depends on the clock or on the machine, so the
same result gives the same bytes.  The comparison report is
:mod:`fleetchaos.reports.compare_report`, the run report :mod:`fleetchaos.reports.run_report`,
the page model :mod:`fleetchaos.reports.blocks`, results and CSV files
:mod:`fleetchaos.reports.results_io`; this module rebuilds either report from a results.json.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleetchaos.files import atomic_write
from fleetchaos.reports.compare_report import write_compare_report
from fleetchaos.reports.results_io import load_results
from fleetchaos.reports.run_report import write_run_report
from fleetchaos.results.models import RunResult, SweepResult
from fleetchaos.results.studies import SensitivityResult


def write_report(results: Path, out_dir: Path, *, prepare: Callable[[Any], Any] | None = None) -> list[Path]:
    """Rebuild a report folder from a results.json (of run, compare, sweep or robustness) or an ablation.json.

    A tasks.csv beside a comparison's results is copied along.  ``prepare`` may complete
    the loaded result before it is written (the CLI uses it to compute verdicts missing
    from results of older versions).
    """
    result = load_results(results)
    if prepare is not None:
        result = prepare(result)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(result, dict):  # an ablation's plain document
        from fleetchaos.reports.ablation import write_ablation_report

        return write_ablation_report(result, out_dir)
    if isinstance(result, SweepResult):
        from fleetchaos.reports.sweep import write_sweep_report

        return write_sweep_report(result, out_dir)
    if isinstance(result, RunResult):
        return write_run_report(result, out_dir)
    if isinstance(result, SensitivityResult):
        from fleetchaos.reports.sensitivity import write_sensitivity_report

        return write_sensitivity_report(result, out_dir)
    source = Path(results)
    source_csv = (source if source.is_dir() else source.parent) / "tasks.csv"
    tasks_csv = None
    if source_csv.is_file():
        tasks_csv = out_dir / "tasks.csv"
        if source_csv.resolve() != tasks_csv.resolve():
            with source_csv.open("rb") as src, atomic_write(tasks_csv, "wb", root=out_dir) as dst:
                shutil.copyfileobj(src, dst)
    return write_compare_report(result, out_dir, tasks_csv=tasks_csv)
