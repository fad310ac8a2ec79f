"""The run-twice check for real runs, and the waits under the virtual clock that must not make a seed's run vary."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import fleetchaos
from fleetchaos.real import InjectedFault, run_real
from fleetchaos.real.determinism import CallEntry, NondeterministicRun, first_difference

CHILD = [sys.executable, "-c", "import time; time.sleep(0.3)"]


@fleetchaos.tool("fetch")
def fetch(task_id: int) -> str:
    return f"data-{task_id}"


@fleetchaos.tool("write", item=lambda task_id, slot: slot)
def write(task_id: int, slot: int) -> None:
    return None


def _patient(fn, *args):
    for _ in range(10):
        try:
            return fn(*args)
        except InjectedFault:
            time.sleep(2.0)
    raise RuntimeError("gave up")


def _at_once(fn, *args):
    """Retry at once (a worker thread's own sleeps are real)."""
    for _ in range(10):
        try:
            return fn(*args)
        except InjectedFault:
            pass
    raise RuntimeError("gave up")


def test_a_run_whose_calls_depend_on_state_carried_between_runs_names_the_first_call_that_differs(small_scenario):
    """The agent skips slot 3 from its second run on (module state): the check names that call, the run it is
    missing from, and the seed's replay; an agent that depends on nothing but the seed passes the check."""
    runs = []

    def forgetful(task, rt):
        runs.append(task.id)
        _patient(fetch, task.id)
        for slot in range(4 if len(runs) <= 2 else 3):
            _patient(write, task.id, slot)
        return "success"

    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}])
    with pytest.raises(NondeterministicRun) as caught:
        run_real(spec, forgetful, seed=4, tasks=2, check_determinism=True)
    message = str(caught.value)
    assert "the first is task 0: write item 3, execution 1: run 1 met" in message
    assert "run 2 never made it" in message and "seed 4 ran twice" in message and "replay: run_real(" in message

    def steady(task, rt):
        _patient(fetch, task.id)
        for slot in range(4):
            _patient(write, task.id, slot)
        return "success"

    run = run_real(spec, steady, seed=4, tasks=3, check_determinism=True)
    assert run.result.metrics["success_rate"] == 1.0 and run.calls


def test_first_difference_matches_calls_by_identity_and_reports_the_earliest():
    """Calls arriving in another order but decided alike agree; a different fault or time is named, earliest first;
    then claims are compared."""
    a = [CallEntry(1, "write", 0, 1, 0, "ok", 5.0, 1.0), CallEntry(0, "fetch", 0, 1, 0, "ok", 0.0, 2.0)]
    assert first_difference(a, list(reversed(a))) is None
    b = [CallEntry(1, "write", 0, 1, 0, "rate_limit", 5.0, 0.1), CallEntry(0, "fetch", 0, 1, 0, "ok", 0.5, 2.0)]
    said = first_difference(a, b)
    assert said is not None and said.startswith("2 call(s) differ; the first is task 0: fetch item 0, execution 1")
    assert "run 1 met no fault at 0 s (taking 2 s), run 2 met no fault at 0.5 s" in said
    assert first_difference(a, a, ([(0, "success")], [(0, "failed")])) == (
        "every call agrees, but task 0 claims 'success' in run 1 and 'failed' in run 2"
    )


def test_a_subprocess_with_a_timeout_takes_no_virtual_time_in_sync_code(small_scenario):
    """subprocess.run(timeout=...) waits for its child with a sleep loop against a deadline of its own: under the
    virtual clock each sleep used to move virtual time by as much as the loop spun, so the same call took a
    different virtual time each run.  The child's wait is real and takes no virtual time, in every run alike."""
    moved = []

    @fleetchaos.tool("fetch")
    def diagnose(task_id: int) -> int:
        before = time.monotonic()
        subprocess.run(CHILD, timeout=60, check=True)
        moved.append(time.monotonic() - before)
        return task_id

    def entry(task, rt):
        diagnose(task.id)
        for slot in range(4):
            _patient(write, task.id, slot)
        return "success"

    run_real(small_scenario([]), entry, seed=1, tasks=2, check_determinism=True)
    assert moved == [0.0] * 4  # the child's wait moved no virtual time, in either run


def test_an_asyncio_subprocess_under_a_timeout_ends_before_its_timer_in_virtual_time(small_scenario):
    """An asyncio child awaited under wait_for(30 s): the virtual loop used to jump to the timer while the child ran
    (nothing to read yet), a TimeoutError the real child never caused.  The loop now waits for a live child in
    real time, as for a worker thread, so the child ends first and takes no virtual time."""
    moved = []

    @fleetchaos.tool("fetch")
    async def diagnose(task_id: int) -> int:
        before = asyncio.get_running_loop().time()
        proc = await asyncio.create_subprocess_exec(*CHILD)
        await asyncio.wait_for(proc.wait(), 30)
        moved.append(asyncio.get_running_loop().time() - before)
        return task_id

    @fleetchaos.tool("write", item=lambda task_id, slot: slot)
    async def awrite(task_id: int, slot: int) -> None:
        return None

    async def entry(task, rt):
        await diagnose(task.id)
        for slot in range(4):
            await awrite(task.id, slot)
        return "success"

    run = run_real(small_scenario([]), entry, seed=1, tasks=2, check_determinism=True)
    assert run.result.metrics["success_rate"] == 1.0
    assert moved == [0.0] * 4


def test_the_pytest_option_runs_each_seed_twice_and_fails_the_test_at_the_first_differing_call(pytester):
    """--fleetchaos-check-determinism: a fleetchaos_real.run whose agent carries state from run to run fails with one
    line naming the call; the same test passes without the option, and a steady agent passes with it."""
    pytester.makepyfile(
        test_twice="""
        import pytest
        import fleetchaos

        @fleetchaos.tool("fetch")
        def fetch(task_id):
            return task_id

        SEEN = []

        def forgetful(task, rt):
            SEEN.append(task.id)
            if len(SEEN) <= 2:
                fetch(task.id)
            return "success"

        def steady(task, rt):
            fetch(task.id)
            return "success"

        SCENARIO = {
            "name": "twice",
            "fleet": {"workers": 1, "api_burst": 1000},
            "workload": {
                "templates": [{"name": "t", "steps": [{"tool": "fetch", "duration": {"mean_s": 1, "cv": 0}}]}],
                "arrivals": [{"at_s": 0, "template": "t"}, {"at_s": 5, "template": "t"}],
            },
        }

        def _spec():
            from fleetchaos.scenario.load import Scenario
            return Scenario.model_validate(SCENARIO)

        def test_forgetful(fleetchaos_real):
            fleetchaos_real.run(forgetful, scenario=_spec(), seeds=[3])

        def test_steady(fleetchaos_real):
            fleetchaos_real.run(steady, scenario=_spec(), seeds=[3])
        """
    )
    plain = pytester.runpytest_subprocess("-p", "no:randomly")
    plain.assert_outcomes(passed=2)
    checked = pytester.runpytest_subprocess("-p", "no:randomly", "--fleetchaos-check-determinism")
    checked.assert_outcomes(failed=1, passed=1)
    checked.stdout.fnmatch_lines(["*seed 3 ran twice with different results: 2 call(s) differ; the first is task 0*"])


def test_a_thread_pool_the_run_waits_for_decides_alike_in_both_runs(small_scenario):
    """Four writes in a thread pool (each carrying the run's context), the task waiting for them: the clock stands
    still while they run, so every call is decided at the same virtual time in both runs, whatever the threads'
    order; a thread without the run's context is refused, naming the tool."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    def pooled(task, rt):
        _patient(fetch, task.id)
        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(contextvars.copy_context().run, _at_once, write, task.id, s) for s in range(4)]
            for f in futures:
                f.result()
        return "success"

    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}])
    run = run_real(spec, pooled, seed=2, tasks=4, check_determinism=True)
    assert run.result.metrics["success_rate"] == 1.0

    def bare(task, rt):
        with ThreadPoolExecutor(1) as pool:
            pool.submit(write, task.id, 0).result()
        return "success"

    (rec,) = run_real(spec, bare, seed=2, tasks=1).records
    assert "UnboundCall: write: called from a thread that does not carry the run's context" in rec.policy_error
