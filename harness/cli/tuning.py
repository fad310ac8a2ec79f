"""The ``tune`` command, and the tuning options ``compare --tune`` shares with it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fleetchaos.cli.caching import cache_option
from fleetchaos.cli.common import (
    Confidence,
    apply_single_params,
    fixed_width,
    jobs_option,
    make_report_dir,
    param_option,
    policy_param_options,
    scenario_option,
    scheduler_option,
    seeds_to_run,
    split_names,
    stderr_console,
    stdout_console,
)
from fleetchaos.cli.executing import executor_option
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.runs.tune import TuneSpec
    from fleetchaos.scenario.load import Scenario

__all__ = ["TUNE_OPTIONS", "best_arms", "tune", "tune_options", "tune_spec"]

#: The keyword names the tuning options give a command.
TUNE_OPTIONS = (
    "families",
    "space_file",
    "search",
    "trials",
    "grid_points",
    "train_seeds",
    "first_train_seed",
    "objective",
    "sampler_seed",
    "race",
)


def tune_options(func: Callable) -> Callable:
    """The search options of ``tune`` (and of ``compare --tune``): families, space, search, trials, seeds, objective."""
    options = [
        click.option(
            "--families", help="comma-separated policy families to search [default: every family of the space]"
        ),
        click.option(
            "--space",
            "space_file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="a search space file (YAML/JSON) [default: the built-in space, docs/policies.md]",
        ),
        click.option(
            "--search",
            type=click.Choice(["random", "grid", "tpe"]),
            default="random",
            show_default=True,
            help="seeded random search, a grid, or optuna's seeded TPE sampler (pip install 'fleetchaos[tune]')",
        ),
        click.option(
            "--trials",
            type=click.IntRange(1, 1000),
            default=8,
            show_default=True,
            help="candidates per family, its defaults included (random, tpe)",
        ),
        click.option(
            "--grid-points", type=click.IntRange(1, 20), default=3, show_default=True, help="values per range (grid)"
        ),
        click.option(
            "--train-seeds", type=click.IntRange(1, 1000), default=5, show_default=True, help="number of training seeds"
        ),
        click.option(
            "--first-train-seed",
            type=click.IntRange(0, 2**62),
            default=1_000_001,
            show_default=True,
            help="first training seed (held-out seeds must not overlap)",
        ),
        click.option(
            "--objective",
            default="success_rate",
            show_default=True,
            help="the metric the search optimises (a registry metric with a direction)",
        ),
        click.option("--sampler-seed", type=click.IntRange(0, 2**62), default=0, show_default=True),
        click.option(
            "--race/--no-race",
            default=True,
            show_default=True,
            help="race candidates seed by seed, stopping those already behind (paired); --no-race runs every "
            "candidate on every training seed",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def tune_spec(
    spec: Scenario,
    scenario_ref: str,
    errors: str,
    applied: Sequence[tuple[str, Any]],
    holdout: list[int],
    opts: dict[str, Any],
) -> TuneSpec:
    """A :class:`~fleetchaos.runs.tune.TuneSpec` from the tuning options (``opts``), for one format."""
    from fleetchaos.runs.spaces import DEFAULT_SPACE, load_space
    from fleetchaos.runs.tune import TuneSpec

    space_file = opts.get("space_file")
    first = opts["first_train_seed"]
    return TuneSpec(
        scenario=spec,
        errors=errors,
        scenario_ref=scenario_ref,
        params=tuple(applied),
        space=load_space(space_file) if space_file else DEFAULT_SPACE,
        space_name=str(space_file) if space_file else "default",
        families=split_names(opts["families"]) if opts.get("families") else (),
        search=opts["search"],
        trials=opts["trials"],
        grid_points=opts["grid_points"],
        train_seeds=tuple(range(first, first + opts["train_seeds"])),
        holdout_seeds=tuple(holdout),
        objective=opts["objective"],
        sampler_seed=opts["sampler_seed"],
        confidence=opts.get("confidence", 0.95),
        race=opts.get("race", True),
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
    formats: tuple[str, ...],
    seeds: list[int],
    opts: dict[str, Any],
    executor: Executor,
) -> tuple[tuple[str, ...], TuneSpec, dict[str, str]]:
    """Tune ``best`` for every format; returns (the policies with ``best`` expanded, the base tuning spec, best per format)."""
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.best import expand_best, tune_formats
    from fleetchaos.runs.tune import check_tune

    base = tune_spec(spec, scenario_ref, formats[0], applied, seeds, opts)
    families = check_tune(base)
    per_family = base.trials if base.search != "grid" else 1
    total = len(formats) * len(families) * per_family * len(base.train_seeds)
    with progress_bar(total, "tune", console=stderr_console()) as advance:
        best = tune_formats(base, formats, seeds, executor=executor, on_result=lambda _p, _r: advance(1))
    for errors, policy in best.items():
        stderr_console().print(f"tuned for {errors}: {policy}", highlight=False, markup=False)
    return expand_best(policies, best), base, best


@click.command()
@cache_option
@scenario_option
@param_option
@click.option("--errors", default="generic", show_default=True, help="the error format to tune for")
@tune_options
@click.option("--seeds", type=click.IntRange(1, 10_000), help="held-out seeds [default: the scenario's seeds, else 10]")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first held-out seed [default: 1]")
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path), help="write results.json and summary.md")
def tune(
    scenario: str,
    params: tuple[str, ...],
    errors: str,
    seeds: int | None,
    first_seed: int | None,
    jobs: int | None,
    scheduler: str | None,
    as_json: bool,
    report: Path | None,
    **opts: Any,
) -> None:
    """Search policy families and their parameters for one scenario and error format.

    Every candidate runs on the training seeds only; the best one overall, and each
    family's best, then run on the held-out seeds, and their figures (with intervals) come
    from those alone.  Prints the winner's spec, its figures and the compare command that
    repeats them.  Runs are not stored in the run history.
    """
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.tune import check_tune, family_candidates, training_runs_planned
    from fleetchaos.runs.tune import tune as run_tune
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(scenario)
    spec, applied = apply_single_params(spec, scenario, only_scenario_params(params, "tune"), "tune")
    holdout = seeds_to_run(spec, seeds, first_seed)
    tune_spec_ = tune_spec(spec, scenario, errors, applied, holdout, opts)
    families = check_tune(tune_spec_)
    from fleetchaos.cli.expecting import note_unjudged

    note_unjudged([(scenario, spec)], "tune", lambda line: click.echo(line, err=True))  # once the options are valid
    make_report_dir(report)
    if tune_spec_.search == "grid":
        planned = sum(len(family_candidates(tune_spec_, f)) for f in families)
    else:
        planned = len(families) * tune_spec_.trials
    total = training_runs_planned(tune_spec_, planned) + len(families) * len(holdout)
    executor = open_executor(jobs, scheduler)
    try:
        with progress_bar(total, "tune", console=stderr_console()) as advance:
            result = run_tune(tune_spec_, executor=executor, on_result=lambda _phase, _run: advance(1))
    finally:
        executor.shutdown()
    if report is not None:
        from fleetchaos.reports.studies import write_tune_report

        for path in write_tune_report(result, report):
            stderr_console().print(f"wrote {path}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    from fleetchaos.reports.studies import best_lines, tune_headline, tune_table

    click.echo(tune_headline(result))
    stdout_console().print(tune_table(result, fixed_width()))
    click.echo("\n".join(best_lines(result)))
