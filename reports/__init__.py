"""Rendering only: terminal tables, charts, and report folders from harness result models.

Never imports SimPy: it reads :mod:`fleetchaos.results.models`, :mod:`fleetchaos.results.studies`,
:mod:`fleetchaos.results.registry` and :mod:`fleetchaos.results.stats` and nothing else of the harness.

Modules: ``tables`` (terminal tables), ``naming`` (arms by their policy's own name),
``charts`` (shared chart helpers and the per-fault-kind, ECDF and timeline charts),
``arm_charts`` (arms side by side: headline, retries, cost), ``blocks`` (the page model and
its Markdown and HTML renderings), ``cells`` (how figures read in tables), ``notes``
(assumptions and reading notes), ``conclusion`` (the opening finding), ``headline`` (the
headline table), ``breakdown_sections``, ``policy_errors``, ``compare_report``,
``run_report``, ``results_io`` (results JSON and per-task CSV), ``writer`` (a report from a
results file), ``sweep``, ``ablation``, ``studies`` (tuning and best against best) and
``robustness``.
"""

from fleetchaos.reports.compare_report import compare_markdown, write_compare_report
from fleetchaos.reports.notes import ASSUMPTIONS
from fleetchaos.reports.results_io import TaskCsvWriter, dumps, load_results
from fleetchaos.reports.run_report import write_run_report
from fleetchaos.reports.sweep import curve_chart, sweep_markdown, sweep_table, write_sweep_report
from fleetchaos.reports.tables import compare_table, run_table
from fleetchaos.reports.writer import write_report

__all__ = [
    "ASSUMPTIONS",
    "TaskCsvWriter",
    "compare_markdown",
    "compare_table",
    "curve_chart",
    "dumps",
    "load_results",
    "run_table",
    "sweep_markdown",
    "sweep_table",
    "write_compare_report",
    "write_report",
    "write_run_report",
    "write_sweep_report",
]
