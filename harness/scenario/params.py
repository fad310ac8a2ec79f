"""Scenario parameters a sweep varies: dotted paths into the scenario document.

A path names one value of a scenario file: ``fleet.workers``, ``faults[0].probability``,
``workload.templates[1].steps[0].fan_out``.  A parameter is applied by editing the
validated scenario as a plain document and validating it again, so a swept value obeys
every rule a value written in the file would.  Values are written as in YAML (or JSON):
``0.1``, ``50``, ``true``, ``least_loaded``, ``[0, 1]``.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Sequence
from itertools import product
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")
_INDEX = re.compile(r"\[(\d+)\]")

Path = tuple[str | int, ...]


class ParamError(UserError):
    """A swept parameter that names no field, or gives a value the scenario rules refuse."""


def parse_path(text: str) -> Path:
    """``faults[0].probability`` -> ``("faults", 0, "probability")``."""
    parts: list[str | int] = []
    if not text or text != text.strip():
        raise ParamError(f"--param {text!r}: expected a dotted path like fleet.workers or faults[0].probability")
    for piece in text.split("."):
        match = _PART.match(piece)
        if match is None:
            raise ParamError(
                f"--param {text}: {piece!r} is not a field name with optional [index]es; "
                "write paths like fleet.workers or faults[0].probability"
            )
        parts.append(match.group(1))
        parts.extend(int(i) for i in _INDEX.findall(match.group(2)))
    return tuple(parts)


def path_text(path: Path) -> str:
    """The dotted text of a parsed path."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def parse_value(text: str) -> Any:
    """One value as written on the command line: JSON, else YAML, else the plain string."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    from fleetchaos.scenario._yaml import load_yaml

    try:
        value = load_yaml(text)
    except Exception:
        return text
    return text if value is None and text not in ("null", "~") else value


def split_values(text: str) -> list[str]:
    """Split ``a,b,[c,d]`` on the commas outside brackets and quotes."""
    out: list[str] = []
    depth = 0
    quote = ""
    current = ""
    for ch in text:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(current)
            current = ""
            continue
        current += ch
    out.append(current)
    return out


def parse_param_option(option: str) -> tuple[str, list[Any]]:
    """``PATH=V1,V2,...`` (one ``--param``) -> (path text, values)."""
    path, sep, values = option.partition("=")
    path = path.strip()
    if not sep or not path or not values.strip():
        raise ParamError(
            f"--param {option!r}: expected PATH=VALUE[,VALUE...], for example --param faults[0].probability=0,0.1,0.2"
        )
    parse_path(path)
    parsed = [parse_value(v) for v in split_values(values)]
    if any(isinstance(v, str) and not v for v in parsed):
        raise ParamError(f"--param {option!r}: an empty value between commas; remove the extra comma")
    return path, parsed


def format_value(value: Any) -> str:
    """A value as it would be written after ``PATH=`` (parses back to the same value)."""
    if isinstance(value, str):
        return value if parse_value(value) == value and "," not in value else json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a true/false value"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "empty (null)"
    return "a string"


def set_path(document: dict, path: Path, value: Any, *, where: str = "scenario") -> None:
    """Set ``path`` in ``document`` in place; a ParamError names the first part that does not exist."""
    text = path_text(path)
    node: Any = document
    for depth, part in enumerate(path):
        here = path_text(path[:depth]) or "(top level)"
        last = depth == len(path) - 1
        if isinstance(part, int):
            if not isinstance(node, list):
                raise ParamError(f"--param {text}: {here} is {_describe(node)} in {where}, not a list; remove [{part}]")
            if part >= len(node):
                have = f"{here}[0]..{here}[{len(node) - 1}]" if node else "none"
                raise ParamError(f"--param {text}: {here} has {len(node)} entries in {where} ({have})")
        else:
            if not isinstance(node, dict):
                raise ParamError(f"--param {text}: {here} is {_describe(node)} in {where}, not a mapping of fields")
            if part not in node:
                guess = difflib.get_close_matches(part, list(node), n=1)
                hint = f"; did you mean {guess[0]!r}?" if guess else ""
                fields = ", ".join(sorted(node))
                raise ParamError(
                    f"--param {text}: unknown field {part!r} in {here} of {where} (fields: {fields}){hint}"
                )
        if last:
            node[part] = copy.deepcopy(value)
        else:
            node = node[part]


def get_path(document: Any, path: Path) -> Any:
    """The value at ``path`` (the path must exist)."""
    for part in path:
        document = document[part]
    return document


def apply_params(
    scenario: Scenario, params: Sequence[tuple[str, Any]], *, source: str
) -> tuple[Scenario, tuple[tuple[str, Any], ...]]:
    """``scenario`` with each (path, value) set, validated again; plus the values as validated.

    Returns ``(new_scenario, canonical_params)`` where each value is read back from the
    validated document (so ``0`` given for a float field is recorded as ``0.0``).  A bad
    path or a value the rules refuse raises :class:`ParamError` naming the file, the
    field, the value and the fix.
    """
    from fleetchaos.scenario.load import Scenario, format_validation_error

    if not params:
        return scenario, ()
    document = scenario.model_dump(mode="json")
    for path, value in params:
        set_path(document, parse_path(path), value, where=source)
    given = ", ".join(f"{p}={format_value(v)}" for p, v in params)
    try:
        new = Scenario.model_validate(document)
    except ValidationError as exc:
        detail = format_validation_error(f"{source} with --param {given}", exc)
        raise ParamError(
            f"{detail}\nfix: sweep values the scenario rules allow (see `fleetchaos schema scenario`)"
        ) from None
    except ValueError as exc:
        raise ParamError(f"{source} with --param {given}: {exc}") from None
    validated = new.model_dump(mode="json")
    canonical = tuple((path, get_path(validated, parse_path(path))) for path, _ in params)
    return new, canonical


def grid_points(grid: dict[str, list[Any]]) -> list[tuple[tuple[str, Any], ...]]:
    """Every combination of the grid's values, the last parameter varying fastest."""
    if not grid:
        return [()]
    paths = list(grid)
    return [tuple(zip(paths, combo)) for combo in product(*(grid[p] for p in paths))]
