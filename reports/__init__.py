"""Rendering only: terminal tables, charts, and report folders from harness result models.

Never imports SimPy: it reads :mod:`fleetchaos.results.models` and :mod:`fleetchaos.results.stats` and nothing
else of the harness.
"""

from fleetchaos.reports.sweep import curve_chart, sweep_markdown, sweep_table, write_sweep_report
from fleetchaos.reports.tables import compare_table, run_table
from fleetchaos.reports.writer import (
    ASSUMPTIONS,
    TaskCsvWriter,
    compare_markdown,
    dumps,
    load_results,
    write_compare_report,
    write_report,
    write_run_report,
)

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
