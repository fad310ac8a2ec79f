"""Policy names: the built-ins and presets by name, installed entry points, import paths, and descriptions.

:func:`get_policy` turns what a user typed (``--policy``, ``--policies``, a sweep file, the
pytest marker) into a policy: a built-in or preset name from :data:`POLICIES`, an import
path ``pkg.module:Name``, or a name an installed package registers in the
:data:`ENTRY_POINT_GROUP` entry point group.  :func:`describe_policy` and
:func:`list_policies` say what each one is, for ``fleetchaos policies list/show``.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from fleetchaos.policies.blocks import Policy as Recipe
from fleetchaos.policies.builtins import Backoff, BlindRetry, FailureTypeRouter, RawParsing, StructuredDecisionTree
from fleetchaos.policies.presets import PRESETS
from fleetchaos.policies.spec import PolicySpecError, apply_params, format_spec, parse_spec
from fleetchaos.policies.spec import parameters as spec_parameters
from fleetchaos.sim.interrupts import PASS_THROUGH, ProcessExitRefused, describe_exception, process_exits_refused
from fleetchaos.sim.observation import RecoveryPolicy
from fleetchaos.sim.plugins import dist_name, entry_points, load_entry_point, load_import_path

__all__ = [
    "BUILT_IN",
    "CONTRACTS",
    "DRIVER_ATTRIBUTES",
    "ENTRY_POINT",
    "ENTRY_POINT_GROUP",
    "IMPORT_PATH",
    "POLICIES",
    "PolicyInfo",
    "PolicyLookupError",
    "describe_policy",
    "get_policy",
    "is_policy_name",
    "list_policies",
    "policy_entry_points",
    "policy_names",
    "resolve_policy",
    "suggest",
    "with_params",
]

#: Built-in policies and the named presets (backoff variants, the reference recipes, the
#: classic controls), by name: the built-ins first, in the order ``policies list`` shows.
POLICIES: dict[str, Callable[[], RecoveryPolicy]] = {
    "blind-retry": BlindRetry,
    "backoff": Backoff,
    "structured": StructuredDecisionTree,
    "failure-type-router": FailureTypeRouter,
    "raw-parse": RawParsing,
    **PRESETS,
}


#: The error contract (a format name of ``--errors``) each built-in and preset was written
#: for: the one its reference recipe reads, where a test checks it recovers transient
#: failures.  ``generic`` marks the policies that read no envelope at all.  The rest (the
#: retry baselines, backoff variants and controls) act the same on every format.
CONTRACTS: dict[str, str] = {
    "structured": "structured",
    "category-tree-remediation": "agent-tool-error",
    "failure-type-router": "failure-type",
    "coordinator": "subagent-result",
    "recovery-matrix": "tool-envelope",
    "recovery-matrix-fail-fast": "tool-envelope",
    "recovery-matrix-all-or-nothing": "tool-envelope",
    "raw-parse": "raw",
    "ladder": "generic",
    "ladder-breaker": "generic",
}

#: The entry point group in which installed packages register policies: each entry maps a
#: policy name to an object reference ``module:attr`` (a policy class or instance).  See
#: docs/policies.md, "Write your own policy".
ENTRY_POINT_GROUP = "fleetchaos.policies"

#: Optional attributes the driver reads from a policy besides ``name`` and ``decide``, with
#: what each does.  The reference is the :class:`~fleetchaos.sim.observation.RecoveryPolicy`
#: docstring; a test keeps the two in step, so ``fleetchaos policies show`` never hides one.
DRIVER_ATTRIBUTES: dict[str, str] = {
    "guardrail": "a final-answer guardrail blocks a success claim while the format's failure flag says a step failed",
    "idempotency_keys": "calls carry idempotency keys: a retried call whose side effect already took effect "
    "does not take effect twice",
    "transport": "transport layers under the agent runtime (one, or a list nearest the tool first) retry failed "
    "tool calls before the policy sees them",
    "new_shared_state": "a fresh mutable object per orchestrator and run, handed to every decision as history.shared",
    "observe": "called after every dispatch, successful or not, so shared controls can count outcomes",
    "choose_worker": "may move a dispatch away from the worker the orchestrator proposed",
    "before_dispatch": "judges every dispatch before it goes out, first tries included, and may refuse it locally",
}

#: Where a policy comes from, as ``fleetchaos policies list/show`` say it.
BUILT_IN, ENTRY_POINT, IMPORT_PATH = "built-in", "entry point", "import path"


class PolicyLookupError(LookupError):
    """A policy name or import path that does not resolve to a policy.

    The message names the policy, what failed and how to fix it; the CLI prints it as one
    line and exits 2.
    """


def policy_entry_points() -> dict[str, tuple[importlib.metadata.EntryPoint, ...]]:
    """Policies registered by installed packages in :data:`ENTRY_POINT_GROUP`, by name (sorted).

    Only the metadata is read: nothing is imported until a policy is asked for.  A name
    maps to several entry points when several installed distributions register it.
    """
    return entry_points(ENTRY_POINT_GROUP)


def policy_names() -> list[str]:
    """Every name ``get_policy`` accepts without an import path: the built-ins, then entry points."""
    return list(POLICIES) + [name for name in policy_entry_points() if name not in POLICIES]


def is_policy_name(name: str) -> bool:
    """Whether ``name`` is in :func:`policy_names`; the entry points are read only for a name no built-in has."""
    return name in POLICIES or name in policy_entry_points()


def suggest(name: str) -> str | None:
    """The known policy name closest to a mistyped ``name``, or None."""
    match = difflib.get_close_matches(name, policy_names(), n=1)
    return match[0] if match else None


def get_policy(name: str) -> RecoveryPolicy:
    """A policy by name or spec: a built-in, an import path ``pkg.module:Name``, or an installed entry point.

    The name may carry parameters, ``backoff(base_s=0.005,cap_s=2)`` (see
    :mod:`fleetchaos.policies.spec`).  Built-in names win over entry points of the same
    name; a name with a colon is always an import path.  Raises :class:`PolicyLookupError`
    with a message naming the policy, what failed and the fix.
    """
    return resolve_policy(name)[0]


def resolve_policy(text: str) -> tuple[RecoveryPolicy, str]:
    """The policy a spec names, and the spec's canonical spelling (what results and replays record).

    The canonical spelling of a bare name is the name itself; parameters are written in
    the policy's field order with their values as validated (``cap_s=2`` -> ``cap_s=2.0``).
    """
    try:
        spec = parse_spec(text)
        with process_exits_refused():  # a policy module calling os._exit() on import, or in its constructor
            policy = _by_name(spec.name)
            policy, params = apply_params(policy, spec.name, spec.params)
    except PolicySpecError as exc:
        raise PolicyLookupError(str(exc)) from None
    except ProcessExitRefused as exc:
        raise PolicyLookupError(
            f"policy {text!r}: loading it called {exc}, which would end fleetchaos itself; remove the call"
        ) from None
    return policy, format_spec(spec.name, params)


def with_params(text: str, params: Sequence[tuple[str, Any]]) -> str:
    """The canonical spec of ``text`` with ``params`` set: a parameter given here replaces the spec's own.

    Raises :class:`PolicyLookupError` as :func:`resolve_policy` does (an unknown parameter
    names the policy, the parameter and the valid ones).
    """
    if not params:
        return resolve_policy(text)[1]
    try:
        spec = parse_spec(text)
    except PolicySpecError as exc:
        raise PolicyLookupError(str(exc)) from None
    given = dict(spec.params)
    given.update(params)
    return resolve_policy(format_spec(spec.name, tuple(given.items())))[1]


def _by_name(name: str) -> RecoveryPolicy:
    if name in POLICIES:
        return POLICIES[name]()
    if ":" in name:
        return _from_import_path(name)
    registered = policy_entry_points().get(name)
    if registered:
        return _from_entry_point(name, registered)
    entry = ", ".join(n for n in policy_entry_points() if n not in POLICIES)
    raise PolicyLookupError(
        f"unknown policy {name!r}: use one of {', '.join(sorted(POLICIES))}"
        + (f", an installed entry point ({entry})" if entry else "")
        + ", or an import path like mypkg.policies:MyPolicy"
    )


def _from_import_path(name: str) -> RecoveryPolicy:
    subject = f"policy {name!r}"
    target = load_import_path(subject, name, PolicyLookupError)
    return _instantiate(
        subject, name.partition(":")[2], target, fix="a policy class must build with no arguments", label=name
    )


def _from_entry_point(name: str, registered: tuple[importlib.metadata.EntryPoint, ...]) -> RecoveryPolicy:
    target, subject, fix = load_entry_point("policy", name, registered, ENTRY_POINT_GROUP, PolicyLookupError)
    try:
        return _instantiate(subject, registered[0].value, target, fix="a policy class must build with no arguments")
    except PolicyLookupError as exc:
        raise PolicyLookupError(f"{exc}; {fix}") from None


def _instantiate(subject: str, attr: str, target, *, fix: str, label: str | None = None) -> RecoveryPolicy:
    """A policy from a loaded object: a class is built with no arguments, an instance is used as is.

    A tenacity retrying object (or a function decorated with ``@tenacity.retry``) is
    translated into a policy (:func:`fleetchaos.policies.tenacity_adapter.from_tenacity`),
    named ``label`` (the import path).  ``subject`` names the policy in messages (``policy
    'x'`` and where it comes from).
    """
    from fleetchaos.policies.tenacity_adapter import RetryTranslationError, from_tenacity, is_retry_config

    try:
        policy = target() if isinstance(target, type) else target
        has_decide = callable(getattr(policy, "decide", None))
    except PASS_THROUGH:
        raise
    except BaseException as exc:  # the class's own code: it may raise anything
        raise PolicyLookupError(f"{subject}: {attr}() failed ({describe_exception(exc)}); {fix}") from None
    if not has_decide and is_retry_config(policy):
        try:
            return cast(RecoveryPolicy, from_tenacity(policy, name=label or attr))  # frozen: its name is read-only
        except RetryTranslationError as exc:
            raise PolicyLookupError(f"{subject}: {exc.reason}") from None
    if not has_decide:
        raise PolicyLookupError(f"{subject}: {attr} has no decide(observation, history) method")
    return policy


# -- descriptions for `fleetchaos policies list/show` ------------------------------------


@dataclass(frozen=True)
class PolicyInfo:
    """What ``fleetchaos policies show`` tells about one policy.

    ``parameters`` are the policy's dataclass fields (``name`` excepted) with the values it
    is built with; ``recipe`` is the flattened repr of a :class:`fleetchaos.policies.blocks.Policy`;
    ``driver_attributes`` are the :data:`DRIVER_ATTRIBUTES` the policy sets.  ``error`` is
    set (and the rest mostly empty) for an entry point that cannot be loaded.  ``contract``
    is the error format a built-in was written for (:data:`CONTRACTS`); ``settable`` the
    parameter names a spec may set (``backoff(base_s=0.5)``, :mod:`fleetchaos.policies.spec`).
    """

    name: str
    source: str
    origin: str
    description: str = ""
    details: str = ""
    parameters: dict[str, object] = field(default_factory=dict)
    recipe: str | None = None
    driver_attributes: dict[str, object] = field(default_factory=dict)
    shadowed: str | None = None
    error: str | None = None
    contract: str | None = None
    settable: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """JSON-ready: values that JSON cannot hold are given as their repr."""
        # Not dataclasses.asdict: it would deep-copy (and recurse into) arbitrary policy parts.
        doc = {f: getattr(self, f) for f in self.__dataclass_fields__}
        doc["parameters"] = {k: _plain(v) for k, v in self.parameters.items()}
        doc["driver_attributes"] = {k: _plain(v) for k, v in self.driver_attributes.items()}
        doc["settable"] = list(self.settable)
        return doc


def describe_policy(name: str) -> PolicyInfo:
    """A description of the policy ``get_policy(name)`` returns; PolicyLookupError as ``get_policy``."""
    policy, canonical = resolve_policy(name)
    base = parse_spec(name).name
    if base in POLICIES:
        source, origin = BUILT_IN, _qualified(type(policy))
    elif ":" in base:
        source, origin = IMPORT_PATH, base
    else:
        ep = policy_entry_points()[base][0]
        source, origin = ENTRY_POINT, f"{ep.value} (package {dist_name(ep)})"
    return _info(canonical, source, origin, policy)


def list_policies() -> list[PolicyInfo]:
    """Every built-in policy, then every installed entry point (each loaded now, to describe it).

    An entry point that cannot be loaded is listed with its ``error`` instead of stopping the
    list; one that a built-in shadows is listed with ``shadowed`` set.
    """
    infos = [describe_policy(name) for name in POLICIES]
    for name, registered in policy_entry_points().items():
        origin = "; ".join(f"{ep.value} (package {dist_name(ep)})" for ep in registered)
        if name in POLICIES:
            infos.append(
                PolicyInfo(name, ENTRY_POINT, origin, shadowed=f"the built-in {name!r} wins over this entry point")
            )
            continue
        try:
            infos.append(_info(name, ENTRY_POINT, origin, _from_entry_point(name, registered)))
        except PolicyLookupError as exc:
            infos.append(PolicyInfo(name, ENTRY_POINT, origin, error=str(exc)))
    return infos


def _info(name: str, source: str, origin: str, policy) -> PolicyInfo:
    cls = type(policy)
    own = getattr(policy, "description", None)  # a preset's own words win over its class's docstring
    doc = own if isinstance(own, str) and own.strip() else inspect.getdoc(cls) or ""
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        doc = ""  # the signature dataclasses write when a class has no docstring: not a description
    first, _, rest = doc.partition("\n\n")
    parameters = {}
    if dataclasses.is_dataclass(policy):
        parameters = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if f.name != "name"}
    driver = {}
    for attr in DRIVER_ATTRIBUTES:
        value = getattr(policy, attr, None)
        if value is None or value is False:  # not set: the driver's default applies
            continue
        driver[attr] = f"method {_qualified(value)}" if attr in _HOOKS and callable(value) else value
    return PolicyInfo(
        name=name,
        source=source,
        origin=origin,
        description=" ".join(first.split()),
        details=rest.strip(),
        parameters=parameters,
        recipe=repr(policy) if isinstance(policy, Recipe) else None,
        driver_attributes=driver,
        contract=CONTRACTS.get(name.partition("(")[0]) if source == BUILT_IN else None,
        settable=tuple(spec_parameters(policy)),
    )


#: Driver attributes that are methods: shown by name, not by value.
_HOOKS = frozenset({"new_shared_state", "observe", "choose_worker"})


def _qualified(obj) -> str:
    """``module:QualName`` of a class or function (bound methods by their function)."""
    obj = getattr(obj, "__func__", obj)
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def _plain(value):
    """A JSON value: scalars and flat sequences as they are, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return repr(value)
