"""What the chaos suite shares.

Nothing has to be imported to use fleetchaos here: installing it registers its pytest
plugin (the ``fleetchaos`` fixture, marker and ``--fleetchaos-*`` options) and its
hypothesis strategies.  This file holds the team's own shared settings.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# Property tests draw small worlds; a run takes milliseconds but its wall time varies
# with the machine, hence no deadline.  The merge gate's profile draws the same worlds on
# every run (derandomized: the same code gets the same verdict); CHAOS_PROFILE=nightly
# explores many more, new ones each night, and reports any it finds to fix.
settings.register_profile("chaos", max_examples=25, deadline=None, derandomize=True)
settings.register_profile("nightly", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("CHAOS_PROFILE", "chaos"))


@pytest.fixture(scope="session")
def team_policy(pytestconfig: pytest.Config) -> str:
    """The recovery policy under test: the suite-wide default from pytest.ini."""
    return pytestconfig.getini("fleetchaos_policy")
