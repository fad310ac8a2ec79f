"""One clear line per validation problem: file, field path, value, rule and fix.

Pydantic's raw errors name a location tuple and a terse rule.  This module turns each
into ``FILE: PATH: RULE (got VALUE); FIX``, resolving the location against the models
so that unknown names get a "did you mean" among the names that are valid *there*
(fields of that model, fault kinds, literal values, template and tool names).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from fleetchaos.scenario.fields import (
    allowed_range,
    model_at,
    parameters,
    plain_number,
    resolve,
    tag_of,
    union_members,
    unwrap,
)

#: At most this many problems are listed; the rest are counted.
MAX_LINES = 20


def _guess(name: object, known) -> str | None:
    """The closest known name, if any is close enough."""
    match = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return match[0] if match else None


def _did_you_mean(name: object, known) -> str:
    guess = _guess(name, known)
    return f"; did you mean {guess!r}?" if guess else ""


# -- rendering ------------------------------------------------------------------------


def location(loc: tuple) -> str:
    """A location as a path: ``faults[2].windows[0].start_s``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _show(value: Any) -> str:
    """A value as the user wrote it, shortened."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a number of about {int(value.bit_length() * 0.30103)} digits"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return plain_number(value)
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind_name(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


#: Fixes for the rules our own validators state (matched on the message).
_VALUE_FIXES: tuple[tuple[str, str], ...] = (
    ("does not exist (fleet has", "target an existing one, or enlarge the fleet"),
    ("outside the horizon", "move it before duration_s, or lengthen duration_s"),
    ("must fit in its period", "shorten duration_s or lengthen every_s"),
    ("must be after start_s", "make end_s later than start_s"),
    ("which is not an earlier step", "list only steps that come before this one"),
    ("is above high", "write the range as [low, high]"),
    ("not a numeric parameter", "swarm only draws numeric parameters"),
    ("is not a valid", "keep both ends of the range within the parameter's allowed values"),
    ("whole-number ends", "use whole numbers for both ends"),
    ("more than one machine can simulate", ""),
)

#: ``'NAME' (known: a, b)`` style lists in our validators' messages: suggest from the list.
_KNOWN_LIST = re.compile(r"'([^']*)'[^()]*\((?:known|tools|earlier|numeric): ([^)]*)\)")
_SWARM_NAME = re.compile(r"swarm\.(\w+): not a numeric parameter of \w+ \(numeric: ([^)]*)\)")
_RELATIVE_PATH = re.compile(r"^([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*|\[\d+\])*: ")


def _value_error(root: type[BaseModel] | None, raw_loc: tuple, where: str, message: str) -> str:
    """A message from one of our validators, joined to its location, with a fix.

    Whole-world validators (empty location) already name the full path; nested ones
    name a path relative to their model (``swarm.probability: ...``) or none at all.
    """
    message = " ".join(message.split()).replace("Input should be ", "must be ")
    if raw_loc:
        relative = _RELATIVE_PATH.match(message)
        model = model_at(root, raw_loc)
        head = str(next((p for p in raw_loc if isinstance(p, str)), ""))
        if relative and model is not None and relative.group(1) in model.model_fields:
            message = f"{where}.{message}"
        elif not (relative and relative.group(1) == head):
            message = f"{where}: {message}"
    known = _SWARM_NAME.search(message) or _KNOWN_LIST.search(message)
    if known:
        guess = _guess(known.group(1), [k.strip() for k in known.group(2).split(",")])
        if guess and guess != known.group(1):
            return f"{message}; did you mean {guess!r}?"
    for needle, fix in _VALUE_FIXES:
        if needle in message:
            return f"{message}; {fix}" if fix else message
    return message


def _one(err: ErrorDetails, root: type[BaseModel] | None, tags: frozenset[str]) -> str:
    """One problem as ``PATH: RULE (got VALUE); FIX``."""
    raw_loc = tuple(err.get("loc", ()))
    loc = tuple(p for p in raw_loc if not (isinstance(p, str) and p in tags))
    where = location(loc)
    kind = err.get("type", "")
    value = err.get("input")
    ctx = err.get("ctx") or {}
    rule = str(err.get("msg", "invalid value"))
    fix = ""
    show_value = not isinstance(value, (dict, list))

    if kind == "value_error":
        return _value_error(root, raw_loc, where, str(ctx.get("error", rule)).removeprefix("Value error, "))
    if kind == "extra_forbidden":
        field = raw_loc[-1] if raw_loc else "?"
        model = model_at(root, raw_loc[:-1])
        names = sorted(n for n in (model.model_fields if model else {}) if n != "kind")
        rule = f"unknown field {field!r}"
        guess = _guess(field, names)
        if guess:
            fix = f"; did you mean {guess!r}?"
        elif names:
            fix = f"; remove it (fields here: {', '.join(names)})"
        else:
            fix = "; remove it or check the spelling in docs/scenarios.md"
        if model is not None and tag_of(model) and not guess:
            others = _kinds_with_field(root, raw_loc[:-2], str(field))
            if others:
                listed = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
                fix = f"; {field!r} is a parameter of {listed}, not of {tag_of(model)}{fix}"
        show_value = False
    elif kind == "union_tag_invalid":
        tag = ctx.get("tag", "")
        known = [t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip(" '")]
        rule = f"unknown fault kind {tag!r} (known: {', '.join(known)})"
        fix = _did_you_mean(tag, known) or "; see `fleetchaos faults list`"
        show_value = False
    elif kind == "union_tag_not_found":
        rule = "a fault needs a kind"
        fix = "; add kind: (see `fleetchaos faults list` for the kinds)"
        show_value = False
    elif kind == "literal_error":
        expected = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        rule = f"must be one of {', '.join(repr(e) for e in expected)}"
        fix = _did_you_mean(value, expected)
    elif kind == "missing":
        if "swarm" in raw_loc and isinstance(raw_loc[-1], int):
            where = location(loc[:-1])
            rule = "a swarm range is a list of two numbers, [low, high]"
            fix = "; write it as [low, high]"
        else:
            rule = "required field is missing"
            fix = "; add it" + _field_hint(root, raw_loc)
        show_value = False
    elif kind in ("too_long", "too_short") and "swarm" in raw_loc:
        rule = "a swarm range is a list of two numbers, [low, high]"
        fix = "; write it as [low, high]"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {"greater_than": "> ", "greater_than_equal": ">= ", "less_than": "< ", "less_than_equal": "<= "}[kind]
        limit = next(iter(ctx.values()), "")
        rule = f"must be {bound}{_show(limit)}"
        where_field = resolve(root, raw_loc)
        allowed = allowed_range(where_field.field if where_field else None)
        fix = f"; allowed: {allowed}" if allowed else ""
    elif kind == "finite_number":
        rule = "must be a finite number (not .inf or .nan)"
        fix = "; write a number"
    elif kind == "float_type" and isinstance(value, int) and not isinstance(value, bool):
        rule = "is too large to be a number"
        fix = "; write a value within the allowed range"
    elif kind == "int_from_float" or (kind == "int_type" and isinstance(value, float)):
        # Numbers are validated strictly: a whole-number field refuses 2.5 and 2.0 alike.
        rule = "must be a whole number"
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            shown, fix = f" (got {value!r})", f"; write {int(value)}, without the decimal point"
            return f"{where}: {rule}{shown}{fix}"
        fix = (
            f"; use {math.floor(value):g} or {math.ceil(value):g}"
            if isinstance(value, float) and math.isfinite(value)
            else ""
        )
    elif kind in ("float_type", "float_parsing", "int_type", "int_parsing", "decimal_parsing"):
        # A quoted number ("0.1") is a string in a number's place, refused as any other string is.
        rule = f"must be {'a whole number' if kind.startswith('int') else 'a number'}"
        fix = "; write a plain number, without quotes or units"
    elif kind in ("bool_type", "bool_parsing"):
        rule = "must be true or false"
    elif kind in ("string_type", "string_too_short", "string_too_long"):
        if kind == "string_type":
            rule = "must be a string"
            fix = "; quote it"
        else:
            rule = rule.replace("String should have", "must have")
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        rule = "must be a mapping of fields" + ("" if show_value else f", got {_kind_name(value)}")
        model = model_at(root, raw_loc)
        if model is not None:
            names = sorted(model.model_fields)
            fix = f"; write key: value lines ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})"
    elif kind in ("list_type", "tuple_type", "set_type"):
        rule = "must be a list" + ("" if show_value else f", got {_kind_name(value)}")
        fix = "; write it as [a, b] or as lines starting with '- '"
    elif kind == "too_short":
        need, got = ctx.get("min_length", 1), ctx.get("actual_length", 0)
        rule = f"needs at least {need} item{'s' if need != 1 else ''}, got {got}"
        fix = "; add " + ("one" if need == 1 else "more")
        show_value = False
    elif kind == "too_long":
        most, got = ctx.get("max_length", "?"), ctx.get("actual_length", "?")
        rule = f"has {got} items, more than the {most} allowed"
        fix = "; remove some or split the scenario"
        show_value = False
    elif rule.startswith("Input should be"):
        rule = "must be" + rule[len("Input should be") :]
    shown = f" (got {_show(value)})" if show_value and "input" in err else ""
    return f"{where}: {rule}{shown}{fix}"


def _field_hint(root, loc: tuple) -> str:
    """`` (TYPE: DESCRIPTION)`` of the field at ``loc``, for "add it" fixes."""
    where = resolve(root, loc)
    if where is None or where.model is None or where.field is None:
        return ""
    for param in parameters(where.model):
        if param.name == where.field_name:
            return f" ({param.type}" + (f": {param.description})" if param.description else ")")
    return ""


def _kinds_with_field(root, faults_loc: tuple, field: str) -> list[str]:
    """Fault kinds that do have ``field`` (when the user put it on the wrong kind)."""
    where = resolve(root, faults_loc)
    if where is None:
        return []
    ann = unwrap(where.annotation)
    if get_origin(ann) is list:
        ann = get_args(ann)[0]
    return [t for m in union_members(ann) if field in m.model_fields and (t := tag_of(m))]


def _tags(root: type[BaseModel] | None) -> frozenset[str]:
    """Every discriminator tag that can appear in a location under ``root``."""
    try:
        from fleetchaos.sim.fault_specs import FAULT_MODELS
    except ImportError:  # pragma: no cover - the fleet package is part of the distribution
        return frozenset()
    return frozenset(FAULT_MODELS)


def _misspelt(errors: list, root: type[BaseModel] | None) -> set[tuple]:
    """Locations of required fields whose misspelling is also reported as an unknown field."""
    out = set()
    for err in errors:
        loc = tuple(err.get("loc", ()))
        if err.get("type") == "extra_forbidden" and loc:
            model = model_at(root, loc[:-1])
            guess = _guess(loc[-1], model.model_fields) if model is not None else None
            if guess:
                out.add((*loc[:-1], guess))
    return out


def format_errors(
    source: str,
    exc: ValidationError,
    root: type[BaseModel] | None = None,
    line_of: Callable[[tuple], int | None] | None = None,
) -> str:
    """Every problem of ``exc``, one line each, prefixed with ``source``.

    ``line_of(loc)``, where given, finds the file line of a problem's place; the line then
    ends with it, as a syntax error's does.
    """
    tags = _tags(root)
    lines = []
    seen = set()
    errors = exc.errors()
    misspelt = _misspelt(errors, root)
    for err in errors:
        if err.get("type") == "missing" and tuple(err.get("loc", ())) in misspelt:
            continue  # reported once, as the unknown field with its "did you mean"
        try:
            line = _one(err, root, tags)
        except Exception:
            line = f"{location(tuple(err.get('loc', ())))}: {err.get('msg', 'invalid value')}"
        number = line_of(tuple(err.get("loc", ()))) if line_of is not None else None
        if number is not None:
            line += f" (line {number})"
        if line not in seen:
            seen.add(line)
            lines.append(f"{source}: {line}")
    if len(lines) > MAX_LINES:
        hidden = len(lines) - MAX_LINES
        lines = [*lines[:MAX_LINES], f"{source}: ... and {hidden} more problems"]
    return "\n".join(lines)
