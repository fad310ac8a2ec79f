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
from dataclasses import dataclass, field
from pathlib import Path

from fleetchaos.errors import UserError
from fleetchaos.gates.baseline_docs import (
    doc_entries,
    expected_runs,
    export_lacking,
    read_results_file,
    stamped,
    task_sets_of,
)
from fleetchaos.gates.baseline_entry import BaselineEntry, merge, pooled
from fleetchaos.gates.export import is_export
from fleetchaos.gates.identity import params_key
from fleetchaos.gates.regression import Arm

__all__ = ["Baseline", "load_baseline"]

#: The option that names a baseline in the pytest plugin (the default of messages here).
PLUGIN_OPTION = "--fleetchaos-baseline"


@dataclass
class Baseline:
    """Stored figures by (scenario, policy, errors), read once before any run.

    One name may hold several variants (the same scenario name with other contents, as a
    suite's report folder keeps them apart): each key maps to its variants, each variant
    one :class:`BaselineEntry`.
    """

    source: str
    variants: dict[tuple[str, str, str], list[BaselineEntry]] = field(default_factory=dict)
    ref: str = ""
    """How messages name the baseline: the reference as given (``#7``, a path)."""
    lacking: str = ""
    """What a partial history group lacks (empty for a complete one), said by the gate."""

    def lookup(self, scenario: str, policy: str, errors: str, world: str | None = None) -> BaselineEntry | None:
        """The stored arm (the variant of ``world`` when one has it), or None when the baseline has none."""
        found = self.variants.get((scenario, policy, errors))
        if not found:
            return None
        return next((e for e in found if e.world == world), found[0])

    def entries_by_arm(
        self, scenario: str | None = None, world: str | None = None
    ) -> dict[tuple[str, str], BaselineEntry]:
        """The entries keyed by (policy, errors): a command's group gate matches arms so.

        Entries of ``scenario`` win (and among them ``world``'s variant); several scenarios
        with the same arm and none of them ``scenario`` are pooled into one entry, each seed's
        figures averaged, which the gate then refuses as a mix of worlds.
        """
        found: dict[tuple[str, str], list[BaselineEntry]] = {}
        named = {(p, e) for n, p, e in self.variants if n == scenario}
        for (name, policy, errors), entries in self.variants.items():
            if (policy, errors) not in named:
                found.setdefault((policy, errors), []).extend(entries)
            elif name == scenario:
                found[(policy, errors)] = [next((e for e in entries if e.world == world), entries[0])]
        return {key: entries[0] if len(entries) == 1 else pooled(entries) for key, entries in found.items()}

    def by_arm(self, scenario: str | None = None, world: str | None = None) -> dict[tuple[str, str], Arm]:
        """:meth:`entries_by_arm` as the regression rule's arms."""
        return {key: entry.arm() for key, entry in self.entries_by_arm(scenario, world).items()}


def _keyed(found: dict[tuple[str, str, str], list[BaselineEntry]], origin: str | None = None) -> dict:
    """Entries by key, each key's entries merged per variant (world and fingerprint)."""
    out = {}
    for key, entries in sorted(found.items()):
        by_variant: dict[tuple[str | None, str | None], list[BaselineEntry]] = {}
        for entry in entries:
            by_variant.setdefault((entry.world, entry.fingerprint), []).append(entry)
        out[key] = [merge(v, origin) for v in by_variant.values()]
    return out


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
        expected = expected_runs(group)
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
            frozenset({(run.policy, run.errors)}),
            params=(params_key(run.params),),
        )
        found.setdefault((run.scenario, run.policy, run.errors), []).append(entry)
    for group_entries in found.values():
        stamped(group_entries, group.kind, group.meta)
    entries = _keyed(found, name)
    lacking = ""
    if group.status != "complete":
        expected = expected_runs(group)
        of = f" of the {expected} runs its command started" if expected is not None else " runs"
        lacking = f"is {group.status}: it holds {len(runs)}{of}; arms and seeds it lacks are not judged"
    return Baseline(source=f"{name} in {store_path}", variants=entries, ref=group.ref, lacking=lacking)


def _stored_task_sets(result_json: str) -> dict[str, str]:
    """The task sets of a stored run (empty for runs stored before they were recorded)."""
    try:
        doc = json.loads(result_json)
    except json.JSONDecodeError:
        return {}
    return task_sets_of(doc) if isinstance(doc, dict) else {}


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
            lacking.extend(export_lacking(doc, file, option, allow_partial, partial_option))
        for entry in doc_entries(doc, str(file)):
            found.setdefault((entry.scenario, entry.policy, entry.errors), []).append(entry)
    entries = _keyed(found)
    return Baseline(source=str(path), variants=entries, ref=str(path), lacking="; ".join(lacking))
