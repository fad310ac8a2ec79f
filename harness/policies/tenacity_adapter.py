"""From a team's tenacity configuration to a fleetchaos policy: :func:`from_tenacity`.

The input is the object production runs: a ``tenacity.Retrying`` or ``AsyncRetrying``, or
a function decorated with ``@tenacity.retry(...)`` (its ``.retry`` attribute).  Its
``stop``, ``wait`` and ``retry`` strategies are translated one by one, compositions included
(``|`` and ``&`` of stops and retry conditions, ``+`` of waits, ``wait_chain``), into the
strategies of :mod:`fleetchaos.policies.tenacity_blocks`, which a
:class:`~fleetchaos.policies.tenacity_policy.TenacityPolicy` evaluates in simulated seconds.

What cannot be translated faithfully is refused with one :class:`RetryTranslationError`
naming the object, the component, why and what to do: a custom callable (it may read the
wall clock, or state the simulation does not have), ``retry_if_result`` (the simulation has
no return values), ``wait_exception`` and ``retry_if_exception`` (user predicates),
``stop_when_event_set`` (an event set outside the call), an exception type that no entry of
the exception map raises (the condition could never hold), an attempt limit that is not a
finite number, a subclass that overrides part of tenacity's loop, compositions nested deeper
than tenacity itself can evaluate.  The hooks (``before``, ``after``, ``before_sleep``,
``retry_error_callback``) and ``reraise`` do not change when attempts happen and are not
translated; of ``sleep`` only which one it is (``time.sleep``, ``asyncio.sleep``, custom),
which decides what a wait no clock can take does (docs/policies.md).

tenacity is an optional extra (``pip install 'fleetchaos[tenacity]'``): it is imported only
when a configuration is translated.  stamina is not supported (see :func:`from_tenacity`).
"""

from __future__ import annotations

import abc
import contextlib
import math
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from fleetchaos.policies import tenacity_blocks as b
from fleetchaos.policies.exception_map import ExceptionMap, ExceptionMapError, build_exception_map
from fleetchaos.policies.tenacity_policy import ASYNC_SLEEP, CUSTOM_SLEEP, TIME_SLEEP, TenacityPolicy
from fleetchaos.sim.interrupts import PASS_THROUGH, describe_exception

__all__ = ["RetryTranslationError", "from_tenacity", "is_retry_config"]

_DOCS = 'docs/policies.md, "Your tenacity config as a policy"'
#: How deeply compositions may nest (:meth:`_Translator.nested`); tenacity itself fails a few hundred levels down.
MAX_NESTING = 100
_BUILT_IN = (
    "use tenacity's own strategies (stop_after_attempt, stop_after_delay, wait_exponential, "
    "retry_if_exception_type, ...) or write the rule as a fleetchaos policy"
)


class RetryTranslationError(ValueError):
    """A retry configuration that cannot be translated faithfully; the message names the part, why, and the fix.

    ``subject`` names the configuration, ``reason`` says the rest: the message is ``subject: reason``.
    """

    def __init__(self, subject: str, reason: str) -> None:
        super().__init__(f"{subject}: {reason}")
        self.subject = subject
        self.reason = reason


def is_retry_config(obj: Any) -> bool:
    """Is ``obj`` a tenacity retrying object, a function decorated with ``@tenacity.retry``, or a stamina object?

    Imports nothing: an object of a library that is not loaded cannot be one of its objects.
    """
    tenacity = sys.modules.get("tenacity")
    base = getattr(tenacity, "BaseRetrying", None)
    try:
        if _stamina_kind(obj) is not None:
            return True
        if base is None:
            return False
        return isinstance(obj, base) or (isinstance(getattr(obj, "retry", None), base) and callable(obj))
    except PASS_THROUGH:
        raise
    except BaseException:  # an object whose attribute access raises (SystemExit(0) included) is not a retry config
        return False


def from_tenacity(
    obj: Any,
    exception_map: Mapping[str, Any] | None = None,
    *,
    resume: bool = False,
    name: str | None = None,
) -> TenacityPolicy:
    """The recovery policy that does what ``obj``, a tenacity configuration, does, in simulated time.

    ``obj`` is a ``tenacity.Retrying``/``AsyncRetrying`` or a function decorated with
    ``@tenacity.retry``.  ``exception_map`` overrides entries of
    :data:`~fleetchaos.policies.exception_map.DEFAULT_EXCEPTIONS` (which exception each
    failure raises: an error code or category word -> an exception class or a factory
    ``f(observation) -> exception``); ``resume=True`` resumes a retry from the partial progress
    the envelope revealed instead of calling the whole function again; ``name`` labels the
    policy (default: the function's or the retrying object's name).

    Raises :class:`RetryTranslationError` for what cannot be translated faithfully.  stamina
    objects are refused with the reason: stamina keeps its configuration in closures and
    private attributes, with no public way to read it back.
    """
    subject = name or _label(obj)
    stamina = _stamina_kind(obj)
    if stamina is not None:
        raise RetryTranslationError(
            subject,
            f"{stamina} is a stamina retry; stamina keeps its configuration in closures and private "
            "attributes, so it cannot be read back faithfully; write the same rule as the tenacity config stamina "
            "builds (stop_after_attempt(attempts) | stop_after_delay(timeout), "
            "wait_exponential_jitter(multiplier=wait_initial, max=wait_max, exp_base=wait_exp_base, "
            f"jitter=wait_jitter), retry_if_exception_type(on)) and pass that ({_DOCS})",
        )
    tenacity = _import_tenacity(subject)
    try:
        exceptions = build_exception_map(exception_map)
    except ExceptionMapError as exc:
        raise RetryTranslationError(subject, str(exc)) from None
    try:
        retrying = _retrying_of(tenacity, obj, subject)
        translate = _Translator(tenacity, subject, exceptions)
        stop = translate.stop(retrying.stop, "stop")
        wait = translate.wait(retrying.wait, "wait")
        retry = translate.retry(retrying.retry, "retry") if getattr(retrying, "enabled", True) else b.retry_never()
        hooks, sleep = _ignored_hooks(tenacity, retrying), _sleep_of(tenacity, retrying)
    except RetryTranslationError:
        raise
    except PASS_THROUGH:
        raise
    except BaseException as exc:  # the team's own code (a property, a subclass) may raise anything, SystemExit too
        raise RetryTranslationError(
            subject,
            f"reading its configuration raised {describe_exception(exc)}; pass a tenacity.Retrying whose stop, wait "
            "and retry can be read",
        ) from None
    return TenacityPolicy(stop, wait, retry, exceptions, resume, subject, hooks, sleep)


def _sleep_of(tenacity: Any, retrying: Any) -> str:
    """Which sleep ``retrying`` waits with: the default of ``Retrying`` or ``AsyncRetrying``, or a custom one."""
    sleep = getattr(retrying, "sleep", None)
    if sleep is tenacity.nap.sleep:
        return TIME_SLEEP
    # AsyncRetrying's default (asyncio.sleep itself in older tenacity); both are loaded when one is in use.
    defaults = (getattr(sys.modules.get("tenacity.asyncio"), "_portable_async_sleep", None),
                getattr(sys.modules.get("asyncio"), "sleep", None))  # fmt: skip
    return ASYNC_SLEEP if sleep is not None and any(sleep is d for d in defaults) else CUSTOM_SLEEP


def _ignored_hooks(tenacity: Any, retrying: Any) -> tuple[str, ...]:
    """The hooks set on ``retrying`` (not tenacity's defaults), which change nothing the simulation models.

    Named in the policy's repr, so a results file says they were there: a
    ``retry_error_callback`` that returns a fallback value would make production report a
    result where the simulation counts a failed task.
    """
    defaults = {
        "before": tenacity.before_nothing,
        "after": tenacity.after_nothing,
        "before_sleep": None,
        "retry_error_callback": None,
    }
    return tuple(hook for hook, default in defaults.items() if getattr(retrying, hook, default) is not default)


def _import_tenacity(subject: str) -> Any:
    try:
        import tenacity
    except ImportError:
        raise RetryTranslationError(
            subject,
            "translating a tenacity configuration needs tenacity, which is not installed; "
            "install the extra: pip install 'fleetchaos[tenacity]'",
        ) from None
    return tenacity


def _retrying_of(tenacity: Any, obj: Any, subject: str) -> Any:
    if isinstance(obj, tenacity.BaseRetrying):
        return _own_loop(tenacity, obj, subject)
    inner = getattr(obj, "retry", None)
    if isinstance(inner, tenacity.BaseRetrying) and callable(obj):
        return _own_loop(tenacity, inner, subject)
    raise RetryTranslationError(
        subject,
        f"{_describe(obj)} is not a tenacity.Retrying, tenacity.AsyncRetrying or a function decorated "
        "with @tenacity.retry(...); pass one of those",
    )


#: Names a subclass of tenacity's retrying classes may define without changing how attempts are decided.
_HARMLESS = frozenset({"__init__", "__repr__", "__str__", "__doc__", "__module__", "__qualname__", "__dict__",
                       "__weakref__", "__annotations__", "__slots__", "__orig_bases__", "__parameters__", "_abc_impl",
                       "__abstractmethods__"})  # fmt: skip


def _own_loop(tenacity: Any, retrying: Any, subject: str) -> Any:
    """``retrying``, unless its class overrides part of tenacity's loop (``__call__``, ``iter``...), which the
    translation reads only as tenacity's own: such a subclass is refused naming what it overrides."""
    classes = type(retrying).__mro__
    theirs = [c for c in classes if (c.__module__ or "").partition(".")[0] == "tenacity"]
    defined = {name for c in theirs for name in vars(c)}
    overridden: dict[str, str] = {}
    for cls in classes:
        if cls in theirs or cls in (object, abc.ABC):
            continue
        for name in vars(cls):
            if name in defined and name not in _HARMLESS:
                overridden.setdefault(name, f"{cls.__module__}.{cls.__qualname__}")
    if overridden:
        listed = ", ".join(f"{owner}.{name}" for name, owner in sorted(overridden.items()))
        raise RetryTranslationError(
            subject,
            f"its class overrides {listed} of tenacity's retrying loop; the translation decides as tenacity's own "
            "loop does, so it would not be this class's behaviour; pass a plain tenacity.Retrying (or AsyncRetrying) "
            f"with the same stop, wait and retry, or write the rule as a fleetchaos policy ({_DOCS})",
        )
    return retrying


def _label(obj: Any) -> str:
    """A name for the policy: the decorated function's ``module:qualname``, or the retrying object's own name."""
    if callable(obj) and hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
        return f"{obj.__module__}:{obj.__qualname__}"
    own = getattr(obj, "_name", None)
    if isinstance(own, str) and own:
        return own
    cls = type(obj)
    return f"{cls.__module__.partition('.')[0]}.{cls.__qualname__}"  # tenacity.Retrying, tenacity.AsyncRetrying


def _describe(obj: Any) -> str:
    """How a message names an object: a function by its qualified name (a lambda by where it is), else its type."""
    qualname = getattr(obj, "__qualname__", None)
    code = getattr(obj, "__code__", None)
    if qualname is not None and code is not None:
        if "<lambda>" in qualname:
            return f"a lambda ({code.co_filename}:{code.co_firstlineno})"
        return f"the function {getattr(obj, '__module__', '?')}.{qualname}"
    cls = type(obj)
    return f"a {cls.__module__}.{cls.__qualname__} object"


def _stamina_kind(obj: Any) -> str | None:
    """What stamina object ``obj`` is (a caller, or a function stamina decorated), or None."""
    if "stamina" not in sys.modules:
        return None
    module = type(obj).__module__ or ""
    if module == "stamina" or module.startswith("stamina."):
        return f"a stamina {type(obj).__qualname__}"
    code = getattr(obj, "__code__", None)
    wrapped = getattr(obj, "__wrapped__", None)
    if code is not None and wrapped is not None and "stamina" in code.co_filename.replace("\\", "/").split("/"):
        return f"the function {getattr(obj, '__qualname__', '?')} decorated with @stamina.retry"
    return None


def _finite_number(value: Any) -> bool:
    """An int or a finite float (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _types(value: Any) -> tuple[type[BaseException], ...]:
    return tuple(value) if isinstance(value, tuple) else (value,)


class _Translator:
    """One configuration's translation: the tenacity module, the subject for messages, the exception map."""

    def __init__(self, tenacity: Any, subject: str, exceptions: ExceptionMap) -> None:
        self.t = tenacity
        self.subject = subject
        self.classes = exceptions.classes()
        self.factories = exceptions.factories()
        self.depth = 0

    @contextlib.contextmanager
    def nested(self, path: str, part: Any) -> Iterator[None]:
        """One level deeper into compositions: deeper than :data:`MAX_NESTING` is refused.

        tenacity evaluates a composition by recursion, a level per ``+``, ``|`` or ``&`` written one after
        another (``a + b + c`` nests ``(a + b) + c``): measured from a shallow stack, 331 nested ``+`` or 248
        nested ``|`` already fail with ``RecursionError`` at the first retry.  A composition built flat
        (``wait_combine(a, b, c)``) has one level whatever its length.
        """
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise self.refuse(
                    path if len(path) < 60 else f"{path[:30]}...{path[-20:]}",
                    part,
                    f"its compositions nest more than {MAX_NESTING} levels deep (each +, | or & written one after "
                    "another nests the next), and tenacity evaluates them by recursion: a few hundred levels fail "
                    "with RecursionError at the first retry",
                    "build it flat, with one level: wait_combine(a, b, c, ...), stop_any(...), retry_any(...)",
                    shown=type(part).__name__ + "(...)",
                )
            yield
        finally:
            self.depth -= 1

    def refuse(
        self, path: str, part: Any, why: str, fix: str = _BUILT_IN, shown: str | None = None
    ) -> RetryTranslationError:
        return RetryTranslationError(
            self.subject, f"cannot translate {path}={shown or _describe(part)}: {why}; {fix} ({_DOCS})"
        )

    def custom(self, path: str, part: Any) -> RetryTranslationError:
        return self.refuse(
            path,
            part,
            "it is not one of tenacity's built-in strategies, and a custom callable may read the wall clock "
            "or state the simulation does not have, so its decisions cannot be reproduced in simulated time",
        )

    # -- stop ---------------------------------------------------------------------------

    def stop(self, part: Any, path: str) -> Any:
        t, kind = self.t, type(part)
        if kind is t.stop_after_attempt:
            number: Any = part.max_attempt_number  # an int, or any number tenacity was given (2.9)
            if not _finite_number(number):
                happens = (
                    "which never holds, so it would never stop"
                    if isinstance(number, float)
                    else "which raises TypeError at the first failure"
                )
                raise self.refuse(
                    path,
                    part,
                    f"{number!r} is not a finite number of attempts: tenacity compares attempt_number >= {number!r}, "
                    f"{happens}",
                    "give a number of attempts, or stop_never() if it is never to stop",
                    shown=f"stop_after_attempt({number!r})",
                )
            return b.stop_after_attempt(number)  # 2.9 stays 2.9: tenacity makes 3 attempts, and so does the block
        if kind is t.stop_after_delay:
            return b.stop_after_delay(float(part.max_delay))
        if kind is getattr(t, "stop_before_delay", None):
            return b.stop_before_delay(float(part.max_delay))
        if kind is type(t.stop_never):
            return b.stop_never()
        if kind in (t.stop_any, t.stop_all):
            with self.nested(path, part):
                members = tuple(self.stop(m, f"{path}.stops[{i}]") for i, m in enumerate(part.stops))
            return (b.stop_any if kind is t.stop_any else b.stop_all)(members)
        if kind is t.stop_when_event_set:
            raise self.refuse(
                path,
                part,
                "it stops when a threading.Event is set by other code, and the simulation has no such event",
                "remove it, or express the deadline as stop_after_delay",
            )
        raise self.custom(path, part)

    # -- wait ---------------------------------------------------------------------------

    def wait(self, part: Any, path: str) -> Any:
        t, kind = self.t, type(part)
        if kind in (t.wait_fixed, t.wait_none):
            return b.wait_fixed(float(part.wait_fixed))
        if kind is t.wait_random:
            return b.wait_random(float(part.wait_random_min), float(part.wait_random_max))
        if kind is t.wait_incrementing:
            return b.wait_incrementing(float(part.start), float(part.increment), float(part.max))
        if kind in (t.wait_exponential, t.wait_random_exponential):
            cls = b.wait_exponential if kind is t.wait_exponential else b.wait_random_exponential
            return cls(part.multiplier, float(part.max), part.exp_base, float(part.min))
        if kind is t.wait_exponential_jitter:
            multiplier = getattr(part, "multiplier", getattr(part, "initial", 1))
            return b.wait_exponential_jitter(
                multiplier, float(part.max), part.exp_base, float(part.jitter), float(part.min)
            )
        if kind is t.wait_chain:
            with self.nested(path, part):
                members = tuple(self.wait(m, f"{path}.strategies[{i}]") for i, m in enumerate(part.strategies))
            return b.wait_chain(members)
        if kind is t.wait_combine:
            with self.nested(path, part):
                members = tuple(self.wait(m, f"{path}.wait_funcs[{i}]") for i, m in enumerate(part.wait_funcs))
            return b.wait_combine(members)
        if kind is getattr(t, "wait_exception", None):
            raise self.refuse(
                path,
                part,
                "its wait comes from a user predicate on the exception, which the simulation cannot read",
                _BUILT_IN,
            )
        raise self.custom(path, part)

    # -- retry --------------------------------------------------------------------------

    def retry(self, part: Any, path: str) -> Any:
        t, kind = self.t, type(part)
        if kind is t.retry_if_exception_type:
            block = b.retry_if_exception_type(_types(part.exception_types))
            self.check_raised(path, block)
            return block
        if kind in (t.retry_if_not_exception_type, t.retry_unless_exception_type):
            return b.retry_if_not_exception_type(_types(part.exception_types))
        if kind is t.retry_if_exception_cause_type:
            if not self.factories:
                raise self.refuse(
                    path,
                    part,
                    "the exceptions of the exception map are built from a message and have no __cause__, "
                    "so this condition could never hold",
                    "map the failures to factories that set the cause (exception_map={'TOOL_TIMEOUT': make_error})",
                )
            return b.retry_if_exception_cause_type(_types(part.exception_cause_types))
        if kind in (t.retry_if_exception_message, t.retry_if_not_exception_message):
            negate = kind is t.retry_if_not_exception_message
            return b.retry_if_exception_message(part.message, part.match, negate)
        if kind is type(t.retry_always):
            return b.retry_always()
        if kind is type(t.retry_never):
            return b.retry_never()
        if kind in (t.retry_any, t.retry_all):
            with self.nested(path, part):
                members = tuple(self.retry(m, f"{path}.retries[{i}]") for i, m in enumerate(part.retries))
            return (b.retry_any if kind is t.retry_any else b.retry_all)(members)
        if kind in (t.retry_if_result, t.retry_if_not_result):
            raise self.refuse(
                path,
                part,
                "it decides on the wrapped function's return value, and the simulation has none "
                "(a dispatch that succeeds ends the task)",
                "translate the exception conditions alone: from_tenacity(RETRY.copy(retry=...))",
            )
        if kind is t.retry_if_exception:
            raise self.refuse(
                path, part, "its predicate is a user function, whose decisions the simulation cannot reproduce"
            )
        raise self.custom(path, part)

    def check_raised(self, path: str, block: b.retry_if_exception_type) -> None:
        """Refuse an exception type no entry of the map raises: the condition would silently never hold."""
        if self.factories:  # a factory may raise anything: it cannot be checked before the run
            return
        for wanted in block.exception_types:
            if not any(issubclass(c, wanted) for c in self.classes):
                module = getattr(wanted, "__module__", "builtins")
                shown = wanted.__qualname__ if module == "builtins" else f"{module}.{wanted.__qualname__}"
                raise self.refuse(
                    path,
                    block,
                    f"no entry of the exception map raises {shown} (or a subclass), so a failure could never be "
                    "retried on it",
                    f"map the failures that raise it, e.g. from_tenacity(RETRY, exception_map={{'TOOL_TIMEOUT': {shown}}})",
                    shown=repr(block),
                )
