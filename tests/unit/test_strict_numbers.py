"""Numbers are validated strictly: a quoted number is a string in a number's place and is refused.

Pydantic's lax mode would turn ``probability: "0.1"`` into 0.1; a scenario (or sweep) file that
says ``"0.1"`` is refused with the message every other string in a number's place gets, naming
the file, the field, the value, the rule, the fix and the line.  What YAML and JSON legitimately
give stays valid: a whole number where a float is expected, a ``[low, high]`` list for a pair, and
``--param`` values, which are text parsed as YAML before validation.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.errors import ScenarioError, UserError
from fleetchaos.runs.sweep import load_sweep_file
from fleetchaos.scenario.load import load_scenario, parse_scenario
from fleetchaos.scenario.params import ParamError, apply_params, parse_param_option

STEP = "{tool: work, duration: {mean_s: 10}}"
FIX = "write a plain number, without quotes or units"

#: (document, the one message line it must give): each number written between quotes.
QUOTED = {
    "probability": (
        "name: x\nfaults:\n  - kind: network_blip\n    probability: '0.1'\n",
        f"world.yaml: faults[0].probability: must be a number (got '0.1'); {FIX} (line 4)",
    ),
    "tasks_per_day": (
        'name: x\nworkload:\n  tasks_per_day: "10"\n',
        f"world.yaml: workload.tasks_per_day: must be a number (got '10'); {FIX} (line 3)",
    ),
    "workers": (
        'name: x\nfleet:\n  workers: "4"\n',
        f"world.yaml: fleet.workers: must be a whole number (got '4'); {FIX} (line 3)",
    ),
    "arrival_count": (
        "name: x\nworkload:\n  templates:\n    - name: t\n      steps: [" + STEP + "]\n"
        "  arrivals:\n    - {at_s: 0, template: t}\n    - {at_s: 5, template: t, count: '10'}\n",
        f"world.yaml: workload.arrivals[1].count: must be a whole number (got '10'); {FIX} (line 8)",
    ),
    "swarm_end": (
        "name: x\nfaults:\n  - kind: network_blip\n    swarm:\n      probability: [0, '0.5']\n",
        f"world.yaml: faults[0].swarm.probability[1]: must be a number (got '0.5'); {FIX} (line 5)",
    ),
    "seed": (
        "name: x\nseeds: [1, '2']\n",
        f"world.yaml: seeds[1]: must be a whole number (got '2'); {FIX} (line 2)",
    ),
    "boolean_probability": (
        "name: x\nfaults:\n  - kind: network_blip\n    probability: true\n",
        f"world.yaml: faults[0].probability: must be a number (got true); {FIX} (line 4)",
    ),
}


def _message(text: str, source: str = "world.yaml") -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, source)
    return str(info.value)


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_a_quoted_number_is_refused_like_any_string(name):
    """Each quoted number gives its own line: file, path, value, rule, fix and line number."""
    text, expected = QUOTED[name]
    assert _message(text) == expected


def test_a_quoted_number_reads_as_a_word_would():
    """The rule and fix for "0.1" are those for "abc": a string in a number's place, whatever it spells."""
    quoted = _message("name: x\nduration_s: '3600'\n")
    word = _message("name: x\nduration_s: an hour\n")
    assert quoted.replace("'3600'", "X") == word.replace("'an hour'", "X")


def test_a_quoted_number_in_json_is_refused():
    """A JSON string holding a number is refused the same way (JSON errors carry no line)."""
    message = _message('{"name": "x", "faults": [{"kind": "timeout", "probability": "0.2"}]}', "world.json")
    assert message == f"world.json: faults[0].probability: must be a number (got '0.2'); {FIX}"


def test_a_decimal_point_in_a_whole_number_is_refused_with_the_number_to_write():
    """``workers: 4.0`` is not coerced to 4: the message says to write 4."""
    message = _message("name: x\nfleet: {workers: 4.0}\n")
    assert (
        message
        == "world.yaml: fleet.workers: must be a whole number (got 4.0); write 4, without the decimal point (line 2)"
    )


def test_whole_numbers_still_load_where_floats_are_expected():
    """``probability: 1``, ``duration_s: 3600`` and integer pairs are numbers: they load, as floats."""
    text = (
        "name: x\nduration_s: 3600\nfaults:\n"
        "  - kind: network_blip\n    probability: 1\n    swarm: {probability: [0, 1]}\n"
        "  - kind: wrong_envelope\n    retry_after_factor: [1, 10]\n"
    )
    scenario = parse_scenario(text, "world.yaml")
    blip, wrong = scenario.faults
    assert blip.probability == 1.0 and isinstance(blip.probability, float)
    assert blip.swarm == {"probability": (0.0, 1.0)}
    assert wrong.retry_after_factor == (1.0, 10.0)
    assert scenario.duration_s == 3600.0


def test_catalogue_scenarios_all_load():
    """No catalogue scenario relied on coercion."""
    import fleetchaos.catalogue as catalogue

    for name in catalogue.names():
        load_scenario(name)


def test_param_text_is_converted_before_validation():
    """``--param PATH=VALUE`` is text: it is read as YAML first, so plain numbers pass strict validation."""
    default = load_scenario("default")
    for option, path in (
        ("faults[0].probability=0.25", "faults[0].probability"),
        ("fleet.workers=6", "fleet.workers"),
        ("faults[0].probability=1", "faults[0].probability"),
    ):
        where, values = parse_param_option(option)
        new, canonical = apply_params(default, [(where, values[0])], source="scenarios/default.yaml")
        assert canonical[0][0] == path
    assert new.faults[0].probability == 1.0


def test_param_quoted_on_purpose_is_refused():
    """A value quoted inside the option stays a string and is refused with the scenario message."""
    default = load_scenario("default")
    path, values = parse_param_option('faults[0].probability="0.1"')
    with pytest.raises(ParamError) as info:
        apply_params(default, [(path, values[0])], source="scenarios/default.yaml")
    assert f"faults[0].probability: must be a number (got '0.1'); {FIX}" in str(info.value)


def test_validate_command_refuses_a_quoted_number(tmp_path):
    """Through the CLI: exit 2, no traceback, the line named."""
    path = tmp_path / "quoted.yaml"
    path.write_text(QUOTED["probability"][0], encoding="utf-8")
    result = CliRunner().invoke(main, ["scenarios", "validate", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "faults[0].probability: must be a number (got '0.1')" in result.output
    assert "(line 4)" in result.output


def test_a_sweep_file_refuses_quoted_numbers(tmp_path):
    """Sweep files too: each quoted number named with its line; a plain file still loads."""
    path = tmp_path / "sweep.yaml"
    path.write_text("seeds: '10'\nfirst_seed: '3'\nconfidence: '0.9'\n", encoding="utf-8")
    with pytest.raises(UserError) as info:
        load_sweep_file(path)
    lines = str(info.value).splitlines()
    assert lines == [
        f"{path}: seeds: expected a count from 1 to 10000 or a list of seeds, got '10'; "
        "write a plain number (without quotes) or a list such as [1, 2, 3] (line 1)",
        f"{path}: first_seed: must be a whole number (got '3'); {FIX} (line 2)",
        f"{path}: confidence: must be a number (got '0.9'); {FIX} (line 3)",
    ]
    path.write_text("seeds: 10\nfirst_seed: 3\nconfidence: 0.9\n", encoding="utf-8")
    spec = load_sweep_file(path)
    assert (spec.seeds, spec.first_seed, spec.confidence) == (10, 3, 0.9)


def test_a_sweep_grid_value_quoted_is_refused_before_any_run(tmp_path):
    """A quoted value in a sweep's params reaches the scenario rules and is refused there."""
    path = tmp_path / "sweep.yaml"
    path.write_text("seeds: 1\nparams:\n  faults[0].probability: [0.1, '0.2']\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["sweep", "--file", str(path), "--no-history"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"faults[0].probability: must be a number (got '0.2'); {FIX}" in result.output
