"""What ``fleetchaos tune`` does, callable from Python, and the tuning of ``best`` arms ``compare`` shares.

:class:`TuneJob` holds the command's options as fields and its orchestration once: the
checks before any run, the search on training seeds, the winners on held-out seeds, the
report.  The click command parses, builds a job, runs it and renders its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fleetchaos.cli.common import (
    apply_single_params,
    make_report_dir,
    policy_param_options,
    seeds_to_run,
    stderr_console,
)
from fleetchaos.cli.job_options import TuneOptions
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.results.studies import TuneResult
    from fleetchaos.runs.best import Shipped
    from fleetchaos.runs.tune import TuneSpec
    from fleetchaos.scenario.load import Scenario

__all__ = ["TuneJob", "best_arms", "only_scenario_params", "tune_spec", "tuned_block"]


def tune_spec(
    spec: Scenario,
    scenario_ref: str,
    errors: str,
    applied: Sequence[tuple[str, Any]],
    holdout: list[int],
    options: TuneOptions,
    confidence: float = 0.95,
) -> TuneSpec:
    """A :class:`~fleetchaos.runs.tune.TuneSpec` from the tuning options, for one error format."""
    from fleetchaos.runs.spaces import DEFAULT_SPACE, load_space
    from fleetchaos.runs.tune import TuneSpec

    space_file = options.space_file
    first = options.first_train_seed
    return TuneSpec(
        scenario=spec,
        errors=errors,
        scenario_ref=scenario_ref,
        params=tuple(applied),
        space=load_space(space_file) if space_file else DEFAULT_SPACE,
        space_name=str(space_file) if space_file else "default",
        families=tuple(options.families),
        search=options.search,
        trials=options.trials,
        grid_points=options.grid_points,
        train_seeds=tuple(range(first, first + options.train_seeds)),
        holdout_seeds=tuple(holdout),
        objective=options.objective,
        sampler_seed=options.sampler_seed,
        confidence=confidence,
        race=options.race,
    )


def only_scenario_params(params: tuple[str, ...], command: str) -> tuple[str, ...]:
    """``--param`` options of a command that chooses policies itself: scenario values only."""
    scenario, policy = policy_param_options(params, command)
    if policy:
        raise UserError(
            f"--param policy.{policy[0][0]}=...: {command} searches policy parameters itself; "
            "declare their ranges in a --space file instead"
        )
    return scenario


def best_arms(
    spec: Scenario,
    scenario_ref: str,
    applied: Sequence[tuple[str, Any]],
    policies: tuple[str, ...],
    errors: tuple[str, ...],
    seeds: list[int],
    options: TuneOptions,
    executor: Executor,
    shipped: Shipped | None = None,
) -> tuple[tuple[str, ...], dict[str, str], dict[str, Any]]:
    """``best`` for every error format: shipped, or tuned now; returns (the policies with ``best`` expanded, best
    per format, the tuning record's fields for :func:`~fleetchaos.runs.best.tuning_record`)."""
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.best import expand_best, tune_each
    from fleetchaos.runs.tune import check_tune

    if shipped is not None:
        if not shipped.matches_world:
            stderr_console().print(
                "note: the scenario's tuned policies were tuned for another world (its file was edited, or --param "
                "changed it): best against best here is not re-tuned; --tune tunes again",
                highlight=False,
                markup=False,
            )
        record = {"objective": "success_rate", "train_seeds": shipped.train_seeds, "source": "shipped",
                  "command": shipped.command, "matches_world": shipped.matches_world}  # fmt: skip
        return expand_best(policies, shipped.best), shipped.best, record
    base = tune_spec(spec, scenario_ref, errors[0], applied, seeds, options)
    families = check_tune(base)
    per_family = base.trials if base.search != "grid" else 1
    total = len(errors) * len(families) * per_family * len(base.train_seeds)
    with progress_bar(total, "tune", console=stderr_console()) as advance:
        best = tune_each(base, errors, seeds, executor=executor, on_result=lambda _p, _r: advance(1))
    for each, policy in best.items():
        stderr_console().print(f"tuned for {each}: {policy}", highlight=False, markup=False)
    record = {"objective": base.objective, "train_seeds": base.train_seeds, "search": base.search,
              "trials": base.trials}  # fmt: skip
    return expand_best(policies, best), best, record


@dataclass
class TuneJob:
    """``fleetchaos tune``: search policy families and their parameters for one scenario and error format (or several).

    Each field is the command's option of the same name; ``errors`` is one format or several,
    comma-separated (each searched in turn; :meth:`tuned_block` gives the scenario's
    ``tuned:`` block for them); ``tuning`` holds the search's (``--families`` ...
    ``--sampler-seed``), ``seeds`` and ``first_seed`` the held-out seeds.
    """

    scenario: str = "default"
    params: tuple[str, ...] = ()
    errors: str = "generic"
    tuning: TuneOptions = field(default_factory=TuneOptions)
    seeds: int | None = None
    first_seed: int | None = None
    jobs: int | None = None
    scheduler: str | None = None
    confidence: float = 0.95
    report: Path | None = None

    def run(self) -> TuneResult:
        """Check every option, then search on the training seeds and run the winners on the held-out seeds (the
        first format's result; :meth:`run_each` gives every format's)."""
        return self.run_each()[0]

    def run_each(self) -> list[TuneResult]:
        """Each error format's search and held-out figures, in the order given."""
        from fleetchaos.cli.common import split_names
        from fleetchaos.cli.expecting import note_unjudged
        from fleetchaos.cli.progress import progress_bar
        from fleetchaos.names import check_formats
        from fleetchaos.runs.executors import open_executor
        from fleetchaos.runs.tune import check_tune, family_candidates, training_runs_planned, tune

        spec, applied = self._world()
        holdout = seeds_to_run(spec, self.seeds, self.first_seed)
        errors = split_names(self.errors)
        if not errors:
            raise UserError("--errors: give at least one error format")
        check_formats(errors, "--errors")
        searches = [tune_spec(spec, self.scenario, e, applied, holdout, self.tuning, self.confidence) for e in errors]
        total = 0
        for search in searches:
            families = check_tune(search)
            if search.search == "grid":
                planned = sum(len(family_candidates(search, f)) for f in families)
            else:
                planned = len(families) * search.trials
            total += training_runs_planned(search, planned) + len(families) * len(holdout)
        note_unjudged([(self.scenario, spec)], "tune", _echo_err)  # once the options are valid
        make_report_dir(self.report)
        executor = open_executor(self.jobs, self.scheduler)
        results = []
        try:
            with progress_bar(total, "tune", console=stderr_console()) as advance:
                for search in searches:
                    results.append(tune(search, executor=executor, on_result=lambda _phase, _run: advance(1)))
        finally:
            executor.shutdown()
        if self.report is not None:
            from fleetchaos.reports.studies import write_tune_report

            for result in results:
                folder = self.report if len(results) == 1 else self.report / result.errors
                for path in write_tune_report(result, folder):
                    stderr_console().print(f"wrote {path}", highlight=False)
        return results

    def _world(self) -> tuple[Scenario, tuple[tuple[str, Any], ...]]:
        from fleetchaos.scenario.load import load_scenario

        spec = load_scenario(self.scenario)
        return apply_single_params(spec, self.scenario, only_scenario_params(self.params, "tune"), "tune")

    def tuned_block(self, results: Sequence[TuneResult], command: str) -> str:
        """The scenario's ``tuned:`` block (YAML) for ``results``' winners, with ``command`` (this job as a
        ``fleetchaos tune`` command line: :func:`fleetchaos.cli.tuning.command_line`) and the world."""
        spec, _applied = self._world()
        first = self.tuning.first_train_seed
        seeds = range(first, first + self.tuning.train_seeds)
        return tuned_block(spec, command, seeds, {r.errors: r.best for r in results})


def tuned_block(spec: Scenario, command: str, train_seeds: Sequence[int], best: dict[str, str]) -> str:
    """The ``tuned:`` block of a scenario file (YAML) for the policies ``command`` chose on ``train_seeds``."""
    import yaml

    from fleetchaos.runs.best import DEFAULT_REFERENCES
    from fleetchaos.scenario.tuned import world_fingerprint

    def scalar(value: Any) -> str:
        return yaml.safe_dump(value, width=10_000).removesuffix("\n...\n").strip()

    lines = [
        "tuned:",
        f"  command: {scalar(command)}",
        f"  train_seeds: [{', '.join(map(str, train_seeds))}]",
        f"  world: {scalar(world_fingerprint(spec))}",
        "  policies:",
        *(f"    {errors}: {scalar(policy)}" for errors, policy in best.items()),
    ]
    references = [f"{p}/{e}" for p, e in DEFAULT_REFERENCES if e in best]
    if references:
        lines.append(f"  references: [{', '.join(references)}]")
    return "\n".join(lines) + "\n"


def _echo_err(line: str) -> None:

    click.echo(line, err=True)
