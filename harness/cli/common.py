"""What every command shares: exit codes, consoles, common options, input checks, and error handling.

Data goes to stdout, messages to stderr.  Exit codes: 0 ok, 1 a gate failed, 2 invalid input or usage, 3 internal
error (or a full disk), 4 a run outlived its wall-clock limit, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
:class:`ErrorHandlingGroup` turns a :class:`~fleetchaos.errors.UserError` into one message and exit 2, and anything else into 3.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from fleetchaos.cli.pools import pools_stopped_on_error
from fleetchaos.errors import UserError

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "EXIT_TIME_LIMIT",
    "EXIT_USAGE",
    "PIPE_WIDTH",
    "Confidence",
    "DataConsole",
    "ErrorHandlingGroup",
    "TerminalConsole",
    "apply_single_params",
    "columns_option",
    "determinism_option",
    "echo_err",
    "fixed_width",
    "jobs_option",
    "make_report_dir",
    "nonempty_path",
    "output_width",
    "param_option",
    "policies_with_params",
    "policy_param_options",
    "quiet_option",
    "report_option",
    "run_determinism_check",
    "run_determinism_option",
    "scenario_option",
    "scheduler_option",
    "seeds_to_run",
    "single_param_option",
    "split_names",
    "stderr_console",
    "stdout_console",
    "time_limit_option",
    "traces_option",
]

EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_TIME_LIMIT = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Confidence(click.FloatRange):
    """A confidence level in [0.5, 0.999]; unlike click.FloatRange it refuses nan (which passes every bound)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """The float, or a usage error naming the option."""
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"{value!r} is not a number in the range 0.5<=x<=0.999.", param, ctx)
        return number


#: The least width of data tables written to a pipe or a file (not a terminal): the same on
#: every machine, so piped output is stable; a wider table widens it (:class:`DataConsole`).
PIPE_WIDTH = 160


def _interactive() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdout
        return False


def _columns_env() -> int | None:
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def output_width(pipe_width: int = PIPE_WIDTH) -> int:
    """The width stdout's tables are laid out in.

    ``COLUMNS`` when it is set to a positive number (the user's or the shell's choice, in a
    pipe too); else the terminal's width when stdout is one; else ``pipe_width``, so output
    piped into a file or another program never depends on the terminal it was started from.
    """
    columns = _columns_env()
    if columns is not None:
        return columns
    if _interactive():
        return shutil.get_terminal_size((pipe_width, 24)).columns
    return pipe_width


class TerminalConsole(Console):
    """A Rich console that writes out every character a terminal would act on (:func:`~fleetchaos.escaping.terminal_text`).

    Rich prints the escape character as it is: a scenario name, a label, a policy's repr or a
    results file's text holding ``\x1b[2J`` would clear the user's screen, or set the window
    title, or hide what follows.  Every segment of text this console renders passes through
    the escaper; Rich's own control segments (cursor moves of a progress bar) and the style
    codes it adds when writing are not text and pass as they are.
    """

    def render(self, renderable: Any, options: Any = None) -> Any:
        """Rich's segments, their text escaped for a terminal."""
        from rich.segment import Segment

        from fleetchaos.escaping import UNSAFE_FOR_TERMINALS, terminal_text

        for segment in super().render(renderable, options):
            if segment.control is None and UNSAFE_FOR_TERMINALS.search(segment.text):
                yield Segment(terminal_text(segment.text), segment.style)
            else:
                yield segment


class DataConsole(TerminalConsole):
    """stdout's console.  In a pipe (no terminal, no ``COLUMNS``) it widens to what it prints.

    A table printed into a pipe is as wide as its widest row needs (at least the pipe
    width), so names and figures are never folded or cut there: the text depends on the
    data only, never on a terminal.  On a terminal, or with ``COLUMNS``, the width is fixed
    and a wider table folds its columns to fit.
    """

    def __init__(self, *, fit: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._fit = fit

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Print ``objects``, first widening to their natural width when printing into a pipe."""
        if self._fit:
            from rich.measure import Measurement

            roomy = self.options.update_width(100_000)
            natural = [Measurement.get(self, roomy, o).maximum for o in objects if not isinstance(o, str)]
            self.width = max([self.width, *natural])
        super().print(*objects, **kwargs)


def fixed_width() -> int | None:
    """The width a table printed to stdout must fit in: None in a pipe, where the console widens to the table."""
    return None if _columns_env() is None and not _interactive() else output_width()


def stdout_console(pipe_width: int = PIPE_WIDTH, *, highlight: bool = True, fit: bool = True) -> Console:
    """The console data tables go to: stdout, as wide as :func:`output_width` says.

    On a terminal a table wider than it folds its columns to fit; in a pipe it is printed
    whole, at least ``pipe_width`` wide (``fit=False``: exactly ``pipe_width``, for tables
    whose long text columns should fold).  Lines are never soft-wrapped mid-word.
    """
    piped = _columns_env() is None and not _interactive()
    # emoji=False: a user's `name:x:` is text, never an emoji code.
    return DataConsole(
        fit=fit and piped, soft_wrap=False, width=output_width(pipe_width), highlight=highlight, emoji=False
    )


def stderr_console() -> Console:
    """The console messages go to (stderr)."""
    return TerminalConsole(stderr=True, soft_wrap=True, emoji=False)  # a user's `mod:x:` is text, never an emoji


def echo_err(line: str) -> None:
    """Print one line of plain text on stderr (a gate's verdict, a note)."""
    click.echo(line, err=True)


def split_names(value: str) -> tuple[str, ...]:
    """A comma-separated option as a tuple of its non-empty, stripped items.

    Commas inside parentheses, brackets or quotes do not split: ``backoff(base_s=1,cap_s=5),structured``
    is two policies.
    """
    from fleetchaos.policies.spec import split_specs

    return split_specs(value)


def make_report_dir(path: Path | None, option: str = "--report") -> None:
    """Create a report folder before any run starts, so a path that cannot be written is a user error, not a crash."""
    if path is None:
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"{option} {path}: cannot create the report folder ({exc.strerror or exc}); choose another path"
        ) from None


def _single_values(options: tuple[str, ...], command: str) -> list[tuple[str, object]]:
    from fleetchaos.scenario.params import parse_param_option

    pairs = []
    for option in options:
        path, values = parse_param_option(option)
        if len(values) != 1:
            raise UserError(
                f"--param {option}: {command} takes one value per parameter; use `fleetchaos sweep` to sweep several"
            )
        pairs.append((path, values[0]))
    return pairs


def apply_single_params(
    spec: Scenario, ref: str, options: tuple[str, ...], command: str = "run"
) -> tuple[Scenario, tuple[tuple[str, Any], ...]]:
    """Apply ``--param PATH=VALUE`` scenario options that each give exactly one value.

    ``policy.NAME=VALUE`` options are not scenario values: split them off first with
    :func:`policy_param_options`.
    """
    from fleetchaos.runs.sweep import scenario_source
    from fleetchaos.scenario.params import apply_params

    return apply_params(spec, _single_values(options, command), source=scenario_source(ref))


def policy_param_options(
    options: tuple[str, ...], command: str = "run"
) -> tuple[tuple[str, ...], tuple[tuple[str, object], ...]]:
    """``--param`` options split into scenario options and ``policy.NAME=VALUE`` pairs (one value each)."""
    from fleetchaos.policies.spec import policy_param_name

    scenario = tuple(o for o in options if policy_param_name(o.partition("=")[0].strip()) is None)
    policy = tuple(o for o in options if o not in scenario)
    pairs = tuple((policy_param_name(path) or "", value) for path, value in _single_values(policy, command))
    return scenario, pairs


def policies_with_params(names: tuple[str, ...], pairs: tuple[tuple[str, object], ...], where: str) -> tuple[str, ...]:
    """Each policy's canonical spec with the ``--param policy.NAME=VALUE`` pairs set on it.

    A policy that lacks one of the parameters is a user error naming it and the fix.
    """
    from fleetchaos.names import check_policies
    from fleetchaos.policies.registry import PolicyLookupError, with_params

    names = check_policies(names, where)
    if not pairs:
        return names
    out = []
    for name in names:
        try:
            out.append(with_params(name, [(k, tuple(v) if isinstance(v, list) else v) for k, v in pairs]))
        except PolicyLookupError as exc:
            given = " ".join(f"--param policy.{k}=..." for k, _ in pairs)
            raise UserError(
                f"{given}: {exc}; to set a parameter on some arms only, write it in their spec, "
                f"e.g. {where} 'backoff(base_s=0.5)'"
            ) from None
    return check_policies(out, where)


def _error(message: str, code: int, label: str = "error") -> NoReturn:
    stderr_console().print(f"[red]{label}:[/red] {escape(message)}", highlight=False, markup=True)
    sys.exit(code)


class ErrorHandlingGroup(click.Group):
    """Turns user errors into one message and exit 2, and crashes into exit 3.

    While a command runs, Ctrl-C and SIGTERM raise :class:`~fleetchaos.sim.interrupts.UserInterrupt`
    (so a policy raising ``KeyboardInterrupt`` is not mistaken for the user): the command
    keeps its finished runs and marks its history group interrupted; exit 130 or 143.
    """

    def invoke(self, ctx: click.Context) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        from fleetchaos.errors import RunTimeLimitError
        from fleetchaos.files import DISK_FULL
        from fleetchaos.sim.interrupts import ProcessExitRefused, UserInterrupt, user_signals

        try:
            with user_signals(), pools_stopped_on_error():
                return super().invoke(ctx)
        except UserError as exc:
            _error(str(exc), EXIT_USAGE)
        except RunTimeLimitError as exc:
            _error(str(exc), EXIT_TIME_LIMIT)
        except ProcessExitRefused as exc:  # user code that tried to end the process, met outside a run
            _error(f"user code called {exc}, which would end fleetchaos itself; remove the call", EXIT_USAGE)
        except UserInterrupt as exc:
            terminated = exc.signum == signal.SIGTERM
            stderr_console().print("terminated" if terminated else "interrupted")
            sys.exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
        except KeyboardInterrupt:
            stderr_console().print("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except BrokenProcessPool:
            _error(
                "a worker process died (killed by a signal, or out of memory?) before its runs finished; the runs "
                "that finished are kept in the history; run again with fewer --jobs, or --jobs 1 to see the cause",
                EXIT_USAGE,
            )
        except OSError as exc:  # the machine, not fleetchaos: a full disk, a file that vanished
            where = f"{exc.filename}: " if exc.filename else ""
            cause = exc.strerror or type(exc).__name__
            if exc.errno in DISK_FULL:
                _error(f"{where}{cause}: no room to write (a full disk, a quota or a file-size limit); free some "
                       "space or write elsewhere, then run again", EXIT_INTERNAL)  # fmt: skip
            _error(f"{where}{cause}; check the path and its permissions", EXIT_USAGE)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except Exception as exc:  # an internal error, never a user's mistake
            if os.environ.get("FLEETCHAOS_DEBUG"):
                traceback.print_exc()
            stderr_console().print(
                f"[red]internal error:[/red] {type(exc).__name__}: {exc}\n"
                "This is a bug in fleetchaos; set FLEETCHAOS_DEBUG=1 to see the traceback.",
                highlight=False,
            )
            sys.exit(EXIT_INTERNAL)


def seeds_to_run(spec: Scenario, seeds: int | None, first_seed: int | None) -> list[int]:
    """The seeds to run: --seeds/--first-seed when given, else the scenario's own seeds, else 1..10."""
    if seeds is None and first_seed is None and spec.seeds:
        return list(spec.seeds)
    first = 1 if first_seed is None else first_seed
    return list(range(first, first + (10 if seeds is None else seeds)))


# Options several commands share, written once so their help reads the same everywhere.
scenario_option = click.option(
    "--scenario", default="default", show_default=True, help="catalogue name or path to a .yaml/.json file"
)
jobs_option = click.option(
    "--jobs", type=click.IntRange(1, 512), help="local worker processes; 1 runs in this process [default: one per core]"
)


def _scheduler(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        from fleetchaos.runs.executors import check_scheduler

        check_scheduler(value)  # before anything is read, stored or started
    return value


scheduler_option = click.option(
    "--scheduler",
    metavar="tcp://HOST:PORT",
    callback=_scheduler,
    help="run on a Dask distributed cluster (needs: pip install 'fleetchaos[dask]')",
)
param_option = click.option(
    "--param",
    "params",
    multiple=True,
    metavar="PATH=V1,V2,...",
    help="set a scenario value by dotted path, e.g. faults[0].probability=0.1 or fleet.workers=50, "
    "or a policy parameter, e.g. policy.base_s=0.5",
)
single_param_option = click.option(
    "--param",
    "params",
    multiple=True,
    metavar="PATH=VALUE",
    help="set a scenario value by dotted path, e.g. faults[0].probability=0.1 or fleet.workers=50, "
    "or a policy parameter, e.g. policy.base_s=0.5 (repeat for several; one value each: "
    "`fleetchaos sweep` sweeps several)",
)
traces_option = click.option(
    "--traces",
    "traces_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="write the traced run(s) here as OTLP JSON, one trace per task (docs/calibration.md)",
)


def _time_limit(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not (0 < value < float("inf")):
        raise click.BadParameter(f"{value!r} is not a number of seconds > 0", ctx, param)
    return value


time_limit_option = click.option(
    "--time-limit",
    "time_limit",
    type=float,
    metavar="SECONDS",
    callback=_time_limit,
    help="wall-clock limit of each run; a run still going then fails the command with exit 4 "
    "[default: 600 s + 5 ms per estimated tool call]",
)


def nonempty_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A click callback: an output folder option as a Path; an empty value is a usage error (it would mean the working directory)."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("give a folder name (an empty one would write into the working directory)", ctx, param)
    return Path(value)


def _columns(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    from fleetchaos.names import check_metric

    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    if not names:
        raise UserError("--columns: no metric given; name one or more, e.g. --columns success_rate,wasted_retries")
    for name in names:
        check_metric(name, "--columns")  # an unknown name: exit 2 listing the valid ones
    return names


columns_option = click.option(
    "--columns",
    metavar="METRIC,...",
    callback=_columns,
    help="the metrics the terminal table shows, comma-separated, in this order (names as in docs/metrics.md)",
)
quiet_option = click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="no table, progress bar or list of files written: only a gate's verdict lines and errors (on stderr); "
    "the exit code is the outcome",
)

report_option = click.option(
    "--report",
    type=click.Path(file_okay=False),
    callback=nonempty_path,
    help="write a report folder here",
)

determinism_option = click.option(
    "--check-determinism",
    is_flag=True,
    help="only check: run every arm on every seed twice, traced, and compare SHA-256 hashes of the event "
    "logs (exit 0 if identical, 1 naming the arm and seed that differ); nothing is stored",
)
run_determinism_option = click.option(
    "--check-determinism",
    is_flag=True,
    help="only check: run this policy on this seed twice, traced, and compare SHA-256 hashes of the event "
    "logs (exit 0 if identical, 1 if they differ); nothing is stored",
)


def run_determinism_check(
    spec: Scenario | None,
    scenario_ref: str,
    arms: list[tuple[str, str]],
    seeds: list[int],
    runs: Sequence[tuple[Scenario, str, str, int, str]] | None = None,
) -> None:
    """The --check-determinism mode: exit 0 if every arm and seed ran the same twice, else 1.

    ``runs`` (a sweep's ``(scenario, policy, errors, seed, replay)`` tuples) replaces spec x arms x seeds.
    """
    from fleetchaos.runs.determinism import check_determinism, check_runs

    err = stderr_console()
    if runs is None:
        assert spec is not None  # without runs the check is of one scenario's arms and seeds
        mismatches = check_determinism(spec, scenario_ref, arms, seeds)
        count = len(arms) * len(seeds)
    else:
        mismatches = check_runs(runs)
        count = len(runs)
    for mismatch in mismatches:
        err.print(f"[red]error:[/red] {escape(mismatch.message())}", highlight=False)
    if mismatches:
        err.print(
            f"determinism check failed: {len(mismatches)} of {count} runs differ between two runs", highlight=False
        )
        sys.exit(1)
    err.print(f"determinism check passed: {count} runs, each run twice, identical event logs", highlight=False)
