"""``--executor module:factory``: a command's runs on any ``concurrent.futures.Executor`` a team's factory makes.

The factory (a function or class, called with no arguments) returns the executor; the
command shuts it down when its runs are done.  It stands in for the local process pool
(``--jobs``) and is refused beside ``--scheduler``.  docs/cli.md shows a Ray adapter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from fleetchaos.errors import UserError

__all__ = ["executor_option"]


def executor_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command ``--executor module:factory``."""

    @click.option(
        "--executor",
        "executor_factory",
        metavar="MODULE:FACTORY",
        help="run on the concurrent.futures.Executor that FACTORY() returns (Ray, a team's own pool; "
        "docs/cli.md) instead of local processes",
    )
    @functools.wraps(command)
    def with_executor(*args: Any, executor_factory: str | None, **kwargs: Any) -> Any:
        from fleetchaos.runs.executors import using_factory

        if executor_factory is not None and kwargs.get("scheduler"):
            raise UserError("--executor and --scheduler both say where runs go: give one of them")
        with using_factory(executor_factory):
            return command(*args, **kwargs)

    return with_executor
