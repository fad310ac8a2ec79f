"""What ``fleetchaos sweep`` does, callable from Python: every arm over scenarios, parameter grids and seeds.

:class:`SweepJob` holds the command's options as fields and its orchestration once: the
sweep file merged with the options, the plan (every scenario loaded and every grid point
applied before any run), the history group (resumed by the sweep's id), the runs with their
progress bar, the report.  The click command parses, builds a job, runs it and renders its
result.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetchaos.cli.common import echo_err, make_report_dir, run_determinism_check, stderr_console
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.results.models import SweepResult
    from fleetchaos.runs.sweep import SweepPlan, SweepSpec

__all__ = ["SweepJob"]


@dataclass
class SweepJob:
    """``fleetchaos sweep``: every policy on every error format over scenarios, parameter grids and seeds.

    Each field is the command's option of the same name; None leaves the value to the sweep
    ``file`` (or its default).  ``params`` are ``PATH=V1,V2,...`` options, each a dimension
    of the grid (replacing the file's for the same path).
    """

    file: Path | None = None
    scenarios: tuple[str, ...] | None = None
    params: tuple[str, ...] = ()
    seeds: int | None = None
    first_seed: int | None = None
    policies: tuple[str, ...] | None = None
    errors: tuple[str, ...] | None = None
    metric: str | None = None
    x: str | None = None
    jobs: int | None = None
    scheduler: str | None = None
    confidence: float | None = None
    report: Path | None = None
    time_limit: float | None = None
    history_path: Path | None = None
    no_history: bool = False
    resume: bool = False
    check_determinism: bool = False
    quiet: bool = False

    def spec(self) -> SweepSpec:
        """The sweep file (if any) with these options over it, validated."""
        from pydantic import ValidationError

        from fleetchaos.runs.sweep import SweepSpec, load_sweep_file
        from fleetchaos.scenario.params import parse_param_option

        base = load_sweep_file(self.file).model_dump(exclude_unset=True) if self.file else {}
        overrides: dict[str, Any] = {}
        for key, names in (("scenarios", self.scenarios), ("policies", self.policies), ("errors", self.errors)):
            if names is not None:
                overrides[key] = list(names)
        for key, value in (("seeds", self.seeds), ("first_seed", self.first_seed), ("metric", self.metric),
                           ("x", self.x), ("confidence", self.confidence)):  # fmt: skip
            if value is not None:
                overrides[key] = value
        grid = dict(base.get("params", {}))
        given = set()
        for option in self.params:
            path, values = parse_param_option(option)
            if path in given:
                raise UserError(f"--param {path}: given twice; put every value in one --param {path}=V1,V2,...")
            given.add(path)
            grid[path] = values
        for key, what in (("scenarios", "--scenario"), ("policies", "--policies"), ("errors", "--errors")):
            if key in overrides and not overrides[key]:
                raise UserError(f"{what}: give at least one")
        try:
            return SweepSpec.model_validate({**base, **overrides, "params": grid})
        except ValidationError as exc:
            from fleetchaos.scenario.load import format_validation_error

            source = f"{self.file} with the command line's options" if self.file else "sweep options"
            raise UserError(format_validation_error(source, exc)) from None

    def run(self) -> SweepResult | None:
        """Check every option and plan every run, then run the sweep (None after ``check_determinism``)."""
        from fleetchaos.cli.chart_pool import warm_chart_workers
        from fleetchaos.runs.sweep import plan_sweep

        warm = warm_chart_workers(None if self.check_determinism else self.report, self.jobs)  # matplotlib loads
        spec = self.spec()
        if self.resume and self.no_history:
            raise UserError("--resume reads the run history: drop --no-history")
        plan = plan_sweep(spec)
        if self.time_limit is not None:
            plan.variants[:] = [replace(v, time_limit_s=self.time_limit) for v in plan.variants]
        make_report_dir(self.report)
        if not self.quiet:
            from fleetchaos.cli.expecting import note_unjudged

            note_unjudged([(v.ref or v.scenario.name, v.scenario) for v in plan.variants], "sweep", echo_err,
                          swept=True)  # fmt: skip
        if self.check_determinism:
            _check_determinism(plan)
            return None
        result = self._run(plan)
        if self.report is not None:
            from fleetchaos.cli.chart_pool import chart_pool
            from fleetchaos.reports.sweep import write_sweep_report

            pool = chart_pool(self.jobs, warm)  # the curves are drawn side by side
            try:
                written = write_sweep_report(result, self.report, pool)
            finally:
                if pool is not None:
                    pool.shutdown()
            for file in [] if self.quiet else written:
                stderr_console().print(f"wrote {file}", highlight=False)
        return result

    def _run(self, plan: SweepPlan) -> SweepResult:
        """The runs the history does not hold yet, each stored as it finishes, with a progress bar."""
        from fleetchaos.cli.progress import progress_bar
        from fleetchaos.runs.executors import open_executor
        from fleetchaos.runs.sweep import open_group, run_sweep

        err = stderr_console()
        # Connect (or start the local workers) before touching the history, so a cluster that
        # cannot be reached leaves no empty group behind.
        executor = open_executor(self.jobs, self.scheduler)
        store = group_id = None
        done: dict = {}
        if not self.no_history:
            from fleetchaos.gates import history

            try:
                store = history.open_store(self.history_path)
                group_id, done = open_group(store, plan, resume=self.resume)
            except BaseException:
                executor.shutdown()
                raise
            if self.resume and not self.quiet:
                err.print(
                    f"resuming sweep {plan.sweep_id} (history group #{group_id}): "
                    f"{len(done)} of {len(plan.keys)} runs already stored in {store.path}"
                    if done
                    else f"nothing of this sweep is stored in {store.path} yet: running all {len(plan.keys)} runs",
                    highlight=False,
                )
        todo = len(plan.keys) - len(done)
        finished = 0

        def on_result(_key, result) -> None:
            nonlocal finished
            if store is not None and group_id is not None:  # (opened together)
                store.add_run(group_id, result)
            finished += 1
            advance(1)

        status = "failed"
        try:
            with progress_bar(todo, "sweep", console=err, show=not self.quiet) as advance:
                result = run_sweep(plan, executor=executor, on_result=on_result, done=done)
            status = "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            kept = (
                f"; they are stored in {store.path}: run the same command with --resume to finish"
                if store is not None
                else "; nothing was kept (--no-history)"
            )
            err.print(f"interrupted: {finished} of {todo} runs finished{kept}", highlight=False)
            raise  # the command line's handler exits 130 (Ctrl-C) or 143 (SIGTERM)
        finally:
            executor.shutdown()
            if store is not None and group_id is not None:
                store.finish_group(group_id, status)
                store.close()
        return result


def _check_determinism(plan: SweepPlan) -> None:
    """``--check-determinism``: every run of the plan twice, traced; exit 1 naming a run that differs."""
    from fleetchaos.runs.replay import replay_command
    from fleetchaos.scenario.load import check_rows_fit

    for variant in plan.variants:
        check_rows_fit(variant.scenario, "--check-determinism")
    runs = []
    for job in plan.jobs:
        variant = plan.variants[job.variant]
        ref = variant.ref or variant.scenario.name
        policy = variant.policy_spec(job.policy)
        replay = replay_command(ref, policy, job.errors, job.seed, variant.scenario_params,
                                    gated=bool(variant.scenario.expect))  # fmt: skip
        runs.append((variant.scenario, policy, job.errors, job.seed, replay))
    run_determinism_check(None, "", [], [], runs=runs)
