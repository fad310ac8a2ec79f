"""Executors and the chunk driver: serial semantics, windowing, errors, and clear user messages."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from concurrent.futures import Executor

import patience
import pytest

from fleetchaos.errors import UserError
from fleetchaos.runs.executors import (
    LocalProcessExecutor,
    SerialExecutor,
    chunked,
    map_chunks,
    open_executor,
    tapered,
)


def _square_all(chunk):
    return [x * x for x in chunk]


def _boom(chunk):
    raise ValueError(f"bad chunk {chunk}")


def _sizes(groups, workers, limit=4):
    return [(g, len(part)) for g, part in tapered(groups, workers, limit)]


def test_tapered_chunks_shrink_as_the_work_runs_out_and_keep_to_their_group():
    """Chunks hold a 1/(2 workers) share of what is left, capped, down to one job each; none spans two groups."""
    assert [n for _, n in _sizes([list(range(60))], 2)] == [4] * 12 + [3, 3, 2, 1, 1, 1, 1]
    assert [n for _, n in _sizes([list(range(5))], 8)] == [1] * 5
    assert _sizes([list(range(3)), list(range(2))], 1, limit=2) == [(0, 2), (0, 1), (1, 1), (1, 1)]
    assert _sizes([[], list(range(2))], 2) == [(1, 1), (1, 1)]
    groups = [list(range(7)), list(range(10, 23))]
    rebuilt: dict[int, list[int]] = {0: [], 1: []}
    for g, part in tapered(groups, 2):
        rebuilt[g] += part
    assert rebuilt == {0: groups[0], 1: groups[1]}
    assert [list(c) for c in chunked(list(range(5)), 2)] == [[0, 1], [2, 3], [4]]


def test_serial_executor_runs_at_submit_and_carries_exceptions():
    """The serial executor returns finished futures; errors travel in the future."""
    ex = SerialExecutor()
    assert ex.submit(sum, [1, 2, 3]).result() == 6
    failed = ex.submit(_boom, (1,))
    with pytest.raises(ValueError, match="bad chunk"):
        failed.result()
    ex.shutdown()
    with pytest.raises(RuntimeError):
        ex.submit(sum, [1])


def test_map_chunks_hands_each_result_on_once():
    """Every chunk's result reaches on_done exactly once, whatever the window."""
    got = []
    map_chunks(SerialExecutor(), _square_all, chunked(list(range(10)), 3), got.append, window=2)
    assert sorted(x for part in got for x in part) == [x * x for x in range(10)]


def test_map_chunks_with_processes_matches_serial():
    """A local process pool gives the same results as in-process runs."""
    serial, pooled = [], []
    map_chunks(SerialExecutor(), _square_all, list(chunked(list(range(40)), 4)), serial.append)
    with LocalProcessExecutor(2) as pool:
        map_chunks(pool, _square_all, list(chunked(list(range(40)), 4)), pooled.append)
    assert sorted(map(tuple, serial)) == sorted(map(tuple, pooled))


def test_an_error_in_a_chunk_stops_the_executor_and_propagates():
    """A failing chunk raises in the caller and the executor refuses more work."""
    ex = SerialExecutor()
    with pytest.raises(ValueError, match="bad chunk"):
        map_chunks(ex, _boom, [(1,), (2,)], lambda r: None)
    with pytest.raises(RuntimeError):
        ex.submit(sum, [1])


def test_interrupt_in_on_done_keeps_earlier_results():
    """Ctrl-C while handing results on keeps what was already handed on."""
    got = []

    def on_done(result):
        if len(got) == 2:
            raise KeyboardInterrupt
        got.append(result)

    with pytest.raises(KeyboardInterrupt):
        map_chunks(SerialExecutor(), _square_all, [(1,), (2,), (3,), (4,)], on_done)
    assert got == [[1], [4]]


def test_open_executor_picks_by_jobs():
    """--jobs 1 runs in-process; more jobs open a local process pool."""
    serial = open_executor(1)
    assert isinstance(serial, SerialExecutor)
    pool = open_executor(2)
    try:
        assert isinstance(pool, LocalProcessExecutor) and isinstance(pool, Executor) and pool.workers == 2
    finally:
        pool.shutdown()


def test_scheduler_without_the_dask_extra_is_a_user_error(monkeypatch):
    """--scheduler without distributed installed says how to install the extra."""
    monkeypatch.setitem(sys.modules, "distributed", None)  # makes `import distributed` fail
    with pytest.raises(UserError, match=r"pip install 'fleetchaos\[dask\]'"):
        open_executor(scheduler="tcp://127.0.0.1:8786")


def test_scheduler_address_must_look_like_one():
    """A scheduler address without a scheme is refused with the expected form."""
    with pytest.raises(UserError, match="tcp://HOST:PORT"):
        open_executor(scheduler="localhost")


def test_unreachable_scheduler_is_a_user_error():
    """A scheduler that does not answer gives one message with the address, not a traceback."""
    pytest.importorskip("distributed", reason="the dask extra (fleetchaos[dask]) is not installed")
    from fleetchaos.runs.executors import DaskExecutor

    with pytest.raises(UserError, match="cannot connect to a Dask scheduler"):
        DaskExecutor("tcp://127.0.0.1:9", timeout_s=0.5)


#: In a fresh interpreter: the start method with one thread and with two, and where a preloaded module is loaded.
START_PROBE = """
import json, sys, threading
from fleetchaos.runs.executors import LocalProcessExecutor, start_method

def loaded(name):
    return name in sys.modules

alone = start_method()
with LocalProcessExecutor(2, preload=["fleetchaos.reports.cells"]) as pool:
    in_parent = loaded("fleetchaos.reports.cells")
    in_workers = [pool.submit(loaded, "fleetchaos.reports.cells").result() for _ in range(4)]
    method = pool.start_method
stop = threading.Event()
other = threading.Thread(target=stop.wait)
other.start()
crowded = start_method()
stop.set()
other.join()
print(json.dumps({"alone": alone, "crowded": crowded, "method": method, "parent": in_parent, "workers": in_workers}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")
def test_workers_are_forked_with_their_preloads_only_while_one_thread_runs():
    """On Linux a lone thread forks its workers after importing the preloads; with a second thread alive, a forkserver starts them."""
    import json

    out = patience.run([sys.executable, "-c", START_PROBE], capture_output=True, text=True, check=True, cpu_s=120)
    seen = json.loads(out.stdout)
    assert seen == {"alone": "fork", "crowded": "forkserver", "method": "fork", "parent": True, "workers": [True] * 4}


def _has_module(name: str) -> bool:
    return name in sys.modules


def test_fresh_workers_import_their_preloads_as_they_start(monkeypatch):
    """Where workers start afresh (spawn), each imports the preloaded modules itself; the parent does not."""
    import fleetchaos.runs.executors as executors

    monkeypatch.setattr(executors, "start_method", lambda: "spawn")
    name = "fleetchaos.reports.drawing"
    monkeypatch.delitem(sys.modules, name, raising=False)
    with LocalProcessExecutor(2, preload=[name]) as pool:
        assert pool.start_method == "spawn"
        assert name not in sys.modules
        assert all(pool.submit(_has_module, name).result() for _ in range(4))


#: In a fresh interpreter with a second thread alive: a forkserver pool that works, then waits to be killed.
FORKSERVER_PROBE = """
import os, sys, threading, time
threading.Thread(target=threading.Event().wait, daemon=True).start()
from fleetchaos.runs.executors import LocalProcessExecutor
pool = LocalProcessExecutor(2)
assert pool.start_method == "forkserver", pool.start_method
assert [pool.submit(pow, 2, n).result() for n in range(4)] == [1, 2, 4, 8]
print(" ".join(str(pid) for pid in pool._processes), flush=True)
time.sleep(60)
"""


def _gone(pids: list[int]) -> list[int]:
    """The processes of ``pids`` still alive once none of them has used processor time for a minute (else [])."""
    with contextlib.suppress(patience.Stalled):
        patience.until(lambda: not any(_exists(p) for p in pids), watch=pids, what="workers to exit", stall_s=60)
    return [pid for pid in pids if _exists(pid)]


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forkserver workers are a Linux path")
def test_forkserver_workers_run_and_exit_when_their_command_is_killed():
    """With another thread alive the workers come from a forkserver: they run work, and leave when the parent is killed."""
    proc = subprocess.Popen([sys.executable, "-c", FORKSERVER_PROBE], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(pid) for pid in proc.stdout.readline().split()]  # started as work arrived: one or two
        assert 1 <= len(workers) <= 2
    finally:
        proc.kill()
        patience.wait(proc)
    assert _gone(workers) == [], "orphaned forkserver workers kept running after their parent was killed"
