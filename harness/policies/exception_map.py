"""Which exception a failed dispatch raises, for retry code that decides on exception types.

A team's retry configuration (tenacity's ``retry_if_exception_type(TimeoutError)``) decides
on the exception its wrapped call raised; the simulation has an
:class:`~fleetchaos.sim.observation.Observation` instead.  This module is the bridge, and it
is an assumption that decides outcomes, so it is a visible table, recorded in results and
overridable, never a hidden constant:

* a failure is looked up by its **error code** (:func:`~fleetchaos.policies.readers.code_of`,
  upper case: ``TOOL_TIMEOUT``), then by its **category word** as the contract gives it
  (:func:`~fleetchaos.policies.readers.category_of`, lower case: ``timeout``, ``validation``),
  then under ``"*"``;
* the entry is an exception class (built with the failure's message) or a factory
  ``f(observation) -> exception`` for classes that need more arguments (an
  ``httpx.HTTPStatusError`` needs a request and a response);
* the message is what the orchestrator was shown: the raw text, the envelope's message, or
  its error code, else the status word (what ``retry_if_exception_message`` matches).

:data:`DEFAULT_EXCEPTIONS` maps failures onto the built-in exceptions a Python client
raises for them, and everything else (rate limits, overload, conflicts, a failed batch
item, a missing source, a failure the format does not explain) onto :class:`ToolCallError`.
What the orchestrator cannot read it cannot raise either: a generic format's bare "failed"
is a :class:`ToolCallError` whatever really happened.  Standard library and the envelope
readers only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetchaos.policies.readers import category_of, code_of
from fleetchaos.sim.observation import Observation

__all__ = [
    "DEFAULT_EXCEPTIONS",
    "ExceptionMap",
    "ExceptionMapError",
    "ToolCallError",
    "build_exception_map",
    "exception_for",
    "failure_message",
]


class ToolCallError(Exception):
    """A tool call failed in a way no built-in exception names (an HTTP status error, in a real client).

    ``code`` and ``category`` are what the envelope said (None when it said nothing).
    """

    def __init__(self, message: str, *, code: str | None = None, category: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.category = category


class ExceptionMapError(ValueError):
    """An exception map entry that cannot raise anything (not an exception class or a factory)."""


#: The default failure -> exception table.  Keys in upper case are error codes (the fault
#: kinds' codes of ``fleetchaos faults list``), lower case are category words (a failure-type
#: or subagent-result contract names no kind), ``"*"`` is everything else.
DEFAULT_EXCEPTIONS: dict[str, type[BaseException]] = {
    "TOOL_TIMEOUT": TimeoutError,
    "NETWORK_UNREACHABLE": ConnectionError,
    "NETWORK_PARTITION": ConnectionError,
    "WORKER_LOST": ConnectionError,
    "DISK_FULL": OSError,
    "AUTH_EXPIRED": PermissionError,
    "PERMISSION_DENIED": PermissionError,
    "DEPENDENCY_MISSING": FileNotFoundError,
    "VALIDATION_FAILED": ValueError,
    "timeout": TimeoutError,
    "unavailable": ConnectionError,
    "auth_error": PermissionError,
    "permission": PermissionError,
    "validation": ValueError,
    "*": ToolCallError,
}


@dataclass(frozen=True, slots=True, repr=False)
class ExceptionMap:
    """A failure -> exception table: ordered (key, entry) pairs; its repr names what differs from the default.

    Build one with :func:`build_exception_map`.
    """

    entries: tuple[tuple[str, Any], ...]
    _table: dict[str, Any] = field(init=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_table", dict(self.entries))

    def __repr__(self) -> str:
        changed = [(k, v) for k, v in self.entries if DEFAULT_EXCEPTIONS.get(k) is not v]
        if not changed:
            return "default"
        return "default + {" + ", ".join(f"{k!r}: {_name(v)}" for k, v in changed) + "}"

    def classes(self) -> list[type[BaseException]]:
        """The exception classes the table raises (factories excepted)."""
        return [e for _, e in self.entries if isinstance(e, type)]

    def factories(self) -> list[Callable[[Observation], BaseException]]:
        """The factories in the table: what they raise is known only when they are called."""
        return [e for _, e in self.entries if not isinstance(e, type)]

    def exception_for(self, observation: Observation) -> BaseException:
        """The exception ``observation``'s failure raises: by error code, then category word, then ``"*"``."""
        code, category = code_of(observation), category_of(observation)
        entry: Any = ToolCallError
        for key in (code, category, "*"):
            if key is not None and key in self._table:
                entry = self._table[key]
                break
        if isinstance(entry, type):
            cls: type[BaseException] = entry
            message = failure_message(observation)
            if issubclass(cls, ToolCallError):
                return cls(message, code=code, category=category)
            return cls(message)
        made = entry(observation)
        if not isinstance(made, BaseException):
            raise ExceptionMapError(
                f"exception factory {_name(entry)} returned {type(made).__name__}, not an exception"
            )
        return made


def build_exception_map(overrides: Mapping[str, Any] | None = None) -> ExceptionMap:
    """:data:`DEFAULT_EXCEPTIONS` with ``overrides`` on top.

    An override replaces the default entry of the same key and adds new keys.  Raises
    :class:`ExceptionMapError` for a key that is not a string or an entry that is neither an
    exception class nor a callable factory.
    """
    merged: dict[str, Any] = dict(DEFAULT_EXCEPTIONS)
    for key, entry in (overrides or {}).items():
        if not isinstance(key, str) or not key:
            raise ExceptionMapError(
                f"exception map key {key!r}: use an error code ('TOOL_TIMEOUT'), a category word ('timeout') or '*'"
            )
        if isinstance(entry, type):
            if not issubclass(entry, BaseException):
                raise ExceptionMapError(f"exception map entry {key!r}: {entry.__qualname__} is not an exception class")
        elif not callable(entry):
            raise ExceptionMapError(
                f"exception map entry {key!r}: {entry!r} is neither an exception class nor a factory "
                "f(observation) -> exception"
            )
        merged[key] = entry
    return ExceptionMap(tuple(merged.items()))


def failure_message(observation: Observation) -> str:
    """What the orchestrator was shown, as an exception message: raw text, envelope message, code, or status word."""
    if observation.text:
        return observation.text
    envelope = observation.envelope
    for attr in ("message", "error_message"):
        value = getattr(envelope, attr, None)
        if isinstance(value, str) and value:
            return value
    return code_of(observation) or observation.status


def exception_for(
    observation: Observation, exception_map: ExceptionMap | Mapping[str, Any] | None = None
) -> BaseException:
    """The exception ``observation``'s failure raises under ``exception_map``.

    ``exception_map`` is an :class:`ExceptionMap`, or overrides of :data:`DEFAULT_EXCEPTIONS`
    (None: the defaults).  Looked up by error code, then category word, then ``"*"``; a class is
    built with the failure's message (a :class:`ToolCallError` also with the code and
    category), a factory is called with the observation.
    """
    if not isinstance(exception_map, ExceptionMap):
        exception_map = build_exception_map(exception_map)
    return exception_map.exception_for(observation)


def _name(entry: Any) -> str:
    """``module.QualName`` of a class or function (builtins by their bare name)."""
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None) or type(entry).__qualname__
    return qualname if module in (None, "builtins") else f"{module}.{qualname}"
