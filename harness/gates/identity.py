"""What a stored result says of the scenario it ran: fingerprints, and the differences between two.

Two runs on the same seed are comparable only when they met the same faults, that is when
they ran the same world.  A scenario's *world fingerprint* digests its validated JSON
without what does not change a run (its name, description, ``reveals``, default
``seeds``, acceptance criteria ``expect`` and the ``arms`` those judge), so editing a gate
or a description keeps a baseline comparable while any change to the fleet, the workload
or the faults (a ``--param`` value included) does not.  The *scenario fingerprint*
(:func:`fleetchaos.scenario.load.scenario_hash`) digests the whole document: run groups
stored before world fingerprints were recorded have only that one.

Light to import: the standard library only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "NOT_THE_WORLD",
    "config_fingerprints",
    "differences",
    "params_key",
    "scenario_fingerprint",
    "world_fingerprint",
]

#: Top-level fields of a scenario that do not change what a run meets.
NOT_THE_WORLD = ("name", "description", "reveals", "seeds", "expect", "arms")


def _digest(doc: Any) -> str:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def scenario_fingerprint(config: Mapping[str, Any]) -> str:
    """The digest of a validated scenario's JSON, as :func:`~fleetchaos.scenario.load.scenario_hash` gives it."""
    return _digest(dict(config))


def world_fingerprint(config: Mapping[str, Any]) -> str:
    """The digest of the world a scenario's runs meet: its JSON without :data:`NOT_THE_WORLD`."""
    return _digest({k: v for k, v in config.items() if k not in NOT_THE_WORLD})


def config_fingerprints(config: Any) -> tuple[str | None, str | None]:
    """(world, scenario) fingerprints of a results file's ``scenario_config``; (None, None) when it kept none."""
    if not isinstance(config, dict) or not config:
        return None, None
    return world_fingerprint(config), scenario_fingerprint(config)


def params_key(params: Any) -> str:
    """Canonical JSON of a run's ``--param`` values or sweep point: the same values give the same text."""
    return json.dumps(params if isinstance(params, dict) else {}, sort_keys=True, separators=(",", ":"))


def _walk(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key in NOT_THE_WORLD and not path:
                continue
            _walk(a.get(key), b.get(key), f"{path}.{key}" if path else str(key), out, limit)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", out, limit)
        return
    out.append(f"{path or 'the scenario'}: {_short(a)} in the baseline, {_short(b)} here")


def _short(value: Any) -> str:
    text = "absent" if value is None else json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def differences(baseline: Mapping[str, Any], current: Mapping[str, Any], limit: int = 3) -> list[str]:
    """Up to ``limit`` paths where two scenarios' worlds differ: ``faults[0].probability: 0.02 in the baseline, 0.1 here``."""
    out: list[str] = []
    _walk(dict(baseline), dict(current), "", out, limit)
    return out
