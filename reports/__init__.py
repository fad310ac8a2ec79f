"""Rendering only: terminal tables, charts, and report folders from harness result models.

Never imports SimPy: it reads :mod:`harness.results` and nothing else of the harness's
internals.
"""

from .tables import compare_table, run_table
from .writer import ASSUMPTIONS, compare_markdown, write_compare_report, write_run_report

__all__ = [
    "ASSUMPTIONS",
    "compare_markdown",
    "compare_table",
    "run_table",
    "write_compare_report",
    "write_run_report",
]
