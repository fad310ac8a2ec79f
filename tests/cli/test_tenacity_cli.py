"""`--policy mypkg.retrying:RETRY` with a team's tenacity object, and the one-line refusal of what cannot be translated.

The module is a file in the working directory (the CLI puts it on the import path), as a
team's own ``retrying.py`` would be.
"""

from __future__ import annotations

import importlib
import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

pytest.importorskip("tenacity")

from fleetchaos.cli.main import main

MODULE = """
import threading

import tenacity

from fleetchaos.policies import from_tenacity

RETRY = tenacity.Retrying(
    stop=tenacity.stop_after_attempt(4) | tenacity.stop_after_delay(300),
    wait=tenacity.wait_random_exponential(multiplier=1, max=30),
    retry=tenacity.retry_if_exception_type((TimeoutError, ConnectionError)),
)


@tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_fixed(2) + tenacity.wait_random(0, 1))
def call_tool():
    pass


class ReadTimeout(Exception):
    '''A client library's own timeout exception.'''


CLIENT = tenacity.Retrying(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(ReadTimeout))
MAPPED = from_tenacity(CLIENT, exception_map={"TOOL_TIMEOUT": ReadTimeout, "timeout": ReadTimeout})

WALL_CLOCK = tenacity.Retrying(wait=lambda state: 1.0)
ON_RESULT = tenacity.Retrying(retry=tenacity.retry_if_result(lambda r: r is None))
ON_EVENT = tenacity.Retrying(stop=tenacity.stop_when_event_set(threading.Event()))
INF_ATTEMPTS = tenacity.Retrying(stop=tenacity.stop_after_attempt(float("inf")))
NAN_ATTEMPTS = tenacity.Retrying(stop=tenacity.stop_after_attempt(float("nan")))


class OwnLoop(tenacity.Retrying):
    def __call__(self, fn, *args, **kwargs):
        return fn(*args, **kwargs)


OWN_LOOP = OwnLoop(stop=tenacity.stop_after_attempt(3))
NESTED = tenacity.wait_fixed(1)
for _ in range(150):
    NESTED = tenacity.wait_fixed(1) + (tenacity.wait_random(0, 1) + NESTED)
TOO_NESTED = tenacity.Retrying(wait=NESTED)
LONG_SUM = tenacity.wait_fixed(0.001)
LONG_ANY = tenacity.stop_after_attempt(4)
for _ in range(2000):
    LONG_SUM = LONG_SUM + tenacity.wait_fixed(0.001)
    LONG_ANY = LONG_ANY | tenacity.stop_after_delay(600)
LONG_CHAINS = tenacity.Retrying(wait=LONG_SUM, stop=LONG_ANY)
NEGATIVE_WAIT = tenacity.Retrying(wait=tenacity.wait_fixed(-10), stop=tenacity.stop_after_attempt(3))
"""


@pytest.fixture
def cli(tmp_path, monkeypatch, small):
    (tmp_path / "fc_team_retrying.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.setattr(sys, "path", list(sys.path))  # restored afterwards, with what the CLI appends
    monkeypatch.chdir(tmp_path)
    importlib.invalidate_caches()
    yield lambda *args: CliRunner().invoke(main, [a.replace("SMALL", small) for a in args], catch_exceptions=False)
    sys.modules.pop("fc_team_retrying", None)


def test_compare_runs_a_tenacity_object_by_its_import_path(cli):
    """compare with the tenacity object beside a built-in: it runs, and the results record its translation."""
    result = cli(
        "compare", "--scenario", "SMALL", "--seeds", "1", "--policies", "fc_team_retrying:RETRY,backoff",
        "--errors", "structured", "--jobs", "1", "--no-history", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    arms = {a["policy"]: a for a in json.loads(result.stdout)["arms"]}
    recipe = arms["fc_team_retrying:RETRY"]["recipe"]
    assert recipe == (
        "TenacityPolicy(name='fc_team_retrying:RETRY', stop=stop_after_attempt(4) | stop_after_delay(300.0), "
        "wait=wait_random_exponential(max=30.0), retry=retry_if_exception_type(TimeoutError, ConnectionError), "
        "exceptions=default)"
    )
    assert arms["fc_team_retrying:RETRY"]["metrics"]["retries"] > 0


def test_run_a_decorated_function_and_a_mapped_policy(cli):
    """run takes a function decorated with @tenacity.retry, and a module's own from_tenacity(...) with its exception map."""
    for name in ("fc_team_retrying:call_tool", "fc_team_retrying:MAPPED"):
        result = cli("run", "--scenario", "SMALL", "--seed", "1", "--policy", name, "--no-history", "--json")
        assert result.exit_code == 0, result.output
    assert "exceptions=default + {'TOOL_TIMEOUT': fc_team_retrying.ReadTimeout" in result.stdout


def test_a_spec_parameter_reaches_into_the_translation(cli):
    """`mod:call_tool(stop.max_attempt_number=5)` changes the translated stop, as for any dataclass policy."""
    result = cli("policies", "show", "fc_team_retrying:call_tool(stop.max_attempt_number=5)")
    assert result.exit_code == 0, result.output
    assert "stop       = stop_after_attempt(5)" in result.stdout
    assert "wait       = wait_fixed(2.0) + wait_random()" in result.stdout


@pytest.mark.parametrize(
    "name, fragments",
    [
        ("WALL_CLOCK", ["cannot translate wait=a lambda", "custom callable may read the wall clock"]),
        ("ON_RESULT", ["cannot translate retry=a tenacity.retry.retry_if_result object", "return value"]),
        ("ON_EVENT", ["cannot translate stop=", "threading.Event", "stop_after_delay"]),
        ("INF_ATTEMPTS", ["cannot translate stop=stop_after_attempt(inf)", "never holds", "stop_never()"]),
        ("NAN_ATTEMPTS", ["cannot translate stop=stop_after_attempt(nan)", "never holds", "stop_never()"]),
        ("OWN_LOOP", ["overrides fc_team_retrying.OwnLoop.__call__ of tenacity's retrying loop"]),
        ("TOO_NESTED", ["its compositions nest more than 100 levels deep", "RecursionError", "wait_combine(a, b, c"]),
        ("LONG_CHAINS", ["].stops[0]=stop_any(...)", "nest more than 100 levels deep"]),
    ],
)
def test_an_untranslatable_config_is_one_line_and_exit_2(cli, name, fragments):
    """A config that cannot be translated faithfully: one message naming it, the part, why and the fix; exit 2."""
    result = cli("run", "--scenario", "SMALL", "--seed", "1", "--policy", f"fc_team_retrying:{name}", "--no-history")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    text = " ".join(result.stderr.split())
    for fragment in [f"policy 'fc_team_retrying:{name}'", *fragments, "Your tenacity config as a policy"]:
        assert fragment in text
    assert "Traceback" not in result.output


def test_an_exception_type_no_failure_raises_is_refused(tmp_path, cli):
    """A retry on an exception type the map never raises would silently never retry: refused with the fix."""
    (tmp_path / "fc_team_retrying.py").write_text(
        textwrap.dedent(MODULE) + "UNMAPPED = CLIENT\n"
    )  # the client's own exception, without the map
    result = cli("compare", "--scenario", "SMALL", "--seeds", "1", "--policies", "fc_team_retrying:UNMAPPED",
                 "--jobs", "1", "--no-history")  # fmt: skip
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert "retry_if_exception_type(fc_team_retrying.ReadTimeout)" in text
    assert "no entry of the exception map raises fc_team_retrying.ReadTimeout" in text
    assert "exception_map={'TOOL_TIMEOUT': fc_team_retrying.ReadTimeout}" in text
    assert "Traceback" not in result.output


def test_a_wait_time_sleep_refuses_fails_the_task_as_tenacity_does(cli):
    """wait_fixed(-10) under Retrying's time.sleep: each faulted task fails at its first retry with the ValueError
    time.sleep raises, recorded on the task; nothing is retried at once."""
    result = cli("run", "--scenario", "SMALL", "--policy", "fc_team_retrying:NEGATIVE_WAIT", "--no-history", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["metrics"]["retries"] == 0 and 0 < doc["metrics"]["policy_errors"] <= doc["metrics"]["faulted_tasks"]
    (message,) = doc["breakdowns"]["policy_errors_by_message"]
    assert message.startswith("policy raised ValueError: sleep length must be non-negative: time.sleep(-10.0)")
