"""Best against best under every assumption: the study ``robustness`` runs by default and ``compare --robustness``
adds to a best-against-best comparison.

:class:`BestStudy` is one such study planned (every option checked, the settings to vary
and the search that re-tunes each format's best chosen) before any run;
:func:`with_study` adds it to a comparison.  :mod:`fleetchaos.runs.sensitivity` does the
work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fleetchaos.cli.common import stderr_console
from fleetchaos.cli.job_options import TuneOptions
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.results.studies import SensitivityResult, Setting, TunedCompareResult
    from fleetchaos.runs.tune import TuneSpec
    from fleetchaos.scenario.load import Scenario

__all__ = ["BestStudy", "with_study"]


def _given(options: TuneOptions) -> set[str]:
    """The tuning options set away from their defaults."""
    default = TuneOptions()
    return {f.name for f in dataclasses.fields(TuneOptions) if getattr(options, f.name) != getattr(default, f.name)}


class BestStudy:
    """A best-against-best sensitivity study, planned (every option checked) before anything runs."""

    def __init__(self, spec: Scenario, scenario_ref: str, errors: tuple[str, ...], settings: list[Setting],
                 retune: bool, tuning: TuneSpec, best: dict[str, str] | None, source: str):  # fmt: skip
        self.spec, self.scenario_ref, self.errors, self.settings = spec, scenario_ref, errors, settings
        self.retune, self.tuning, self.best, self.source = retune, tuning, best, source

    @classmethod
    def plan(
        cls,
        spec: Scenario,
        scenario_ref: str,
        errors: tuple[str, ...] | None,
        ranges: dict[str, list[Any]],
        only: tuple[str, ...],
        retune: bool,
        options: TuneOptions,
        best: dict[str, str] | None = None,
        source: str = "",
    ) -> BestStudy:
        """Check the options and plan the settings.

        The scenario's shipped bests (its ``tuned:`` block, tuned for this very world) are the
        study's own when the search that chose them is the study's: the tuning options given
        (those set away from their defaults) agree with its recorded command, whose options
        then re-tune.  ``best``: bests already known (a tuned comparison's), with ``source``.
        """
        from fleetchaos.cli.tune_job import tune_spec
        from fleetchaos.cli.tuning import recorded_options
        from fleetchaos.names import check_formats
        from fleetchaos.runs.best import DEFAULT_TUNE_FORMATS, shipped_best
        from fleetchaos.runs.sensitivity import plan_settings
        from fleetchaos.runs.tune import check_tune

        shipped_errors = tuple(spec.tuned.policies) if spec.tuned is not None else ()
        names = errors if errors is not None else (shipped_errors or DEFAULT_TUNE_FORMATS)
        check_formats(names, "--errors")
        if options.objective != "success_rate":
            raise UserError("--objective: best against best is judged on success_rate (prices on cost_usd); drop it")
        shipped = shipped_best(spec, names) if best is None else None
        if shipped is not None and shipped.matches_world:
            recorded = recorded_options(shipped.command)
            if recorded is not None and all(getattr(options, k) == getattr(recorded, k) for k in _given(options)):
                options, best, source = recorded, shipped.best, f"shipped, tuned by `{shipped.command}`"
        tuning = tune_spec(spec, scenario_ref, names[0], (), [], options)
        for each in names:
            check_tune(replace(tuning, errors=each, holdout_seeds=(0,)))
        settings = plan_settings(spec, names, ranges=ranges or None, only=only)
        return cls(spec, scenario_ref, names, settings, retune, tuning, best, source)

    def planned_runs(self, seeds: int) -> int:
        """The most runs the study makes (for a progress bar): every search raced in full, every evaluation."""
        from fleetchaos.runs.tune import check_tune, training_runs_planned

        families = check_tune(replace(self.tuning, holdout_seeds=(0,)))
        per_search = training_runs_planned(self.tuning, len(families) * self.tuning.trials)
        searches = 0 if self.best is not None else len(self.errors)
        evaluations = len(self.errors)
        for s in self.settings:
            changed = len(s.values) - 1
            evaluations += changed * len(s.reaches)
            if self.retune and s.retuned:
                searches += changed * len(s.reaches)
        return searches * per_search + evaluations * seeds

    def run(
        self, seeds: list[int], executor: Executor, confidence: float, on_result: Callable[[Any], None]
    ) -> SensitivityResult:
        """Tune, run and judge (:func:`fleetchaos.runs.sensitivity.sensitivity`)."""
        from fleetchaos.runs.sensitivity import sensitivity

        return sensitivity(
            self.spec, self.errors, seeds, self.settings, tuning=self.tuning, best=self.best, best_source=self.source,
            retune=self.retune, executor=executor, confidence=confidence, scenario_ref=self.scenario_ref,
            on_result=on_result,
        )  # fmt: skip


def with_study(
    result: TunedCompareResult,
    spec: Scenario,
    scenario_ref: str,
    options: TuneOptions,
    first_seed: int,
    seeds: int,
    executor: Executor,
) -> TunedCompareResult:
    """``result`` with what its answer depends on (``compare --robustness`` on best against best).

    The same study as ``fleetchaos robustness`` on the comparison's formats, on ``seeds``
    seeds from ``first_seed``, re-tuned by the search that chose the comparison's bests (the
    scenario's shipped command, or this comparison's tuning options).
    """
    from fleetchaos.cli.progress import progress_bar

    tuning = result.tuning
    errors = tuple(tuning.best)
    if tuning.source == "shipped":
        study = BestStudy.plan(spec, scenario_ref, errors, {}, (), True, options)
    else:
        study = BestStudy.plan(spec, scenario_ref, errors, {}, (), True, options, best=dict(tuning.best),
                               source="tuned for this comparison")  # fmt: skip
    seed_list = list(range(first_seed, first_seed + seeds))
    with progress_bar(study.planned_runs(len(seed_list)), "robustness", console=stderr_console()) as advance:
        found = study.run(seed_list, executor, result.confidence, lambda _run: advance(1))
    return result.model_copy(update={"sensitivity": found})
