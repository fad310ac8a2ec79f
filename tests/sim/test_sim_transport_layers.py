"""Retry layers as a list: each layer retries the failures of the one below, and the attempts multiply."""

from __future__ import annotations

from dataclasses import dataclass, field

from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.sim.observation import GiveUp
from fleetchaos.sim.transport import TransportRetry


@dataclass(frozen=True)
class Stacked:
    """No agent-level retry over ``transport``: one dispatch per task."""

    transport: object = field(default_factory=tuple)
    name: str = "stacked"

    def decide(self, observation, history):
        return GiveUp()


def _dead(sim, tasks=1):
    """A dependency that always drops the connection (a transport-level failure every layer retries)."""
    blip = {"kind": "network_blip", "probability": 1.0}
    return sim.scenario({"t": [sim.step("fetch", 1.0)]}, [(0.0, "t")] * tasks, [blip])


def _layers(n: int, attempts: int) -> tuple[TransportRetry, ...]:
    return tuple(TransportRetry(attempts=attempts, base_s=0.0, cap_s=0.0) for _ in range(n))


def test_three_layers_of_four_attempts_make_64_calls_per_request(sim):
    """3 layers x 4 attempts against a dead dependency: exactly 4**3 = 64 bottom calls for each request."""
    s = sim.run(_dead(sim, tasks=3), Stacked(_layers(3, 4)), "structured")
    assert [r.calls for r in s.records] == [64, 64, 64]
    assert s.records[0].layer_tries == [64, 16, 4]  # nearest the tool first: each layer multiplies by 4


def test_five_layers_of_three_attempts_make_243_calls_per_request(sim):
    """5 layers x 3 attempts: exactly 3**5 = 243 bottom calls per request, and the breakdown gives each layer's tries."""
    s = sim.run(_dead(sim), Stacked(_layers(5, 3)), "structured")
    assert s.rec.calls == 243
    assert s.rec.layer_tries == [243, 81, 27, 9, 3]


def test_one_layer_in_a_list_is_the_single_layer(sim):
    """A list of one TransportRetry behaves exactly as the TransportRetry itself."""
    alone = sim.run(_dead(sim), Stacked(TransportRetry(attempts=4)), "structured")
    listed = sim.run(_dead(sim), Stacked([TransportRetry(attempts=4)]), "structured")
    assert alone.rec.calls == listed.rec.calls == 4
    assert alone.rec.end_s == listed.rec.end_s


def test_a_layer_retries_only_what_it_is_told_to(sim):
    """A layer whose ``on`` excludes the failure passes it up: 2 layers, the upper one blind to blips, make 3 calls."""
    layers = (TransportRetry(attempts=3, base_s=0), TransportRetry(attempts=5, base_s=0, on=frozenset({"timeout"})))
    s = sim.run(_dead(sim), Stacked(layers), "structured")
    assert s.rec.calls == 3


BAD_TRANSPORT = """
from dataclasses import dataclass
from fleetchaos.sim.observation import GiveUp

@dataclass(frozen=True)
class BadTransport:
    transport: object = "three layers please"
    def decide(self, observation, history):
        return GiveUp()

@dataclass(frozen=True)
class BadLayer:
    transport: tuple = (1, 2)
    def decide(self, observation, history):
        return GiveUp()
"""


def test_a_malformed_transport_exits_2_before_any_run(tmp_path, monkeypatch):
    """policy.transport that is not a TransportRetry (or a list of them): exit 2 naming the field and the fix, no run."""
    (tmp_path / "badtransport.py").write_text(BAD_TRANSPORT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for cls, field_name in (("BadTransport", "policy.transport "), ("BadLayer", "policy.transport[0] ")):
        result = CliRunner().invoke(
            main,
            [
                "run",
                "--scenario",
                "default",
                "--policy",
                f"badtransport:{cls}",
                "--seed",
                "1",
                "--no-history",
                "--json",
            ],
        )
        assert result.exit_code == 2, result.output
        assert field_name in result.output and "TransportRetry" in result.output and "give a" in result.output
        assert "Traceback" not in result.output
        assert not result.stdout.strip().startswith("{")  # nothing ran, no result printed
