"""The pytest plugin's plain-data helpers: its options, and checks of the marker's arguments and ini options.

Kept apart from :mod:`fleetchaos.testing.pytest_plugin` (the hooks and fixtures); the summary
rows are :mod:`fleetchaos.testing.summary`.  Light to import: pytest and the standard library only.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fleetchaos.testing.suite import ScenarioResult

__all__ = [
    "MARKER_KEYS",
    "add_options",
    "ini_confidence",
    "ini_evidence",
    "ini_seeds",
    "marker_config",
    "marker_problem",
    "replay_prefix",
    "slug",
    "write_arm_report",
]


def _resolved(entry: str) -> Path | None:
    try:
        return Path(entry or os.curdir).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


#: ``sys.path`` when the plugin was loaded: before pytest adds its ``pythonpath`` ini folders and
#: the folders of test files, none of which a ``fleetchaos`` command started from a shell has.
_STARTUP_PATH = frozenset(p for p in map(_resolved, sys.path) if p is not None)

#: Keyword arguments the ``fleetchaos`` marker accepts (``bindings``, ``tasks`` and ``clock`` are read by
#: ``fleetchaos_real``).
MARKER_KEYS = (
    "scenario",
    "seeds",
    "policy",
    "errors",
    "confidence",
    "bindings",
    "tasks",
    "clock",
    "allow_policy_errors",
)


def add_options(parser: pytest.Parser) -> None:
    """Register the plugin's ``--fleetchaos-*`` options and its suite-wide ini defaults."""
    group = parser.getgroup("fleetchaos", "fleetchaos chaos scenarios")
    group.addoption(
        "--fleetchaos-seed",
        type=int,
        default=None,
        metavar="N",
        help="run every scenario test on consecutive seeds starting at N (as many as it asks for)",
    )
    group.addoption(
        "--fleetchaos-check-determinism",
        action="store_true",
        help="run every fleetchaos_real.run twice per seed and fail the test at the first call whose decision "
        "or virtual time differs",
    )
    group.addoption(
        "--fleetchaos-report",
        default=None,
        metavar="DIR",
        help="write a report folder (results.json, summary.md, charts, per-seed tasks.csv) per arm into DIR: tests "
        "sharing an arm (scenario, policy, errors, seeds) share its report",
    )
    group.addoption(
        "--fleetchaos-baseline",
        default=None,
        metavar="REF",
        help="fail scenario runs that regress against this baseline, seed by seed (see --fleetchaos-fail-on): "
        "a results.json or report folder, or a run-history group (7, #7, latest, a label)",
    )
    group.addoption(
        "--fleetchaos-fail-on",
        action="append",
        default=None,
        metavar="METRIC:THRESHOLD",
        help="with --fleetchaos-baseline: fail when METRIC is worse than the baseline by more than THRESHOLD, "
        "with an explicit unit: success_rate:-2%% (relative), success_rate:-2pp (percentage points), "
        "wasted_retries:+5 (in the metric's unit); repeatable, replaces the ini fleetchaos_fail_on "
        "[default: success_rate:-2%%, common_recovery_rate:-2%%, silent_failure_rate:+2%%, wasted_retries:+2%%]",
    )
    group.addoption(
        "--fleetchaos-evidence",
        default=None,
        choices=("weak", "decisive"),
        help="the gate rule's evidence mode for assert_rate and the baseline gate: weak lets the mean decide, "
        "decisive also fails a pass whose interval straddles the bound; replaces the ini fleetchaos_evidence "
        "[default: weak]",
    )
    group.addoption(
        "--fleetchaos-fail-on-new",
        action="store_true",
        default=False,
        help="with --fleetchaos-baseline: fail scenario runs the baseline has no arm for (default: reported as new)",
    )
    group.addoption(
        "--fleetchaos-allow-partial-baseline",
        action="store_true",
        default=False,
        help="with --fleetchaos-baseline: accept a history group that is not complete (killed, interrupted)",
    )
    group.addoption("--fleetchaos-no-cache", action="store_true", help="make scenario runs afresh: no run cache")
    group.addoption(
        "--fleetchaos-history",
        default=None,
        metavar="PATH",
        help="run-history file the baseline group is read from [default: $FLEETCHAOS_HISTORY or fleetchaos-out/history.db]",
    )
    parser.addini(
        "fleetchaos_seeds", "default seeds of a scenario test: a count (1..N) or a comma-separated list", default="5"
    )
    parser.addini("fleetchaos_policy", "default recovery policy of scenario tests", default="structured")
    parser.addini("fleetchaos_errors", "default error format of scenario tests", default="structured")
    parser.addini("fleetchaos_confidence", "confidence level of the intervals", default="0.95")
    parser.addini(
        "fleetchaos_evidence",
        "the gate rule's evidence mode: weak (the mean decides) or decisive (a pass on weak evidence fails), "
        "for assert_rate and the baseline gate",
        default="weak",
    )
    parser.addini(
        "fleetchaos_fail_on",
        "regression thresholds against --fleetchaos-baseline: METRIC:THRESHOLD, comma-separated "
        "[default: each gated metric at 2% of its baseline value]",
        default="",
    )


def _is_scenario(value: object) -> bool:
    return type(value).__name__ == "Scenario" and hasattr(value, "workload")


def marker_problem(key: str, value: object) -> str | None:
    """What is wrong with one argument of the marker (or of ``fleetchaos.run``), or None.

    Every mistake gets one sentence naming the argument, the value, the rule and the fix,
    so a typo in a suite fails its test with a message, never a traceback.
    """
    if value is None:
        return None
    if key == "scenario":
        if isinstance(value, str) and not value.strip():
            return "scenario='' is empty: give a catalogue name such as 'default' or a path to a .yaml file"
        if not isinstance(value, (str, Path)) and not _is_scenario(value):
            return f"scenario={value!r}: expected a catalogue name, a path to a .yaml/.json file or a Scenario"
    elif key in ("policy", "errors"):
        if not isinstance(value, str) or not value.strip():
            what = (
                "a built-in policy name or an import path pkg.module:Policy" if key == "policy" else "an error format"
            )
            return f"{key}={value!r}: expected {what} (a non-empty string)"
    elif key == "seeds":
        whole = isinstance(value, int) and not isinstance(value, bool)
        listed = isinstance(value, (list, tuple)) and all(isinstance(s, int) and not isinstance(s, bool) for s in value)
        if not (whole or listed):
            return f"seeds={value!r}: expected a count (5) or a list of whole-number seeds ([1, 2, 3])"
    elif key == "confidence":
        if isinstance(value, bool) or not isinstance(value, Real) or not 0.5 <= float(value) < 1.0:
            return f"confidence={value!r}: expected a level in [0.5, 1) such as 0.95"
    elif key == "allow_policy_errors" and not isinstance(value, bool):
        return f"allow_policy_errors={value!r}: expected True or False"
    return None


def ini_seeds(config: pytest.Config) -> int | list[int]:
    """The ini ``fleetchaos_seeds`` (a count or a comma-separated list); a mistake is a usage error."""
    raw = str(config.getini("fleetchaos_seeds")).strip()
    try:
        if "," in raw:
            return [int(s) for s in raw.split(",") if s.strip()]
        return int(raw)
    except ValueError:
        raise pytest.UsageError(
            f"ini fleetchaos_seeds: expected a count or a comma-separated list of seeds, got {raw!r}"
        ) from None


def ini_confidence(config: pytest.Config) -> float:
    """The ini ``fleetchaos_confidence``; a level outside [0.5, 1) is a usage error."""
    raw = str(config.getini("fleetchaos_confidence")).strip()
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.5 <= value < 1.0:
        raise pytest.UsageError(f"ini fleetchaos_confidence: expected a level in [0.5, 1) such as 0.95, got {raw!r}")
    return value


def ini_evidence(config: pytest.Config) -> str:
    """The evidence mode: ``--fleetchaos-evidence``, else the ini ``fleetchaos_evidence``; a mistake is a usage error."""
    given = config.getoption("fleetchaos_evidence", None)
    raw = str(given if given is not None else config.getini("fleetchaos_evidence")).strip().lower()
    if raw not in ("weak", "decisive"):
        raise pytest.UsageError(
            f"ini fleetchaos_evidence: expected weak (the mean decides) or decisive (a pass on weak evidence fails), "
            f"got {raw!r}"
        )
    return raw


def marker_config(node: pytest.Item) -> dict[str, Any]:
    """The test's marker arguments, the closest marker winning key by key."""
    merged: dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers("fleetchaos"))):
        if len(mark.args) > 1:
            pytest.fail(
                f"@pytest.mark.fleetchaos: at most one positional argument (the scenario), got {mark.args!r}",
                pytrace=False,
            )
        unknown = sorted(set(mark.kwargs) - set(MARKER_KEYS))
        if unknown:
            pytest.fail(
                f"@pytest.mark.fleetchaos: unknown argument(s) {', '.join(unknown)} (known: {', '.join(MARKER_KEYS)})",
                pytrace=False,
            )
        if mark.args:
            merged["scenario"] = mark.args[0]
        merged.update(mark.kwargs)
    for key, value in merged.items():
        problem = marker_problem(key, value)
        if problem is not None:
            pytest.fail(f"@pytest.mark.fleetchaos: {problem}", pytrace=False)
    return merged


def _module_folders(module: str) -> list[Path]:
    """The ``sys.path`` folders a top-level module is found in (several for a namespace package)."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return []
    if spec.submodule_search_locations:  # a package: the folder holding the package's folder
        return [Path(p).resolve().parent for p in spec.submodule_search_locations]
    return [Path(spec.origin).resolve().parent] if spec.origin and spec.has_location else []


def _shown(folder: Path) -> str:
    """A folder as short as it can be from the current directory (as scenario paths are shown)."""
    try:
        return str(folder.relative_to(Path.cwd().resolve())) or os.curdir
    except ValueError:
        return str(folder)


def replay_prefix(config: pytest.Config, policy: str) -> str:
    """``PYTHONPATH=DIR `` to put before a replay command when ``policy`` is an import path found only
    through folders pytest put on ``sys.path``, else ``""``.

    pytest's ``pythonpath`` ini option (and its own insertion of test folders) lets a suite name
    ``team_policy:TeamPolicy`` from a folder a shell's ``fleetchaos run`` does not search; the working
    directory it does search (:func:`fleetchaos.names.allow_local_imports`).  The prefix carries the
    ini folders (and the module's own folder if pytest added it otherwise), relative to the working
    directory, so the printed command works pasted where pytest ran.
    """
    module = policy.partition("(")[0].partition(":")[0].strip()
    if not module or ":" not in policy.partition("(")[0]:
        return ""
    try:
        found = _module_folders(module.partition(".")[0])
    except (ImportError, ValueError, OSError):
        return ""
    here = Path.cwd().resolve()
    on_path = {p for p in map(_resolved, sys.path) if p is not None}
    ini = [p.resolve() for p in (Path(str(e)) for e in config.getini("pythonpath") or ())]
    added = [d for d in found if d in on_path and d != here and (d in ini or d not in _STARTUP_PATH)]
    if not added:
        return ""
    folders = [d for d in ini if d != here] + [d for d in added if d not in ini]
    value = os.pathsep.join(shlex.quote(_shown(d)) for d in dict.fromkeys(folders))
    if os.environ.get("PYTHONPATH"):  # keep what the shell already adds
        value += os.pathsep + '"$PYTHONPATH"'
    return f"PYTHONPATH={value} "


def slug(text: str) -> str:
    """``text`` as one safe file name (test ids and arm names as report folders)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:120] or "test"


def write_arm_report(result: ScenarioResult, root: Path, written: dict[str, Any]) -> Path:
    """Write the report of one arm (scenario, policy, format, seeds) into ``root`` once per session.

    Tests that share an arm share its runs, so they share one report folder,
    ``ROOT/<scenario>.<policy>.<errors>``: the arm's comparison report and one run report per seed in
    ``seed-N/`` (one seed: that run's report).  ``written`` maps each folder name used in this session
    to the arm it holds; the same arm on other seeds, or another scenario of the same name, gets a
    folder of its own (``.seeds-1-3``, ``.<scenario digest>``).
    """
    from fleetchaos.gates.assertions import seeds_text
    from fleetchaos.reports import write_compare_report, write_run_report

    key = (result.scenario_digest, result.scenario_ref, result.policy, result.errors, result.seeds)
    name = slug(f"{result.scenario}.{result.policy}.{result.errors}")
    taken = written.get(name, key)
    if taken != key:  # named after what tells the two apart: the seeds, the scenario's content, or a number
        parts = [name]
        if taken[4] != key[4]:
            parts.append(f"seeds-{slug(seeds_text(result.seeds))}")
        if taken[:2] != key[:2]:
            parts.append(result.scenario_digest)
        name, n = ".".join(parts), 2
        while written.get(name, key) != key:
            name, n = f"{'.'.join(parts)}-{n}", n + 1
    out = root / name
    if name in written:  # another test of this session has written this arm's report
        return out
    written[name] = key
    if len(result.runs) == 1:  # one seed: a run report, as `fleetchaos run --report` writes
        write_run_report(result.runs[0], out, root=root)
        return out
    write_compare_report(result.to_compare_result(), out, root=root)
    for run in result.runs:
        write_run_report(run, out / f"seed-{run.seed}", root=root)
    return out
