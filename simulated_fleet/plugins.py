"""Plug-ins by name: what policies and error formats share when a user names one.

A policy (:mod:`fleetchaos.policies.registry`) and an error format
(:mod:`fleetchaos.sim.formats.registry`) come from the same three places: a built-in, an
installed package's entry point, or an import path ``pkg.module:Name``.  This module reads
the entry points and loads the objects, with one message per way it can fail (naming the
plug-in, what failed and the fix); each registry checks and builds what it loaded.
Standard library only (and :mod:`fleetchaos.sim.interrupts`): nothing is imported until a
plug-in is asked for.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

from fleetchaos.sim.interrupts import PASS_THROUGH, describe_exception

__all__ = ["dist_name", "entry_points", "load_entry_point", "load_import_path"]


def entry_points(group: str) -> dict[str, tuple[importlib.metadata.EntryPoint, ...]]:
    """The entry points installed packages register in ``group``, by name (sorted).

    Only the metadata is read: nothing is imported.  A name maps to several entry points
    when several installed distributions register it (one distribution found twice on
    ``sys.path`` counts once).
    """
    found: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for ep in importlib.metadata.entry_points(group=group):
        same = found.setdefault(ep.name, [])
        if all(dist_name(ep) != dist_name(other) for other in same):
            same.append(ep)
    return {name: tuple(found[name]) for name in sorted(found)}


def dist_name(ep: importlib.metadata.EntryPoint) -> str:
    """The name of the distribution that registers ``ep``."""
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "(unknown package)"


def load_import_path(subject: str, path: str, error: type[Exception]) -> Any:
    """The object ``pkg.module:Name`` names; ``error`` (prefixed with ``subject``) when it cannot be had."""
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except PASS_THROUGH:
        raise
    except BaseException as exc:  # a module may raise anything, or call sys.exit(), on import
        raise error(f"{subject}: cannot import {module_name!r} ({describe_exception(exc)})") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise error(f"{subject}: module {module_name!r} has no attribute {attr!r}") from None


def load_entry_point(
    kind: str, name: str, registered: tuple[importlib.metadata.EntryPoint, ...], group: str, error: type[Exception]
) -> tuple[Any, str, str]:
    """(the object, how messages name it, the fix a message ends with) of the ``kind`` registered as ``name``.

    Raises ``error`` when several packages register the name (picking one silently would
    make results depend on installation order) or when loading it fails.
    """
    if len(registered) > 1:
        owners = ", ".join(f"{dist_name(ep)} ({ep.value})" for ep in registered)
        raise error(
            f"{kind} {name!r}: registered as an entry point by several installed packages: {owners}; "
            f"uninstall all but one, or name the {kind} by its import path"
        )
    ep = registered[0]
    subject = f"{kind} {name!r} (entry point {name} = {ep.value!r} of package {dist_name(ep)})"
    fix = f'fix [project.entry-points."{group}"] in that package\'s pyproject.toml and reinstall it, or uninstall the package'
    try:
        target = ep.load()
    except PASS_THROUGH:
        raise
    except BaseException as exc:  # third-party code: an import may raise anything
        raise error(f"{subject}: cannot load it ({describe_exception(exc)}); {fix}") from None
    return target, subject, fix
