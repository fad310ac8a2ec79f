"""The run cache on the command line: ``--no-cache`` on every command that makes runs, and ``fleetchaos cache``.

A command with :data:`cache_option` uses the run cache of ``$FLEETCHAOS_CACHE`` (default
``fleetchaos-out/cache``) for the length of the command, unless given ``--no-cache`` or
``FLEETCHAOS_CACHE=off``.  A folder that cannot hold a cache (not writable, or a file there
that is not one) turns the cache off with one note on stderr: results are the same, only
made afresh.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from fleetchaos.cli.common import stderr_console, stdout_console
from fleetchaos.errors import UserError

__all__ = ["cache", "cache_option", "command_cache"]

_FOLDER_HELP = "the run cache folder [default: $FLEETCHAOS_CACHE or fleetchaos-out/cache]"


def cache_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command ``--no-cache``; its runs use the run cache unless it is given (or FLEETCHAOS_CACHE=off)."""

    @click.option(
        "--no-cache",
        is_flag=True,
        help="make every run afresh: neither read nor write the run cache ($FLEETCHAOS_CACHE or fleetchaos-out/cache)",
    )
    @functools.wraps(command)
    def with_cache(*args: Any, no_cache: bool, **kwargs: Any) -> Any:
        with command_cache(no_cache):
            return command(*args, **kwargs)

    return with_cache


@contextmanager
def command_cache(no_cache: bool = False) -> Iterator[None]:
    """The run cache a command's runs use while inside (none with ``no_cache`` or FLEETCHAOS_CACHE=off)."""
    from fleetchaos.runs.cache import open_default_cache, using_cache

    def note(problem: str) -> None:
        stderr_console().print(f"note: {problem}", markup=False, highlight=False)

    store = None if no_cache else open_default_cache(note)
    with using_cache(store):
        yield
    if store is not None and store.hits:  # say so: these runs were served, not made
        stderr_console().print(
            f"run cache: {store.hits:,} of {store.hits + store.misses:,} runs served from {store.folder} "
            "(--no-cache makes them afresh)",
            markup=False,
            highlight=False,
        )


def _open(folder: Path | None):
    from fleetchaos.runs.cache import CacheUnavailableError, RunCache, default_folder

    where = folder or default_folder()
    if where is None:
        raise UserError("the run cache is off (FLEETCHAOS_CACHE=off); pass --dir FOLDER to manage one")
    if not (where / "runs.sqlite").exists():
        raise UserError(f"{where}: no run cache here; commands create it as they run (pass --dir FOLDER otherwise)")
    try:
        return RunCache(where)
    except CacheUnavailableError as exc:
        raise UserError(str(exc)) from None


def _size(text: str) -> int:
    units = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30}
    value = text.strip().upper()
    number = value.rstrip("KMGB")
    unit = value[len(number) :]
    try:
        amount = float(number)
    except ValueError:
        amount = -1.0
    if unit not in units or not amount >= 0:
        raise UserError(f"--max-size {text!r}: not a size; write it like 500MB or 2GB")
    return int(amount * units[unit])


def _mb(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MB"


dir_option = click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), help=_FOLDER_HELP)


@click.group()
def cache() -> None:
    """The run cache: every run a command made, served again instead of made again.

    A run is a pure function of its scenario (as validated, --param applied), its arm, its
    seed and the code, and is stored under the digest of all of them: a result made by
    other code is never served.  Commands use it unless given --no-cache.
    """


@cache.command()
@dir_option
def stats(folder: Path | None) -> None:
    """What the cache holds: entries, size, bound, and entries made by other code."""
    store = _open(folder)
    s = store.stats()
    stdout_console().print(
        f"{s.path}: {s.entries:,} entries (runs and report charts), {_mb(s.bytes)} of {_mb(s.max_bytes)}"
        + (f"; {s.other_code:,} made by other code (never served: prune drops them first)" if s.other_code else ""),
        markup=False,
        highlight=False,
    )


@cache.command()
@dir_option
@click.option(
    "--max-size", default="1GB", show_default=True, help="keep the most recently used entries up to this size"
)
def prune(folder: Path | None, max_size: str) -> None:
    """Remove entries made by other code, then the least recently used ones past --max-size."""
    limit = _size(max_size)
    store = _open(folder)
    stale = store.drop_other_code()
    removed, freed = store.prune(limit)
    stdout_console().print(
        f"removed {stale[0] + removed:,} entries ({_mb(stale[1] + freed)}) from {store.path}",
        markup=False,
        highlight=False,
    )


@cache.command()
@dir_option
def clear(folder: Path | None) -> None:
    """Remove every entry from the cache (its file stays, empty)."""
    store = _open(folder)
    removed, freed = store.clear()
    stdout_console().print(
        f"removed {removed:,} entries ({_mb(freed)}) from {store.path}", markup=False, highlight=False
    )
