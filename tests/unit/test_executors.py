"""Executors and the chunk driver: serial semantics, windowing, errors, and clear user messages."""

from __future__ import annotations

import sys
from concurrent.futures import Executor

import pytest

from fleetchaos.errors import UserError
from fleetchaos.runs.executors import (
    LocalProcessExecutor,
    SerialExecutor,
    chunk_size,
    chunked,
    map_chunks,
    open_executor,
)


def _square_all(chunk):
    return [x * x for x in chunk]


def _boom(chunk):
    raise ValueError(f"bad chunk {chunk}")


def test_chunk_size_aims_for_several_chunks_per_worker_and_caps():
    """Chunks are small enough to balance the workers and never exceed the cap."""
    assert chunk_size(200, 2) == 4  # 200 / (2 workers * 8) = 13, capped at 4
    assert chunk_size(48, 2) == 3
    assert chunk_size(16, 2) == 1
    assert chunk_size(3, 8) == 1
    assert chunk_size(0, 2) == 1
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
