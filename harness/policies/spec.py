"""Policy specs: a policy name with parameters, such as ``backoff(base_s=0.005,cap_s=2)``.

A spec is the name a user types (a built-in, a preset, an entry point or an import path),
optionally followed by ``(parameter=value, ...)``.  Values are Python literals only
(numbers, ``True``/``False``/``None``, quoted strings, tuples of those), read with
:func:`ast.literal_eval`: nothing in a spec is ever evaluated as code.

A parameter is a field of the policy's frozen dataclass whose value is such a literal;
fields that are themselves dataclasses are reached with a dotted name
(``breaker-worker(policy.base_s=1,breaker.cooldown_s=60)``).  The policy's ``name`` and
``description`` are labels, not parameters.  :func:`apply_params` builds the policy with
the new values (``dataclasses.replace``, so the class's own checks run), each value
checked against the field's type; :func:`format_spec` writes the canonical spelling
results and replay commands record: parameters in the policy's field order, values as
validated (``cap_s=2`` for a float field becomes ``cap_s=2.0``).

This module imports no other policy module; :mod:`fleetchaos.policies.registry` resolves
the name and calls it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_SPEC_CHARS",
    "POLICY_PARAM_PREFIX",
    "PolicySpec",
    "PolicySpecError",
    "apply_params",
    "format_spec",
    "format_spec_value",
    "parameters",
    "parse_spec",
    "policy_param_name",
    "split_specs",
]

#: The longest spec accepted (a bound on what a command line or sweep file makes us parse).
MAX_SPEC_CHARS = 2000

#: The prefix of a ``--param`` path that sets a policy parameter (``policy.base_s=0.5``)
#: rather than a scenario value.
POLICY_PARAM_PREFIX = "policy."

#: Field names that label a policy rather than parametrise it.
_LABELS = frozenset({"name", "description"})

_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_SCALARS = (bool, int, float, str, type(None))


class PolicySpecError(ValueError):
    """A spec that cannot be read or applied; the message names the policy, the parameter and the fix."""


@dataclass(frozen=True)
class PolicySpec:
    """A parsed spec: the policy's name and its parameters in the order given."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()


def policy_param_name(path: str) -> str | None:
    """The policy parameter a ``--param`` path sets (``policy.base_s`` -> ``base_s``), or None for a scenario path."""
    return path[len(POLICY_PARAM_PREFIX) :] if path.startswith(POLICY_PARAM_PREFIX) else None


def split_specs(text: str) -> tuple[str, ...]:
    """Split a comma-separated list of specs on the commas outside parentheses, brackets and quotes."""
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
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(current)
            current = ""
            continue
        current += ch
    out.append(current)
    return tuple(v.strip() for v in out if v.strip())


def parse_spec(text: str) -> PolicySpec:
    """``backoff(base_s=0.005,cap_s=2)`` -> ``PolicySpec("backoff", (("base_s", 0.005), ("cap_s", 2)))``.

    A text without parentheses is a bare name.  Raises :class:`PolicySpecError` for a spec
    longer than :data:`MAX_SPEC_CHARS`, unbalanced parentheses, a parameter that is not
    ``name=literal``, or a parameter given twice.
    """
    if len(text) > MAX_SPEC_CHARS:
        raise PolicySpecError(
            f"policy spec of {len(text)} characters: at most {MAX_SPEC_CHARS}; give fewer or shorter parameters"
        )
    head, paren, rest = text.partition("(")
    name = head.strip()
    if not paren:
        return PolicySpec(name)
    where = f"policy {name!r}"
    if not name:
        raise PolicySpecError(f"policy spec {text!r}: no policy name before '('; write NAME(parameter=value,...)")
    if not rest.rstrip().endswith(")"):
        raise PolicySpecError(f"{where}: spec {text!r} does not end with ')'; write {name}(parameter=value,...)")
    body = rest.rstrip()[:-1]
    params: list[tuple[str, Any]] = []
    for item in split_specs(body) if body.strip() else ():
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not _PARAM_NAME.match(key):
            raise PolicySpecError(
                f"{where}: {item!r} is not parameter=value; write {name}(parameter=value,...), "
                "e.g. backoff(base_s=0.5,cap_s=5)"
            )
        if any(key == k for k, _ in params):
            raise PolicySpecError(f"{where}: parameter {key!r} is given twice; give it once")
        params.append((key, _literal(where, key, raw.strip())))
    return PolicySpec(name, tuple(params))


def _literal(where: str, key: str, raw: str) -> Any:
    """A literal value, or a PolicySpecError: numbers, booleans, None, strings and flat tuples of them only."""
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise PolicySpecError(
            f"{where}: parameter {key}={raw!r} is not a literal; give a number, True/False, None, "
            "a quoted string or a tuple of those"
        ) from None
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple) and all(isinstance(v, _SCALARS) for v in value):
        return value
    if isinstance(value, _SCALARS):
        return value
    raise PolicySpecError(
        f"{where}: parameter {key}={raw!r} is {type(value).__name__}; give a number, True/False, None, "
        "a quoted string or a tuple of those"
    )


def _is_literal(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(isinstance(v, _SCALARS) for v in value)
    return isinstance(value, _SCALARS)


def parameters(policy: Any) -> dict[str, Any]:
    """The parameters a spec may set on ``policy``, dotted name -> current value, in field order.

    Empty for a policy that is not a dataclass.  Nested dataclass fields contribute their
    own parameters under ``field.``.
    """
    out: dict[str, Any] = {}
    _collect(policy, "", out, depth=0)
    return out


def _collect(obj: Any, prefix: str, out: dict[str, Any], depth: int) -> None:
    if depth > 4 or not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return
    try:
        hints = typing.get_type_hints(type(obj))
    except Exception:  # an annotation that does not resolve: judge by the values
        hints = {}
    for f in dataclasses.fields(obj):
        if f.name in _LABELS or f.name.startswith("_"):
            continue
        value = getattr(obj, f.name)
        if value is None and _declared(hints.get(f.name), None) is None:
            continue  # an optional part (a budget, a breaker) left out: not a literal parameter
        if _is_literal(value):
            out[prefix + f.name] = value
        else:
            _collect(value, f"{prefix}{f.name}.", out, depth + 1)


def apply_params(policy: Any, name: str, params: Sequence[tuple[str, Any]]) -> tuple[Any, tuple[tuple[str, Any], ...]]:
    """``policy`` with ``params`` set, and the parameters as validated (in the policy's field order).

    Raises :class:`PolicySpecError` naming the policy, the parameter, the valid ones and the fix.
    """
    if not params:
        return policy, ()
    valid = parameters(policy)
    where = f"policy {name!r}"
    if not valid:
        raise PolicySpecError(
            f"{where} takes no parameters (it is not a dataclass with literal fields); "
            f"drop the parentheses, or write a dataclass policy to set parameters"
        )
    coerced: dict[str, Any] = {}
    for key, value in params:
        if key not in valid:
            import difflib

            guess = difflib.get_close_matches(key, list(valid), n=1)
            hint = f"; did you mean {guess[0]!r}?" if guess else ""
            raise PolicySpecError(
                f"{where}: unknown parameter {key!r} (valid: {', '.join(valid)}){hint}; "
                f"write {name}(parameter=value,...) with those names"
            )
        coerced[key] = _coerce(policy, key, value, where)
    try:
        built = _replace(policy, coerced)
    except (ValueError, TypeError) as exc:
        given = ",".join(f"{k}={format_spec_value(v)}" for k, v in coerced.items())
        raise PolicySpecError(f"{where} with {given}: {exc}; give values the policy accepts") from None
    ordered = tuple((k, coerced[k]) for k in valid if k in coerced)
    return built, ordered


def _replace(obj: Any, values: Mapping[str, Any]) -> Any:
    """``dataclasses.replace`` along dotted names, inner objects first."""
    direct: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        head, dot, tail = key.partition(".")
        if dot:
            nested.setdefault(head, {})[tail] = value
        else:
            direct[head] = value
    for head, inner in nested.items():
        direct[head] = _replace(getattr(obj, head), inner)
    return dataclasses.replace(obj, **direct)


def _owner(policy: Any, key: str) -> tuple[Any, str]:
    obj = policy
    *heads, leaf = key.split(".")
    for head in heads:
        obj = getattr(obj, head)
    return obj, leaf


def _coerce(policy: Any, key: str, value: Any, where: str) -> Any:
    """``value`` as the field's type, or a PolicySpecError saying what the field takes."""
    owner, leaf = _owner(policy, key)
    current = getattr(owner, leaf)
    try:
        hints = typing.get_type_hints(type(owner))
    except Exception:  # an annotation that does not resolve: judge by the current value
        hints = {}
    hint = hints.get(leaf)
    allowed = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None
    if allowed is not None:
        if value not in allowed or type(value) is not type(current):
            options = ", ".join(format_spec_value(a) for a in allowed)
            raise PolicySpecError(f"{where}: parameter {key}={format_spec_value(value)} is not one of {options}")
        return value
    nullable = current is None or _allows_none(hint)
    if value is None:
        if nullable:
            return None
        raise PolicySpecError(f"{where}: parameter {key} cannot be None; give {_kind_of(current)}")
    target = _declared(hint, current)
    if target is bool:
        if not isinstance(value, bool):
            raise PolicySpecError(f"{where}: parameter {key}={format_spec_value(value)}: give True or False")
        return value
    if target in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PolicySpecError(f"{where}: parameter {key}={format_spec_value(value)}: give a number")
        if not math.isfinite(value) or value < 0:
            raise PolicySpecError(
                f"{where}: parameter {key}={format_spec_value(value)}: policy parameters are counts, "
                "durations and rates; give a finite number >= 0"
            )
        if target is int:
            if value != int(value):
                raise PolicySpecError(f"{where}: parameter {key}={format_spec_value(value)}: give a whole number")
            return int(value)
        return float(value)
    if target is str:
        if not isinstance(value, str):
            raise PolicySpecError(f"{where}: parameter {key}={format_spec_value(value)}: give a quoted string")
        return value
    if target is tuple:
        if not isinstance(value, tuple):
            raise PolicySpecError(f"{where}: parameter {key}={format_spec_value(value)}: give a tuple, e.g. ('a','b')")
        kinds = {type(v) for v in current} if isinstance(current, tuple) else set()
        if kinds and not all(type(v) in kinds for v in value):
            raise PolicySpecError(
                f"{where}: parameter {key}={format_spec_value(value)}: give a tuple of "
                f"{', '.join(sorted(k.__name__ for k in kinds))}"
            )
        return value
    return value


def _allows_none(hint: Any) -> bool:
    return hint is not None and type(None) in typing.get_args(hint)


def _declared(hint: Any, current: Any) -> type | None:
    """The scalar type a field holds: from its annotation (``float | None`` -> float), else its value."""
    if hint is tuple or typing.get_origin(hint) is tuple:
        return tuple
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    for candidate in (bool, float, int, str, tuple):
        if any(m is candidate or typing.get_origin(m) is candidate for m in members):
            return candidate
    if current is None:
        return None
    return tuple if isinstance(current, tuple) else type(current)


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "True or False"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, tuple):
        return "a tuple"
    return "a quoted string"


def format_spec_value(value: Any) -> str:
    """A parameter value as a spec writes it (a Python literal that reads back to the same value)."""
    if isinstance(value, tuple):
        inner = ",".join(format_spec_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, str):
        return json.dumps(value)  # double quotes: a spec is single-quoted for the shell
    return repr(value)


def format_spec(name: str, params: Sequence[tuple[str, Any]]) -> str:
    """The canonical spec: ``name`` alone, or ``name(key=value,...)`` without spaces."""
    if not params:
        return name
    return f"{name}({','.join(f'{k}={format_spec_value(v)}' for k, v in params)})"
