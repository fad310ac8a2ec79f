"""Recovery policies: built-ins, composable blocks, retry controls, presets and the registry.

* :mod:`~fleetchaos.policies.builtins`: the five built-in policies;
* :mod:`~fleetchaos.policies.blocks`: :class:`Policy` joined from blocks (what to retry on, when to
  stop, how long to wait, what to do instead: :mod:`~fleetchaos.policies.retry_on`,
  :mod:`~fleetchaos.policies.stop`, :mod:`~fleetchaos.policies.wait`, :mod:`~fleetchaos.policies.instead`)
  and the envelope readers they use (:mod:`~fleetchaos.policies.readers`);
* :mod:`~fleetchaos.policies.budgets` and :mod:`~fleetchaos.policies.breakers`: the classic retry
  controls as pure transitions; :mod:`~fleetchaos.policies.controls`: :class:`Controlled`, which wires
  them into the driver;
* :mod:`~fleetchaos.policies.generic`: :class:`RemedyLadder`, which makes the most of an error it
  cannot read (no envelope, no text);
* :mod:`~fleetchaos.policies.presets`: named recipes built from all of the above;
* :mod:`~fleetchaos.policies.tenacity_adapter`: :func:`from_tenacity`, a team's tenacity retry
  configuration as a :class:`TenacityPolicy` (:mod:`~fleetchaos.policies.tenacity_policy`, with the
  strategies of :mod:`~fleetchaos.policies.tenacity_blocks`) evaluated in simulated time, failures
  raised as the exceptions of :mod:`~fleetchaos.policies.exception_map`;
* :mod:`~fleetchaos.policies.registry`: names to policies (built-ins, presets, entry points, import
  paths) and their descriptions; :mod:`~fleetchaos.policies.spec`: names with parameters,
  ``backoff(base_s=0.5,cap_s=5)``.

Every public name is importable from here.  Names load on first use (as in :mod:`fleetchaos`), so
importing this package loads no policy module, and no policy module imports SimPy.
"""

from __future__ import annotations

import importlib
from typing import Any

#: The module each public name comes from.
_MODULES: dict[str, tuple[str, ...]] = {
    "fleetchaos.policies._recovery": (
        "exponential",
        "full_jitter",
        "hinted_delay",
        "resume_from_refs",
        "resume_point",
        "unknown_branch",
    ),
    "fleetchaos.policies.blocks": (
        "Policy",
        "category_of",
        "code_of",
        "decorrelated_jitter",
        "instead_accept_partial",
        "instead_alternative",
        "instead_escalate",
        "instead_give_up",
        "instead_refresh",
        "instead_reroute",
        "resume_of",
        "retry_after_s_of",
        "retry_all",
        "retry_always",
        "retry_any",
        "retry_if_category",
        "retry_if_code",
        "retry_if_retryable",
        "retry_never",
        "retryable_of",
        "stop_after_attempt",
        "stop_after_delay",
        "stop_after_same_failure",
        "stop_all",
        "stop_any",
        "stop_never",
        "wait_decorrelated_jitter",
        "wait_equal_jitter",
        "wait_exponential",
        "wait_fixed",
        "wait_full_jitter",
        "wait_max",
        "wait_retry_after",
        "wait_sum",
    ),
    "fleetchaos.policies.breakers": (
        "BreakerBoard",
        "BreakerMode",
        "BreakerState",
        "CircuitBreaker",
        "breaker_key",
    ),
    "fleetchaos.policies.budgets": (
        "AdaptiveThrottle",
        "AwsRetryQuota",
        "EnvoyLoad",
        "EnvoyRetryBudget",
        "GrpcRetryThrottle",
        "GrpcTokens",
        "QuotaState",
        "ThrottleWindow",
    ),
    "fleetchaos.policies.builtins": (
        "Backoff",
        "BlindRetry",
        "FailureTypeRouter",
        "RawParsing",
        "StructuredDecisionTree",
    ),
    "fleetchaos.policies.controls": (
        "ControlState",
        "Controlled",
    ),
    "fleetchaos.policies.generic": (
        "RUNGS",
        "RemedyLadder",
    ),
    "fleetchaos.policies.presets": (
        "BACKOFF_VARIANTS",
        "PRESETS",
        "CategoryTreeWithRemediation",
        "Coordinator",
        "EscalateAll",
        "LayeredBackoff",
        "RecoveryMatrix",
        "tool_of",
    ),
    "fleetchaos.policies.raw_errors": (
        "STATUS_CATEGORIES",
        "ParsedError",
        "parse_raw",
        "parse_status",
        "status_of",
    ),
    "fleetchaos.policies.registry": (
        "BUILT_IN",
        "DRIVER_ATTRIBUTES",
        "ENTRY_POINT",
        "ENTRY_POINT_GROUP",
        "IMPORT_PATH",
        "POLICIES",
        "PolicyInfo",
        "PolicyLookupError",
        "describe_policy",
        "get_policy",
        "list_policies",
        "policy_entry_points",
        "policy_names",
        "resolve_policy",
        "suggest",
        "with_params",
    ),
    "fleetchaos.policies.exception_map": (
        "DEFAULT_EXCEPTIONS",
        "ToolCallError",
        "exception_for",
    ),
    "fleetchaos.policies.tenacity_adapter": (
        "RetryTranslationError",
        "from_tenacity",
    ),
    "fleetchaos.policies.tenacity_policy": ("TenacityPolicy",),
    "fleetchaos.policies.tenacity_transport": ("transport_from_tenacity",),
    "fleetchaos.policies.spec": (
        "PolicySpec",
        "PolicySpecError",
        "format_spec",
        "parse_spec",
    ),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "BACKOFF_VARIANTS",
    "BUILT_IN",
    "DEFAULT_EXCEPTIONS",
    "DRIVER_ATTRIBUTES",
    "ENTRY_POINT",
    "ENTRY_POINT_GROUP",
    "IMPORT_PATH",
    "POLICIES",
    "PRESETS",
    "RUNGS",
    "STATUS_CATEGORIES",
    "AdaptiveThrottle",
    "AwsRetryQuota",
    "Backoff",
    "BlindRetry",
    "BreakerBoard",
    "BreakerMode",
    "BreakerState",
    "CategoryTreeWithRemediation",
    "CircuitBreaker",
    "ControlState",
    "Controlled",
    "Coordinator",
    "EnvoyLoad",
    "EnvoyRetryBudget",
    "EscalateAll",
    "FailureTypeRouter",
    "GrpcRetryThrottle",
    "GrpcTokens",
    "LayeredBackoff",
    "ParsedError",
    "Policy",
    "PolicyInfo",
    "PolicyLookupError",
    "PolicySpec",
    "PolicySpecError",
    "QuotaState",
    "RawParsing",
    "RecoveryMatrix",
    "RemedyLadder",
    "RetryTranslationError",
    "StructuredDecisionTree",
    "TenacityPolicy",
    "ThrottleWindow",
    "ToolCallError",
    "breaker_key",
    "category_of",
    "code_of",
    "decorrelated_jitter",
    "describe_policy",
    "exception_for",
    "exponential",
    "format_spec",
    "from_tenacity",
    "full_jitter",
    "get_policy",
    "hinted_delay",
    "instead_accept_partial",
    "instead_alternative",
    "instead_escalate",
    "instead_give_up",
    "instead_refresh",
    "instead_reroute",
    "list_policies",
    "parse_raw",
    "parse_spec",
    "parse_status",
    "policy_entry_points",
    "policy_names",
    "resolve_policy",
    "resume_from_refs",
    "resume_of",
    "resume_point",
    "retry_after_s_of",
    "retry_all",
    "retry_always",
    "retry_any",
    "retry_if_category",
    "retry_if_code",
    "retry_if_retryable",
    "retry_never",
    "retryable_of",
    "status_of",
    "stop_after_attempt",
    "stop_after_delay",
    "stop_after_same_failure",
    "stop_all",
    "stop_any",
    "stop_never",
    "suggest",
    "tool_of",
    "transport_from_tenacity",
    "unknown_branch",
    "wait_decorrelated_jitter",
    "wait_equal_jitter",
    "wait_exponential",
    "wait_fixed",
    "wait_full_jitter",
    "wait_max",
    "wait_retry_after",
    "wait_sum",
    "with_params",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fleetchaos.policies' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
