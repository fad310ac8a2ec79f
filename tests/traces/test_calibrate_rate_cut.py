"""Calibration reads a model's turns as steps of their own, and a provider's rate cut from its refusals' hints.

The traces are built by hand: a task's calls in order, and a token bucket computed here (refilled at its rate,
cut for a window, each refusal given the time until its next token, as a provider's Retry-After says it), so
the window, the rates and the burst the fit must find are known.
"""

from __future__ import annotations

import json

import pytest

from fleetchaos.calibrate.fit import calibrate

EPOCH = 1_735_689_600.0  # 2025-01-01T00:00:00Z: simulated second 0


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_models_turns_are_steps_of_their_own(tmp_path):
    """Each clean task asks the model, searches, asks again, writes, asks a last time: five calls, the model's
    three among them.  The template has the five steps in that order, so the fitted world asks the model (and its
    provider's bucket) three times a task; folding the turns into one `llm` step asked for a third of it.  A task
    whose write failed and was retried keeps the clean tasks' template."""
    records = []
    for i in range(40):
        t = EPOCH + 3600 + 60 * i
        for k, tool in enumerate(("llm", "search", "llm", "write", "llm")):
            records.append({"time": t + 5 * k, "task": f"t{i}", "tool": tool, "duration_s": 1.0, "outcome": "ok"})
    t = EPOCH + 3600 + 60 * 40
    for k, (tool, outcome) in enumerate(
        (("llm", "ok"), ("search", "ok"), ("llm", "ok"), ("write", "error"), ("write", "ok"), ("llm", "ok"))
    ):
        records.append({"time": t + 5 * k, "task": "t40", "tool": tool, "duration_s": 1.0, "outcome": outcome,
                        **({"error": "ECONNRESET"} if outcome == "error" else {})})  # fmt: skip
    path = tmp_path / "turns.jsonl"
    _write(path, records)
    fitted = calibrate([path])
    templates = fitted.document["workload"]["templates"]
    assert len(templates) == 1
    assert [s["tool"] for s in templates[0]["steps"]] == ["llm", "search", "llm", "write", "llm"]
    assert templates[0]["weight"] == 1


class _Bucket:
    """A token bucket: ``rate`` calls/s and ``burst`` tokens, refilling at ``factor`` x ``rate`` in [cut_from,
    cut_to).  ``take`` returns None for an admitted call, else the seconds until the next token."""

    def __init__(self, rate, burst, cut_from, cut_to, factor):
        self.rate, self.burst, self.cut = rate, burst, (cut_from, cut_to, factor)
        self.tokens, self.last = float(burst), 0.0

    def _rate(self, t):
        lo, hi, factor = self.cut
        return self.rate * factor if lo <= t < hi else self.rate

    def _refill(self, a, b):
        lo, hi, factor = self.cut
        inside = max(0.0, min(b, hi) - max(a, lo))
        return self.rate * ((b - a) - inside) + self.rate * factor * inside

    def take(self, t):
        self.tokens = min(self.burst, self.tokens + self._refill(self.last, t))
        self.last = t
        if self.tokens >= 1:
            self.tokens -= 1
            return None
        need, now = 1 - self.tokens, t
        edge = self.cut[1] if now < self.cut[1] else float("inf")
        if now < edge and need > self._rate(now) * (edge - now):  # the full rate resumes before the token is due
            need -= self._rate(now) * (edge - now)
            now = edge
        return now + need / self._rate(now) - t


def _cut_day(path):
    """One model call a task, a task every 20 s from 0 to 4 h; the provider (0.2 calls/s, a 5-call burst) cuts its
    rate to 0.01 calls/s from 3,600 s to 7,200 s; at 7,300 s a batch of 40 tasks arrives a second apart, the backlog
    meeting the full rate.  A refused call is not retried."""
    bucket = _Bucket(0.2, 5, 3600.0, 7200.0, 0.05)
    times = sorted([20.0 * i for i in range(720)] + [7300.0 + i for i in range(40)])
    records = []
    for i, t in enumerate(times):
        hint = bucket.take(t)
        record = {"time": EPOCH + t, "task": f"t{i}", "tool": "llm", "duration_s": 1.0, "worker": "w0"}
        if hint is None:
            record["outcome"] = "ok"
        else:
            record.update(outcome="error", http_status=429, retry_after_s=round(hint, 3))
        records.append(record)
    _write(path, records)


def test_a_rate_cut_is_fitted_with_its_window_rates_and_burst(tmp_path):
    """The fit finds the provider's rate from the backlog's hints (1 / 5 s = 0.2 calls/s), the cut's from the
    cut's (1 / 100 s = 0.01 calls/s, a factor 0.05), the burst from the five calls the backlog's full bucket
    admitted at once beyond the refill, the cut's end from where its refusals were told to come back (7,200 s),
    and its start where the fitted demand (180 calls an hour) spends the 5-call burst beyond the cut's refill
    by the first refusal: 5 / (0.05 - 0.01) = 125 s before it.  Before, the cut was fitted from 3,720 s to
    7,320 s at the served rate of the refused stretch (the backlog's calls in it), the burst the model's 30."""
    path = tmp_path / "cut.jsonl"
    _cut_day(path)
    fitted = calibrate([path])
    fleet = fitted.document["fleet"]
    assert fleet["api_rate_per_s"] == pytest.approx(0.2, rel=1e-3)
    assert fleet["api_burst"] == 5
    (cut,) = [f for f in fitted.document["faults"] if f["kind"] == "rate_limit"]
    assert cut["capacity_factor"] == pytest.approx(0.05, rel=1e-2)
    (window,) = cut["windows"]
    first_refusal = min(json.loads(line)["time"] - EPOCH for line in path.read_text().splitlines() if '"error"' in line)
    assert window["start_s"] == pytest.approx(first_refusal - 125.0, abs=1.0)
    assert window["start_s"] == pytest.approx(3600.0, abs=60.0)
    assert window["start_s"] + window["duration_s"] == pytest.approx(7200.0, abs=1.0)
