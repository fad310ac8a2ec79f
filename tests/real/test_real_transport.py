"""The chaos transport under httpx (sync) and httpx2 (async): statuses, headers, timeouts, commits, refusals."""

from __future__ import annotations

import pytest

from fleetchaos import Bindings, Route, run_real

httpx = pytest.importorskip("httpx")
httpx2 = pytest.importorskip("httpx2")

BINDINGS = Bindings(
    routes=[
        Route("fetch", "GET https://api.test/fetch*"),
        Route("write", "POST https://api.test/write/*", item=lambda r: int(r.url.path.rsplit("/", 1)[1])),
    ],
    refresh="POST https://api.test/token",
)


def ok(request):
    return httpx.Response(200, json={"ok": True})


def test_the_bucket_twin_answers_429_with_retry_after_headers(small_scenario):
    """With a one-token bucket, the second API call meets a 429 whose Retry-After comes from the twin."""
    spec = small_scenario([], api_burst=1, api_rate_per_s=0.1)
    seen = []

    def entry(task, rt):
        with httpx.Client(transport=rt.transport(httpx.MockTransport(ok))) as client:
            for _ in range(2):
                seen.append(client.get("https://api.test/fetch"))
        return "failed"

    run_real(spec, entry, seed=1, tasks=1, bindings=BINDINGS)
    assert [r.status_code for r in seen] == [200, 429]
    ms = int(seen[1].headers["retry-after-ms"])  # the 10 s refill less the time the first call took
    assert 7000 <= ms < 10000
    assert seen[1].headers["retry-after"] == str(-(-ms // 1000))


def test_a_timeout_after_commit_forwards_then_ends_at_the_clients_read_timeout(small_scenario):
    """A committed timeout reaches the backend, then raises ReadTimeout after the client's own 5 s read timeout."""
    spec = small_scenario([{"kind": "timeout", "probability": 1.0, "committed_probability": 1.0, "timeout_s": 90}])
    backend_calls = []

    def backend(request):
        backend_calls.append(request.url.path)
        return httpx.Response(200)

    def entry(task, rt):
        with httpx.Client(transport=rt.transport(httpx.MockTransport(backend)), timeout=5.0) as client:
            start = rt.now()
            with pytest.raises(httpx.ReadTimeout):
                client.get("https://api.test/fetch")
            assert rt.now() - start == pytest.approx(5.0)
        return "failed"

    run = run_real(spec, entry, seed=1, tasks=1, bindings=BINDINGS)
    assert backend_calls == ["/fetch"]
    assert run.records[0].commits[0] == [1]


def test_an_idempotency_key_makes_a_repeated_post_commit_once(small_scenario):
    """Two POSTs with the same Idempotency-Key: one commit, one deduplicated."""
    spec = small_scenario([], writes_only=True)

    def entry(task, rt):
        with httpx.Client(transport=rt.transport(httpx.MockTransport(ok))) as client:
            for _ in range(2):
                client.post("https://api.test/write/1", headers={"idempotency-key": "k1"})
        return "partial"

    run = run_real(spec, entry, seed=1, tasks=1, bindings=BINDINGS)
    assert run.records[0].commits[0] == [0, 1, 0, 0]
    assert run.records[0].deduplicated == 1


def test_an_unbound_request_is_refused(small_scenario):
    """A request no route matches raises UnboundCall (and is counted), never reaching the backend."""
    from fleetchaos.real import UnboundCall

    def entry(task, rt):
        with httpx.Client(transport=rt.transport(httpx.MockTransport(ok))) as client, pytest.raises(UnboundCall):
            client.get("https://elsewhere.test/")
        return "failed"

    run = run_real(small_scenario([]), entry, seed=1, tasks=1, bindings=BINDINGS)
    assert run.injections.unbound == (("GET https://elsewhere.test/", "no route matches", 1),)


def test_httpx2_async_expired_key_is_401_until_the_refresh_route_is_hit(small_scenario):
    """An async httpx2 client meets 401 after a revocation; hitting the refresh route restores the key."""
    spec = small_scenario([{"kind": "expired_key", "events": [{"worker": 0, "at_s": 0}]}])
    statuses = []

    async def entry(task, rt):
        transport = rt.transport(httpx2.MockTransport(lambda r: httpx2.Response(200)))
        async with httpx2.AsyncClient(transport=transport) as client:
            statuses.append((await client.get("https://api.test/fetch")).status_code)
            await client.post("https://api.test/token")
            statuses.append((await client.get("https://api.test/fetch")).status_code)
        return "success"

    run = run_real(spec, entry, seed=1, tasks=1, bindings=BINDINGS)
    assert statuses == [401, 200]
    assert run.records[0].refreshes == 1
