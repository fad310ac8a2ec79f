"""from_tenacity: the exception map, the translation of each strategy, and the refusals.

The attempt times themselves are checked against tenacity's own loop in
tests/unit/test_tenacity_parity.py and in a world in tests/sim/test_sim_tenacity.py.
"""

from __future__ import annotations

import pickle
import random
import sys

import pytest

tenacity = pytest.importorskip("tenacity")

from fleetchaos.policies import (  # noqa: E402
    DEFAULT_EXCEPTIONS,
    RetryTranslationError,
    TenacityPolicy,
    ToolCallError,
    exception_for,
    from_tenacity,
)
from fleetchaos.policies.exception_map import ExceptionMapError, build_exception_map  # noqa: E402
from fleetchaos.policies.tenacity_adapter import is_retry_config  # noqa: E402
from fleetchaos.sim.envelope import AgentToolError, PartialSuccess  # noqa: E402
from fleetchaos.sim.formats import get_format  # noqa: E402
from fleetchaos.sim.observation import GiveUp, Observation, Retry, TaskHistory  # noqa: E402
from fleetchaos.sim.truth import AttemptReport  # noqa: E402

t = tenacity


def rendered(format_name: str, failure: str) -> Observation:
    """What format ``format_name`` shows of a dispatch that failed with ``failure`` in its second step."""
    report = AttemptReport(
        task_id=3, worker=1, start_step=0, failed_step=1, step_names=("plan", "edit"), failure=failure
    )
    fmt = get_format(format_name)
    bind = getattr(fmt, "for_run", None)
    return (bind(7) if bind else fmt).render(report)


@pytest.mark.parametrize(
    "format_name, failure, expected",
    [
        ("structured", "timeout", TimeoutError),
        ("structured", "network_blip", ConnectionError),
        ("structured", "disk_full", OSError),
        ("structured", "expired_key", PermissionError),
        ("structured", "validation_error", ValueError),
        ("structured", "missing_dependency", FileNotFoundError),
        ("structured", "rate_limit", ToolCallError),
        ("tool-envelope", "timeout", TimeoutError),
        ("failure-type", "timeout", TimeoutError),  # its failure type 'timeout' is a category word of the table
        ("failure-type", "expired_key", PermissionError),
        ("subagent-result", "timeout", ToolCallError),  # 'transient' says no more than that
        ("subagent-result", "validation_error", ValueError),
        ("generic", "timeout", ToolCallError),  # a bare "failed": the orchestrator cannot tell
        ("raw", "timeout", ToolCallError),
    ],
)
def test_default_map_raises_what_the_observation_shows(format_name, failure, expected):
    """Each failure raises the exception its code or category word maps to; what a format hides, it cannot raise."""
    exc = exception_for(rendered(format_name, failure))
    assert type(exc) is expected


def test_the_message_is_what_the_orchestrator_was_shown():
    """Raw text is the message (for retry_if_exception_message); a structured failure's message is its code."""
    raw = rendered("raw", "rate_limit")
    assert str(exception_for(raw)) == raw.text
    exc = exception_for(rendered("structured", "rate_limit"))
    assert str(exc) == "RATE_LIMITED" and exc.code == "RATE_LIMITED" and exc.category == "transient"
    assert str(exception_for(rendered("generic", "timeout"))) == "failed"


def test_overrides_replace_entries_and_factories_build_exceptions():
    """A user entry wins over the default; a factory receives the observation; the repr names what changed."""

    class ReadTimeout(Exception):
        pass

    def http_error(observation):
        return RuntimeError(f"HTTP error for {observation.envelope.error_code}")

    table = build_exception_map({"TOOL_TIMEOUT": ReadTimeout, "RATE_LIMITED": http_error})
    assert type(table.exception_for(rendered("structured", "timeout"))) is ReadTimeout
    assert str(table.exception_for(rendered("structured", "rate_limit"))) == "HTTP error for RATE_LIMITED"
    assert type(table.exception_for(rendered("structured", "network_blip"))) is ConnectionError  # default kept
    assert repr(table).startswith("default + {'TOOL_TIMEOUT': ") and "http_error" in repr(table)
    assert repr(build_exception_map()) == "default" and dict(build_exception_map().entries) == DEFAULT_EXCEPTIONS


@pytest.mark.parametrize("entry", [int, "TimeoutError", 3])
def test_an_entry_that_raises_nothing_is_refused(entry):
    with pytest.raises(ExceptionMapError, match="exception map entry 'TOOL_TIMEOUT'"):
        build_exception_map({"TOOL_TIMEOUT": entry})


def test_a_factory_that_returns_no_exception_is_an_error():
    table = build_exception_map({"*": lambda observation: "not an exception"})
    with pytest.raises(ExceptionMapError, match="returned str, not an exception"):
        table.exception_for(rendered("generic", "timeout"))


def history(attempts: int = 1, elapsed_s: float = 1.0) -> TaskHistory:
    return TaskHistory(task_id=1, attempts=attempts, elapsed_s=elapsed_s, rng=random.Random(3))


def test_decisions_follow_tenacitys_order():
    """Not retried: GiveUp; retried and not stopped: Retry after the wait, from the first step."""
    policy = from_tenacity(
        t.Retrying(stop=t.stop_after_attempt(3), wait=t.wait_fixed(4), retry=t.retry_if_exception_type(TimeoutError))
    )
    timeout, invalid = rendered("structured", "timeout"), rendered("structured", "validation_error")
    assert policy.decide(timeout, history(attempts=1)) == Retry(4.0, 0, ())
    assert policy.decide(timeout, history(attempts=3)) == GiveUp()
    assert policy.decide(invalid, history(attempts=1)) == GiveUp()


def test_resume_uses_the_revealed_progress():
    """resume=True resumes from the envelope's partial success; the default calls the whole function again."""
    envelope = AgentToolError(
        error_code="TOOL_TIMEOUT", category="transient", recoverable=True, suggested_action="retry",
        partial_success=PartialSuccess(completed_steps=("0:plan",)),
    )  # fmt: skip
    observation = Observation(ok=False, status="failed", worker=0, envelope=envelope)
    config = t.Retrying(stop=t.stop_after_attempt(3))
    assert from_tenacity(config).decide(observation, history()) == Retry(0.0, 0, ())
    resumed = from_tenacity(config, resume=True)
    assert resumed.decide(observation, history()) == Retry(0.0, 1, ())
    assert repr(resumed).endswith("exceptions=default, resume=True)")


def test_the_translation_pickles_and_prints_without_tenacity():
    """A translated policy holds no tenacity object: it pickles (process pools) and its repr is the recipe."""
    policy = from_tenacity(
        t.Retrying(
            stop=(t.stop_after_attempt(5) | t.stop_after_delay(60)) & t.stop_before_delay(90),
            wait=t.wait_chain(t.wait_fixed(1), t.wait_incrementing(2, 3, 10)) + t.wait_exponential_jitter(max=30),
            retry=t.retry_if_exception_type(OSError) | t.retry_if_exception_message(match="RATE"),
        ),
        name="team",
    )
    assert pickle.loads(pickle.dumps(policy)) == policy
    assert repr(policy) == (
        "TenacityPolicy(name='team', stop=(stop_after_attempt(5) | stop_after_delay(60.0)) & stop_before_delay(90.0), "
        "wait=wait_chain(wait_fixed(1.0), wait_incrementing(start=2.0, increment=3.0, max=10.0)) + "
        "wait_exponential_jitter(max=30.0), retry=retry_if_exception_type(OSError) | "
        "retry_if_exception_message(match='RATE'), exceptions=default)"
    )
    assert not any(type(part).__module__.startswith("tenacity") for part in (policy.stop, policy.wait, policy.retry))


def test_the_cause_chain_needs_a_factory():
    """retry_if_exception_cause_type can only hold on an exception with a cause: refused without a factory."""
    config = t.Retrying(stop=t.stop_after_attempt(3), retry=t.retry_if_exception_cause_type(TimeoutError))
    with pytest.raises(RetryTranslationError, match="could never hold"):
        from_tenacity(config)

    def wrapped(observation):
        exc = RuntimeError("tool failed")
        exc.__cause__ = TimeoutError("read timed out")
        return exc

    policy = from_tenacity(config, exception_map={"TOOL_TIMEOUT": wrapped})
    assert isinstance(policy.decide(rendered("structured", "timeout"), history()), Retry)
    assert policy.decide(rendered("structured", "network_blip"), history()) == GiveUp()


def wall_clock_stop(retry_state):
    import time

    return time.time() > 1e12


@pytest.mark.parametrize(
    "config, fragments",
    [
        (t.Retrying(stop=wall_clock_stop), ["stop=the function", "wall_clock_stop", "custom callable"]),
        (t.Retrying(stop=t.stop_after_attempt(3) | wall_clock_stop), ["stop.stops[1]=the function"]),
        (t.Retrying(wait=t.wait_fixed(1) + (lambda s: 2)), ["wait.wait_funcs[1]=a lambda"]),
        (t.Retrying(wait=t.wait_exception(lambda e: 1.0)), ["wait=a tenacity.wait.wait_exception object", "predicate"]),
        (t.Retrying(retry=t.retry_if_exception(lambda e: True)), ["retry=a tenacity.retry.retry_if_exception object"]),
        (t.Retrying(retry=t.retry_if_not_result(lambda r: r)), ["retry_if_not_result", "return value"]),
    ],
)
def test_untranslatable_parts_are_refused_by_path(config, fragments):
    """The message names the configuration, the part (with its path in a composition), why, and the fix."""
    with pytest.raises(RetryTranslationError) as caught:
        from_tenacity(config, name="mypkg.retrying:RETRY")
    message = str(caught.value)
    assert message.startswith("mypkg.retrying:RETRY: cannot translate ")
    for fragment in fragments:
        assert fragment in message
    assert 'docs/policies.md, "Your tenacity config as a policy"' in message


def test_what_is_not_a_tenacity_config_is_refused():
    with pytest.raises(RetryTranslationError, match="is not a tenacity.Retrying"):
        from_tenacity(lambda: None, name="x")
    assert not is_retry_config(object()) and not is_retry_config(print)
    assert is_retry_config(t.Retrying()) and is_retry_config(t.retry(lambda: None))


def test_without_tenacity_installed_the_message_says_how_to_install_it(monkeypatch):
    """tenacity missing: one message with the extra to install (fleetchaos itself never needs it)."""
    monkeypatch.setitem(sys.modules, "tenacity", None)  # what an uninstalled package looks like to import
    with pytest.raises(RetryTranslationError, match=r"pip install 'fleetchaos\[tenacity\]'"):
        from_tenacity(object(), name="mypkg:RETRY")
    assert not is_retry_config(object())


def test_stamina_objects_are_refused_with_the_reason(monkeypatch):
    """stamina keeps its settings in closures and private attributes: refused, with the tenacity config to write."""
    monkeypatch.setitem(sys.modules, "stamina", type(sys)("stamina"))
    caller = type("RetryingCaller", (), {"__module__": "stamina._core"})()
    assert is_retry_config(caller)
    with pytest.raises(RetryTranslationError, match="stamina keeps its configuration in closures") as caught:
        from_tenacity(caller, name="mypkg:CALLER")
    assert "wait_exponential_jitter(multiplier=wait_initial" in str(caught.value)


def test_a_policy_built_by_hand_has_tenacitys_defaults():
    """TenacityPolicy() is tenacity's Retrying(): never stop, no wait, retry on any exception."""
    assert isinstance(TenacityPolicy().decide(rendered("generic", "timeout"), history(attempts=50)), Retry)


def test_the_documented_table_is_the_default_map():
    """docs/policies.md's exception table lists DEFAULT_EXCEPTIONS, row for row, in order."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "policies.md").read_text(encoding="utf-8")
    table = text.split("`fleetchaos.policies.DEFAULT_EXCEPTIONS`:\n", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|$", table, flags=re.M)
    documented = [(key, name.removeprefix("fleetchaos.policies.")) for key, name in rows]
    assert documented == [(key, cls.__name__) for key, cls in DEFAULT_EXCEPTIONS.items()]
