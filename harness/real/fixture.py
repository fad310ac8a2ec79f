"""The ``fleetchaos_real`` pytest fixture: the marker's scenario and seeds, driven into real code.

Three levels, cheapest first (docs/real-code.md):

1. :meth:`FleetChaosReal.check_contract`: each bound tool x fault kind against the contract;
2. :meth:`FleetChaosReal.parity`: the policy driver on the team's real tools against the simulator;
3. :meth:`FleetChaosReal.run`: the team's own orchestrator under the schedule, a
   :class:`RealResult` to gate with ``assert_rate`` and ``assert_injected()``.

Arguments not given come from the test's ``fleetchaos`` marker (``scenario``, ``seeds``,
``policy``, ``errors``, ``bindings``, ``tasks``, ``clock``), then the ini options.  With
``--fleetchaos-report DIR`` each level writes its files (``contract.md``, ``parity.md``,
per seed a run report with ``injections.csv``) under the test's folder.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from fleetchaos.errors import UserError
from fleetchaos.files import write_text
from fleetchaos.real.bindings import Bindings
from fleetchaos.real.contract import ContractReport, check_contract
from fleetchaos.real.injections import InjectionReport, NotInjectedError
from fleetchaos.real.parity_check import ParityReport, parity
from fleetchaos.real.run import RealRun, run_real
from fleetchaos.testing.suite import ScenarioResult, resolve_seeds

__all__ = ["FleetChaosReal", "RealResult", "load_bindings"]


@dataclass(frozen=True)
class RealResult(ScenarioResult):
    """A :class:`~fleetchaos.testing.suite.ScenarioResult` of real runs, with each seed's injections."""

    injections: tuple[InjectionReport, ...] = ()

    def assert_injected(self, unfaulted: Iterable[str] = ()) -> None:
        """Fail unless, in every seed, every tool (but those ``unfaulted`` names) met a fault, every drawn fault
        fired and no call bypassed the bindings."""
        unfaulted = tuple(unfaulted)
        try:
            problems = [f"seed {r.seed}: {p}" for r in self.injections for p in r.problems(unfaulted)]
        except UserError as exc:
            _refuse(exc)
        if problems:
            raise NotInjectedError(
                f"fleetchaos real run ({self.label}) did not inject as bound:\n  " + "\n  ".join(problems)
                + "\nreplay: " + "; ".join(self.replay)
            )  # fmt: skip


def _refuse(exc: UserError) -> NoReturn:
    """Fail the test with the error's one message (not chained to the exception being handled)."""
    __tracebackhide__ = True
    raise pytest.fail.Exception(f"fleetchaos_real: {exc}", pytrace=False) from None


def load_bindings(value: Any) -> Bindings:
    """Bindings from a :class:`Bindings`, None, or an import path ``"pkg.module:NAME"``."""
    if value is None:
        return Bindings()
    if isinstance(value, Bindings):
        return value
    if isinstance(value, str) and ":" in value:
        module, _, name = value.partition(":")
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise UserError(f"bindings: cannot import {value!r} ({exc}); give 'package.module:NAME'") from None
        if isinstance(found, Bindings):
            return found
        raise UserError(f"bindings: {value!r} is a {type(found).__name__}, not fleetchaos.Bindings")
    raise UserError(f"bindings: expected fleetchaos.Bindings or 'package.module:NAME', got {value!r}")


class FleetChaosReal:
    """What the ``fleetchaos_real`` fixture gives a test (built on the ``fleetchaos`` fixture's settings)."""

    def __init__(self, chaos: Any):
        self._chaos = chaos
        self._config = chaos._config
        self.marker: dict[str, Any] = chaos.marker

    # -- settings --------------------------------------------------------------------------

    def _get(self, name: str, value: Any, ini: str | None = None) -> Any:
        if value is not None:
            return value
        if self.marker.get(name) is not None:
            return self.marker[name]
        return self._config.getini(ini) if ini else None

    def _scenario(self, scenario: Any) -> Any:
        scenario = self._get("scenario", scenario)
        if scenario is None:
            pytest.fail(
                "fleetchaos_real: no scenario; mark the test @pytest.mark.fleetchaos(scenario=...)", pytrace=False
            )
        return self._chaos._resolve_path(scenario) if isinstance(scenario, (str, Path)) else scenario

    def _seeds(self, seeds: Any) -> list[int]:
        chosen = self._get("seeds", seeds)
        if chosen is None:
            chosen = self._chaos.default_seeds()
        return resolve_seeds(chosen, self._config.getoption("fleetchaos_seed"))

    def _folder(self) -> Path | None:
        folder = self._chaos.report_dir()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _replay(self, seed: int) -> str:
        return f"pytest {self._chaos._request.node.nodeid} --fleetchaos-seed {seed}"

    # -- the three levels --------------------------------------------------------------------

    def check_contract(
        self,
        samples: Mapping[str, Callable[[], Any]],
        *,
        kinds: Iterable[str] | None = None,
        errors: str | None = None,
        scenario: Any = None,
    ) -> ContractReport:
        """Level 1: each sampled tool x applicable kind, forced once, against the contract."""
        try:
            report = check_contract(
                self._scenario(scenario),
                samples=samples,
                errors=self._get("errors", errors, "fleetchaos_errors"),
                bindings=load_bindings(self._get("bindings", None)),
                kinds=kinds,
            )
        except UserError as exc:
            _refuse(exc)
        folder = self._folder()
        if folder is not None:
            write_text(folder / "contract.md", report.to_markdown(), root=folder)
        return report

    def parity(
        self,
        *,
        tools: Mapping[str, Callable[[Any], Any]],
        policy: Any = None,
        seeds: Any = None,
        errors: str | None = None,
        scenario: Any = None,
    ) -> ParityReport:
        """Level 2: the policy driver on the real ``tools`` per seed; the first report that diverges, else the last."""
        chosen = None
        try:
            spec = self._scenario(scenario)
            for seed in self._seeds(seeds):
                report = parity(
                    spec,
                    policy=self._get("policy", policy, "fleetchaos_policy"),
                    tools=tools,
                    errors=self._get("errors", errors, "fleetchaos_errors"),
                    seed=seed,
                    bindings=load_bindings(self._get("bindings", None)),
                )
                folder = self._folder()
                if folder is not None:
                    write_text(folder / f"parity-seed-{seed}.md", report.to_markdown(), root=folder)
                chosen = report
                if not report.identical:
                    break
        except UserError as exc:
            _refuse(exc)
        assert chosen is not None
        return chosen

    def run(
        self,
        entrypoint: Callable[..., Any],
        *,
        claim: Callable[[Any], str] = str,
        tasks: int | None = None,
        seeds: Any = None,
        errors: str | None = None,
        concurrency: int = 1,
        clock: str | None = None,
        scenario: Any = None,
        check_determinism: bool | None = None,
    ) -> RealResult:
        """Level 3: the team's orchestrator ``entrypoint(task, runtime)`` on each seed; figures with intervals.

        ``check_determinism`` (default: the ``--fleetchaos-check-determinism`` option) runs each
        seed twice and fails the test at the first call whose decision or virtual time differs.
        """
        from fleetchaos.real.determinism import NondeterministicRun
        from fleetchaos.results.stats import DEFAULT_CONFIDENCE

        if check_determinism is None:
            check_determinism = bool(self._config.getoption("fleetchaos_check_determinism", False))

        errors = self._get("errors", errors, "fleetchaos_errors")
        runs: list[RealRun] = []
        try:
            spec = self._scenario(scenario)
            seed_list = self._seeds(seeds)
            for seed in seed_list:
                runs.append(
                    run_real(
                        spec,
                        entrypoint,
                        seed=seed,
                        errors=errors,
                        bindings=load_bindings(self._get("bindings", None)),
                        claim=claim,
                        tasks=self._get("tasks", tasks),
                        concurrency=concurrency,
                        clock=self._get("clock", clock) or "virtual",
                        replay=self._replay(seed),
                        keep_tasks=self._folder() is not None,
                        check_determinism=check_determinism,
                    )
                )
        except UserError as exc:
            _refuse(exc)
        except NondeterministicRun as exc:
            __tracebackhide__ = True
            raise pytest.fail.Exception(f"fleetchaos_real: {exc}", pytrace=False) from None
        first = runs[0].result
        result = RealResult(
            scenario=first.scenario,
            scenario_ref=str(self._get("scenario", scenario)),
            policy=first.policy,
            errors=errors,
            seeds=tuple(seed_list),
            runs=tuple(r.result for r in runs),
            confidence=DEFAULT_CONFIDENCE,
            injections=tuple(r.injections for r in runs),
        )
        folder = self._folder()
        if folder is not None:
            from fleetchaos.reports import write_run_report

            for run in runs:
                out = folder / f"real-seed-{run.result.seed}"
                write_run_report(run.result, out)
                write_text(out / "injections.csv", run.injections.to_csv(), root=folder)
        self._chaos.note(result, mode="real", report=folder)
        return result
