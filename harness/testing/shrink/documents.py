"""A shrunk scenario as a plain document, and as YAML the scenario loader reads back unchanged."""

from __future__ import annotations

from fleetchaos.scenario.load import Scenario

__all__ = ["scenario_document", "scenario_yaml"]


def scenario_document(scenario: Scenario) -> dict:
    """A scenario as a plain document for YAML or JSON (defaults of faults left out, kinds kept)."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    data["faults"] = [{"kind": f.kind, **f.model_dump(mode="json", exclude_defaults=True)} for f in scenario.faults]
    first = {k: data.pop(k) for k in ("name", "description") if k in data}
    return {**first, **data}


def scenario_yaml(scenario: Scenario) -> str:
    """A scenario as YAML text that :func:`fleetchaos.scenario.load.parse_scenario` reads back unchanged."""
    import yaml

    return yaml.safe_dump(scenario_document(scenario), sort_keys=False, width=100)
