"""Errors a user can cause.  The CLI turns a :class:`UserError` into one message and exit code 2,
a :class:`RunTimeLimitError` into one message and exit code 4."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input: the message names what, where, the rule and the fix."""


class ScenarioError(UserError):
    """A scenario that cannot be found, read or validated."""


class RunTimeLimitError(Exception):
    """A run that outlived its wall-clock limit (a policy blocking in real time): the message names the run and the fix."""
