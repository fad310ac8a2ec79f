"""Results documents read as baseline entries: a comparison's, a run's, an exported group, or a list of them.

One reader for every file a baseline (or a side of ``history diff``) may be: bounded
(:func:`read_results_file`), every field checked, so a damaged file is one
:class:`~fleetchaos.errors.UserError` naming the file and the field.  A comparison's arm keeps
each seed's figures and task sets, the arms its common sets were computed over and its
scenario's fingerprints; a stored group's runs take the group's fingerprints (:func:`stamped`).

Light to import (the standard library and the gate's own modules).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.gates.baseline_entry import BaselineEntry
from fleetchaos.gates.export import EXPORT_VERSION, is_export
from fleetchaos.gates.identity import config_fingerprints, params_key

__all__ = ["MAX_BASELINE_BYTES", "doc_entries", "expected_runs", "export_lacking", "export_runs", "read_results_file",
           "stamped", "task_sets_of"]  # fmt: skip

MAX_BASELINE_BYTES = 50_000_000


def _str(doc: dict, key: str, where: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise UserError(f"{where}: field {key!r} must be a string, got {value!r}")
    return value


def _metrics(doc: dict, where: str) -> dict[str, float | None]:
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        raise UserError(f"{where}: field 'metrics' must be a mapping of metric names to numbers")
    out: dict[str, float | None] = {}
    for name, value in metrics.items():
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            out[str(name)] = None if value is None else float(value)
    return out


def _per_seed(arm: dict, seeds: list[int]) -> dict[int, dict[str, float | None]]:
    """Seed -> metrics of a comparison's arm, from its ``per_seed`` lists; empty when they do not line up."""
    lists = arm.get("per_seed")
    if not isinstance(lists, dict) or not seeds or len(set(seeds)) != len(seeds):
        return {}
    out: dict[int, dict[str, float | None]] = {seed: {} for seed in seeds}
    for name, values in lists.items():
        if not isinstance(values, list) or len(values) != len(seeds):
            return {}
        for seed, value in zip(seeds, values):
            if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                out[seed][str(name)] = None if value is None else float(value)
    return out


def task_sets_of(doc: Any) -> dict[str, str]:
    """A run's task sets, when it kept well-formed ones; else empty (the gate cannot recompute from them)."""
    sets = doc.get("task_sets") if isinstance(doc, dict) else None
    if isinstance(sets, dict) and all(isinstance(sets.get(k), str) for k in ("faulted", "succeeded")):
        return {"faulted": sets["faulted"], "succeeded": sets["succeeded"]}
    return {}


def _armtask_sets_of(arm: dict, seeds: list[int]) -> dict[int, dict[str, str]]:
    """Seed -> task sets of a comparison's arm (its ``task_sets`` list, aligned with the seeds); empty when absent."""
    lists = arm.get("task_sets")
    if not isinstance(lists, list) or len(lists) != len(seeds):
        return {}
    found = {seed: task_sets_of({"task_sets": sets}) for seed, sets in zip(seeds, lists)}
    return {seed: sets for seed, sets in found.items() if sets}


def doc_entries(doc: Any, origin: str) -> list[BaselineEntry]:
    """Baseline entries of one JSON document (a comparison, a run, an exported group, or a list of them)."""
    if isinstance(doc, list):
        return [e for i, item in enumerate(doc) for e in doc_entries(item, f"{origin}[{i}]")]
    if is_export(doc):
        group = doc["group"] if isinstance(doc.get("group"), dict) else {}
        return stamped(doc_entries(export_runs(doc, origin), origin), group.get("kind"), group.get("meta"))
    if not isinstance(doc, dict):
        raise UserError(f"{origin}: expected a results document (a comparison or a run), got {type(doc).__name__}")
    if "arms" in doc:
        scenario = _str(doc, "scenario", origin)
        raw_seeds = doc.get("seeds", [])
        seeds = [s for s in raw_seeds if isinstance(s, int)] if isinstance(raw_seeds, list) else []
        if not isinstance(doc["arms"], list):
            raise UserError(f"{origin}: field 'arms' must be a list")
        config = doc.get("scenario_config") if isinstance(doc.get("scenario_config"), dict) else None
        world, fingerprint = config_fingerprints(config)
        out = []
        for i, arm in enumerate(doc["arms"]):
            where = f"{origin}: arms[{i}]"
            if not isinstance(arm, dict):
                raise UserError(f"{where}: expected a mapping")
            policy, errors, metrics = _str(arm, "policy", where), _str(arm, "errors", where), _metrics(arm, where)
            lined_up = len(seeds) == len(raw_seeds)
            per_seed = _per_seed(arm, seeds) if lined_up else {}
            seed_sets = _armtask_sets_of(arm, seeds) if per_seed else {}
            out.append(BaselineEntry(scenario, policy, errors, metrics, seeds, origin, True, per_seed, seed_sets,
                                     None, world, fingerprint, config, (params_key(None),)))  # fmt: skip
        arm_set = frozenset((e.policy, e.errors) for e in out)
        for entry in out:
            entry.arm_set = arm_set
        return out
    if "seed" in doc and "metrics" in doc:
        raw_seed = doc.get("seed")
        seed = raw_seed if isinstance(raw_seed, int) and not isinstance(raw_seed, bool) else None
        metrics = _metrics(doc, origin)
        sets = task_sets_of(doc)
        return [
            BaselineEntry(
                _str(doc, "scenario", origin),
                _str(doc, "policy", origin),
                _str(doc, "errors", origin),
                metrics,
                [seed] if seed is not None else [],
                origin,
                False,
                {seed: metrics} if seed is not None else {},
                {seed: sets} if seed is not None and sets else {},
                frozenset({(_str(doc, "policy", origin), _str(doc, "errors", origin))}),
                params=(params_key(doc.get("params")),),
            )
        ]
    raise UserError(
        f"{origin}: not a fleetchaos results document (expected the JSON of `fleetchaos compare --json` "
        "or `fleetchaos run --json`, or a report folder's results.json)"
    )


def stamped(entries: list[BaselineEntry], kind: Any, meta: Any) -> list[BaselineEntry]:
    """Entries of a stored group's runs, with the group's fingerprints (a run or a comparison: one scenario as run).

    A sweep's group records its base scenario, not each point as run, so its runs keep none.
    """
    meta = meta if isinstance(meta, dict) else {}
    if kind in ("run", "compare"):
        for entry in entries:
            entry.world = meta.get("world") if isinstance(meta.get("world"), str) else None
            entry.fingerprint = meta.get("scenario_hash") if isinstance(meta.get("scenario_hash"), str) else None
    return entries


def expected_runs(group: Any) -> int | None:
    """How many runs a group's command set out to store, from its meta (None when it does not say)."""
    meta = group.meta
    lists = [meta.get(key) for key in ("policies", "errors", "seeds")]
    if not all(isinstance(x, list) for x in lists):
        return None
    return len(lists[0]) * len(lists[1]) * len(lists[2])


def read_results_file(path: Path) -> Any:
    """A results file's JSON, read with a size limit; a file that cannot be read or parsed is a :class:`UserError`."""
    from fleetchaos.files import StrictJsonError, loads_json, read_text_bounded

    fix = "give the results.json of `fleetchaos run`, `compare` or `sweep`, a report folder, or an exported group"
    try:
        return loads_json(read_text_bounded(path, MAX_BASELINE_BYTES, what="results file"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {exc}; {fix}") from None
    except StrictJsonError as exc:
        raise UserError(f"{path}: not a results file: {exc}; {fix}") from None
    except RecursionError:
        raise UserError(f"{path}: nested too deeply to be a results file; {fix}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}; {fix}") from None


def export_runs(doc: dict, origin: Any) -> list:
    """The ``runs`` of an exported group (:mod:`fleetchaos.gates.export`); a wrong shape or version is a UserError."""
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > EXPORT_VERSION:
        raise UserError(
            f"{origin}: an exported run group of version {version!r}; this fleetchaos reads version "
            f"{EXPORT_VERSION}: upgrade fleetchaos, or export the group again"
        )
    runs, group = doc.get("runs"), doc.get("group")
    if not isinstance(runs, list) or not isinstance(group, dict):
        raise UserError(
            f"{origin}: an exported run group needs 'group' (a mapping) and 'runs' (a list); "
            "export it again with `fleetchaos history export`"
        )
    return runs


def export_lacking(doc: dict, path: Path, option: str, allow_partial: bool, partial_option: str) -> list[str]:
    """What an exported group that was not complete lacks (refused unless ``allow_partial``); [] for a complete one."""
    export_runs(doc, path)
    group = doc["group"]
    status = group.get("status")
    if status == "complete":
        return []
    meta = group.get("meta") if isinstance(group.get("meta"), dict) else {}
    expected = expected_runs(SimpleNamespace(meta=meta))
    of = f" of the {expected}" if expected is not None else ""
    held = f"{len(doc['runs'])}{of} runs"
    if not allow_partial:
        raise UserError(
            f"{option} {path}: the exported group is {status} ({held} stored), not complete: gating against it "
            f"would skip whatever it lacks; export a complete group, or pass {partial_option} to gate against what "
            "it holds"
        )
    return [f"{path} is an export of a group that is {status}: it holds {held}; arms and seeds it lacks are not judged"]
