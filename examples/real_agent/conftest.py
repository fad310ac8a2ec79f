"""The example suite's shared setup: clients whose transports inject the run's faults, traced as in production."""

from __future__ import annotations

import pytest
from day import clients


@pytest.fixture
def make_clients():
    """Builds fresh clients (one pair per task keeps tasks independent)."""
    return clients
