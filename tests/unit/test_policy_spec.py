"""Policy specs with parameters: parsing literals only, applying them to dataclass policies, canonical spellings."""

from __future__ import annotations

import dataclasses

import pytest

from fleetchaos.errors import UserError
from fleetchaos.names import check_policies
from fleetchaos.policies import Backoff, Controlled
from fleetchaos.policies.registry import PolicyLookupError, get_policy, resolve_policy, with_params
from fleetchaos.policies.spec import (
    MAX_SPEC_CHARS,
    PolicySpec,
    PolicySpecError,
    format_spec,
    parameters,
    parse_spec,
    split_specs,
)


def test_parse_reads_name_and_literal_parameters():
    """A spec is a name and keyword literals, in the order given; a bare name has none."""
    assert parse_spec("backoff") == PolicySpec("backoff")
    assert parse_spec(" backoff( base_s = 0.005 , cap_s=2 ) ") == PolicySpec(
        "backoff", (("base_s", 0.005), ("cap_s", 2))
    )
    assert parse_spec("m.p:Cls(tools=['a', 'b'], on=True, n=None)").params == (
        ("tools", ("a", "b")),
        ("on", True),
        ("n", None),
    )
    assert parse_spec("breaker-worker(breaker.cooldown_s=60)").params == (("breaker.cooldown_s", 60),)


@pytest.mark.parametrize(
    "text",
    [
        "backoff(base_s=__import__('os').system('true'))",
        "backoff(base_s=1+1)",
        "backoff(base_s={'a': 1})",
        "backoff(base_s=lambda: 1)",
        "backoff(base_s)",
        "backoff(base_s=1",
        "backoff(base_s=1,base_s=2)",
        "(base_s=1)",
        "backoff(1.0)",
    ],
)
def test_parse_refuses_anything_but_keyword_literals(text):
    """Calls, expressions, mappings, positional values, repeats and unbalanced text are refused, never evaluated."""
    with pytest.raises(PolicySpecError):
        parse_spec(text)


def test_parse_bounds_the_text():
    """A spec longer than the bound is refused before it is parsed."""
    with pytest.raises(PolicySpecError, match="at most"):
        parse_spec("backoff(base_s=" + "1" * MAX_SPEC_CHARS + ")")


def test_split_keeps_commas_inside_parentheses_and_quotes():
    """A comma-separated list of specs splits only between specs."""
    assert split_specs("backoff(base_s=1,cap_s=5), structured,,x(t=('a,b',))") == (
        "backoff(base_s=1,cap_s=5)",
        "structured",
        "x(t=('a,b',))",
    )


def test_parameters_are_literal_fields_nested_by_dots():
    """Literal dataclass fields are parameters (name excepted); nested dataclasses add dotted names."""
    assert list(parameters(Backoff())) == ["max_retries", "base_s", "cap_s"]
    names = list(parameters(get_policy("breaker-worker")))
    assert "policy.base_s" in names and "breaker.cooldown_s" in names and "when_refused" in names
    assert "budget" not in names and "name" not in names


def test_get_policy_applies_parameters_with_their_field_types():
    """Values become the field's type (2 -> 2.0 for a float field) and reach nested policies."""
    policy = get_policy("backoff(base_s=0.005,cap_s=2)")
    assert policy == Backoff(base_s=0.005, cap_s=2.0) and isinstance(policy.cap_s, float)
    wrapped = get_policy("breaker-worker(policy.max_retries=2,breaker.cooldown_s=60)")
    assert isinstance(wrapped, Controlled)
    assert wrapped.policy.max_retries == 2 and wrapped.breaker.cooldown_s == 60.0


def test_canonical_spelling_orders_by_field_and_shows_validated_values():
    """Results record one spelling per policy: field order, validated values, no spaces."""
    assert resolve_policy("backoff")[1] == "backoff"
    assert resolve_policy("backoff( cap_s=2, base_s=1 )")[1] == "backoff(base_s=1.0,cap_s=2.0)"
    assert resolve_policy("recovery-matrix(policy.batch_mode='fail_fast')")[1] == (
        'recovery-matrix(policy.batch_mode="fail_fast")'
    )
    assert format_spec("x", (("t", ("a",)),)) == 'x(t=("a",))'
    assert parse_spec(resolve_policy("recovery-matrix(policy.high_risk_tools=('deploy',))")[1]).params == (
        ("policy.high_risk_tools", ("deploy",)),
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("backoff(base=1)", "unknown parameter 'base' (valid: max_retries, base_s, cap_s); did you mean 'base_s'?"),
        ("backoff(max_retries=2.5)", "whole number"),
        ("backoff(base_s=-1)", ">= 0"),
        ("backoff(base_s=True)", "give a number"),
        ("backoff(base_s=1e999)", "finite"),
        ("breaker-worker(when_refused='never')", "is not one of"),
        ("breaker-worker(breaker.failure_threshold=0)", "failure_threshold"),
        ("escalate-all(x=1)", "takes no parameters"),
        ("backoff(name='other')", "unknown parameter 'name'"),
    ],
)
def test_bad_parameters_name_the_policy_parameter_and_fix(text, needle):
    """Each refusal names the policy and what is wrong, including the policy's own checks."""
    with pytest.raises(PolicyLookupError) as info:
        get_policy(text)
    assert needle in str(info.value)
    assert "policy 'backoff'" in str(info.value) or "policy '" in str(info.value)


def test_with_params_overrides_the_spec_and_canonicalises():
    """A --param policy.NAME value replaces the spec's own value for that parameter."""
    assert with_params("backoff(base_s=1,cap_s=9)", [("base_s", 3)]) == "backoff(base_s=3.0,cap_s=9.0)"
    assert with_params("backoff", []) == "backoff"


def test_check_policies_returns_canonical_names_and_refuses_the_same_policy_twice():
    """The CLI's name check gives canonical specs; two spellings of one policy are one arm given twice."""
    assert check_policies(["backoff(cap_s=5)", "structured"], "--policies") == ("backoff(cap_s=5.0)", "structured")
    with pytest.raises(UserError, match="names one twice"):
        check_policies(["backoff(cap_s=5)", "backoff(cap_s=5.0)"], "--policies")
    with pytest.raises(UserError, match="--policies: policy 'backoff': unknown parameter"):
        check_policies(["backoff(bogus=1)"], "--policies")


def test_import_path_dataclass_policies_take_parameters():
    """A dataclass policy named by import path takes parameters like a built-in."""
    policy = get_policy("fleetchaos.policies.builtins:Backoff(base_s=0.25)")
    assert dataclasses.replace(Backoff(), base_s=0.25) == policy
