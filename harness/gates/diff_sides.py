"""The two sides of ``fleetchaos history diff``: a stored group or a results file, as runs by arm and seed.

A side is named as a baseline is (:func:`fleetchaos.gates.baseline.load_baseline`): an
existing file or folder is results JSON (a comparison's or a run's ``results.json``, a
sweep's, a group exported by ``fleetchaos history export``, a JSON list of them, or a
report folder searched for ``results.json``); anything else names a group of the run
history (``7``, ``#7``, ``latest``, a label).  Unlike a baseline, a side keeps each run's
swept parameters (a sweep's points stay apart) and the scenario's fingerprint (the digest
:func:`fleetchaos.scenario.load.scenario_hash` gives), so the diff can pair like with like
and warn when the two sides ran different worlds.

Files are read with the baseline's bounded reader; every field is checked, so a damaged
file is one :class:`~fleetchaos.errors.UserError` naming the file and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.gates.baseline_docs import export_runs, read_results_file, task_sets_of
from fleetchaos.gates.export import is_export
from fleetchaos.gates.identity import config_fingerprints, params_key

__all__ = ["DiffRun", "Side", "load_side"]


@dataclass(frozen=True, slots=True)
class DiffRun:
    """One run as the diff reads it: where it ran (scenario, parameters), its arm, its seed and its figures."""

    scenario: str
    params: str | None
    """The run's swept or ``--param`` values as canonical JSON (``{}`` for none; None when the
    source does not record them: a comparison's results file)."""
    policy: str
    errors: str
    seed: int
    metrics: Mapping[str, float | None]
    task_sets: Mapping[str, str] = field(default_factory=dict)
    """The run's faulted and successful task ids, when the source kept them (for the common set)."""
    arm_set: frozenset[tuple[str, str]] | None = None
    """The arms its ``common_recovery_rate`` was computed over: every arm of a comparison's (or a sweep
    point's) results, the run's own arm for a stored run (the history stores each run as it finishes)."""


@dataclass
class Side:
    """One side of a diff: what it is, its runs, and what is known of the scenarios it ran."""

    ref: str
    """As the user gave it (``#7``, ``good``, a path)."""
    source: str
    """How messages name it: ``history #7 (good) in PATH`` or the file's path."""
    runs: list[DiffRun]
    fingerprints: dict[str, str] = field(default_factory=dict)
    """Scenario name -> its digest, when the source recorded it."""
    status: str = "complete"
    """The stored group's status (an exported group keeps it); ``complete`` for results files."""
    notes: list[str] = field(default_factory=list)
    """What the side could not give (arms that kept only means, a group that is not complete)."""


def _fingerprint(config: Any) -> str | None:
    """The digest of a results file's ``scenario_config``: what ``scenario_hash`` gives (None when it kept none)."""
    return config_fingerprints(config)[1]


def _text(doc: dict, key: str, where: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise UserError(f"{where}: field {key!r} must be a string, got {value!r}")
    return value


def _seed(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UserError(f"{where}: a seed must be a whole number >= 0, got {value!r}")
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _metrics(doc: dict, where: str) -> dict[str, float | None]:
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        raise UserError(f"{where}: field 'metrics' must be a mapping of metric names to numbers")
    return {str(k): _number(v) for k, v in metrics.items()}


def _run(doc: Any, where: str) -> DiffRun:
    if not isinstance(doc, dict):
        raise UserError(f"{where}: expected a run's result (a mapping), got {type(doc).__name__}")
    policy, errors = _text(doc, "policy", where), _text(doc, "errors", where)
    return DiffRun(
        _text(doc, "scenario", where),
        params_key(doc.get("params")),
        policy,
        errors,
        _seed(doc.get("seed"), where),
        _metrics(doc, where),
        task_sets_of(doc),
        frozenset({(policy, errors)}),
    )


def _arm_runs(
    arm: dict, scenario: str, params: str | None, seeds: list[int], where: str, notes: list[str]
) -> list[DiffRun]:
    """A comparison's (or a sweep point's) arm as one run per seed, from its ``per_seed`` lists."""
    policy, errors = _text(arm, "policy", where), _text(arm, "errors", where)
    found = arm.get("per_seed")
    lists: dict = found if isinstance(found, dict) else {}
    lined_up = bool(lists) and all(isinstance(v, list) and len(v) == len(seeds) for v in lists.values())
    if not lined_up or len(set(seeds)) != len(seeds):
        notes.append(f"{where} ({policy} on {errors}) kept no per-seed values: it cannot be paired")
        return []
    sets = arm.get("task_sets")
    sets = sets if isinstance(sets, list) and len(sets) == len(seeds) else [{}] * len(seeds)
    return [
        DiffRun(scenario, params, policy, errors, seed,
                {str(name): _number(values[i]) for name, values in lists.items()}, task_sets_of({"task_sets": sets[i]}))
        for i, seed in enumerate(seeds)
    ]  # fmt: skip


def _with_arm_set(runs: list[DiffRun]) -> list[DiffRun]:
    """The runs of one document (a comparison, a sweep point): each computed its common set over all of their arms."""
    arms = frozenset((r.policy, r.errors) for r in runs)
    return [replace(r, arm_set=arms) for r in runs]


def _seeds(doc: dict, where: str) -> list[int]:
    seeds = doc.get("seeds")
    if not isinstance(seeds, list):
        raise UserError(f"{where}: field 'seeds' must be a list of seeds")
    return [_seed(s, f"{where}: seeds") for s in seeds]


def _doc_runs(doc: Any, where: str, side: Side) -> list[DiffRun]:
    """The runs of one JSON document: an exported group, a comparison, a sweep, a run, or a list of them."""
    if isinstance(doc, list):
        return [r for i, item in enumerate(doc) for r in _doc_runs(item, f"{where}[{i}]", side)]
    if not isinstance(doc, dict):
        raise UserError(f"{where}: expected a results document, got {type(doc).__name__}")
    if is_export(doc):
        runs = export_runs(doc, where)
        group = doc["group"]
        _group_facts(side, group.get("scenario"), group.get("meta"), group.get("status"), len(runs), where)
        return [_run(item, f"{where}: runs[{i}]") for i, item in enumerate(runs)]
    if "arms" in doc:
        scenario, seeds = _text(doc, "scenario", where), _seeds(doc, where)
        if not isinstance(doc["arms"], list):
            raise UserError(f"{where}: field 'arms' must be a list")
        digest = _fingerprint(doc.get("scenario_config"))
        if digest is not None:
            side.fingerprints.setdefault(scenario, digest)
        out = []
        for i, arm in enumerate(doc["arms"]):
            if not isinstance(arm, dict):
                raise UserError(f"{where}: arms[{i}]: expected a mapping")
            out += _arm_runs(arm, scenario, None, seeds, f"{where}: arms[{i}]", side.notes)
        return _with_arm_set(out)
    if "entries" in doc and "grid" in doc:
        seeds = _seeds(doc, where)
        if not isinstance(doc["entries"], list):
            raise UserError(f"{where}: field 'entries' must be a list")
        points: dict[tuple[str, str], list[DiffRun]] = {}
        for i, entry in enumerate(doc["entries"]):
            here = f"{where}: entries[{i}]"
            if not isinstance(entry, dict):
                raise UserError(f"{here}: expected a mapping")
            scenario, params = _text(entry, "scenario", here), params_key(entry.get("params"))
            points.setdefault((scenario, params), []).extend(
                _arm_runs(entry, scenario, params, seeds, here, side.notes)
            )
        return [r for runs in points.values() for r in _with_arm_set(runs)]
    if "seed" in doc and "metrics" in doc:
        return [_run(doc, where)]
    raise UserError(
        f"{where}: not a fleetchaos results document (expected the results.json of run, compare or sweep, "
        "or a group exported by `fleetchaos history export`)"
    )


def _group_facts(side: Side, scenario: Any, meta: Any, status: Any, held: int, where: str) -> None:
    """Record a stored group's fingerprints and, when it is not complete, what it lacks."""
    meta = meta if isinstance(meta, dict) else {}
    if isinstance(scenario, str) and isinstance(meta.get("scenario_hash"), str):
        side.fingerprints.setdefault(scenario, meta["scenario_hash"])
    hashes = meta.get("scenario_hashes")
    if isinstance(hashes, dict):
        for name, digest in hashes.items():
            if isinstance(name, str) and isinstance(digest, str):
                side.fingerprints.setdefault(name, digest)
    if isinstance(status, str) and status != "complete":
        side.status = status
        lists = [meta.get(key) for key in ("policies", "errors", "seeds")]
        expected = math.prod(len(x) for x in lists) if all(isinstance(x, list) for x in lists) else None
        of = f" of the {expected} its command started" if expected is not None else ""
        side.notes.append(f"{where} is {status}: it holds {held}{of} runs")


def _from_files(ref: str, path: Path) -> Side:
    side = Side(ref, str(path), [])
    if path.is_dir():
        files = sorted(path.rglob("results.json"))
        if not files:
            raise UserError(f"{path}: the folder holds no results.json; give a results file or a report folder")
    else:
        files = [path]
    for file in files:
        side.runs += _doc_runs(read_results_file(file), str(file), side)
    return side


def _from_history(ref: str, history: Path | None, what: str) -> Side:
    from fleetchaos.gates.history import default_path, open_store

    store_path = Path(history) if history is not None else default_path()
    if not store_path.is_file():
        raise UserError(
            f"history diff {what} {ref}: no such file or folder, and no run history at {store_path} to find a group "
            "of that name in; give a results.json, a report folder, an exported group, or a history group "
            "(7, #7, latest, a label) with --history PATH"
        )
    with open_store(store_path, create=False, readonly=True) as store:
        group = store.resolve(ref)
        stored = store.runs(group.id)
    name = f"history {group.ref}" + (f" ({group.label})" if group.label else "")
    side = Side(ref, f"{name} in {store_path}", [])
    _group_facts(side, group.scenario, group.meta, group.status, len(stored), f"group {group.ref}")
    for r in stored:
        try:
            doc = json.loads(r.result_json)
        except json.JSONDecodeError:
            doc = {}
        sets = task_sets_of(doc) if isinstance(doc, dict) else {}
        side.runs.append(DiffRun(r.scenario, params_key(r.params), r.policy, r.errors, r.seed, r.metrics, sets,
                                 frozenset({(r.policy, r.errors)})))  # fmt: skip
    if not side.runs:
        raise UserError(
            f"history diff {what} {ref}: group {group.ref} holds no runs; pick another (see `fleetchaos history`)"
        )
    return side


def load_side(ref: str, history: Path | None = None, what: str = "A") -> Side:
    """Read one side of a diff: results JSON when ``ref`` is an existing file or folder, else a history group.

    ``history`` is the run-history file (default ``$FLEETCHAOS_HISTORY`` or
    ``fleetchaos-out/history.db``); ``what`` (``A`` or ``B``) names the side in messages.
    """
    path = Path(ref)
    if path.exists():
        side = _from_files(ref, path)
        if not side.runs:
            raise UserError(f"history diff {what} {ref}: holds no run that can be paired ({'; '.join(side.notes)})")
        return side
    if path.suffix == ".json" or len(path.parts) > 1:
        raise UserError(f"history diff {what} {ref}: no such file or folder")
    return _from_history(ref, history, what)
