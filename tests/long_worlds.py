"""The catalogue scenarios whose runs are long simulations, and parameters that mark them ``slow``.

Each catalogue scenario is run by several parametrised tests (exercised on four arms, run twice for
determinism, replayed).  Most take well under a second; these two run closed loops for many simulated
hours (a retry storm that collapses a provider, and its omission twin), about 5 s of CPU a run, so
their cases run in ``make test-all`` and the others in ``make test``.
"""

from __future__ import annotations

import os

import pytest

import fleetchaos.catalogue as catalogue

#: Scenario name -> why its runs are long.
LONG = {
    "retry_collapse": "a closed loop whose retries saturate a provider for hours: about 5 s of CPU a run",
    "omission_collapse": "the same collapse driven by late replies counted as failed: about 5 s of CPU a run",
}


def examples(fast: int, full: int) -> int:
    """A fuzz test's example count: ``fast`` in ``make test``, ``full`` in ``make test-all`` (which sets
    ``FLEETCHAOS_TEST_ALL=1``).  The examples drawn are the same generator's either way; the long run
    draws more of them."""
    return full if os.environ.get("FLEETCHAOS_TEST_ALL") == "1" else fast


def catalogue_params() -> list:
    """Every catalogue scenario name as a pytest parameter, the long ones marked ``slow``."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in LONG else n for n in catalogue.names()]
