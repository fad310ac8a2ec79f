"""The ``fleetchaos`` command line (click + rich): the command group and its commands.

Each family of commands lives in its own module (:mod:`~fleetchaos.cli.running`,
:mod:`~fleetchaos.cli.sweeping`, :mod:`~fleetchaos.cli.reporting`,
:mod:`~fleetchaos.cli.listings`, :mod:`~fleetchaos.cli.shrinking`, :mod:`~fleetchaos.cli.tuning`,
:mod:`~fleetchaos.cli.robustness`, :mod:`~fleetchaos.cli.calibrate`); what they share (exit
codes, options, error handling) is in :mod:`~fleetchaos.cli.common`.  Data goes to stdout,
messages to stderr.  Exit codes: 0 ok, 1 a regression or expect: gate failed, 2 invalid input or usage,
3 internal error, 130 interrupted.
"""

from __future__ import annotations

import click

from fleetchaos.cli.caching import cache
from fleetchaos.cli.calibrate import calibrate
from fleetchaos.cli.common import ErrorHandlingGroup
from fleetchaos.cli.history_group import history
from fleetchaos.cli.listings import faults, policies, scenarios, schema
from fleetchaos.cli.reporting import report
from fleetchaos.cli.robustness import robustness
from fleetchaos.cli.running import compare, run
from fleetchaos.cli.shrinking import shrink
from fleetchaos.cli.sweeping import ablation, sweep
from fleetchaos.cli.tuning import tune

__all__ = ["main"]


@click.group(cls=ErrorHandlingGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleetchaos")
def main() -> None:
    """Chaos and fault injection for fleets of LLM agents.

    Simulates a fleet of orchestrators and workers calling tools that fail, renders each
    failure through an error format, lets recovery policies react, and compares what the
    orchestrator claimed with what really happened.
    """


for _command in (
    run,
    compare,
    sweep,
    ablation,
    tune,
    robustness,
    report,
    history,
    scenarios,
    schema,
    policies,
    faults,
    shrink,
    calibrate,
    cache,
):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
