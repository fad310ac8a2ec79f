"""Error formats by name: the built-ins, installed entry points, and import paths.

:func:`get_format` turns what a user typed (``--errors``, a sweep file, the pytest marker,
an ``expect:`` arm) into a fresh format instance, from one of three sources, checked alike:

* a built-in: every format class a public module of :mod:`fleetchaos.sim.formats` defines
  (a new built-in format is one module there, and its row in docs/formats.md);
* an installed entry point: a name a package registers in the :data:`ENTRY_POINT_GROUP`
  group (``[project.entry-points."fleetchaos.formats"] my-format = "mypkg.formats:MyFormat"``);
* an import path ``pkg.module:Name``.

Built-in names win over entry points of the same name; a name that is neither and has a
colon is an import path.  The name a user gave is the arm's label in results and replay
commands, so a run resolves its format by that name wherever it runs: a worker process
imports the same module by the same path.  Standard library and the simulator's light
modules only: no SimPy.
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib
import importlib.metadata
import math
import pkgutil
from typing import TypeGuard, cast

from fleetchaos.sim.formats._base import PARTIAL_BATCH, ErrorFormat
from fleetchaos.sim.interrupts import PASS_THROUGH, describe_exception
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.plugins import entry_points, load_entry_point, load_import_path

__all__ = [
    "ENTRY_POINT_GROUP",
    "FormatLookupError",
    "bound",
    "builtin_formats",
    "format_entry_points",
    "format_names",
    "get_format",
    "is_format_name",
    "suggest",
]

#: The entry point group in which installed packages register error formats: each entry maps a
#: format name to an object reference ``module:attr`` (a format class, or an instance).
ENTRY_POINT_GROUP = "fleetchaos.formats"

#: The package whose public modules are the built-in formats.
_BUILT_IN_PACKAGE = "fleetchaos.sim.formats"


class FormatLookupError(LookupError):
    """An error-format name or import path that does not resolve to a usable format.

    The message names the format, what failed and how to fix it; the command line prints it
    as one line and exits 2.
    """


@functools.cache
def builtin_formats() -> dict[str, type[ErrorFormat]]:
    """Every built-in format class by its ``name``: those the public modules of :mod:`fleetchaos.sim.formats`
    define, module by module in name order, each module's in the order it defines them."""
    package = importlib.import_module(_BUILT_IN_PACKAGE)
    found: dict[str, type[ErrorFormat]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_BUILT_IN_PACKAGE}.{info.name}")
        for value in vars(module).values():
            if not (isinstance(value, type) and value.__module__ == module.__name__ and _defines_a_format(value)):
                continue
            _checked(f"built-in format {value.name!r}", value())
            if value.name in found:
                raise RuntimeError(
                    f"{module.__name__}.{value.__qualname__}: the name {value.name!r} is taken by "
                    f"{found[value.name].__module__}.{found[value.name].__qualname__}"
                )
            found[value.name] = value
    return found


def _defines_a_format(cls: type) -> TypeGuard[type[ErrorFormat]]:
    return not cls.__name__.startswith("_") and isinstance(getattr(cls, "name", None), str) and hasattr(cls, "render")


def format_entry_points() -> dict[str, tuple[importlib.metadata.EntryPoint, ...]]:
    """Formats registered by installed packages in :data:`ENTRY_POINT_GROUP`, by name (only the metadata is read)."""
    return entry_points(ENTRY_POINT_GROUP)


def format_names() -> list[str]:
    """Every name :func:`get_format` accepts without an import path: the built-ins, then entry points."""
    builtin = builtin_formats()
    return list(builtin) + [name for name in format_entry_points() if name not in builtin]


def is_format_name(name: str) -> bool:
    """Whether ``name`` is in :func:`format_names`; the entry points are read only for a name no built-in has.

    A scenario names formats in several places, each checked as it is validated: reading every
    installed package's metadata each time was most of the time a scenario took to load.
    """
    return name in builtin_formats() or name in format_entry_points()


def suggest(name: str) -> str | None:
    """The known format name closest to a mistyped ``name``, or None."""
    match = difflib.get_close_matches(name, format_names(), n=1)
    return match[0] if match else None


def get_format(name: str, seed: int | None = None) -> ErrorFormat:
    """A fresh instance of the format ``name``: a built-in, an installed entry point, or ``pkg.module:Name``.

    With ``seed``, a format whose text carries the run's planted secrets comes bound to that
    run (its ``for_run``).  Raises :class:`FormatLookupError` with a message naming the
    format, what failed and the fix.
    """
    errors = _by_name(name)
    return errors if seed is None else bound(errors, seed)


def bound(errors: ErrorFormat, seed: int) -> ErrorFormat:
    """``errors`` bound to the run with ``seed`` when it plants per-run secrets (``for_run``), else itself."""
    bind = getattr(errors, "for_run", None)
    return bind(seed) if bind is not None else errors


def _by_name(name: str) -> ErrorFormat:
    builtin = builtin_formats().get(name)
    if builtin is not None:
        return builtin()
    registered = format_entry_points().get(name)
    if registered:
        return _from_entry_point(name, registered)
    if ":" in name:
        return _from_import_path(name)
    entry = ", ".join(n for n in format_entry_points() if n not in builtin_formats())
    guess = suggest(name)
    raise FormatLookupError(
        f"unknown error format {name!r}: use one of {', '.join(builtin_formats())}"
        + (f", an installed entry point ({entry})" if entry else "")
        + ", or an import path like mypkg.formats:MyFormat"
        + (f"; did you mean {guess!r}?" if guess else "")
    )


def _from_import_path(name: str) -> ErrorFormat:
    subject = f"error format {name!r}"
    return _instantiate(subject, name.partition(":")[2], load_import_path(subject, name, FormatLookupError))


def _from_entry_point(name: str, registered: tuple[importlib.metadata.EntryPoint, ...]) -> ErrorFormat:
    target, subject, fix = load_entry_point("error format", name, registered, ENTRY_POINT_GROUP, FormatLookupError)
    try:
        return _instantiate(subject, registered[0].value, target)
    except FormatLookupError as exc:
        raise FormatLookupError(f"{exc}; {fix}") from None


def _instantiate(subject: str, attr: str, target: object) -> ErrorFormat:
    """A format from a loaded object: a class is built with no arguments, an instance is copied (one per run)."""
    try:
        fmt = target() if isinstance(target, type) else copy.copy(target)
    except PASS_THROUGH:
        raise
    except BaseException as exc:  # the class's own code: it may raise anything
        raise FormatLookupError(
            f"{subject}: {attr}() failed ({describe_exception(exc)}); a format class must build with no arguments"
        ) from None
    return _checked(subject, fmt)


def _checked(subject: str, fmt: object) -> ErrorFormat:
    """``fmt``, refused when it is not an :class:`~fleetchaos.sim.formats.ErrorFormat` (naming what it lacks)."""
    problems = []
    name = getattr(fmt, "name", None)
    if not isinstance(name, str) or not name:
        problems.append("a non-empty str name")
    if not isinstance(getattr(fmt, "failure_flag", None), bool):
        problems.append("a bool failure_flag")
    partial = getattr(fmt, "partial_batch", None)  # left out: the scenario's fleet.partial_batch decides
    if partial is not None and partial not in PARTIAL_BATCH:
        problems.append(f"a partial_batch of None or one of {', '.join(PARTIAL_BATCH)} (got {partial!r})")
    if hasattr(fmt, "partial_step_ok"):
        problems.append("partial_batch instead of partial_step_ok (True is partial_batch 'ok', False 'failed')")
    factor = getattr(fmt, "misread_factor", None)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not math.isfinite(factor) or factor < 0:
        problems.append("a misread_factor >= 0")
    setting = getattr(fmt, "misread_setting", "")
    if setting is not None and setting not in DEFAULT_MISREAD_FACTORS:
        problems.append(f"a misread_setting of None or one of {', '.join(DEFAULT_MISREAD_FACTORS)} (got {setting!r})")
    if not callable(getattr(fmt, "render", None)):
        problems.append("a render(report) method")
    if problems:
        raise FormatLookupError(
            f"{subject}: not an error format: it needs {'; '.join(problems)} (docs/formats.md, 'Your own format')"
        )
    return cast(ErrorFormat, fmt)
