"""A command that ends by an error stops the local worker pools it opened.

A pool still open when the interpreter exits races Python 3.11's own clean-up of it and can
print an ``OSError: Bad file descriptor`` traceback after the command's one-line message.
The executors module is looked up, never imported: a command that makes no runs stays light.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

__all__ = ["pools_stopped_on_error"]


@contextlib.contextmanager
def pools_stopped_on_error() -> Iterator[None]:
    """A command ending by an exception stops the local pools it opened and left open (never another's)."""
    executors = sys.modules.get("fleetchaos.runs.executors")
    before = set(executors.open_pools()) if executors is not None else set()
    try:
        yield
    except BaseException:
        executors = sys.modules.get("fleetchaos.runs.executors")  # loaded only by commands that make runs
        if executors is not None:
            executors.stop_open_pools(keep=before)
        raise
