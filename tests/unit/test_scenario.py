"""Loading and validating scenarios, and the error messages users see."""

from __future__ import annotations

import json

import pytest

from fleetchaos.errors import ScenarioError, UserError
from fleetchaos.scenario.load import MAX_FILE_BYTES, Scenario, load_scenario, parse_scenario
from fleetchaos.sim.config import DiskFull, ExpiredKey, NetworkBlip, RateLimit, Timeout
from fleetchaos.sim.fault_specs import WrongEnvelope

SOURCE = "my_world.yaml"


def parse_error(text: str, source: str = SOURCE) -> str:
    """The ScenarioError message for an invalid document."""
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, source)
    return str(info.value)


# ---------------------------------------------------------------------------------------
# valid scenarios


def test_load_default_scenario_validates():
    """The catalogue's default scenario loads with its documented fleet and six fault kinds (wrong envelopes too)."""
    sc = load_scenario("default")
    assert isinstance(sc, Scenario)
    assert sc.name == "default"
    assert sc.duration_s == 86_400
    assert sc.fleet.workers == 10 and sc.fleet.orchestrators == 2
    assert [type(f) for f in sc.faults] == [NetworkBlip, Timeout, RateLimit, DiskFull, ExpiredKey, WrongEnvelope]
    assert sc.description and sc.reveals


def test_parse_minimal_scenario_uses_defaults():
    """A document with only a name gets the default world."""
    sc = parse_scenario("name: tiny\n", SOURCE)
    assert sc.name == "tiny"
    assert sc.faults == []
    assert sc.fleet.workers == 10
    assert sc.duration_s == 86_400.0


def test_parse_json_document():
    """A .json source is parsed as JSON."""
    doc = {"name": "j", "fleet": {"workers": 2}, "faults": [{"kind": "disk_full", "workers": [1]}]}
    sc = parse_scenario(json.dumps(doc), "world.json")
    assert sc.fleet.workers == 2
    assert isinstance(sc.faults[0], DiskFull) and sc.faults[0].workers == [1]


def test_load_scenario_from_path(tmp_path):
    """load_scenario reads a .yaml file by path."""
    path = tmp_path / "w.yaml"
    path.write_text("name: from-file\nfleet:\n  workers: 4\n", encoding="utf-8")
    sc = load_scenario(str(path))
    assert sc.name == "from-file" and sc.fleet.workers == 4


# ---------------------------------------------------------------------------------------
# error messages


def test_scenario_error_is_user_error():
    """ScenarioError is a UserError (the CLI maps it to exit code 2)."""
    assert issubclass(ScenarioError, UserError)


def test_unknown_top_level_field():
    """An unknown top-level field names the file, the field and 'unknown field'."""
    msg = parse_error("name: x\nbogus_field: 1\n")
    assert msg.startswith(f"{SOURCE}: ")
    assert "bogus_field" in msg
    assert "unknown field" in msg
    assert msg.count("\n") == 0  # exactly one problem, one line


def test_unknown_nested_field_has_path():
    """An unknown nested field is reported with its dotted path."""
    msg = parse_error("name: x\nfleet:\n  wrkers: 3\n")
    assert "fleet.wrkers" in msg and "unknown field 'wrkers'" in msg


def test_unknown_fault_kind_did_you_mean():
    """A misspelt fault kind lists the known kinds and suggests the closest."""
    msg = parse_error("name: x\nfaults:\n  - kind: disk_ful\n")
    assert SOURCE in msg
    assert "faults[0]" in msg
    assert "unknown fault kind 'disk_ful'" in msg
    assert "did you mean 'disk_full'" in msg
    for kind in ("network_blip", "timeout", "rate_limit", "disk_full", "expired_key"):
        assert kind in msg


def test_unknown_fault_kind_without_close_match():
    """A fault kind unlike any known one gets no did-you-mean."""
    msg = parse_error("name: x\nfaults:\n  - kind: meteor_strike\n")
    assert "unknown fault kind 'meteor_strike'" in msg
    assert "did you mean" not in msg


def test_field_of_another_fault_kind_is_unknown():
    """A field valid for another kind (probability on disk_full) is an unknown field at its path."""
    msg = parse_error("name: x\nfaults:\n  - kind: disk_full\n    probability: 0.1\n")
    assert "faults[0].probability" in msg and "unknown field 'probability'" in msg


def test_negative_probability():
    """A negative probability names faults[0].probability and shows the value."""
    msg = parse_error("name: x\nfaults:\n  - kind: network_blip\n    probability: -0.5\n")
    assert SOURCE in msg
    assert "faults[0].probability" in msg
    assert "-0.5" in msg


def test_probability_above_one_in_second_fault():
    """A probability above 1 in the second fault names faults[1].probability and the value."""
    msg = parse_error("name: x\nfaults:\n  - kind: network_blip\n  - kind: timeout\n    probability: 1.5\n")
    assert "faults[1].probability" in msg and "1.5" in msg
    assert "faults[0]" not in msg


def test_worker_beyond_fleet():
    """A fault targeting a worker outside the fleet says it does not exist and gives the range."""
    msg = parse_error("name: x\nfleet:\n  workers: 3\nfaults:\n  - kind: network_blip\n    workers: [5]\n")
    assert SOURCE in msg
    assert "faults[0].workers" in msg
    assert "worker 5 does not exist" in msg
    assert "0..2" in msg


def test_worker_index_boundary():
    """With 3 workers, index 2 is the last valid target and index 3 is rejected."""
    head = "name: x\nfleet:\n  workers: 3\nfaults:\n  - kind: network_blip\n    workers: "
    assert parse_scenario(head + "[0, 2]\n", SOURCE).faults[0].workers == [0, 2]
    assert "worker 3 does not exist" in parse_error(head + "[3]\n")


def test_event_worker_beyond_fleet():
    """A scheduled event on a missing worker is rejected the same way."""
    msg = parse_error(
        "name: x\nfleet:\n  workers: 3\nfaults:\n  - kind: disk_full\n    events: [{worker: 3, at_s: 10}]\n"
    )
    assert "faults[0].events" in msg and "worker 3 does not exist" in msg and "0..2" in msg


def test_negative_worker_index_rejected():
    """A negative worker index in a fault's workers list is rejected."""
    msg = parse_error("name: x\nfleet:\n  workers: 3\nfaults:\n  - kind: network_blip\n    workers: [-1]\n")
    assert "worker -1 does not exist" in msg


def test_missing_name():
    """A document without a name says the required field is missing."""
    msg = parse_error("description: no name\n")
    assert "name" in msg and "required field is missing" in msg


def test_several_problems_one_line_each():
    """Each validation problem gets its own line."""
    msg = parse_error("name: x\nbogus: 1\nfaults:\n  - kind: network_blip\n    probability: -1\n")
    lines = msg.splitlines()
    assert len(lines) == 2
    assert all(line.startswith(f"{SOURCE}: ") for line in lines)


def test_malformed_yaml():
    """Malformed YAML raises a one-line ScenarioError naming the file and saying it is not valid YAML."""
    msg = parse_error("name: x\nfleet: [1, 2\n")
    assert msg.startswith(f"{SOURCE}: not valid ")
    assert "YAML" in msg
    assert "\n" not in msg


def test_malformed_json():
    """Malformed JSON in a .json file raises a one-line ScenarioError saying it is not valid JSON."""
    msg = parse_error('{"name": "x",', source="w.json")
    assert msg.startswith("w.json: not valid ")
    assert "JSON" in msg
    assert "\n" not in msg


def test_top_level_list():
    """A top-level list is rejected as not a mapping, naming the type found."""
    msg = parse_error("- name: x\n- name: y\n")
    assert msg == f"{SOURCE}: (top level): expected a mapping of fields, got list"


def test_empty_document():
    """An empty document is rejected as not a mapping."""
    assert "expected a mapping" in parse_error("")


def test_oversized_file():
    """A document larger than MAX_FILE_BYTES is refused before parsing."""
    msg = parse_error("name: x\n" + "#" * (MAX_FILE_BYTES + 1))
    assert "larger than" in msg


def test_unknown_scenario_name_did_you_mean():
    """An unknown scenario name lists the catalogue and suggests the closest name."""
    with pytest.raises(ScenarioError) as info:
        load_scenario("defualt")
    msg = str(info.value)
    assert "unknown scenario 'defualt'" in msg
    assert "default" in msg
    assert "did you mean 'default'" in msg


def test_unknown_scenario_name_without_close_match():
    """An unknown scenario name unlike any catalogue name gets no did-you-mean."""
    with pytest.raises(ScenarioError) as info:
        load_scenario("zzzzqqqq")
    assert "did you mean" not in str(info.value)


def test_missing_scenario_file(tmp_path):
    """A .yaml path that does not exist says 'no such file'."""
    path = tmp_path / "absent.yaml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    assert str(info.value) == f"{path}: no such file"


def test_invalid_scenario_file_names_path(tmp_path):
    """Validation errors of a file on disk name that file's path."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nbogus: 1\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    assert str(info.value).startswith(f"{path}: bogus: unknown field")
