"""Baselines: stored results that new runs are gated against, read before any run.

A baseline is read from what the project already stores:

* a group of the run history (:mod:`fleetchaos.gates.history`), named as on the command line:
  ``7`` or ``#7``, ``latest``, or a label (``fleetchaos compare --label main ...``);
* results JSON: the ``results.json`` of a comparison (``fleetchaos compare --json``, or a
  ``--report`` folder), of a single run, a group exported by ``fleetchaos history export``
  (:mod:`fleetchaos.gates.export`), a JSON list of such documents, or a folder searched for
  ``results.json`` files (so the ``--fleetchaos-report`` folder of one suite run is the
  baseline of the next).

An existing file or folder is read as results JSON; anything else names a history group.
Entries are keyed by (scenario name, policy, error format) and keep each seed's figures,
so the regression rule (:mod:`fleetchaos.gates.regression`) can pair runs on the same
seed; a comparison's arm wins over single runs of the same arm.

Light to import (standard library, the registry and the regression rule).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.gates.export import EXPORT_VERSION, is_export
from fleetchaos.gates.regression import Arm

__all__ = ["Baseline", "BaselineEntry", "export_runs", "load_baseline", "read_results_file"]

MAX_BASELINE_BYTES = 50_000_000

#: The option that names a baseline in the pytest plugin (the default of messages here).
PLUGIN_OPTION = "--fleetchaos-baseline"


@dataclass
class BaselineEntry:
    """One arm's stored figures: each seed's metrics (when known), their means, and where they came from."""

    scenario: str
    policy: str
    errors: str
    metrics: dict[str, float | None]
    """The mean of each metric over :attr:`seeds`."""
    seeds: list[int]
    origin: str
    from_compare: bool
    per_seed: dict[int, dict[str, float | None]] = field(default_factory=dict)
    """Seed -> that run's metrics; empty when the document kept only means."""
    task_sets: dict[int, dict[str, str]] = field(default_factory=dict)
    """Seed -> that run's task sets (faulted and successful task ids), when the source kept them."""

    def arm(self, label: str | None = None) -> Arm:
        """The entry as the regression rule's :class:`~fleetchaos.gates.regression.Arm`."""
        label = label or f"{self.policy} on {self.errors}"
        if self.per_seed:
            return Arm(label, self.per_seed, seeds=tuple(sorted(self.per_seed)), task_sets=self.task_sets)
        return Arm(label, means=self.metrics, seeds=tuple(self.seeds))


@dataclass
class Baseline:
    """Stored figures by (scenario, policy, errors), read once before any run."""

    source: str
    entries: dict[tuple[str, str, str], BaselineEntry] = field(default_factory=dict)
    ref: str = ""
    """How messages name the baseline: the reference as given (``#7``, a path)."""
    lacking: str = ""
    """What a partial history group lacks (empty for a complete one), said by the gate."""

    def lookup(self, scenario: str, policy: str, errors: str) -> BaselineEntry | None:
        """The stored arm, or None when the baseline has none."""
        return self.entries.get((scenario, policy, errors))

    def by_arm(self) -> dict[tuple[str, str], Arm]:
        """The entries as arms keyed by (policy, errors), whatever their scenario (a command's group gate).

        Entries of several scenarios with the same arm (a sweep's group) are pooled, each
        seed's figures averaged.
        """
        found: dict[tuple[str, str], list[BaselineEntry]] = {}
        for (_, policy, errors), entry in self.entries.items():
            found.setdefault((policy, errors), []).append(entry)
        out = {}
        for key, entries in found.items():
            out[key] = entries[0].arm() if len(entries) == 1 else _pooled(entries).arm()
        return out


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


def _task_sets(doc: dict) -> dict[str, str]:
    """A run document's task sets, when it kept well-formed ones; else empty (the gate falls back)."""
    sets = doc.get("task_sets")
    if isinstance(sets, dict) and all(isinstance(sets.get(k), str) for k in ("faulted", "succeeded")):
        return {"faulted": sets["faulted"], "succeeded": sets["succeeded"]}
    return {}


def _entries(doc: Any, origin: str) -> list[BaselineEntry]:
    """Baseline entries of one JSON document (a comparison, a run, an exported group, or a list of them)."""
    if isinstance(doc, list):
        return [e for i, item in enumerate(doc) for e in _entries(item, f"{origin}[{i}]")]
    if is_export(doc):
        return _entries(export_runs(doc, origin), origin)
    if not isinstance(doc, dict):
        raise UserError(f"{origin}: expected a results document (a comparison or a run), got {type(doc).__name__}")
    if "arms" in doc:
        scenario = _str(doc, "scenario", origin)
        raw_seeds = doc.get("seeds", [])
        seeds = [s for s in raw_seeds if isinstance(s, int)] if isinstance(raw_seeds, list) else []
        if not isinstance(doc["arms"], list):
            raise UserError(f"{origin}: field 'arms' must be a list")
        out = []
        for i, arm in enumerate(doc["arms"]):
            where = f"{origin}: arms[{i}]"
            if not isinstance(arm, dict):
                raise UserError(f"{where}: expected a mapping")
            policy, errors, metrics = _str(arm, "policy", where), _str(arm, "errors", where), _metrics(arm, where)
            per_seed = _per_seed(arm, seeds) if len(seeds) == len(raw_seeds) else {}
            out.append(BaselineEntry(scenario, policy, errors, metrics, seeds, origin, True, per_seed))
        return out
    if "seed" in doc and "metrics" in doc:
        raw_seed = doc.get("seed")
        seed = raw_seed if isinstance(raw_seed, int) and not isinstance(raw_seed, bool) else None
        metrics = _metrics(doc, origin)
        sets = _task_sets(doc)
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
            )
        ]
    raise UserError(
        f"{origin}: not a fleetchaos results document (expected the JSON of `fleetchaos compare --json` "
        "or `fleetchaos run --json`, or a report folder's results.json)"
    )


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


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _average(found: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """Each metric's mean over several runs' metrics (None where none has a value)."""
    names = dict.fromkeys(k for m in found for k in m)
    return {name: _mean([m.get(name) for m in found]) for name in names}


def _pooled(entries: list[BaselineEntry], origin: str | None = None) -> BaselineEntry:
    """Several entries of one arm as one: each seed's figures averaged, and their means."""
    first = entries[0]
    by_seed: dict[int, list[dict[str, float | None]]] = {}
    for e in entries:
        for seed, metrics in e.per_seed.items():
            by_seed.setdefault(seed, []).append(metrics)
    per_seed = {seed: found[0] if len(found) == 1 else _average(found) for seed, found in sorted(by_seed.items())}
    # a seed's task sets are kept only when one run gave it (several runs name different tasks)
    sets = {seed: e.task_sets[seed] for e in entries for seed in e.task_sets if len(by_seed[seed]) == 1}
    metrics = _average([e.metrics for e in entries])
    seeds = sorted({s for e in entries for s in e.seeds})
    if origin is None:
        origin = first.origin if len(entries) == 1 else f"{len(entries)} runs under {Path(first.origin).parent}"
    return BaselineEntry(first.scenario, first.policy, first.errors, metrics, seeds, origin, False, per_seed, sets)


def _merge(entries: list[BaselineEntry], origin: str | None = None) -> BaselineEntry:
    """One entry per arm: a comparison wins; several single runs are pooled seed by seed."""
    compares = [e for e in entries if e.from_compare]
    if compares:
        return compares[0]
    return _pooled(entries, origin)


def load_baseline(
    ref: str | Path,
    *,
    history: str | Path | None = None,
    option: str = PLUGIN_OPTION,
    files: bool = True,
    allow_partial: bool = False,
    partial_option: str = "--fleetchaos-allow-partial-baseline",
    history_option: str = "--fleetchaos-history",
) -> Baseline:
    """Read a baseline: results JSON when ``ref`` is an existing file or folder, else a group of the run history.

    ``history`` is the history file (default: :func:`fleetchaos.gates.history.default_path`).
    ``option`` names the option in messages; with ``files=False`` (the CLI's ``--baseline``)
    ``ref`` always names a history group.  A history group must be complete: ``latest``
    is the newest complete group, and a group that was killed or interrupted is refused
    unless ``allow_partial`` (then :attr:`Baseline.lacking` says what it lacks);
    ``partial_option`` names that permission in messages, ``history_option`` the option
    that names the history file.
    """
    if not files:
        return _load_history(str(ref), history, option, False, allow_partial, partial_option, history_option)
    path = Path(ref)
    if path.exists():
        return _load_results(path, option, allow_partial, partial_option)
    if path.suffix == ".json" or len(path.parts) > 1:
        raise UserError(f"{option}: {ref}: no such file or folder")
    return _load_history(str(ref), history, option, True, allow_partial, partial_option, history_option)


def _expected_runs(group) -> int | None:
    """How many runs a group's command set out to store, from its meta (None when it does not say)."""
    meta = group.meta
    lists = [meta.get(key) for key in ("policies", "errors", "seeds")]
    if not all(isinstance(x, list) for x in lists):
        return None
    return len(lists[0]) * len(lists[1]) * len(lists[2])


def _baseline_group(store, ref: str, option: str, allow_partial: bool, partial_option: str):
    """The group a baseline reference names: ``latest`` is the newest complete one; a partial one is refused."""
    from fleetchaos.gates.history import COMPLETE

    if ref.strip() == "latest":
        groups = store.groups()
        complete = next((g for g in groups if g.status == COMPLETE), None)
        if complete is None:
            newest = f" (the newest, {groups[0].ref}, is {groups[0].status})" if groups else ""
            raise UserError(
                f"{option} latest: no complete run group in {store.path}{newest}; "
                "a baseline must be a complete group: finish a run or compare first"
            )
        return complete
    group = store.resolve(ref)
    if group.status != COMPLETE and not allow_partial:
        expected = _expected_runs(group)
        of = f" of the {expected}" if expected is not None else ""
        raise UserError(
            f"{option} {ref}: group {group.ref} is {group.status} ({group.runs}{of} runs stored), not complete: "
            "gating against it would skip whatever it lacks; name a complete group (see `fleetchaos history`), "
            f"or pass {partial_option} to gate against what it holds"
        )
    return group


def _load_history(
    ref: str,
    history: str | Path | None,
    option: str,
    files: bool,
    allow_partial: bool,
    partial_option: str,
    history_option: str,
) -> Baseline:
    """The runs of one history group, by arm and seed."""
    from fleetchaos.gates.history import default_path, open_store

    store_path = Path(history) if history is not None else default_path()
    if files and not store_path.is_file():
        raise UserError(
            f"{option}: {ref}: no such file or folder, and no run history at {store_path} to find a "
            "group of that name in; give a results.json, a report folder, or a history group (7, #7, latest, a label) "
            f"with {history_option} PATH"
        )
    with open_store(store_path, create=False, readonly=True) as store:  # no file: "no history here", naming --history
        group = _baseline_group(store, ref, option, allow_partial, partial_option)
        runs = store.runs(group.id)
    if not runs:
        raise UserError(f"{option} {ref}: group {group.ref} holds no runs; pick another (see `fleetchaos history`)")
    name = f"history {group.ref}" + (f" ({group.label})" if group.label else "")
    found: dict[tuple[str, str, str], list[BaselineEntry]] = {}
    for run in runs:
        metrics = dict(run.metrics)
        sets = _stored_task_sets(run.result_json)
        entry = BaselineEntry(
            run.scenario,
            run.policy,
            run.errors,
            metrics,
            [run.seed],
            name,
            False,
            {run.seed: metrics},
            {run.seed: sets} if sets else {},
        )
        found.setdefault((run.scenario, run.policy, run.errors), []).append(entry)
    entries = {k: _merge(v, name) for k, v in sorted(found.items())}
    lacking = ""
    if group.status != "complete":
        expected = _expected_runs(group)
        of = f" of the {expected} runs its command started" if expected is not None else " runs"
        lacking = f"is {group.status}: it holds {len(runs)}{of}; arms and seeds it lacks are not judged"
    return Baseline(source=f"{name} in {store_path}", entries=entries, ref=group.ref, lacking=lacking)


def _stored_task_sets(result_json: str) -> dict[str, str]:
    """The task sets of a stored run (empty for runs stored before they were recorded)."""
    try:
        doc = json.loads(result_json)
    except json.JSONDecodeError:
        return {}
    return _task_sets(doc) if isinstance(doc, dict) else {}


def _load_results(path: Path, option: str, allow_partial: bool, partial_option: str) -> Baseline:
    """Read a baseline from a results JSON file or a folder of ``results.json`` files.

    An exported group that was not complete is refused as a history group is, unless
    ``allow_partial`` (then :attr:`Baseline.lacking` says what it lacks).
    """
    if path.is_dir():
        files = sorted(path.rglob("results.json"))
        if not files:
            raise UserError(f"{option}: {path}: the folder holds no results.json")
    else:
        files = [path]
    found: dict[tuple[str, str, str], list[BaselineEntry]] = {}
    lacking: list[str] = []
    for file in files:
        doc = read_results_file(file)
        if is_export(doc):
            lacking.extend(_export_lacking(doc, file, option, allow_partial, partial_option))
        for entry in _entries(doc, str(file)):
            found.setdefault((entry.scenario, entry.policy, entry.errors), []).append(entry)
    entries = {k: _merge(v) for k, v in sorted(found.items())}
    return Baseline(source=str(path), entries=entries, ref=str(path), lacking="; ".join(lacking))


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


def _export_lacking(doc: dict, path: Path, option: str, allow_partial: bool, partial_option: str) -> list[str]:
    """What an exported group that was not complete lacks (refused unless ``allow_partial``); [] for a complete one."""
    export_runs(doc, path)
    group = doc["group"]
    status = group.get("status")
    if status == "complete":
        return []
    meta = group.get("meta") if isinstance(group.get("meta"), dict) else {}
    expected = _expected_runs(SimpleNamespace(meta=meta))
    of = f" of the {expected}" if expected is not None else ""
    held = f"{len(doc['runs'])}{of} runs"
    if not allow_partial:
        raise UserError(
            f"{option} {path}: the exported group is {status} ({held} stored), not complete: gating against it "
            f"would skip whatever it lacks; export a complete group, or pass {partial_option} to gate against what "
            "it holds"
        )
    return [f"{path} is an export of a group that is {status}: it holds {held}; arms and seeds it lacks are not judged"]
