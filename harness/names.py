"""The names a user gives for policies, error formats and metrics: one check and one message each.

Every command (``run``, ``compare``, ``sweep``, ``shrink``, the gate, the suite API)
checks names through here, so a mistyped name gets the same message, with the same
suggestion, wherever it was typed, and a ``module:Name`` path (a policy or an error
format) finds a module in the working directory everywhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from fleetchaos.errors import UserError

#: The arms a comparison or a sweep runs unless told otherwise: policies, and error formats.
DEFAULT_POLICIES: tuple[str, ...] = ("blind-retry", "backoff", "structured")
DEFAULT_ERRORS: tuple[str, ...] = ("generic", "structured")


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    # The suggestion lives with the scenario messages, which load pydantic and the scenario
    # models: imported only when a name is wrong, so the command line starts light.
    from fleetchaos.scenario.messages import _did_you_mean as suggestion

    return suggestion(name, known)


def allow_local_imports(names: Iterable[str]) -> None:
    """Let ``module:Name`` paths (policies, error formats) find modules in the working directory, as ``python -m`` does.

    Appended, not prepended, so an installed package is never shadowed.  This is what makes
    the replay command a test suite prints work from the suite's folder.
    """
    if any(":" in name.partition("(")[0] for name in names):
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.append(cwd)


def _once_each(names: tuple[str, ...], where: str) -> None:
    # An arm named twice would run twice under one label, and its paired comparison
    # would meet twice the seeds it expects.
    if len(set(names)) != len(names):
        raise UserError(f"{where}: {', '.join(names)} names one twice; give each once")


def check_policies(names: Iterable[str], where: str) -> tuple[str, ...]:
    """Each name, given once, loads as a policy (built-in, ``module:Policy`` or entry point) whose ``transport``
    is well formed, or a UserError says why.

    A name may carry parameters (``backoff(base_s=0.5,cap_s=5)``).  Returns the canonical
    spellings (:func:`fleetchaos.policies.registry.resolve_policy`), in order; two names
    that are one policy once canonical (``backoff(cap_s=5)`` and ``backoff(cap_s=5.0)``)
    are refused like a name given twice.
    """
    from fleetchaos.policies.registry import resolve_policy, suggest
    from fleetchaos.policies.spec import PolicySpecError, parse_spec
    from fleetchaos.sim.transport import TransportSpecError, transport_layers

    names = tuple(names)
    _once_each(names, where)
    allow_local_imports(names)
    canonical = []
    for name in names:
        try:
            policy, spelling = resolve_policy(name)
        except LookupError as exc:
            try:
                base = parse_spec(name).name
            except PolicySpecError:
                base = name
            guess = suggest(base) if ":" not in base and base != suggest(base) else None
            raise UserError(f"{where}: {exc}" + (f"; did you mean {guess!r}?" if guess else "")) from None
        try:  # a malformed driver attribute would end every task with a policy error: refuse it now
            transport_layers(getattr(policy, "transport", None))
        except TransportSpecError as exc:
            raise UserError(f"{where}: policy {name!r}: {exc}") from None
        canonical.append(spelling)
    _once_each(tuple(canonical), where)
    return tuple(canonical)


def check_formats(names: Iterable[str], where: str) -> None:
    """Each name, given once, loads as an error format (built-in, installed entry point or ``module:Format``),
    or a UserError says why (:func:`fleetchaos.sim.formats.get_format`)."""
    from fleetchaos.sim.formats import FormatLookupError, get_format

    names = tuple(names)
    _once_each(names, where)
    allow_local_imports(names)
    for name in names:
        try:
            get_format(name)
        except FormatLookupError as exc:
            raise UserError(f"{where}: {exc}") from None


def check_metric(name: str, where: str) -> None:
    """``name`` is a metric of the registry (:data:`fleetchaos.results.registry.METRICS`), or a UserError lists them."""
    from fleetchaos.results.registry import METRICS

    if name not in METRICS:
        raise UserError(f"{where}: unknown metric {name!r} (known: {', '.join(METRICS)}){_did_you_mean(name, METRICS)}")
