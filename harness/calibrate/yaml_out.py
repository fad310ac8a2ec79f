"""A calibrated scenario as YAML, each fitted value with its provenance as a comment above it.

A small emitter for the shapes calibration writes (mappings, lists, numbers, strings,
booleans): block style, with short mappings (durations, windows, events, rate points)
in flow style on one line.  Strings are written as JSON strings (valid YAML), so no
trace-supplied text can become YAML structure; floats always with a decimal point and a
signed exponent (``2.0e-05``), the form YAML 1.1 readers take for a number.
"""

from __future__ import annotations

import json
import math

from fleetchaos.calibrate.fit import Calibration

#: Mappings with only these keys are written on one line.
_FLOW_KEYS = (
    {"mean_s", "cv"},
    {"start_s", "duration_s"},
    {"worker", "at_s"},
    {"at_s", "tasks_per_hour"},
)


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    return json.dumps(str(value), ensure_ascii=False)


def _float(value: float) -> str:
    """A float as YAML 1.1 reads it back (PyYAML's resolver): ``2e-05`` would be a string, ``2.0e-05`` is a float."""
    if not math.isfinite(value):
        raise ValueError(f"a calibrated value must be finite, got {value!r}")
    if value.is_integer() and abs(value) < 1e15:
        return repr(int(value))
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        mantissa += ".0"
    if e and exponent[0] not in "+-":
        exponent = "+" + exponent
    return mantissa + (f"e{exponent}" if e else "")


def _flow(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def _is_flow(value) -> bool:
    if isinstance(value, dict):
        return set(value) in _FLOW_KEYS or not value
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value) or (
            all(isinstance(v, dict) and _is_flow(v) for v in value) and len(value) <= 1
        )
    return True


def _comment(text: str, pad: str) -> list[str]:
    lines = []
    for raw in text.splitlines() or [""]:
        lines.append(f"{pad}# {' '.join(raw.split())}".rstrip())
    return lines


def _emit(value, path: tuple, indent: int, comments: dict, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, child in value.items():
            here = (*path, key)
            if here in comments:
                out.extend(_comment(comments[here], pad))
            if _is_flow(child):
                out.append(f"{pad}{key}: {_flow(child)}")
            else:
                out.append(f"{pad}{key}:")
                _emit(child, here, indent + 2, comments, out)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            here = (*path, i)
            if here in comments:
                out.extend(_comment(comments[here], pad))
            if _is_flow(child):
                out.append(f"{pad}- {_flow(child)}")
            else:
                inner: list[str] = []
                _emit(child, here, indent + 2, comments, inner)
                first = inner[0]
                out.append(f"{pad}- {first[indent + 2 :]}")
                out.extend(inner[1:])


def to_yaml(calibration: Calibration) -> str:
    """The scenario file: header comments, the document with provenance comments, and the notes."""
    out = [f"# {line}" for line in calibration.header]
    out.append("")
    _emit(calibration.document, (), 0, calibration.comments, out)
    if calibration.notes or calibration.unmapped:
        out.append("")
        out.append("# Not fitted, or fitted with a caveat:")
        for note in calibration.notes:
            out.extend(_comment(f"- {note}", ""))
        for text, count in calibration.unmapped:
            out.extend(_comment(f"- unmapped failure: {text}: {count} calls (add it to a --codes mapping file)", ""))
    return "\n".join(out) + "\n"
