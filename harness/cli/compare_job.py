"""What ``fleetchaos compare`` does, callable from Python: every policy on every error format, on the same seeds.

:class:`CompareJob` holds the command's options as fields (their names are the options'
names) and its orchestration once: every check before any run (names, parameters, the
scenario's ``expect:`` arms, the report and trace folders, the history's baseline), the
tuning of ``best`` arms, the history group, the runs with their progress bar, the robustness
study, the report.  The click command parses, builds a job, runs it and renders its
:class:`CompareOutcome`::

    from fleetchaos import CompareJob

    outcome = CompareJob(scenario="default", seeds=4, errors=("generic", "structured")).run()
    outcome.result.arms[0].metrics["success_rate"]
"""

from __future__ import annotations

import atexit
import dataclasses
import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetchaos.cli.common import (
    apply_single_params,
    make_report_dir,
    policies_with_params,
    policy_param_options,
    run_determinism_check,
    seeds_to_run,
    stderr_console,
)
from fleetchaos.cli.expecting import ExpectGates
from fleetchaos.cli.history import HistorySession
from fleetchaos.cli.job_options import HistoryOptions, TuneOptions
from fleetchaos.errors import UserError
from fleetchaos.gates.like import RunsIdentity
from fleetchaos.names import DEFAULT_ERRORS, DEFAULT_POLICIES, check_formats

if TYPE_CHECKING:
    from fleetchaos.results.models import CompareResult
    from fleetchaos.runs.best import Shipped
    from fleetchaos.scenario.load import Scenario
    from fleetchaos.traces.otlp_write import TraceFolder

__all__ = ["CompareJob", "CompareOutcome", "default_arms", "print_traces", "reference_arms", "trace_folder"]


def default_arms(
    spec: Scenario,
    policies: tuple[str, ...] | None,
    errors: tuple[str, ...] | None,
    tune: bool,
    tweaked: bool = False,
    quiet: bool = False,
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """``compare``'s policies and error formats from its options: (policies, formats, whether best against best's
    layout).

    Without ``policies``, best against best (:func:`fleetchaos.runs.best.headline_arms`) when
    ``tune`` is set, or when the scenario (``spec``, its ``--param`` values applied) ships
    policies tuned for this very world for every format compared; its formats default to the
    scenario's tuned ones, else (``tune``) :data:`~fleetchaos.runs.best.DEFAULT_TUNE_FORMATS`.
    Otherwise the default arms (also when ``tweaked``: ``--param policy.*`` sets their
    parameters), with ``best`` added to the policies given when ``tune`` is.  A block tuned for
    another world is said so on stderr, unless ``quiet``.
    """
    from fleetchaos.runs.best import BEST, DEFAULT_TUNE_FORMATS
    from fleetchaos.scenario.tuned import world_fingerprint

    shipped = spec.tuned.policies if spec.tuned is not None else {}
    if policies is None:
        wanted = errors if errors is not None else tuple(shipped) or (DEFAULT_TUNE_FORMATS if tune else ())
        covered = bool(shipped) and bool(wanted) and all(e in shipped for e in wanted) and not tweaked
        current = spec.tuned is not None and spec.tuned.world == world_fingerprint(spec)
        if tune or (covered and current):
            return (BEST,), wanted, True
        if covered and not quiet:
            stderr_console().print(
                "note: the scenario's tuned: block was tuned for another world (its file was edited, or --param "
                "changed it), so this compares the default arms; --tune tunes best against best for this world, "
                "--policies best runs the block's policies anyway",
                highlight=False,
                markup=False,
            )
        return DEFAULT_POLICIES, errors if errors is not None else DEFAULT_ERRORS, False
    if tune and BEST not in policies:
        policies = (*policies, BEST)
    return policies, errors if errors is not None else DEFAULT_ERRORS, False


def reference_arms(spec: Scenario, errors: tuple[str, ...]) -> list[tuple[str, str]]:
    """The weak reference arms best against best shows: the scenario's ``tuned.references``, else the default
    ones on the formats compared (:data:`~fleetchaos.runs.best.DEFAULT_REFERENCES`)."""
    from fleetchaos.runs.best import DEFAULT_REFERENCES

    if spec.tuned is not None and spec.tuned.references:
        return spec.tuned.reference_arms()
    return [(p, e) for p, e in DEFAULT_REFERENCES if e in errors]


def trace_folder(folder: Path | None, spec: Scenario) -> TraceFolder | None:
    """The ``--traces`` folder as a writer of OTLP JSON files, or None without the option."""
    if folder is None:
        return None
    from fleetchaos.traces.otlp_write import TraceFolder

    return TraceFolder(folder, spec.name)


def print_traces(traces: TraceFolder | None, quiet: bool = False) -> None:
    """Name on stderr each trace file written (unless ``quiet``)."""
    for summary in [] if traces is None or quiet else traces.written:
        stderr_console().print(
            f"wrote {summary.path} ({summary.traces} traces, {summary.spans} spans, OTLP JSON)", highlight=False
        )


@dataclass
class CompareOutcome:
    """What a comparison gives its caller: the result, its seeds, and the two gates still to be told."""

    result: CompareResult
    seeds: list[int]
    expect: ExpectGates
    session: HistorySession

    def gate(self, echo: Callable[[str], None]) -> int:
        """Print the scenario's gates' verdicts, then the baseline's; the exit code they call for (0, or 1)."""
        return max(self.expect.gate(echo), self.session.gate(echo))


@dataclass
class CompareJob:
    """``fleetchaos compare``: every policy on every error format, on the same seeds (the same faults).

    Each field is the command's option of the same name.  ``policies`` None is best against
    best when the scenario ships tuned policies for this world (its ``tuned:`` block) or with
    ``tune``, else :data:`~fleetchaos.names.DEFAULT_POLICIES` (:func:`default_arms`);
    ``errors`` None the tuned formats, else :data:`~fleetchaos.names.DEFAULT_ERRORS`.  ``best``
    in ``policies`` is each format's shipped policy, or (``tune``) one tuned now by ``tuning``.  ``report`` and ``traces`` are folders;
    ``history`` the run history and regression gate.
    """

    scenario: str = "default"
    params: tuple[str, ...] = ()
    seeds: int | None = None
    first_seed: int | None = None
    policies: tuple[str, ...] | None = None
    errors: tuple[str, ...] | None = None
    tune: bool = False
    tuning: TuneOptions = field(default_factory=TuneOptions)
    jobs: int | None = None
    scheduler: str | None = None
    confidence: float = 0.95
    report: Path | None = None
    time_limit: float | None = None
    robustness_seeds: int | None = None
    traces: Path | None = None
    check_determinism: bool = False
    resume: bool = False
    expect: bool = True
    history: HistoryOptions = field(default_factory=HistoryOptions)
    quiet: bool = False

    def run(self) -> CompareOutcome | None:
        """Check every option, then run the comparison (None after ``check_determinism``, which only checks)."""
        from fleetchaos.cli.chart_pool import runs_fill_cores, warm_chart_workers
        from fleetchaos.runs.best import BEST
        from fleetchaos.scenario.load import check_rows_fit, load_scenario

        charts = None if self.check_determinism else self.report
        # matplotlib loads meanwhile: in a forkserver, or here once the runs' workers are started
        # when they fill every core (chart_pool.py says why).
        busy = charts is not None and runs_fill_cores(self.jobs, self.scheduler)
        warm: bool | threading.Thread = warm_chart_workers(None if busy else charts, self.jobs)
        from fleetchaos.runs.best import shipped_best

        spec = load_scenario(self.scenario)
        scenario_params, policy_params = policy_param_options(self.params, "compare")
        spec, applied = apply_single_params(spec, self.scenario, scenario_params, "compare")
        policies, errors, headline = default_arms(
            spec, self.policies, self.errors, self.tune, bool(policy_params), self.quiet
        )
        tuning = BEST in policies
        typed = policies  # as typed: an expect: gate may name an arm so
        if not policies:
            raise UserError("--policies: give at least one policy")
        if not errors:
            raise UserError("--errors: give at least one error format")
        if tuning and policy_params:
            raise UserError("--param policy.*: with 'best' arms, give parameters in each named policy's spec instead")
        named = tuple(p for p in policies if p != BEST)
        named = policies_with_params(named, policy_params, "--policies") if named else ()
        policies = tuple(BEST if p == BEST else named[sum(q != BEST for q in policies[:i])]
                         for i, p in enumerate(policies))  # fmt: skip
        check_formats(errors, "--errors")
        shipped = shipped_best(spec, errors) if tuning and not self.tune else None
        references = reference_arms(spec, errors) if headline else []
        typed_arms = [(t, p, e) for t, p in zip(typed, policies) for e in errors] + [(p, p, e) for p, e in references]
        expect = ExpectGates(spec, self.scenario, typed_arms,
                             hint="add its policy to --policies and its format to --errors",
                             skip=not self.expect or self.check_determinism,
                             allow_policy_errors=self.history.allow_policy_errors)  # fmt: skip
        if self.report is not None or self.check_determinism:
            check_rows_fit(spec, "--report" if self.report is not None else "--check-determinism")
        make_report_dir(self.report)
        make_report_dir(self.traces, "--traces")
        seeds = seeds_to_run(spec, self.seeds, self.first_seed)
        if self.robustness_seeds is not None and self.check_determinism:
            raise UserError("--robustness with --check-determinism: check determinism on its own, then compare")
        searching = tuning and shipped is None
        if self.check_determinism and searching:
            raise UserError("--check-determinism with --tune: tune first, then check the tuned specs by name")
        self._check_resume(searching)
        if shipped is not None:
            shipped.check_seeds(seeds)
        best = _Best(shipped, references, headline)
        return _Comparison(self, spec, applied, (policies, errors), seeds, expect, busy, warm, best).run()

    def _check_resume(self, tuning: bool) -> None:
        """Refuse ``resume`` where there is nothing to resume from (before anything runs)."""
        if not self.resume:
            return
        if self.history.no_history:
            raise UserError("--resume reads the run history: drop --no-history")
        if self.check_determinism:
            raise UserError("--resume with --check-determinism: the check stores nothing to resume; drop one of them")
        if tuning:
            raise UserError(
                "--resume with --tune: the tuning is not stored, so it would run again; tune once (`fleetchaos tune`), "
                "then compare the tuned specs by name with --resume"
            )


@dataclass
class _Best:
    """Best against best's plan: the scenario's shipped bests (None: tuned now), the reference arms, the layout."""

    shipped: Shipped | None
    references: list[tuple[str, str]]
    headline: bool


class _Comparison:
    """One comparison once its options are checked: tuning, the history group, the runs, the report."""

    def __init__(self, job: CompareJob, spec: Scenario, applied: tuple, arms: tuple[tuple[str, ...], tuple[str, ...]],
                 seeds: list[int], expect: ExpectGates, busy: bool, warm: bool | threading.Thread,
                 best: _Best):  # fmt: skip
        self.job, self.spec, self.applied, self.seeds = job, spec, applied, seeds
        self.policies, self.errors = arms
        self.expect, self.busy, self.warm, self.plan = expect, busy, warm, best
        self.traces: TraceFolder | None = None
        self.arms: list[tuple[str, str]] | None = None  # best against best's layout, else every policy on every format

    def run(self) -> CompareOutcome | None:
        from fleetchaos.runs.best import BEST
        from fleetchaos.runs.executors import open_executor

        job, spec = self.job, self.spec
        record = best = tune_executor = None
        if BEST in self.policies:
            from fleetchaos.cli.tune_job import best_arms
            from fleetchaos.runs.best import headline_arms

            tune_executor = open_executor(job.jobs, job.scheduler)  # kept for the comparison's own runs
            try:
                self.policies, best, record = best_arms(spec, job.scenario, self.applied, self.policies, self.errors,
                                                        self.seeds, job.tuning, tune_executor,
                                                        self.plan.shipped)  # fmt: skip
            except BaseException:
                tune_executor.shutdown()
                raise
            if self.plan.headline:
                self.arms = headline_arms(best, self.plan.references)
        arms = self.arms if self.arms is not None else [(p, e) for p in self.policies for e in self.errors]
        if job.check_determinism:
            if tune_executor is not None:
                tune_executor.shutdown()
            run_determinism_check(spec, job.scenario, arms, self.seeds)
            return None
        session = HistorySession(**dataclasses.asdict(job.history))
        try:
            session.plan(
                RunsIdentity.of(spec.model_dump(mode="json"), self.applied), arms, self.seeds
            )  # an unlike baseline: refused before any run
        except BaseException:
            if tune_executor is not None:  # the tuning's workers stop with the command, not at interpreter exit
                tune_executor.shutdown()
            raise
        # Connect (or start the local workers) before touching the history, so a cluster that
        # cannot be reached leaves no group behind.
        executor = tune_executor if tune_executor is not None else open_executor(job.jobs, job.scheduler)
        if self.busy:
            from fleetchaos.cli.chart_pool import preload_charts

            self.warm = preload_charts()  # the runs' workers are forked: this process may run a second thread
        tasks_csv = done = None
        try:
            tasks_csv, done = self._open_group(session, arms, best)
        except BaseException:
            executor.shutdown()
            session.finish("failed")
            raise
        result = self._compare(session, executor, tasks_csv, done, record, best)
        self.expect.judge_compare(result)
        if job.report is not None:
            self._write_report(result, tasks_csv)
        print_traces(self.traces, job.quiet)
        return CompareOutcome(result, self.seeds, self.expect, session)

    def _open_group(self, session: HistorySession, arms: list[tuple[str, str]], best: dict[str, str] | None):
        """The streamed tasks.csv (with a report) and the runs a resumed group already holds."""
        from fleetchaos.runs.runner import versions

        job = self.job
        tasks_csv = None
        if job.report is not None:
            from fleetchaos.reports import TaskCsvWriter

            tasks_csv = TaskCsvWriter(job.report / "tasks.csv", arms)
        meta: dict[str, Any] = {"scenario_ref": job.scenario, "policies": list(self.policies),
                                "errors": list(self.errors), "seeds": self.seeds, "confidence": job.confidence,
                                "versions": versions()}  # fmt: skip
        if self.applied:
            meta["params"] = dict(self.applied)
        if best is not None:
            meta["tuned"] = dict(best)
        if self.arms is not None:
            meta["arms"] = [list(arm) for arm in self.arms]
        done = self._start(session, meta)
        if done and tasks_csv is not None:  # stored runs keep no per-task rows: a partial tasks.csv would mislead
            tasks_csv.abort()
            tasks_csv.partial.unlink(missing_ok=True)
            why = f"{len(done)} runs come from the history, which keeps no per-task rows"
            stderr_console().print(
                f"{tasks_csv.path} is not written: {why}; compare without --resume for it",
                markup=False,
                highlight=False,
            )
            tasks_csv = None
        return tasks_csv, done

    def _start(self, session: HistorySession, meta: dict[str, Any]) -> dict:
        """Open the comparison's history group (with ``resume``, continue its newest stored one).

        Returns the runs already stored, by (policy, error format, seed), for
        :func:`fleetchaos.runs.runner.compare`'s ``done``; says on stderr what is resumed.
        """
        from fleetchaos.runs.compare_resume import COMPARE_ID, compare_id, compare_jobs

        job = self.job
        arms = (self.spec, self.policies, self.errors, self.seeds, self.applied, self.arms)
        meta = {**meta, COMPARE_ID: compare_id(*arms)}
        jobs = compare_jobs(*arms)
        stored = session.start("compare", self.spec, meta, resume_by=COMPARE_ID if job.resume else None, wanted=jobs)
        if job.resume:
            where = session.where()
            said = (
                f"resuming comparison {meta[COMPARE_ID]} ({where}): {len(stored)} of {len(jobs)} runs already stored"
                if stored
                else f"nothing of this comparison is stored in {session.path} yet: running all {len(jobs)} runs"
            )
            stderr_console().print(said, markup=False, highlight=False)
        return {jobs[key]: result for key, result in stored.items()}

    def _compare(self, session: HistorySession, executor, tasks_csv, done, record, best) -> CompareResult:
        """The runs (with a progress bar), then the tuning record and the robustness study; the group's status."""
        from fleetchaos.cli.progress import progress_bar
        from fleetchaos.runs.runner import compare

        job = self.job

        def on_run(run) -> None:
            if tasks_csv is not None:
                tasks_csv.add(run)
            session.add(run)
            advance(1)

        status = "failed"
        self.traces = traces = trace_folder(job.traces, self.spec)
        try:
            pairs = self.arms if self.arms is not None else [(p, e) for p in self.policies for e in self.errors]
            total = len(self.seeds) * len(pairs) - len(done)
            with progress_bar(total, "compare", console=stderr_console(), show=not job.quiet) as advance:
                result = compare(
                    self.spec, self.seeds, policies=self.policies, errors=self.errors, arms=self.arms,
                    confidence=job.confidence,
                    scenario_ref=job.scenario, executor=executor, on_result=on_run, task_csv=job.report is not None,
                    trace=job.report is not None or traces is not None,
                    on_trace=None if traces is None else traces.write, params=self.applied,
                    time_limit_s=job.time_limit, done=done,
                )  # fmt: skip
            if record is not None and best is not None:
                from fleetchaos.results.studies import TunedCompareResult
                from fleetchaos.runs.best import tuning_record, with_aliases

                result = TunedCompareResult(
                    **dict(with_aliases(result, best)), tuning=tuning_record(result, best, **record)
                )
            if job.robustness_seeds is not None:
                result = self._robustness(result, executor)
            status = "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            where = session.where()
            if where is not None:
                kept = f"kept the {session.finished + session.restored} finished runs in {where}"
                stderr_console().print(f"{kept}; the same command with --resume finishes it", markup=False,
                                       highlight=False)  # fmt: skip
            raise
        finally:
            executor.shutdown()
            session.finish(status)
            if tasks_csv is not None and status != "complete":
                tasks_csv.abort()
        return result

    def _robustness(self, result: CompareResult, executor) -> CompareResult:
        """``robustness_seeds``: best against best under every assumption, else the two leading arms' flips."""
        from fleetchaos.results.studies import TunedCompareResult

        job = self.job
        assert job.robustness_seeds is not None  # only called with it
        if isinstance(result, TunedCompareResult):
            from fleetchaos.cli.best_study import with_study

            return with_study(result, self.spec, job.scenario, job.tuning, self.seeds[0], job.robustness_seeds,
                              executor)  # fmt: skip
        from fleetchaos.cli.robustness_job import with_flips

        return with_flips(result, self.spec, job.scenario, self.seeds[0], job.robustness_seeds, executor,
                          job.confidence)  # fmt: skip

    def _write_report(self, result: CompareResult, tasks_csv) -> None:
        """The report folder: the chart workers draw while a thread here puts tasks.csv together."""
        from concurrent.futures import ThreadPoolExecutor

        from fleetchaos.cli.chart_pool import chart_pool
        from fleetchaos.reports import write_compare_report

        job = self.job
        assert job.report is not None  # only called with a report
        csv_path = tasks_csv.path if tasks_csv is not None and tasks_csv.rows else None
        pool = chart_pool(job.jobs, self.warm)
        with ThreadPoolExecutor(1, thread_name_prefix="fleetchaos-tasks-csv") as side:
            closing = side.submit(tasks_csv.close) if tasks_csv is not None else None
            try:
                written = write_compare_report(result, job.report, tasks_csv=csv_path, executor=pool)
            finally:
                if pool is not None:
                    pool.shutdown()
            if closing is not None:
                closing.result()
        # Everything is written.  The collector's last passes when the interpreter exits would
        # walk every object the report left (the results, matplotlib's caches): 0.2 s for
        # nothing, since they die with the process.  Frozen at exit, they are skipped.
        atexit.register(gc.freeze)
        for path in [] if job.quiet else written:
            stderr_console().print(f"wrote {path}", highlight=False)
