"""Real-code runs contain and scrub what the code under test raises, as the simulator does a policy's errors.

Whatever escapes the team's entrypoint (``SystemExit``, ``KeyboardInterrupt``, any
``BaseException``, in a task it started or a callback it scheduled) ends that task, not the
run or the pytest session; and no secret it carries, planted by the run or real-shaped,
reaches the failure message, the junit XML or any report file.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fleetchaos
from fleetchaos.real import run_real
from fleetchaos.real.injections import InjectionCounter
from fleetchaos.sim.interrupts import UserInterrupt
from fleetchaos.sim.sanitise import PlantedSecrets

#: One value of each common real key shape (made up, each in its real format).
REAL_SHAPES = {
    "openai project key": "sk-proj-Q3vZ8rT1yU5iO9pA2sD6fG0hJ4kL7zX1cV5bN8mQ2wE6rT0yU4iO8pA3sD7fG1hJ5kL9",
    "openai key": "sk-T3BlbkFJ8a7s6d5f4g3h2j1k0l9z8x7c6v5b4n3m2q1w0e9r",
    "anthropic key": "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7",
    "aws access key": "AKIAZ7Q3VJ4K8M2N6P0R",
    "github token": "ghp_aZ3bY4cX5dW6eV7fU8gT9hS0iR1jQ2kP3lO4",
    "github fine-grained token": "github_pat_11AZ3BY4C0aZ3bY4cX5dW6_eV7fU8gT9hS0iR1jQ2kP3lO4mN5",
    "slack bot token": "xoxb-2424242424-4242424242424-Zq8Xw7Cv6Bn5Mm4Ll3Kk2Jj1",
    "slack user token": "xoxp-1357913579-2468024680-ZyXwVuTsRqPo",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMtYm90In0.T2hKbWxp4k9jZm1vZ3Vlc3NhYmxlc2ln",
    "password": "Tr0ub4dor&3-horse",
    "dsn password": "pgS3cretPass88",
    "bearer token": "b3arerT0kenValue0987654321",
    "environment secret": "envOnlySecretValue-No-Shape-42",
}

#: How each value appears in what the code under test raises.
RAISED = (
    f"openai said no to {REAL_SHAPES['openai project key']} and {REAL_SHAPES['openai key']}; "
    f"anthropic: {REAL_SHAPES['anthropic key']}; aws {REAL_SHAPES['aws access key']}; "
    f"git {REAL_SHAPES['github token']} / {REAL_SHAPES['github fine-grained token']}; "
    f"slack {REAL_SHAPES['slack bot token']} {REAL_SHAPES['slack user token']}; jwt {REAL_SHAPES['jwt']}; "
    f"login password={REAL_SHAPES['password']} "
    f"dsn postgresql://billing:{REAL_SHAPES['dsn password']}@db.prod.example.com:5432/billing "
    f"headers {{'Authorization': 'Bearer {REAL_SHAPES['bearer token']}'}} "
    f"env {REAL_SHAPES['environment secret']}"
)

SUITE = '''
import asyncio
import pytest
import fleetchaos
from fleetchaos import assert_rate
from fleetchaos.real import InjectedFault

RAISED = {raised!r}


class Doom(BaseException):
    pass


@fleetchaos.tool("fetch")
def fetch(task_id):
    return "ok"


def leaky(task, rt):
    """Every way the code under test can let a secret out: the fault itself, its text re-raised, real shapes."""
    try:
        fetch(task.id)
    except InjectedFault as exc:
        if task.id % 3 == 0:
            raise  # the injected fault, its vendor text (planted secrets) and all
        if task.id % 3 == 1:
            raise SystemExit(f"giving up: {{exc}} {{RAISED}}") from exc
        raise KeyboardInterrupt(f"{{RAISED}} {{exc}}") from exc
    if task.id % 4 == 0:
        raise Doom(RAISED)
    if task.id % 4 == 1:
        return RAISED  # an unknown claim word is noted too
    raise RuntimeError(RAISED)


def bad_claim(value):
    raise ValueError(f"cannot read {{value}}: {{RAISED}}")


async def leaky_async(task, rt):
    async def child():
        try:
            fetch(task.id)
        except InjectedFault as exc:
            raise SystemExit(f"{{exc}}") from exc
        raise KeyboardInterrupt(RAISED)

    await asyncio.create_task(child())


@pytest.mark.fleetchaos(scenario="leaky.yaml", seeds=[1, 2])
def test_sync(fleetchaos_real):
    result = fleetchaos_real.run(leaky)
    assert_rate(result.recovery_rate, at_least=0.9)


@pytest.mark.fleetchaos(scenario="leaky.yaml", seeds=[3])
def test_claim(fleetchaos_real):
    result = fleetchaos_real.run(lambda task, rt: "success", claim=bad_claim)
    assert_rate(result.success_rate, at_least=0.9)


@pytest.mark.fleetchaos(scenario="leaky.yaml", seeds=[4])
def test_async(fleetchaos_real):
    result = fleetchaos_real.run(leaky_async, concurrency=3)
    assert_rate(result.recovery_rate, at_least=0.9)


@pytest.mark.fleetchaos(scenario="leaky.yaml")
def test_contract(fleetchaos_real):
    def sample():
        try:
            return fetch(0)
        except InjectedFault as exc:
            return {{"error": {{"error_code": "E", "message": f"{{exc}} {{RAISED}}"}}}}

    fleetchaos_real.check_contract(samples={{"fetch": sample}}).assert_conforms()


def test_after_them():
    """Runs: nothing the code under test raised stopped the session."""
'''

SCENARIO = """\
name: leaky-real
duration_s: 7200
fleet: {orchestrators: 1, workers: 2, api_burst: 1000}
workload:
  templates:
    - name: notes
      steps:
        - {tool: fetch, duration: {mean_s: 2, cv: 0}}
  arrivals: [ARRIVALS]
faults:
  - {kind: validation_error, probability: 0.5}
""".replace("ARRIVALS", ", ".join(f"{{at_s: {10 * i}, template: notes}}" for i in range(24)))


def _everything_written(folder: Path, *streams: str) -> dict[str, str]:
    texts = {f"stream {i}": text for i, text in enumerate(streams)}
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix not in (".py", ".yaml", ".pyc"):
            texts[str(path.relative_to(folder))] = path.read_bytes().decode("utf-8", "replace")
    return texts


def test_no_secret_reaches_any_output_whatever_the_code_under_test_raises(tmp_path):
    """The injected faults' planted secrets, 12 real key shapes and an environment secret, raised every way
    (the fault itself, SystemExit, KeyboardInterrupt, a BaseException, a claim word, a broken claim(), a child
    task, a contract sample's message): none is in the pytest output, the junit XML or any report file."""
    (tmp_path / "leaky.yaml").write_text(SCENARIO)
    (tmp_path / "test_leaky.py").write_text(SUITE.format(raised=RAISED))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FLEETCHAOS_"))}
    env["BILLING_API_KEY"] = REAL_SHAPES["environment secret"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-rA", "-l", "-vv",
         "--junitxml", "junit.xml", "--fleetchaos-report", "out"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1]
    assert (
        "4 failed, 1 passed" in summary
    )  # the contract sample leaks: that test fails too, done.stdout[-3000:] + done.stderr[-3000:]
    assert "policy errored" in done.stdout and "[REDACTED]" in done.stdout
    reports = [p.name for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert {"results.json", "tasks.csv", "summary.md", "report.html", "injections.csv", "contract.md"} <= set(reports)
    planted = {f"planted {s}": s for seed in (0, 1, 2, 3, 4) for s in PlantedSecrets.for_run(seed).all()}
    secrets = {**REAL_SHAPES, **planted}
    outputs = _everything_written(tmp_path, done.stdout, done.stderr)
    leaks = {name: [what for what, s in secrets.items() if s in text] for name, text in outputs.items()}
    assert not any(leaks.values()), {k: v for k, v in leaks.items() if v}
    # the faults did carry planted secrets to the code under test, and it did raise them
    assert "agent raised InjectedFault" in outputs["junit.xml"]
    assert "agent raised KeyboardInterrupt" in done.stdout or "KeyboardInterrupt" in outputs["junit.xml"]


def _spec():
    from fleetchaos.scenario.load import Scenario

    return Scenario.model_validate(
        {
            "name": "contained",
            "duration_s": 3600,
            "fleet": {"orchestrators": 1, "workers": 2, "api_burst": 1000},
            "workload": {
                "templates": [{"name": "t", "steps": [{"tool": "lookup", "duration": {"mean_s": 1, "cv": 0}}]}],
                "arrivals": [{"at_s": 10.0 * i, "template": "t"} for i in range(6)],
            },
            "faults": [],
        }
    )


@fleetchaos.tool("lookup")
def lookup() -> str:
    return "found"


class Doom(BaseException):
    """A BaseException of the team's own."""


def _errors(run) -> dict[str, int]:
    return dict(run.result.breakdowns.get("policy_errors_by_message") or {})


def test_base_exceptions_from_a_sync_entrypoint_end_their_task_not_the_run():
    """SystemExit(0), KeyboardInterrupt, GeneratorExit and a custom BaseException each fail their own task."""
    raised = [SystemExit(0), KeyboardInterrupt("from the agent"), GeneratorExit(), Doom("doomed")]

    def entry(task, rt):
        lookup()
        if task.id < len(raised):
            raise raised[task.id]
        return "success"

    run = run_real(_spec(), entry, seed=1)
    assert [r.claim for r in run.records] == ["failed"] * 4 + ["success"] * 2
    assert _errors(run) == {
        "agent raised SystemExit: 0": 1,
        "agent raised KeyboardInterrupt: from the agent": 1,
        "agent raised GeneratorExit": 1,
        "agent raised Doom: doomed": 1,
    }
    assert run.metrics["policy_errors"] == 4


def test_base_exceptions_in_async_code_end_their_task_wherever_they_are_raised():
    """Raised by the coroutine, by a child task it awaits, by a child it never awaits, by a loop callback: contained."""

    async def direct(task, rt):
        raise KeyboardInterrupt("direct")

    async def awaited_child(task, rt):
        async def child():
            raise SystemExit(3)

        await asyncio.create_task(child())

    async def orphan_child(task, rt):
        async def child():
            raise KeyboardInterrupt("orphan")

        asyncio.get_running_loop().create_task(child())
        await asyncio.sleep(1)
        return "success"

    async def callback(task, rt):
        if task.id == 2:
            asyncio.get_running_loop().call_soon(sys.exit, "from a callback")
        await asyncio.sleep(1)
        return "success"

    for entry, expected in (
        (direct, {"agent raised KeyboardInterrupt: direct": 6}),
        (awaited_child, {"agent raised SystemExit: 3": 6}),
        (orphan_child, {"agent raised KeyboardInterrupt: orphan": 6}),
        (callback, {"agent raised SystemExit: from a callback outside any task, while this one ran": 1}),
    ):
        run = run_real(_spec(), entry, seed=1, concurrency=2)
        assert _errors(run) == expected, entry.__name__
        assert sum(r.claim == "failed" for r in run.records) == sum(expected.values()), entry.__name__


@pytest.fixture
def ctrl_c_taken():
    """SIGINT as an interactive Python process has it (KeyboardInterrupt), whatever this one inherited: a test
    session started in the background by a non-interactive shell (``cmd &``) inherits SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_users_own_ctrl_c_still_stops_the_run(ctrl_c_taken):
    """SIGINT during a run is the user's: it raises UserInterrupt out of run_real, never contained."""

    def entry(task, rt):
        if task.id == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return "success"

    with pytest.raises(UserInterrupt):
        run_real(_spec(), entry, seed=1)


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it_during_a_run():
    """A process started with SIGINT ignored (a pool worker, a background job) is not made interruptible by a run:
    the signal stays ignored during it and after it, and all six tasks run, none ended by it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:

        def entry(task, rt):
            os.kill(os.getpid(), signal.SIGINT)
            return "success"

        run = run_real(_spec(), entry, seed=1)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert run.metrics["tasks"] == 6 and run.metrics["policy_errors"] == 0


def test_a_script_around_run_real_never_exits_0_without_its_gate_line(tmp_path):
    """The code under test calling sys.exit(0) no longer ends the script silently; the gate line runs and fails."""
    script = tmp_path / "gate.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from test_real_containment import _spec, lookup
            from fleetchaos.real import run_real

            def entry(task, rt):
                lookup()
                sys.exit(0)

            run = run_real(_spec(), entry, seed=1)
            print("gate: policy errors", int(run.metrics["policy_errors"]))
            sys.exit(1 if run.metrics["policy_errors"] else 0)
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (1, "gate: policy errors 6"), done.stderr


def test_a_keyboard_interrupt_from_the_code_under_test_does_not_stop_the_pytest_session(pytester):
    """The session goes on to the next test and reports the first as failed, not "no tests ran"."""
    pytester.makepyfile(
        test_interrupting=f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_real_containment import _spec, lookup
        from fleetchaos.real import run_real

        def test_interrupting():
            def entry(task, rt):
                raise KeyboardInterrupt("the agent's own")
            run = run_real(_spec(), entry, seed=1)
            assert run.metrics["policy_errors"] == 0, run.result.breakdowns["policy_errors_by_message"]

        def test_next():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*agent raised KeyboardInterrupt: the agent's own*"])


def test_an_unbound_call_is_listed_without_its_credentials():
    """A URL that bypassed the bindings is named in injections.csv and the problems without user:pass or tokens."""
    counter = InjectionCounter()
    counter.unbound[("GET https://ops:hunter2hunter2@crm.example.com/v1?access_token=abcdef123456", "no route")] += 1
    report = counter.report(["crm"])
    assert "hunter2hunter2" not in report.to_csv() and "abcdef123456" not in report.to_csv()
    assert "hunter2hunter2" not in " ".join(report.problems())
    assert "crm.example.com" in report.to_csv()
