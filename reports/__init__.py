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
results file), ``sweep`` (its table and page) and ``sweep_chart`` (its curves), ``ablation``, ``studies`` (tuning and best against best) and
``robustness``.

Names load on first use: a terminal table or a results file costs no matplotlib, which
only the modules that draw charts import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetchaos.reports.compare_report import compare_markdown, write_compare_report
    from fleetchaos.reports.notes import ASSUMPTIONS
    from fleetchaos.reports.results_io import TaskCsvWriter, dumps, load_results
    from fleetchaos.reports.run_report import write_run_report
    from fleetchaos.reports.sweep import curve_chart, sweep_markdown, sweep_table, write_sweep_report
    from fleetchaos.reports.tables import compare_table, run_table
    from fleetchaos.reports.writer import write_report

#: The module each public name comes from.
_EXPORTS: dict[str, str] = {
    "ASSUMPTIONS": "fleetchaos.reports.notes",
    "TaskCsvWriter": "fleetchaos.reports.results_io",
    "compare_markdown": "fleetchaos.reports.compare_report",
    "compare_table": "fleetchaos.reports.tables",
    "curve_chart": "fleetchaos.reports.sweep",
    "dumps": "fleetchaos.reports.results_io",
    "load_results": "fleetchaos.reports.results_io",
    "run_table": "fleetchaos.reports.tables",
    "sweep_markdown": "fleetchaos.reports.sweep",
    "sweep_table": "fleetchaos.reports.sweep",
    "write_compare_report": "fleetchaos.reports.compare_report",
    "write_report": "fleetchaos.reports.writer",
    "write_run_report": "fleetchaos.reports.run_report",
    "write_sweep_report": "fleetchaos.reports.sweep",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fleetchaos.reports' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
