"""Virtual time: retry libraries, SDK backoff and the clocks' patching of the time module."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from fleetchaos.real.clocks import LoopClock, VirtualClock, installed, new_virtual_loop, originals

tenacity = pytest.importorskip("tenacity")


def test_tenacity_stop_after_delay_stops_after_five_attempts_under_the_sync_clock():
    """stop_after_delay(10) with wait_fixed(3) makes attempts at 0, 3, 6, 9, 12 virtual s, then stops."""
    clock = VirtualClock()
    attempts = []

    @tenacity.retry(stop=tenacity.stop_after_delay(10), wait=tenacity.wait_fixed(3), reraise=True)
    def flaky():
        attempts.append(time.monotonic())
        raise ValueError("down")

    started = time.perf_counter()
    with installed(clock), pytest.raises(ValueError):
        flaky()
    assert len(attempts) == 5
    assert [round(a - attempts[0], 6) for a in attempts] == [0, 3, 6, 9, 12]
    assert clock.now() == 12
    # Nothing slept for real: 12 virtual seconds took less wall time than that, however busy the machine.
    assert time.perf_counter() - started < clock.now()


def test_tenacity_async_deadline_fires_on_the_virtual_loop():
    """AsyncRetrying's stop_after_delay reads time.monotonic, which the loop clock keeps equal to the loop's time."""
    loop = new_virtual_loop()
    times = []

    async def main():
        try:
            async for attempt in tenacity.AsyncRetrying(
                stop=tenacity.stop_after_delay(10) | tenacity.stop_after_attempt(50), wait=tenacity.wait_fixed(3)
            ):
                with attempt:
                    times.append(loop.time())
                    raise ValueError("down")
        except tenacity.RetryError:
            return loop.time()

    try:
        with installed(LoopClock(loop)):
            end = loop.run_until_complete(main())
    finally:
        loop.close()
    assert times == [0, 3, 6, 9, 12]
    assert end == 12


def test_an_sdk_honouring_a_30s_retry_after_twice_costs_60_virtual_seconds():
    """The OpenAI SDK retries two 429s with Retry-After: 30 by itself: 60 virtual s, and no real sleep."""
    httpx2 = pytest.importorskip("httpx2")
    openai = pytest.importorskip("openai")
    seen = []

    def api(request):
        seen.append((asyncio.get_running_loop().time(), request.headers.get("x-stainless-retry-count")))
        if len(seen) <= 2:
            return httpx2.Response(429, headers={"retry-after": "30"}, json={"error": {"message": "slow down"}})
        message = {"role": "assistant", "content": "ok"}
        return httpx2.Response(
            200,
            json={"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                  "choices": [{"index": 0, "finish_reason": "stop", "message": message}]},
        )  # fmt: skip

    loop = new_virtual_loop()

    async def main():
        client = openai.AsyncOpenAI(
            api_key="k",
            base_url="https://llm.test/v1",
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(api)),
        )
        reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        return reply.choices[0].message.content

    started = time.perf_counter()
    try:
        with installed(LoopClock(loop)):
            assert loop.run_until_complete(main()) == "ok"
            end = loop.time()
    finally:
        loop.close()
    assert seen == [(0.0, "0"), (30.0, "1"), (60.0, "2")]
    assert end == 60.0
    # Nothing slept for real: 60 virtual seconds took less wall time than that, however busy the machine.
    assert time.perf_counter() - started < end


def test_the_clocks_are_restored_after_the_run_and_after_an_exception():
    """The time module's functions are the originals again when the clock goes, also when the body raised."""
    real = originals()
    with installed(VirtualClock()):
        assert time.sleep is not real["sleep"]
    assert all(getattr(time, name) is fn for name, fn in real.items())
    with pytest.raises(RuntimeError), installed(VirtualClock()):
        raise RuntimeError("boom")
    assert all(getattr(time, name) is fn for name, fn in real.items())


def test_other_threads_keep_the_real_clock_while_a_run_patches_its_own():
    """A thread without a clock sleeps and reads real time while another thread runs on a virtual one."""
    clock = VirtualClock()
    readings = {}

    def other():
        before = time.monotonic()
        time.sleep(0.02)
        readings["slept"] = time.monotonic() - before

    with installed(clock):
        time.sleep(3600)
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert clock.now() == 3600
    assert 0.015 < readings["slept"] < 5


def test_a_plain_event_loop_inside_a_virtual_thread_reads_real_time():
    """asyncio.run inside a sync virtual-clock thread keeps a real clock (a frozen one would hang it)."""
    with installed(VirtualClock()):
        assert asyncio.run(asyncio.wait_for(asyncio.sleep(0.01), 5)) is None


def test_runs_do_not_nest_in_one_thread():
    """Installing a second clock in the same thread is refused with a message."""
    from fleetchaos.errors import UserError

    with installed(VirtualClock()), pytest.raises(UserError, match="already installed"), installed(VirtualClock()):
        pass
