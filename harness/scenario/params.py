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

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")
_INDEX = re.compile(r"\[(\d+)\]")

Path = tuple[str | int, ...]


class ParamError(UserError):
    """A swept parameter that names no field, or gives a value the scenario rules refuse.

    ``rules`` holds each refusing rule's own words (no file, field or fix around them), for a
    caller that reports a refused value in a line of its own, such as the sensitivity study.
    """

    def __init__(self, message: str, rules: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.rules = rules


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
    """One value as written on the command line: JSON, else YAML, else the plain string.

    A value nested deeper than a scenario file may be (:data:`~fleetchaos.scenario._yaml.MAX_DEPTH`
    levels) is a :class:`ParamError`, before anything walks it.
    """
    from fleetchaos.scenario._yaml import MAX_DEPTH, load_yaml

    text = text.strip()
    if _nesting(text) > MAX_DEPTH:
        raise ParamError(
            f"the value {_shown(text)} is nested deeper than {MAX_DEPTH} levels of brackets, more than a scenario "
            "file may be; write a number, a word or a short list"
        )
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        value = load_yaml(text)
    except Exception:
        return text
    return text if value is None and text not in ("null", "~") else value


def _nesting(text: str) -> int:
    """How deeply brackets and braces outside quotes nest in ``text``."""
    deepest = depth = 0
    quote = ""
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return deepest


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


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
    try:
        parsed = [parse_value(v) for v in split_values(values)]
    except ParamError as exc:
        raise ParamError(f"--param {path}: {exc}") from None
    if any(isinstance(v, str) and not v for v in parsed):
        raise ParamError(f"--param {option!r}: an empty value between commas; remove the extra comma")
    return path, parsed


def format_value(value: Any) -> str:
    """A value as it would be written after ``PATH=`` (parses back to the same value)."""
    if isinstance(value, str):
        try:
            plain = parse_value(value) == value and "," not in value
        except ParamError:  # a string that looks nested too deeply: quoted, it reads back as the string
            plain = False
        return value if plain else json.dumps(value)
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


def _field_value(model: Any, part: str | int) -> tuple[bool, Any]:
    """(True, the value) of field ``part`` of a validated model (or an item of a list or mapping), else (False, None)."""
    if isinstance(model, BaseModel):
        if isinstance(part, str) and part in type(model).model_fields:
            return True, getattr(model, part)
        return False, None
    if isinstance(part, int) and isinstance(model, (list, tuple)) and part < len(model):
        return True, model[part]
    if isinstance(part, str) and isinstance(model, dict) and part in model:
        return True, model[part]
    return False, None


def set_path(document: dict, path: Path, value: Any, *, where: str = "scenario", model: Any = None) -> None:
    """Set ``path`` in ``document`` in place; a ParamError names the first part that does not exist.

    ``model`` is the validated model ``document`` was dumped from: a field the dump leaves
    out while it holds its default (so that older results keep their bytes) is still a
    field, and is filled in from the model before the path goes on into it.
    """
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
                hidden, default = _field_value(model, part)
                if not hidden:
                    names = sorted(set(node) | set(type(model).model_fields if isinstance(model, BaseModel) else ()))
                    guess = difflib.get_close_matches(part, names, n=1)
                    hint = f"; did you mean {guess[0]!r}?" if guess else ""
                    raise ParamError(
                        f"--param {text}: unknown field {part!r} in {here} of {where} (fields: {', '.join(names)}){hint}"
                    )
                node[part] = to_jsonable_python(default)
        model = _field_value(model, part)[1]
        if last:
            node[part] = copy.deepcopy(value)
        else:
            node = node[part]


def get_path(document: Any, path: Path) -> Any:
    """The value at ``path`` (the path must exist).

    ``document`` is a plain document (mappings and lists) or a validated model: a model's
    fields are read as attributes, and the value is returned as plain data, as a dump gives it.
    """
    for part in path:
        document = getattr(document, str(part)) if isinstance(document, BaseModel) else document[part]
    return to_jsonable_python(document)


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
        set_path(document, parse_path(path), value, where=source, model=scenario)
    given = ", ".join(f"{p}={format_value(v)}" for p, v in params)
    try:
        new = Scenario.model_validate(document)
    except ValidationError as exc:
        lines = format_validation_error(f"{source} with --param {given}", exc).splitlines()
        # One line per problem, each with its fix: the allowed values where the line names none.
        fix = "; see `fleetchaos schema scenario` for the values each field allows"
        rules = tuple(str(error["msg"]).removeprefix("Value error, ") for error in exc.errors())
        raise ParamError("\n".join(line if ";" in line else line + fix for line in lines), rules) from None
    except ValueError as exc:
        raise ParamError(f"{source} with --param {given}: {exc}", (str(exc),)) from None
    canonical = tuple((path, get_path(new, parse_path(path))) for path, _ in params)
    return new, canonical


def grid_points(grid: dict[str, list[Any]]) -> list[tuple[tuple[str, Any], ...]]:
    """Every combination of the grid's values, the last parameter varying fastest."""
    if not grid:
        return [()]
    paths = list(grid)
    return [tuple(zip(paths, combo)) for combo in product(*(grid[p] for p in paths))]
