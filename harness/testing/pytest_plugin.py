"""The fleetchaos pytest plugin: chaos scenarios as pytest tests.

Registered through the ``pytest11`` entry point, so installing fleetchaos is enough.

* fixture ``fleetchaos``: ``fleetchaos.run(scenario, policy=..., errors=..., seeds=...)``
  simulates a scenario (catalogue name, file path or :class:`~fleetchaos.scenario.load.Scenario`)
  and returns a :class:`~fleetchaos.testing.suite.ScenarioResult` whose figures carry intervals;
* fixture ``fleetchaos_result``: the run the test's marker describes;
* fixture ``fleetchaos_real``: the same scenario and seeds driving faults into the team's
  real tools and orchestrator (:mod:`fleetchaos.real`): contract conformance, sim/real
  parity, and the team's own orchestrator gated like a simulated run;
* marker ``@pytest.mark.fleetchaos(scenario=..., seeds=..., policy=..., errors=...,
  confidence=...)``: the defaults of ``fleetchaos.run()`` for that test (the closest
  marker wins key by key, so a module ``pytestmark`` can name the scenario);
* options ``--fleetchaos-seed N`` (consecutive seeds from N), ``--fleetchaos-report DIR`` (a report
  folder per arm), ``--fleetchaos-baseline REF`` (fail a run whose figures regress against a stored
  baseline: results JSON, a report folder, or a run-history group), ``--fleetchaos-fail-on
  METRIC:THRESHOLD`` (how much worse each metric may get, as the CLI's ``--fail-on``; default: the
  registry's gated metrics at their default thresholds), ``--fleetchaos-evidence weak|decisive`` (the
  gate rule's mode for the baseline gate and ``assert_rate``), ``--fleetchaos-fail-on-new``,
  ``--fleetchaos-history PATH`` (where history groups are read) and ``--fleetchaos-no-cache``
  (scenario runs made afresh, not served from the run cache);
* ini options ``fleetchaos_seeds``, ``fleetchaos_policy``, ``fleetchaos_errors``,
  ``fleetchaos_confidence``, ``fleetchaos_evidence``, ``fleetchaos_fail_on``: suite-wide defaults;
* a terminal summary table of every scenario run.

Light to import (pytest and the standard library); SimPy, matplotlib, Faker, hypothesis load when a scenario first runs.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from fleetchaos.testing.plugin_support import (
    MARKER_KEYS,
    add_options,
    ini_confidence,
    ini_evidence,
    ini_seeds,
    marker_config,
    marker_problem,
    replay_prefix,
    slug,
    write_arm_report,
)
from fleetchaos.testing.summary import summary_lines, summary_row

if TYPE_CHECKING:
    from fleetchaos.real.fixture import FleetChaosReal
    from fleetchaos.testing.suite import ScenarioResult

__all__ = ["MARKER_KEYS", "FleetChaos"]

_RUNS_KEY = pytest.StashKey[list]()
_WEAK_KEY = pytest.StashKey[list]()
_STATE_KEY = pytest.StashKey["_SessionState"]()


@dataclass(eq=False)  # a plugin object must stay hashable
class _SessionState:
    """What the plugin keeps for one pytest session, registered as a plugin object.

    ``cache`` holds runs already simulated (a run is a pure function of scenario, arm and
    seed); ``rows`` the summary rows collected from test reports, in the process that
    prints (the xdist controller, or the only process).
    """

    cache: dict = field(default_factory=dict)
    rows: list = field(default_factory=list)
    weak: list = field(default_factory=list)
    """(test id, line) of every gate that passed on weak evidence."""
    gate: Any = None
    """The :class:`~fleetchaos.gates.session.GateSession` judging runs against the baseline, if one was given."""
    reports: dict = field(default_factory=dict)
    """Report folder name -> the arm written there (``--fleetchaos-report``): one report per arm."""
    run_cache: Any = None  # the RunCache scenario runs use across sessions (None: --fleetchaos-no-cache)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect the scenario rows of each finished test."""
        if report.when != "call":
            return
        self.weak += [(report.nodeid, line) for line in getattr(report, "fleetchaos_weak", ())]
        rows = getattr(report, "fleetchaos", None)
        if not rows:
            return
        if hasattr(report, "wasxfail"):
            outcome = "xfail" if report.skipped else "XPASS"
        else:
            outcome = "passed" if report.passed else ("skipped" if report.skipped else "FAILED")
        for row in rows:
            self.rows.append({"test": report.nodeid, "outcome": outcome, **row})

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        """A table of the scenarios run (arm, seeds, headline figures with intervals, policy errors, baseline
        verdict), then every gate that passed on weak evidence."""
        if self.weak:
            terminalreporter.write_sep("=", "fleetchaos: passed on weak evidence")
            for test, line in self.weak:
                terminalreporter.write_line(f"{test}: {line}")
            terminalreporter.write_line(
                "each mean meets its bound while its interval straddles it: add seeds to decide it, or require "
                "decisive passes with assert_rate(..., evidence='decisive') or the ini option fleetchaos_evidence"
            )
        if not self.rows:
            return
        rows = sorted(self.rows, key=lambda r: r["test"])
        terminalreporter.write_sep("=", "fleetchaos scenarios")
        for line in summary_lines(rows):
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            "figures: mean over seeds [confidence interval]; a failing gate's message names the "
            "fleetchaos run command that replays it"
        )
        report_dir = config.getoption("fleetchaos_report")
        if report_dir:
            terminalreporter.write_line(f"reports written to {os.path.abspath(report_dir)}")


# -- options, marker, ini -----------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--fleetchaos-*`` options and the suite-wide ini defaults."""
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so ``--strict-markers`` accepts it) and the session state."""
    config.addinivalue_line(
        "markers",
        "fleetchaos(scenario=None, seeds=None, policy=None, errors=None, confidence=None, "
        "allow_policy_errors=False): configure the fleetchaos fixture for this test (a chaos scenario, its "
        "seeds, the recovery policy and the error format; whether it expects policy errors)",
    )
    from fleetchaos.gates.assertions import set_evidence_default
    from fleetchaos.runs.cache import open_default_cache

    evidence = ini_evidence(config)
    set_evidence_default(evidence)
    ini_seeds(config)  # a mistake in the ini file stops pytest at once, not in every test
    ini_confidence(config)
    seed = config.getoption("fleetchaos_seed", None)
    if seed is not None and seed < 0:
        raise pytest.UsageError(f"--fleetchaos-seed: must be a seed >= 0, got {seed}")
    state = _SessionState()
    baseline = config.getoption("fleetchaos_baseline", None) or None
    fail_on = config.getoption("fleetchaos_fail_on", None)
    if baseline or fail_on:
        from fleetchaos.errors import UserError
        from fleetchaos.gates.session import SUITE, GateSession

        source = None
        if fail_on is None:  # the ini thresholds apply only with a baseline: a suite may set them for CI alone
            fail_on, source = [str(config.getini("fleetchaos_fail_on"))], "ini fleetchaos_fail_on"
        try:
            state.gate = GateSession(
                SUITE,
                baseline_ref=baseline,
                fail_on=fail_on,
                history_path=config.getoption("fleetchaos_history", None),
                fail_on_source=source,
                fail_on_new=bool(config.getoption("fleetchaos_fail_on_new", False)),
                allow_partial_baseline=bool(config.getoption("fleetchaos_allow_partial_baseline", False)),
                allow_policy_errors=True,  # judged per test, where the marker can allow them
                evidence=evidence,
            )
        except UserError as exc:
            raise pytest.UsageError(str(exc)) from None
    if not config.getoption("fleetchaos_no_cache", False):  # a cache that cannot be used: a warning, runs made afresh
        state.run_cache = open_default_cache(lambda m: config.issue_config_time_warning(pytest.PytestConfigWarning(m), 2))  # fmt: skip
    config.stash[_STATE_KEY] = state
    config.pluginmanager.register(state, "fleetchaos-session")


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """One header line when a fleetchaos option is in force."""
    parts = []
    seed = config.getoption("fleetchaos_seed")
    if seed is not None:
        parts.append(f"seeds from {seed}")
    if config.getoption("fleetchaos_report"):
        parts.append(f"reports in {config.getoption('fleetchaos_report')}")
    if config.getoption("fleetchaos_baseline"):
        parts.append(f"baseline {config.getoption('fleetchaos_baseline')}")
        state = config.stash.get(_STATE_KEY, None)
        if state is not None and state.gate is not None:
            parts.append("gate " + ", ".join(f"{r.metric}:{r.allowed()}" for r in state.gate.rules))
            parts.append(f"evidence {state.gate.evidence}")
    return [f"fleetchaos: {', '.join(parts)}"] if parts else None


# -- the fixture --------------------------------------------------------------------------


def _first_given(*values: Any) -> Any:
    """The first value that is not None."""
    return next((v for v in values if v is not None), None)


class FleetChaos:
    """What the ``fleetchaos`` fixture gives a test: runs scenarios, remembers the results.

    Arguments not given to :meth:`run` come from the test's ``fleetchaos`` marker, then
    from the ini options, then from the built-in defaults (policy ``structured`` on error
    format ``structured``, seeds 1..5).
    """

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request
        self._config = request.config
        self._state: _SessionState = request.config.stash[_STATE_KEY]
        self.marker: dict[str, Any] = marker_config(request.node)
        self.results: list[ScenarioResult] = []

    def _resolve_path(self, ref: str | Path) -> str | Path:
        """A relative scenario path: next to the test file, else the rootdir, else as given."""
        import fleetchaos.catalogue as catalogue

        if isinstance(ref, str) and ref in catalogue.names():
            return ref
        path = Path(ref)
        if path.is_absolute():
            return path
        for base in (Path(self._request.path).parent, self._config.rootpath):
            if (base / path).exists():
                return base / path
        return path

    def _save_dir(self) -> Path:
        cache = getattr(self._config, "cache", None)
        if cache is not None:
            return Path(cache.mkdir("fleetchaos-scenarios"))
        factory = self._request.getfixturevalue("tmp_path_factory")
        return factory.getbasetemp() / "fleetchaos-scenarios"

    def run(
        self,
        scenario: Any = None,
        *,
        policy: str | None = None,
        errors: str | None = None,
        seeds: int | list[int] | None = None,
        confidence: float | None = None,
        allow_policy_errors: bool | None = None,
    ) -> ScenarioResult:
        """Simulate ``scenario`` with ``policy`` on ``errors`` for each seed; figures with intervals.

        ``scenario`` is a catalogue name, a path (relative to the test file or the rootdir)
        or a Scenario object.  With ``--fleetchaos-report`` it writes a report folder; with
        ``--fleetchaos-baseline`` the test fails, once its body has run, if a gated
        figure got worse than the baseline by more than its threshold, seed by seed.  A run
        whose policy errored fails the test once its body has run, unless
        ``allow_policy_errors`` (here or in the marker) says the test expects it.
        """
        from fleetchaos.errors import UserError
        from fleetchaos.testing.suite import resolve_seeds, run_scenario

        mark = self.marker
        given = {"scenario": scenario, "policy": policy, "errors": errors, "seeds": seeds, "confidence": confidence,
                 "allow_policy_errors": allow_policy_errors}  # fmt: skip
        for key, value in given.items():
            problem = marker_problem(key, value)
            if problem is not None:
                pytest.fail(f"fleetchaos.run(): {problem}", pytrace=False)
        scenario = scenario if scenario is not None else mark.get("scenario")
        if scenario is None:
            pytest.fail(
                "fleetchaos: no scenario; pass one to fleetchaos.run(...) or mark the test "
                "@pytest.mark.fleetchaos(scenario='default')",
                pytrace=False,
            )
        # `is None`, never `or`: an empty name is a mistake to report, not a default to fill in.
        policy = _first_given(policy, mark.get("policy"), self._config.getini("fleetchaos_policy"))
        errors = _first_given(errors, mark.get("errors"), self._config.getini("fleetchaos_errors"))
        allowed = bool(_first_given(allow_policy_errors, mark.get("allow_policy_errors"), False))
        if seeds is None:
            seeds = mark.get("seeds")
        if seeds is None:
            seeds = ini_seeds(self._config)
        if confidence is None:
            confidence = mark.get("confidence")
        if confidence is None:
            confidence = ini_confidence(self._config)
        report_dir = self._config.getoption("fleetchaos_report")
        try:
            seed_list = resolve_seeds(seeds, self._config.getoption("fleetchaos_seed"))
            if isinstance(scenario, (str, Path)):
                scenario = self._resolve_path(scenario)
            result = run_scenario(
                scenario,
                policy=policy,
                errors=errors,
                seeds=seed_list,
                confidence=confidence,
                keep_tasks=report_dir is not None,
                save_dir=self._save_dir(),
                cache=self._state.cache,
                replay_prefix=replay_prefix(self._config, policy),
                run_cache=self._state.run_cache,
            )
        except UserError as exc:
            pytest.fail(f"fleetchaos: {exc}", pytrace=False)
        self.results.append(result)
        report = write_arm_report(result, Path(report_dir), self._state.reports) if report_dir is not None else None
        self.note(result, report=report, allow_policy_errors=allowed)
        return result

    def note(
        self,
        result: ScenarioResult,
        *,
        mode: str = "sim",
        report: Path | None = None,
        allow_policy_errors: bool | None = None,
    ) -> None:
        """Add a scenario run to the test's summary rows; a simulated run is judged against the baseline.

        A regression, or a policy error the test does not allow, fails the test after its body
        has run (see ``pytest_runtest_call``).
        """
        verdicts = []
        if mode == "sim" and self._state.gate is not None:  # judged against the baseline, seed by seed
            from fleetchaos.gates.suite_gate import suite_verdicts

            verdicts = suite_verdicts(self._state.gate, result)
        row = summary_row(result, verdicts)
        row["mode"] = mode
        if report is not None:
            row["report"] = str(report)
        row["regressions"] = [v["message"] for v in verdicts if v["regressed"]] + result.expect_failures()
        tasks, first = result.policy_errors
        if allow_policy_errors is None:  # a caller that does not say: the test's marker decides
            marker = self._request.node.get_closest_marker("fleetchaos")
            allow_policy_errors = bool(marker is not None and marker.kwargs.get("allow_policy_errors"))
        if tasks and not allow_policy_errors:
            row["regressions"].append(
                f"policy errors: {result.policy} on {result.errors} gave up {tasks} task(s) because the policy errored "
                f"(most frequent: {first or 'n/a'}); a scenario test never passes a run whose policy errored: fix the "
                "policy, or mark the test @pytest.mark.fleetchaos(allow_policy_errors=True) if it expects them"
            )
        self._request.node.stash.setdefault(_RUNS_KEY, []).append(row)
        self._weak_passes(result, verdicts)

    def _weak_passes(self, result: ScenarioResult, verdicts: list[dict[str, Any]]) -> None:
        """List the baseline checks and ``expect:`` gates that passed on weak evidence, as assert_rate's are."""
        from fleetchaos.gates.assertions import WeakPass

        weak = [WeakPass(v["metric"], v["weak"][0], v["weak"][1], result.label) for v in verdicts if v.get("weak")]
        weak += [WeakPass(r.metric, f"{r.rule} {r.bound:g} (expect[{r.gate}])", f"{r.value:.6g} ({r.note})", result.label)
                 for r in result.expectations if r.passed and r.evidence == "weak"]  # fmt: skip
        self._request.node.stash.setdefault(_WEAK_KEY, []).extend(weak)

    def default_seeds(self) -> int | list[int]:
        """The suite's default seeds (the ``fleetchaos_seeds`` ini option)."""
        return ini_seeds(self._config)

    def report_dir(self) -> Path | None:
        """The folder this test's reports go to (None without ``--fleetchaos-report``)."""
        root = self._config.getoption("fleetchaos_report")
        return None if root is None else Path(root) / slug(self._request.node.nodeid)


@pytest.fixture
def fleetchaos(request: pytest.FixtureRequest) -> FleetChaos:
    """Runs chaos scenarios: ``fleetchaos.run(scenario, policy=, errors=, seeds=)`` returns figures with intervals."""
    return FleetChaos(request)


@pytest.fixture
def fleetchaos_real(fleetchaos: FleetChaos) -> FleetChaosReal:
    """Drives the scenario's faults into real code: ``check_contract``, ``parity`` and ``run`` (see docs/real-code.md)."""
    from fleetchaos.real.fixture import FleetChaosReal

    return FleetChaosReal(fleetchaos)


@pytest.fixture
def fleetchaos_result(fleetchaos: FleetChaos) -> ScenarioResult:
    """The result of the scenario configured by the test's ``@pytest.mark.fleetchaos`` marker."""
    return fleetchaos.run()


# -- reporting ----------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fail a test whose scenario runs regressed (or whose policy errored), once its body has passed.

    While the body runs, every ``assert_rate`` that passes on weak evidence is recorded
    for the test's report (terminal summary, junit XML property).
    """
    from fleetchaos.gates.assertions import WEAK_EVIDENCE

    weak = item.stash.setdefault(_WEAK_KEY, [])  # fixtures that ran a scenario may have added to it already
    listener = weak.append
    WEAK_EVIDENCE.append(listener)
    try:
        result = yield
    finally:
        WEAK_EVIDENCE.remove(listener)
        # The junit XML writes a test's user properties from its teardown report: add them to the item.
        item.user_properties += [("fleetchaos_weak_evidence", w.line()) for w in weak]
    regressions = [m for row in item.stash.get(_RUNS_KEY, []) for m in row.get("regressions", [])]
    if regressions:
        pytest.fail("\n".join(regressions), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Attach the test's scenario rows to its call report (xdist carries them to the controller)."""
    report = yield
    if report.when == "call":
        weak = [w.line() for w in item.stash.get(_WEAK_KEY, [])]
        if weak:
            report.fleetchaos_weak = weak
            report.sections.append(("fleetchaos passed on weak evidence", "\n".join(weak)))
        rows = item.stash.get(_RUNS_KEY, None)
        if rows:
            report.fleetchaos = list(rows)
            if report.failed:
                lines = [cmd for r in rows for cmd in r["replays"]]
                report.sections.append(("fleetchaos replay", "\n".join(lines)))
    return report
