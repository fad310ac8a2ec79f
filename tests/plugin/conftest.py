"""Helpers for the pytest-plugin tests: a small scenario file to run (pytester comes from tests/conftest.py)."""

from __future__ import annotations

# pytester's in-process runs drop the modules they import when they end; importing the
# simulation, the report writers and hypothesis (whose own pytest plugin imports it at
# every terminal summary) here keeps them loaded, so each run does not pay for
# importing (and assertion-rewriting) them again.  NumPy cannot be imported twice in
# one process, so matplotlib (which loads it, for the report charts) must be loaded here
# before any in-process run, or the second run that draws a chart fails.
import hypothesis  # noqa: F401
import matplotlib.figure  # noqa: F401
import numpy  # noqa: F401
import pytest

import fleetchaos.gates.baseline
import fleetchaos.reports
import fleetchaos.reports.charts
import fleetchaos.runs.runner
import fleetchaos.testing.suite  # noqa: F401

#: One busy hour on three workers: ~65 tasks, blips, one key revocation, one full disk.
#: On seeds 1-3 structured errors and policy recover ~96% of faulted tasks with no wasted
#: retry; blind retries on generic errors recover ~22% and waste ~64 retries a run.
SMALL_SCENARIO = """\
name: small
description: one busy hour on three workers
duration_s: 3600
fleet: {orchestrators: 1, workers: 3, api_rate_per_s: 5, api_burst: 50}
workload: {tasks_per_day: 1500, diurnal_amplitude: 0}
faults:
  - {kind: network_blip, probability: 0.1}
  - {kind: expired_key, events: [{worker: 0, at_s: 600}]}
  - {kind: disk_full, events: [{worker: 1, at_s: 900}], cleanup_after_s: 1200}
"""


@pytest.fixture
def chaos_dir(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder holding ``small.yaml`` (the small scenario) and a strict-markers ini."""
    pytester.makefile(".yaml", small=SMALL_SCENARIO)
    pytester.makeini("[pytest]\naddopts = --strict-markers\n")
    return pytester
