"""Errors a user can cause.  The CLI turns each into one message and exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input: the message names what, where, the rule and the fix."""


class ScenarioError(UserError):
    """A scenario that cannot be found, read or validated."""
