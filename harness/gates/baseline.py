"""Baselines for scenario suites: stored results that a new run must not regress against.

A baseline is read from what the project already stores:

* a group of the run history (:mod:`fleetchaos.gates.history`), named as on the command line:
  ``7`` or ``#7``, ``latest``, or a label (``fleetchaos compare --label main ...``);
* results JSON: the ``results.json`` of a comparison (``fleetchaos compare --json``, or a
  ``--report`` folder), of a single run, a JSON list of such documents, or a folder
  searched for ``results.json`` files (so the ``--fleetchaos-report`` folder of one suite
  run is the baseline of the next).

An existing file or folder is read as results JSON; anything else names a history group.
Entries are keyed by (scenario name, policy, error format); a comparison's arm wins over
single runs of the same arm, and several single runs (a history group's seeds) are
averaged.

A headline figure regresses when the *whole* confidence interval of the new run is on
the worse side of the baseline's value: the same rule as
:func:`fleetchaos.gates.assertions.assert_rate`, with the baseline as the bound.

Light to import (standard library and :mod:`fleetchaos.gates.assertions` only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetchaos.errors import UserError
from fleetchaos.gates.assertions import Estimate, RateAssertionError, assert_rate, fmt_number, seeds_text
from fleetchaos.results.registry import GATED_METRICS as REGISTRY_GATED
from fleetchaos.results.registry import direction

if TYPE_CHECKING:
    from fleetchaos.testing.suite import ScenarioResult

__all__ = ["GATED_METRICS", "Baseline", "BaselineEntry", "load_baseline"]

#: The figures a baseline gates (the registry's gated metrics), with True when higher is better.
GATED_METRICS: dict[str, bool] = {name: bool(direction(name)) for name in REGISTRY_GATED}

MAX_BASELINE_BYTES = 50_000_000


@dataclass
class BaselineEntry:
    """One arm's stored figures: the mean of each metric, and what they came from."""

    scenario: str
    policy: str
    errors: str
    metrics: dict[str, float | None]
    seeds: list[int]
    origin: str
    from_compare: bool


@dataclass
class Baseline:
    """Stored figures by (scenario, policy, errors), and the verdict of a new run against them."""

    source: str
    entries: dict[tuple[str, str, str], BaselineEntry] = field(default_factory=dict)

    def lookup(self, scenario: str, policy: str, errors: str) -> BaselineEntry | None:
        """The stored arm, or None when the baseline has none."""
        return self.entries.get((scenario, policy, errors))

    def verdicts(self, result: ScenarioResult) -> list[dict[str, Any]]:
        """One verdict per gated metric: ``{"metric", "baseline", "regressed", "message"}``.

        Empty when the baseline has no entry for the result's arm.  A metric undefined on
        either side is not judged.
        """
        entry = self.lookup(result.scenario, result.policy, result.errors)
        if entry is None:
            return []
        out = []
        for metric, higher_is_better in GATED_METRICS.items():
            base = entry.metrics.get(metric)
            if base is None or metric not in result.metric_names:
                continue
            est: Estimate = result.metric(metric)
            if est.value is None:
                continue
            message = ""
            try:
                if higher_is_better:
                    assert_rate(est, at_least=base)
                else:
                    assert_rate(est, at_most=base)
            except RateAssertionError as exc:
                seeds = seeds_text(entry.seeds) or "?"
                message = (
                    f"{metric} regressed against the baseline {entry.origin} "
                    f"({fmt_number(base)} on seeds {seeds}):\n{exc}"
                )
            out.append({"metric": metric, "baseline": base, "regressed": bool(message), "message": message})
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


def _entries(doc: Any, origin: str) -> list[BaselineEntry]:
    """Baseline entries of one JSON document (a comparison, a run, or a list of them)."""
    if isinstance(doc, list):
        return [e for i, item in enumerate(doc) for e in _entries(item, f"{origin}[{i}]")]
    if not isinstance(doc, dict):
        raise UserError(f"{origin}: expected a results document (a comparison or a run), got {type(doc).__name__}")
    if "arms" in doc:
        scenario = _str(doc, "scenario", origin)
        seeds = [s for s in doc.get("seeds", []) if isinstance(s, int)]
        if not isinstance(doc["arms"], list):
            raise UserError(f"{origin}: field 'arms' must be a list")
        out = []
        for i, arm in enumerate(doc["arms"]):
            where = f"{origin}: arms[{i}]"
            if not isinstance(arm, dict):
                raise UserError(f"{where}: expected a mapping")
            out.append(
                BaselineEntry(
                    scenario,
                    _str(arm, "policy", where),
                    _str(arm, "errors", where),
                    _metrics(arm, where),
                    seeds,
                    origin,
                    True,
                )
            )
        return out
    if "seed" in doc and "metrics" in doc:
        seed = doc.get("seed")
        return [
            BaselineEntry(
                _str(doc, "scenario", origin),
                _str(doc, "policy", origin),
                _str(doc, "errors", origin),
                _metrics(doc, origin),
                [seed] if isinstance(seed, int) else [],
                origin,
                False,
            )
        ]
    raise UserError(
        f"{origin}: not a fleetchaos results document (expected the JSON of `fleetchaos compare --json` "
        "or `fleetchaos run --json`, or a report folder's results.json)"
    )


def _read(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_BASELINE_BYTES:
            raise UserError(f"{path}: larger than {MAX_BASELINE_BYTES} bytes; is this a results file?")
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None


def _merge(entries: list[BaselineEntry], origin: str | None = None) -> BaselineEntry:
    """One entry per arm: a comparison wins; several single runs are averaged."""
    compares = [e for e in entries if e.from_compare]
    if compares:
        return compares[0]
    first = entries[0]
    metrics: dict[str, float | None] = {}
    for name in first.metrics:
        values = [e.metrics.get(name) for e in entries if e.metrics.get(name) is not None]
        metrics[name] = sum(values) / len(values) if values else None  # type: ignore[arg-type]
    seeds = sorted({s for e in entries for s in e.seeds})
    if origin is None:
        origin = first.origin if len(entries) == 1 else f"{len(entries)} runs under {Path(first.origin).parent}"
    return BaselineEntry(first.scenario, first.policy, first.errors, metrics, seeds, origin, False)


def load_baseline(ref: str | Path, *, history: str | Path | None = None) -> Baseline:
    """Read a baseline: results JSON when ``ref`` is an existing file or folder, else a group of the run history.

    ``history`` is the history file (default: :func:`fleetchaos.gates.history.default_path`).
    """
    path = Path(ref)
    if path.exists():
        return _load_results(path)
    if path.suffix == ".json" or len(path.parts) > 1:
        raise UserError(f"--fleetchaos-baseline: {ref}: no such file or folder")
    return _load_history(str(ref), history)


def _load_history(ref: str, history: str | Path | None) -> Baseline:
    """The runs of one history group, averaged per arm over its seeds."""
    from fleetchaos.gates.history import default_path, open_store

    store_path = Path(history) if history is not None else default_path()
    if not store_path.is_file():
        raise UserError(
            f"--fleetchaos-baseline: {ref}: no such file or folder, and no run history at {store_path} to find a "
            "group of that name in; give a results.json, a report folder, or a history group (7, #7, latest, a label) "
            "with --fleetchaos-history PATH"
        )
    with open_store(store_path, create=False) as store:
        group = store.resolve(ref)
        runs = store.runs(group.id)
    name = f"history {group.ref}" + (f" ({group.label})" if group.label else "")
    found: dict[tuple[str, str, str], list[BaselineEntry]] = {}
    for run in runs:
        entry = BaselineEntry(run.scenario, run.policy, run.errors, dict(run.metrics), [run.seed], name, False)
        found.setdefault((run.scenario, run.policy, run.errors), []).append(entry)
    if not found:
        raise UserError(
            f"--fleetchaos-baseline: {name} in {store_path} holds no runs; pick another (see `fleetchaos history`)"
        )
    return Baseline(source=f"{name} in {store_path}", entries={k: _merge(v, name) for k, v in sorted(found.items())})


def _load_results(path: Path) -> Baseline:
    """Read a baseline from a results JSON file or a folder of ``results.json`` files."""
    if path.is_dir():
        files = sorted(path.rglob("results.json"))
        if not files:
            raise UserError(f"--fleetchaos-baseline: {path}: the folder holds no results.json")
    else:
        files = [path]
    found: dict[tuple[str, str, str], list[BaselineEntry]] = {}
    for file in files:
        for entry in _entries(_read(file), str(file)):
            found.setdefault((entry.scenario, entry.policy, entry.errors), []).append(entry)
    return Baseline(source=str(path), entries={k: _merge(v) for k, v in sorted(found.items())})
