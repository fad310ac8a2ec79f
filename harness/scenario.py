"""Scenarios: a named, described world, loaded from the catalogue or a YAML/JSON file."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import yaml

from pydantic import Field, ValidationError

import scenarios as catalogue
from simulated_fleet.config import WorldSpec

from ._yaml import YamlLimitError, load_yaml
from .errors import ScenarioError

MAX_FILE_BYTES = 1_000_000


class Scenario(WorldSpec):
    """A world plus what it is for: the unit users name on the command line."""

    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    reveals: str = Field(default="", description="what the scenario is meant to reveal")


def _location(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def format_validation_error(source: str, exc: ValidationError) -> str:
    """One line per problem: file, field path, value, rule, and a fix where we know one."""
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p in _TAGS))
        where = _location(loc)
        value = err.get("input")
        rule = err["msg"]
        fix = ""
        if err["type"] == "extra_forbidden":
            field = loc[-1] if loc else "?"
            rule = f"unknown field {field!r}"
            fix = "; remove it or check the spelling in docs/scenarios.md"
            value = None
        elif err["type"] == "union_tag_invalid":
            tag = err.get("ctx", {}).get("tag", "")
            known = [t.strip(" '") for t in err.get("ctx", {}).get("expected_tags", "").split(",")]
            guess = difflib.get_close_matches(str(tag), known, n=1)
            rule = f"unknown fault kind {tag!r} (known: {', '.join(known)})"
            fix = f"; did you mean {guess[0]!r}?" if guess else ""
            value = None
        elif err["type"] == "value_error":
            # Our own validators already name the field path in their message.
            rule = str(err.get("ctx", {}).get("error", rule))
            lines.append(f"{source}: {rule}")
            continue
        elif err["type"] == "missing":
            rule = "required field is missing"
            fix = "; add it"
            value = None
        shown = "" if value is None or isinstance(value, (dict, list)) else f" (got {value!r})"
        lines.append(f"{source}: {where}: {rule}{shown}{fix}")
    return "\n".join(lines)


_TAGS = {"network_blip", "timeout", "rate_limit", "disk_full", "expired_key"}


def parse_scenario(text: str, source: str) -> Scenario:
    """Validate a YAML or JSON document into a Scenario."""
    if len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        raise ScenarioError(f"{source}: file is larger than {MAX_FILE_BYTES} bytes; scenario files are small documents")
    try:
        data = json.loads(text) if source.endswith(".json") else load_yaml(text)
    except YamlLimitError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: nested too deeply to be a scenario file") from None
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        first = " ".join(str(exc).split())
        raise ScenarioError(f"{source}: not valid {'JSON' if source.endswith('.json') else 'YAML'}: {first}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: (top level): expected a mapping of fields, got {type(data).__name__}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(source, exc)) from None
    except ValueError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def load_scenario(ref: str) -> Scenario:
    """A catalogue scenario by name, or a scenario file by path."""
    names = catalogue.names()
    if ref in names:
        return parse_scenario(catalogue.path(ref).read_text(encoding="utf-8"), f"scenarios/{ref}.yaml")
    path = Path(ref)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ScenarioError(f"{ref}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"{ref}: cannot read: {exc}") from None
        return parse_scenario(text, str(path))
    guess = difflib.get_close_matches(ref, names, n=1)
    hint = f"; did you mean {guess[0]!r}?" if guess else ""
    raise ScenarioError(
        f"--scenario: unknown scenario {ref!r} (catalogue: {', '.join(names)}; or give a .yaml path){hint}"
    )
