"""A shrunk scenario as a plain document, and as YAML the scenario loader reads back unchanged.

The writing is :mod:`fleetchaos.scenario.load`'s (:func:`~fleetchaos.scenario.load.to_yaml`); these
names stay for the shrinker's steps.
"""

from __future__ import annotations

from fleetchaos.scenario.load import scenario_document
from fleetchaos.scenario.load import to_yaml as scenario_yaml

__all__ = ["scenario_document", "scenario_yaml"]
