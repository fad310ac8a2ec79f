"""The runtime: decorated tools, keyed faults, threads, unbound calls and injection coverage."""

from __future__ import annotations

import contextvars
import inspect
import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import fleetchaos
from fleetchaos.errors import UserError
from fleetchaos.real import InjectedFault, NotInjectedError, Runtime, UnboundCall, run_real


@fleetchaos.tool("fetch")
def fetch(task_id: int) -> str:
    """Fetch something (a docstring SDKs read)."""
    return f"data-{task_id}"


WRITES: list[tuple[int, int]] = []


@fleetchaos.tool("write", item=lambda task_id, slot: slot)
def write(task_id: int, slot: int) -> None:
    WRITES.append((task_id, slot))


def _retrying(fn, *args, wait_s=5.0):
    for _ in range(20):
        try:
            return fn(*args)
        except InjectedFault:
            time.sleep(wait_s)  # virtual in the run's thread; real in a worker thread (so 0 there)
    raise RuntimeError("gave up")


def _now_retrying(fn, *args):
    return _retrying(fn, *args, wait_s=0.0)


def agent(task, rt):
    _retrying(fetch, task.id)
    for slot in range(4):
        _retrying(write, task.id, slot)
    return "success"


def test_the_decorator_is_inert_outside_a_run_and_keeps_the_signature():
    """Outside a run the decorated function just runs; its name, docstring and signature are the original's."""
    assert fetch(3) == "data-3"
    assert fetch.__name__ == "fetch" and "docstring" in fetch.__doc__
    assert list(inspect.signature(fetch).parameters) == ["task_id"]


def test_a_run_meets_the_keyed_faults_and_fills_the_ledger(small_scenario):
    """Blips hit real calls; the agent's retries recover; the ledger, metrics and injections record it."""
    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}])
    run = run_real(spec, agent, seed=4)
    assert run.metrics["tasks"] == 12
    assert run.metrics["faulted_tasks"] > 0
    assert run.metrics["recovery_rate"] == 1.0
    assert run.metrics["duplicate_side_effects"] == 0
    assert run.result.mode == "real"
    assert '"mode":"real"' in run.result.model_dump_json()
    run.assert_injected()
    faults = sum(met for tool, kind, _d, _f, met in run.injections.rows if kind == "network_blip")
    assert faults == sum(r.fault_hits.get("network_blip", 0) for r in run.records)


def test_the_same_seed_gives_the_same_faults_with_threads_in_any_order(small_scenario):
    """Writes run in worker threads in shuffled orders: every run meets the same faults on the same items."""
    spec = small_scenario([{"kind": "network_blip", "probability": 0.35}])

    def threaded(order_seed):
        shuffle = random.Random(order_seed)

        def entry(task, rt):
            _retrying(fetch, task.id)
            slots = list(range(4))
            shuffle.shuffle(slots)
            with ThreadPoolExecutor(max_workers=4) as pool:
                futures = [pool.submit(contextvars.copy_context().run, _now_retrying, write, task.id, s) for s in slots]
                for f in futures:
                    f.result()
            return "success"

        run = run_real(spec, entry, seed=9)
        return [(r.id, sorted(r.fault_hits.items()), r.executions, r.commits) for r in run.records]

    first = threaded(1)
    assert any(hits for _id, hits, _e, _c in first)
    for order_seed in (2, 3, 4):
        assert threaded(order_seed) == first


def test_a_call_from_a_thread_without_the_run_context_is_refused(small_scenario):
    """A bare thread (no copied context) calling a bound tool during a run raises UnboundCall, never bypasses."""
    spec = small_scenario([])

    def entry(task, rt):
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(fetch, task.id).result()
        return "success"

    run = run_real(spec, entry, seed=1, tasks=1)
    assert run.records[0].claim == "failed"
    assert "UnboundCall" in run.records[0].policy_error


def test_assert_injected_fails_when_a_binding_is_removed(small_scenario):
    """An agent whose write bypasses the decorator (the binding removed) fails assert_injected, naming the tool."""
    spec = small_scenario([{"kind": "network_blip", "probability": 0.3}])
    unbound_write = write.__wrapped__

    def entry(task, rt):
        _retrying(fetch, task.id)
        for slot in range(4):
            unbound_write(task.id, slot)
        return "success"

    run = run_real(spec, entry, seed=4)
    with pytest.raises(NotInjectedError, match="write: no call reached a binding"):
        run.assert_injected()


def test_a_tool_outside_the_task_template_is_refused_by_default(small_scenario):
    """A bound tool that is not a step of the task's template is an unbound call: refused, and counted."""
    spec = small_scenario([])

    @fleetchaos.tool("not_a_step")
    def stray() -> None:
        pass

    def entry(task, rt):
        stray()
        return "success"

    run = run_real(spec, entry, seed=1, tasks=2)
    assert [r.claim for r in run.records] == ["failed", "failed"]
    assert run.injections.unbound == (("not_a_step", "not a step of template 'notes' (fetch, write)", 2),)
    with pytest.raises(NotInjectedError, match="bypassed the bindings"):
        run.assert_injected()


def test_timeouts_after_commit_duplicate_an_append_unless_an_idempotency_key_dedupes(small_scenario):
    """A committed timeout retried blindly posts twice (a duplicate); the same key makes the retry take effect once."""
    spec = small_scenario(
        [{"kind": "timeout", "probability": 0.5, "committed_probability": 1.0, "timeout_s": 30}], writes_only=True
    )

    posted = []

    @fleetchaos.tool("write", item=lambda t, s, key=None: s, idempotency_key=lambda t, s, key=None: key)
    def keyed_write(task_id, slot, key=None):
        posted.append((task_id, slot))

    def entry_with(use_key):
        def entry(task, rt):
            for slot in range(4):
                _retrying(keyed_write, task.id, slot, f"{task.id}-{slot}" if use_key else None)
            return "success"

        return entry

    blind = run_real(spec, entry_with(False), seed=2)
    keyed = run_real(spec, entry_with(True), seed=2)
    assert blind.metrics["duplicate_side_effects"] > 0
    assert keyed.metrics["duplicate_side_effects"] == 0
    assert keyed.metrics["deduplicated_side_effects"] == blind.metrics["duplicate_side_effects"]


def test_retries_into_an_empty_token_bucket_are_judged_wasted_as_in_the_simulator(small_scenario):
    """One token, refilled every 1000 s: the writes are refused (429) and retried at once, while the bucket is
    still empty, so every retry is wasted under the token bucket's reason, as the simulator's judge counts it."""
    spec = small_scenario([], api_burst=1, api_rate_per_s=0.001)
    run = run_real(spec, agent, seed=3, tasks=1)
    (rec,) = run.records
    assert rec.fault_hits.get("rate_limit", 0) > 0 and rec.retries > 0
    assert rec.wasted_reasons == {"API token bucket still empty": rec.retries}
    assert run.result.breakdowns["wasted_retries_by_family"] == {"while still rate limited": rec.retries}


def test_retries_into_a_spent_daily_quota_are_judged_wasted_and_a_wait_past_the_window_is_not(small_scenario):
    """A quota of 5 calls a day: the sixth call is refused, and an agent retrying every 5 s retries into the same
    spent quota, each retry wasted under the quota's reason; a rate-limit window that ends before the retry is
    not a wasted retry (the cause no longer holds), which only a judge reading the shared state twin can tell."""
    spec = small_scenario([{"kind": "quota_exhausted", "calls_per_day": 5}], writes_only=True)
    run = run_real(spec, agent_patient(5.0, tries=4), seed=3, tasks=2)
    quota = [r for r in run.records if r.fault_hits.get("quota_exhausted")]
    assert quota, "the quota was never met"
    retried = sum(r.retries for r in quota)
    assert retried > 0
    assert sum(sum(r.wasted_reasons.values()) for r in run.records) == retried
    assert {reason for r in run.records for reason in r.wasted_reasons} == {"same exhausted quota"}
    assert run.result.metrics["wasted_retries"] == retried

    # The bucket's rate is cut to almost nothing for the first 100 s only: a retry 5 s later is into the same
    # empty bucket (wasted), a retry 200 s later finds it refilled (not wasted).
    windows = [{"kind": "rate_limit", "windows": [{"start_s": 0, "duration_s": 100}], "capacity_factor": 0.0001}]
    spec = small_scenario(windows, writes_only=True, api_burst=2, api_rate_per_s=0.5)
    soon = run_real(spec, agent_patient(5.0, tries=3), seed=3, tasks=1)
    late = run_real(spec, agent_patient(200.0, tries=3), seed=3, tasks=1)
    (soon_rec,), (late_rec,) = soon.records, late.records
    assert soon_rec.fault_hits.get("rate_limit") and late_rec.fault_hits.get("rate_limit")
    assert soon_rec.wasted_reasons.get("API token bucket still empty", 0) > 0
    assert late_rec.retries > 0 and late_rec.wasted_reasons == {}


def agent_patient(wait_s: float, *, tries: int):
    """An agent writing its four items, retrying each failed write after ``wait_s`` up to ``tries`` times."""

    def entry(task, rt):
        for slot in range(4):
            for _ in range(tries):
                try:
                    write(task.id, slot)
                    break
                except InjectedFault:
                    time.sleep(wait_s)
        return "success"

    return entry


def test_a_simulation_only_kind_is_refused_with_one_message(small_scenario):
    """A scenario with git_push_conflict names the field, the value and the fix, before anything runs."""
    spec = small_scenario([{"kind": "git_push_conflict", "tools": ["write"]}])
    with pytest.raises(UserError, match=r"faults\[0\]\.kind: git_push_conflict is simulation-only in real-code mode"):
        Runtime(spec, seed=1)


def test_providers_with_a_declared_capacity_are_refused_with_one_message(small_scenario):
    """fleet.providers (and so an overloaded fault) is simulation-only: one line names the field, the providers and the fix."""
    spec = small_scenario(
        [{"kind": "overloaded", "provider": "backend", "windows": [{"start_s": 0, "duration_s": 60}]}],
        providers=[{"name": "backend", "tools": ["write"], "servers": 1}],
    )
    with pytest.raises(
        UserError, match=r"fleet\.providers: providers with a declared capacity are simulation-only"
    ) as e:
        Runtime(spec, seed=1)
    assert "\n" not in str(e.value) and "backend" in str(e.value) and "drop fleet.providers" in str(e.value)
    with pytest.raises(UserError, match=r"fleet\.providers"):
        run_real(spec, lambda task, rt: "success", seed=1)


def test_an_unscoped_call_inside_an_active_runtime_is_refused(small_scenario):
    """With a runtime active but no task scope, a bound call is refused (and counted as unbound)."""
    with Runtime(small_scenario([]), seed=1) as rt, pytest.raises(UnboundCall, match="outside a task scope"):
        fetch(1)
    assert rt.injection_report().unbound == (("fetch", "called outside a task scope (with rt.task(task): ...)", 1),)


def test_injections_csv_reads_back_whole_and_escapes_formulas():
    """injections.csv: a carriage return or comma in a tool name or a reason never splits a row, and text that a
    spreadsheet would evaluate is escaped, as in every other CSV the tool writes."""
    import csv
    import io

    from fleetchaos.real.injections import InjectionReport

    report = InjectionReport(
        rows=(("crm\rsync", "ok", 1, 0, 0), ('=HYPERLINK("http://x")', "timeout", 2, 2, 1)),
        unbound=(("x,y", 'why\r"not"', 1),),
    )
    rows = list(csv.reader(io.StringIO(report.to_csv())))
    assert rows == [
        ["tool", "kind", "drawn", "fired", "met"],
        ["crm\nsync", "ok", "1", "0", "0"],
        ['\'=HYPERLINK("http://x")', "timeout", "2", "2", "1"],
        ["x,y", 'unbound: why\n"not"', "1", "0", "0"],
    ]


def test_an_expired_tool_api_key_leaves_the_model_providers_key_alone(small_scenario):
    """fleet.apis gives the write API credentials of its own: its key is revoked at t=0 on both workers, so every
    write meets expired_key until the agent refreshes, while fetch (the model provider's) never fails; revoking the
    model provider's key instead fails fetch and leaves the writes alone.  One assembly builds both twins."""
    events = [{"worker": 0, "at_s": 0}, {"worker": 1, "at_s": 0}]

    def refreshing(task, rt):
        fetch(task.id)
        for slot in range(4):
            try:
                write(task.id, slot)
            except InjectedFault as exc:
                assert exc.kind == "expired_key"
                rt.refresh_credentials()
                write(task.id, slot)
        return "success"

    apis = [{"name": "crm", "tools": ["write"]}]
    spec = small_scenario([{"kind": "expired_key", "api": "crm", "events": events}], apis=apis)
    run = run_real(spec, refreshing, seed=1, tasks=4)
    met = {(tool, kind): m for tool, kind, _, _, m in run.injections.rows if kind != "ok"}
    assert met == {("write", "expired_key"): 2}  # once per worker, then refreshed; fetch never fails
    assert run.metrics["success_rate"] == 1.0

    spec = small_scenario([{"kind": "expired_key", "events": events}], apis=apis)
    model = run_real(spec, agent, seed=1, tasks=4)
    assert {(tool, kind) for tool, kind, _, _, m in model.injections.rows if kind != "ok" and m} == {
        ("fetch", "expired_key")
    }
