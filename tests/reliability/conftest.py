"""Shared set-up of the reliability tests (issue 17): the hostile policies importable, and a tiny scenario.

The CLI in a subprocess is :mod:`reliability_cli` (imported by name, not from this
conftest: another folder's conftest may own the module name ``conftest``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

import fleetchaos.catalogue as catalogue

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # `hostile_policies:Name` for in-process runs


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> Path:
    """The default scenario with about 30 tasks a day: fast enough for a subprocess per case."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"] = "tiny"
    doc["workload"]["tasks_per_day"] = 30
    path = tmp_path_factory.mktemp("scenarios") / "tiny.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path
