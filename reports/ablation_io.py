"""Reading an ``ablation.json`` back (``fleetchaos report ablation.json -o DIR``), checked field by field.

The document is the plain dict :func:`fleetchaos.runs.ablation.ablation_document` builds
and :func:`fleetchaos.reports.ablation.write_ablation_report` writes; a file that is not
one is a :class:`ValueError` naming the file, the field and what it should be, so the
command line says so in one line (exit 2) instead of failing while it draws.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["check_ablation", "is_ablation"]


def is_ablation(doc: Any) -> bool:
    """Whether a JSON document looks like an ablation's (``steps`` beside ``scenario`` and ``seeds``)."""
    return isinstance(doc, dict) and "steps" in doc and "seeds" in doc and "arms" not in doc


def _number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def _interval(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_number(v) for v in value)


def check_ablation(doc: dict, where: str) -> dict:
    """``doc`` when it is a well-formed ablation document; else a ValueError naming ``where`` and the field."""

    def bad(field: str, rule: str) -> ValueError:
        return ValueError(
            f"{where}: not a fleetchaos ablation result: {field}: {rule}; give the ablation.json written by "
            "`fleetchaos ablation --report DIR` (or its --json)"
        )

    if not isinstance(doc.get("scenario"), str):
        raise bad("scenario", "must be a string")
    if not isinstance(doc.get("policy", ""), str):
        raise bad("policy", "must be a string")
    seeds = doc.get("seeds")
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise bad("seeds", "must be a list of whole numbers")
    confidence = doc.get("confidence", 0.95)
    if not (_number(confidence) and confidence is not None and 0 < confidence < 1):
        raise bad("confidence", "must be a number between 0 and 1")
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        raise bad("steps", "must be a non-empty list")
    for i, step in enumerate(steps):
        here = f"steps[{i}]"
        if not isinstance(step, dict):
            raise bad(here, "must be a mapping")
        if not isinstance(step.get("format"), str):
            raise bad(f"{here}.format", "must be a string")
        for key in ("metrics", "ci"):
            if not isinstance(step.get(key), dict):
                raise bad(f"{here}.{key}", "must be a mapping")
        if not isinstance(step.get("gain", {}), dict):
            raise bad(f"{here}.gain", "must be a mapping")
        for name, value in step["metrics"].items():
            if not _number(value):
                raise bad(f"{here}.metrics.{name}", "must be a number or null")
        for name, value in step["ci"].items():
            if not _interval(value):
                raise bad(f"{here}.ci.{name}", "must be [low, high] (numbers or null)")
        for name, gain in step.get("gain", {}).items():
            if not (isinstance(gain, dict) and _number(gain.get("mean")) and _interval(gain.get("ci"))):
                raise bad(f"{here}.gain.{name}", "must be {mean, ci: [low, high], n}")
    return doc
