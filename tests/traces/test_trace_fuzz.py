"""Trace files are data: whatever a file holds, `calibrate` ends in 0, 1 (a misfit) or 2 with one line, never 3.

Hypothesis builds trace files around valid records of each form (OTLP JSON, plain JSONL,
CSV) and breaks them: a field of a record replaced by a hostile value (wrong types, huge
and subnormal numbers, NaN and infinities, booleans, deep nesting, enormous strings), a
field dropped, keys repeated, the bytes cut short or salted with binary junk.  Each file is
calibrated in process, fit check included (two simulated days), and must exit 0, 1 or 2,
an exit 2 with one message line.
"""

from __future__ import annotations

import json
import math

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from long_worlds import examples

from fleetchaos.cli.main import main

TRACE = "5b8efff798038103d269b633813fc60c"
#: The captures start at midnight UTC, so a fitted world's horizon is the capture's own hours: a capture
#: starting at 09:00 adds nine unobserved hours at its mean rate, which only makes each example slower.
MIDNIGHT = 1735689600

#: Values that break a field: every JSON type, out-of-range and non-finite numbers, nesting, junk text.
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, -1, 2**31, 2**63, 10**30, 5e-324, 1e308, -0.0, 1e-7]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", " ", "9" * 5000, "x" * 600, "NaN", "1e999", "2025-13-45T99:00:00Z", "\u202e\x1b[31m", "429"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.integers(min_value=1, max_value=60).map(lambda d: json.loads("[" * d + "]" * d)),
)


def _plain(i: int) -> dict:
    return {
        "time": MIDNIGHT + 37 * i,
        "task": f"t{i // 3}",
        "tool": ("fetch", "write", "note")[i % 3],
        "worker": f"w{i % 4}",
        "duration_s": 0.5 + (i % 7) / 10,
        "outcome": "error" if i % 9 == 4 else "ok",
        **({"error": "ECONNRESET", "http_status": 503, "retry_after_s": 2} if i % 9 == 4 else {}),
        "attempt": 1,
        "item": 0,
    }


def _span(i: int) -> dict:
    start = MIDNIGHT * 10**9 + 37_000_000_000 * i
    attributes = [
        {"key": "gen_ai.tool.name", "value": {"stringValue": ("fetch", "write", "note")[i % 3]}},
        {"key": "fleetchaos.attempt", "value": {"intValue": "1"}},
        {"key": "host.name", "value": {"stringValue": f"w{i % 4}"}},
    ]
    if i % 9 == 4:
        attributes += [
            {"key": "error.type", "value": {"stringValue": "ECONNRESET"}},
            {"key": "http.response.status_code", "value": {"intValue": 503}},
            {"key": "http.response.header.retry-after", "value": {"stringValue": "2"}},
        ]
    return {
        "traceId": f"{i // 3:032x}",
        "spanId": f"{i + 1:016x}",
        "parentSpanId": "00000000000000aa",
        "name": "execute_tool",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 700_000_000),
        "attributes": attributes,
        "status": {"code": 2} if i % 9 == 4 else {},
    }


def _otlp(spans: list) -> dict:
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}


@st.composite
def trace_files(draw) -> tuple[str, bytes]:
    """(file name, bytes): a few dozen valid records of one form, then broken in one to three ways."""
    form = draw(st.sampled_from(["plain", "otlp", "csv"]))
    n = draw(st.integers(min_value=1, max_value=40))
    records = [_span(i) if form == "otlp" else _plain(i) for i in range(n)]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        record = records[draw(st.integers(min_value=0, max_value=n - 1))]
        if form == "otlp" and draw(st.booleans()):
            target = draw(st.sampled_from(["attribute", "status", "span"]))
            held = record.get("attributes")  # an earlier break may have made it any hostile value
            attributes = [a for a in held if isinstance(a, dict)] if isinstance(held, list) else []
            if target == "attribute" and attributes:
                draw(st.sampled_from(attributes))["value"] = draw(
                    st.one_of(HOSTILE, st.fixed_dictionaries({draw(_ANY_KEYS): HOSTILE}))
                )
                continue
            if target == "status":
                record["status"] = draw(st.one_of(HOSTILE, st.fixed_dictionaries({"code": HOSTILE})))
                continue
        key = draw(st.sampled_from(sorted(record)))
        if draw(st.integers(0, 4)) == 0:
            del record[key]
        else:
            record[key] = draw(HOSTILE)
    if form == "csv":
        header = sorted({k for r in records for k in r})
        lines = [",".join(header)] + [",".join(json.dumps(r.get(k, ""))[:80] for k in header) for r in records]
        data = ("\n".join(lines) + "\n").encode()
    elif form == "otlp":
        data = (json.dumps(_otlp(records)) + "\n").encode()
    else:
        data = "".join(json.dumps(r) + "\n" for r in records).encode()
    damage = draw(st.sampled_from(["none", "none", "cut", "junk", "repeat-key", "empty"]))
    if damage == "cut":
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    elif damage == "junk":
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    elif damage == "repeat-key":
        data = data.replace(b'{"', b'{"task": 1, "', 1)
    elif damage == "empty":
        data = b""
    return f"traces.{'csv' if form == 'csv' else 'jsonl'}", data


_ANY_KEYS = st.sampled_from(["stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue"])


def _calibrate(folder, name: str, data: bytes):
    path = folder / name
    path.write_bytes(data)
    out = folder / "fitted.yaml"
    args = ["calibrate", str(path), "-o", str(out), "--force", "--check-seeds", "2", "--jobs", "1"]
    return CliRunner().invoke(main, args)


@settings(max_examples=examples(20, 60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=trace_files())
def test_no_trace_file_ends_in_an_internal_error(tmp_path, case):
    """Hostile trace files exit 0, 1 or 2, and an exit 2 prints one line starting with 'error:'."""
    name, data = case
    done = _calibrate(tmp_path, name, data)
    assert done.exit_code in (0, 1, 2), (done.exit_code, done.output[-2000:], data[:300])
    assert "Traceback" not in done.output and "internal error" not in done.output
    if done.exit_code == 2:
        lines = [line for line in done.output.splitlines() if line.strip()]
        assert lines[-1].startswith("error: ") and len(lines) == 1, done.output


def _nested(depth: int) -> dict:
    value: dict = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def test_the_issues_hostile_trace_files_exit_2_with_one_line(tmp_path):
    """The hostile files the attack found (exit 3 before): each is exit 2 with one message naming the problem."""
    good = _span(0)
    too_deep = dict(good, attributes=[*good["attributes"], {"key": "deep", "value": _nested(2000)}])
    cases = {
        "attempt -3": _otlp([dict(good, attributes=[*good["attributes"][:1], {"key": "fleetchaos.attempt",
                                                                               "value": {"intValue": -3}}])]),
        "status 10**30": _otlp([dict(good, attributes=[*good["attributes"], {"key": "http.response.status_code",
                                                                              "value": {"intValue": str(10**30)}}])]),
        "a huge duration": {"time": 1735722000, "task": "t", "tool": "x", "duration_s": 1e300, "outcome": "ok"},
        "a time far off": {"time": "9999-12-31T23:59:59+00:00", "task": "t", "tool": "x", "duration_s": 1,
                           "outcome": "ok"},
        "a NaN duration": {"time": 1735722000, "task": "t", "tool": "x", "duration_s": math.nan, "outcome": "ok"},
        "time true": {"time": True, "task": "t", "tool": "x", "duration_s": 1, "outcome": "ok"},
        "status code an object": _otlp([dict(good, status={"code": {"a": 1}})]),
    }  # fmt: skip
    for what, doc in cases.items():
        done = _calibrate(tmp_path, "case.jsonl", (json.dumps(doc) + "\n").encode())
        lines = [line for line in done.output.splitlines() if line.strip()]
        assert done.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (what, done.output)
    spread = "".join(
        json.dumps({"time": t, "task": f"t{t}", "tool": "x", "duration_s": 1, "outcome": "ok"}) + "\n"
        for t in (1000, 99_999_999_999)
    )
    done = _calibrate(tmp_path, "spread.jsonl", spread.encode())
    assert done.exit_code == 2 and "the tasks arrive over" in done.output, done.output
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        deep = json.dumps(_otlp([too_deep]))
    finally:
        sys.setrecursionlimit(limit)
    done = _calibrate(tmp_path, "deep.jsonl", (deep + "\n").encode())
    assert done.exit_code == 2 and "nested too deeply" in done.output, done.output
