"""What every building block shares: the readable repr, and joining blocks with operators.

A block is a frozen dataclass with one method, ``__call__(observation, history)``.  Its repr
is the recipe a results file records (``retry_if_code('A') | retry_always()``), and joins of
the same kind flatten, so a recipe reads the way it was written.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fleetchaos.sim.observation import Observation, TaskHistory


def block_repr(obj: Any) -> str:
    """``name(a, b, key=value)``: required fields positionally, defaulted ones only when changed."""
    parts = []
    for f in dataclasses.fields(obj):
        if not f.repr:
            continue
        value = getattr(obj, f.name)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            parts.append(repr(value))
        elif value != f.default:
            parts.append(f"{f.name}={value!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def callable_repr(fn: Any) -> str:
    """A plain callable by its qualified name; a block by its own repr."""
    if isinstance(fn, BlockBase):
        return repr(fn)
    return getattr(fn, "__qualname__", None) or repr(fn)


class BlockBase:
    """Shared repr for the one-method blocks (no state of its own)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return block_repr(self)


def check_callable(value: Any, kind: str) -> Any:
    if not callable(value):
        raise TypeError(f"{kind}: {value!r} is not a block or a callable f(observation, history)")
    return value


def join(cls: type[JoinBase], left: Any, right: Any) -> Any:
    """``cls(*members)`` with nested joins of the same kind flattened."""
    members: list[Any] = []
    for side in (left, right):
        check_callable(side, f"{cls.__name__} member")
        members.extend(side.members if isinstance(side, cls) else (side,))
    return cls(*members)


def _member_repr(member: Any, own: type) -> str:
    text = callable_repr(member)
    if isinstance(member, (JoinBase,)) and type(member) is not own and len(member.members) > 1:
        return f"({text})"
    return text


class JoinBase(BlockBase):
    """Base of the flattened any/all joins: members in order, joined in the repr by ``_op``."""

    __slots__ = ()
    _op = "?"
    members: tuple[Any, ...]  # each join's own field, set by init_members

    def __repr__(self) -> str:
        if not self.members:
            return f"{type(self).__name__}()"
        return f" {self._op} ".join(_member_repr(m, type(self)) for m in self.members)


def init_members(self: Any, members: tuple[Any, ...]) -> None:
    for m in members:
        check_callable(m, f"{type(self).__name__} member")
    object.__setattr__(self, "members", tuple(members))


class BoolBlock(BlockBase):
    """A block answering yes or no: ``|`` joins into its family's any-join, ``&`` into its all-join.

    Each family (retry predicates, stop conditions) names its two join classes in
    ``_any`` and ``_all`` once they are defined.
    """

    __slots__ = ()
    _any: type
    _all: type

    def __or__(self, other: Any) -> Any:
        return join(self._any, self, other)

    def __ror__(self, other: Any) -> Any:
        return join(self._any, other, self)

    def __and__(self, other: Any) -> Any:
        return join(self._all, self, other)

    def __rand__(self, other: Any) -> Any:
        return join(self._all, other, self)


class AnyJoin(JoinBase):
    """Holds when any member holds (an empty join never holds)."""

    __slots__ = ()
    _op = "|"

    def __init__(self, *members: Any) -> None:
        init_members(self, members)

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when any member holds."""
        return any(m(observation, history) for m in self.members)


class AllJoin(JoinBase):
    """Holds when every member holds (an empty join always holds)."""

    __slots__ = ()
    _op = "&"

    def __init__(self, *members: Any) -> None:
        init_members(self, members)

    def __call__(self, observation: Observation, history: TaskHistory) -> bool:
        """True when every member holds."""
        return all(m(observation, history) for m in self.members)
