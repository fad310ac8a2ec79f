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
    from fleetchaos.runs.best import Shipped
    from fleetchaos.runs.tune import TuneSpec
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "TUNE_OPTIONS",
    "best_arms",
    "default_arms",
    "recorded_options",
    "reference_arms",
    "tune",
    "tune_options",
    "tune_spec",
    "tuned_block",
]

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


def default_arms(
    spec: Scenario, policies: str | None, formats: str | None, tune: bool, tweaked: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """``compare``'s policies and formats from its options: (policies, formats, whether best against best's layout).

    Without ``--policies``, best against best (:func:`fleetchaos.runs.best.headline_arms`) when
    ``--tune`` is given, or when the scenario (``spec``, its ``--param`` values applied) ships
    policies tuned for this very world for every format compared; its formats default to the
    scenario's tuned ones, else (``--tune``) :data:`~fleetchaos.runs.best.DEFAULT_TUNE_FORMATS`.
    Otherwise the built-in arms (also when ``tweaked``: ``--param policy.*`` sets their
    parameters), with ``best`` added to the policies given when ``--tune`` is.
    """
    from fleetchaos.runs.best import BEST, DEFAULT_TUNE_FORMATS
    from fleetchaos.runs.runner import BUILTIN_FORMATS as DEFAULT_ERRORS
    from fleetchaos.runs.runner import BUILTIN_POLICIES as DEFAULT_POLICIES
    from fleetchaos.scenario.tuned import world_fingerprint

    shipped = spec.tuned.policies if spec.tuned is not None else {}
    format_names = split_names(formats) if formats is not None else ()
    if policies is None:
        wanted = format_names or tuple(shipped) or (DEFAULT_TUNE_FORMATS if tune else ())
        covered = bool(shipped) and all(f in shipped for f in wanted) and not tweaked
        current = spec.tuned is not None and spec.tuned.world == world_fingerprint(spec)
        if tune or (covered and current):
            return (BEST,), wanted, True
        if covered:
            stderr_console().print(
                "note: the scenario's tuned: block was tuned for another world (its file was edited, or --param "
                "changed it), so this compares the built-in arms; --tune tunes best against best for this world, "
                "--policies best runs the block's policies anyway",
                highlight=False,
                markup=False,
            )
        return DEFAULT_POLICIES, format_names or DEFAULT_ERRORS, False
    policy_names = split_names(policies)
    if tune and BEST not in policy_names:
        policy_names = (*policy_names, BEST)
    return policy_names, format_names or DEFAULT_ERRORS, False


def reference_arms(spec: Scenario, formats: Sequence[str]) -> list[tuple[str, str]]:
    """The weak reference arms best against best shows: the scenario's ``tuned.references``, else the default
    ones on formats compared (:data:`~fleetchaos.runs.best.DEFAULT_REFERENCES`)."""
    from fleetchaos.runs.best import DEFAULT_REFERENCES

    if spec.tuned is not None and spec.tuned.references:
        return spec.tuned.reference_arms()
    return [(p, e) for p, e in DEFAULT_REFERENCES if e in formats]


def best_arms(
    spec: Scenario,
    scenario_ref: str,
    applied: Sequence[tuple[str, Any]],
    policies: tuple[str, ...],
    formats: tuple[str, ...],
    seeds: list[int],
    opts: dict[str, Any],
    executor: Executor,
    shipped: Shipped | None = None,
) -> tuple[tuple[str, ...], dict[str, str], dict[str, Any]]:
    """``best`` for every format: shipped, or tuned now; returns (the policies with ``best`` expanded, best per
    format, the tuning record's fields for :func:`~fleetchaos.runs.best.tuning_record`)."""
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.runs.best import expand_best, tune_formats
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
    base = tune_spec(spec, scenario_ref, formats[0], applied, seeds, opts)
    families = check_tune(base)
    per_family = base.trials if base.search != "grid" else 1
    total = len(formats) * len(families) * per_family * len(base.train_seeds)
    with progress_bar(total, "tune", console=stderr_console()) as advance:
        best = tune_formats(base, formats, seeds, executor=executor, on_result=lambda _p, _r: advance(1))
    for errors, policy in best.items():
        stderr_console().print(f"tuned for {errors}: {policy}", highlight=False, markup=False)
    record = {"objective": base.objective, "train_seeds": base.train_seeds, "search": base.search,
              "trials": base.trials}  # fmt: skip
    return expand_best(policies, best), best, record


@click.command()
@cache_option
@scenario_option
@param_option
@click.option(
    "--errors",
    default="generic",
    show_default=True,
    help="the error format to tune for; several, comma-separated, are tuned one after another and give the "
    "scenario's tuned: block",
)
@tune_options
@click.option("--seeds", type=click.IntRange(1, 10_000), help="held-out seeds [default: the scenario's seeds, else 10]")
@click.option("--first-seed", type=click.IntRange(0, 2**62), help="first held-out seed [default: 1]")
@jobs_option
@scheduler_option
@executor_option
@click.option("--confidence", default=0.95, show_default=True, type=Confidence(0.5, 0.999))
@click.option("--json", "as_json", is_flag=True, help="print one JSON document (a list of them for several formats)")
@click.option(
    "--report",
    type=click.Path(file_okay=False, path_type=Path),
    help="write results.json and summary.md (a folder per format for several)",
)
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
    """Search policy families and their parameters for one scenario and error format (or several).

    Every candidate runs on the training seeds only; the best one overall, and each
    family's best, then run on the held-out seeds, and their figures (with intervals) come
    from those alone.  Prints the winner's spec, its figures and the compare command that
    repeats them, then the scenario's tuned: block (each format's winner, this command and
    the world's fingerprint), which makes them compare's best against best.  Runs are not
    stored in the run history.
    """
    from fleetchaos.cli.progress import progress_bar
    from fleetchaos.names import check_formats
    from fleetchaos.runs.executors import open_executor
    from fleetchaos.runs.tune import check_tune, family_candidates, training_runs_planned
    from fleetchaos.runs.tune import tune as run_tune
    from fleetchaos.scenario.load import load_scenario

    command = _command_line(click.get_current_context())
    spec = load_scenario(scenario)
    spec, applied = apply_single_params(spec, scenario, only_scenario_params(params, "tune"), "tune")
    holdout = seeds_to_run(spec, seeds, first_seed)
    formats = split_names(errors)
    if not formats:
        raise UserError("--errors: give at least one error format")
    check_formats(formats, "--errors")
    specs = [tune_spec(spec, scenario, e, applied, holdout, opts) for e in formats]
    total = 0
    for one in specs:
        families = check_tune(one)
        if one.search == "grid":
            planned = sum(len(family_candidates(one, f)) for f in families)
        else:
            planned = len(families) * one.trials
        total += training_runs_planned(one, planned) + len(families) * len(holdout)
    from fleetchaos.cli.expecting import note_unjudged

    note_unjudged([(scenario, spec)], "tune", lambda line: click.echo(line, err=True))  # once the options are valid
    make_report_dir(report)
    executor = open_executor(jobs, scheduler)
    results = []
    try:
        with progress_bar(total, "tune", console=stderr_console()) as advance:
            for one in specs:
                results.append(run_tune(one, executor=executor, on_result=lambda _phase, _run: advance(1)))
    finally:
        executor.shutdown()
    if report is not None:
        from fleetchaos.reports.studies import write_tune_report

        for result in results:
            folder = report if len(results) == 1 else report / result.errors
            for path in write_tune_report(result, folder):
                stderr_console().print(f"wrote {path}", highlight=False)
    if as_json:
        docs = [r.model_dump_json(indent=2) for r in results]
        click.echo(docs[0] if len(docs) == 1 else "[\n" + ",\n".join(docs) + "\n]")
        return
    from fleetchaos.reports.studies import best_lines, tune_headline, tune_table

    for result in results:
        click.echo(tune_headline(result))
        stdout_console().print(tune_table(result, fixed_width()))
        click.echo("\n".join(best_lines(result)))
        click.echo("")
    click.echo("the scenario's tuned: block (compare runs best against best from it):")
    click.echo(tuned_block(spec, command, specs[0].train_seeds, {r.errors: r.best for r in results}))


#: The options of ``tune`` that decide its winners (the held-out seeds, jobs and outputs do not).
_DECIDING = ("scenario", "params", "errors", *TUNE_OPTIONS)


def _command_line(ctx: click.Context) -> str:
    """The ``fleetchaos tune`` command with every option that decides its winners, as given (defaults left out)."""
    import shlex

    words = ["fleetchaos", "tune"]
    for param in ctx.command.params:
        name = param.name
        if name not in _DECIDING or not isinstance(param, click.Option):
            continue
        source = ctx.get_parameter_source(name)
        value = ctx.params.get(name)
        if (source is None or source.name == "DEFAULT" or value is None) and name != "scenario":
            continue
        flag = max(param.opts, key=len)
        if param.is_flag:
            words.append(flag if value else max(param.secondary_opts, key=len))
        elif param.multiple:
            for item in value or ():
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def recorded_options(command: str) -> dict[str, Any] | None:
    """The tuning options of a recorded ``fleetchaos tune`` command (a ``tuned:`` block's), or None if it does not
    parse as one."""
    import shlex

    words = shlex.split(command)
    if words[:2] != ["fleetchaos", "tune"]:
        return None
    try:
        ctx = tune.make_context("tune", words[2:], resilient_parsing=False)
    except (click.ClickException, click.exceptions.Exit):
        return None
    return {name: ctx.params[name] for name in TUNE_OPTIONS}


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
