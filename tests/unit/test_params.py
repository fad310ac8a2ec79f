"""Swept scenario parameters: dotted paths, values as written, and validation on apply."""

from __future__ import annotations

import pytest

from fleetchaos.scenario.load import load_scenario
from fleetchaos.scenario.params import (
    ParamError,
    apply_params,
    format_value,
    grid_points,
    parse_param_option,
    parse_path,
    parse_value,
    split_values,
)

SOURCE = "scenarios/default.yaml"


@pytest.fixture(scope="module")
def default():
    """The catalogue's default scenario."""
    return load_scenario("default")


def test_paths_parse_fields_and_indices():
    """A dotted path with list indices becomes field names and integers."""
    assert parse_path("faults[0].probability") == ("faults", 0, "probability")
    assert parse_path("workload.templates[1].steps[0].fan_out") == ("workload", "templates", 1, "steps", 0, "fan_out")


@pytest.mark.parametrize("bad", ["", "faults[a].x", "fleet..workers", "1fleet", "fleet.workers "])
def test_malformed_paths_are_refused(bad):
    """A path that is not field names with [index]es is a user error."""
    with pytest.raises(ParamError):
        parse_path(bad)


def test_values_are_read_as_yaml_or_json():
    """Numbers, booleans, null, strings and lists are read as written."""
    assert [parse_value(v) for v in ("0.1", "1e-3", "50", "true", "null", "least_loaded", "[0, 1]")] == [
        0.1,
        0.001,
        50,
        True,
        None,
        "least_loaded",
        [0, 1],
    ]


def test_values_split_on_commas_outside_brackets():
    """Lists given as values keep their inner commas."""
    assert split_values("[0,1],[2,3],4") == ["[0,1]", "[2,3]", "4"]
    assert parse_param_option("faults[0].workers=[0,1],[2]") == ("faults[0].workers", [[0, 1], [2]])


@pytest.mark.parametrize("bad", ["fleet.workers", "=1", "fleet.workers=", "fleet.workers=1,,2"])
def test_malformed_param_options_are_refused(bad):
    """--param needs PATH=VALUE[,VALUE...] with no empty values."""
    with pytest.raises(ParamError, match="--param"):
        parse_param_option(bad)


def test_format_value_round_trips():
    """A formatted value parses back to itself (replay commands depend on it)."""
    for value in (0.0, 0.1, 50, True, None, "least_loaded", "1", [0, 1], "a,b"):
        assert parse_value(format_value(value)) == value


def test_apply_sets_values_and_records_them_as_validated(default):
    """Applying re-validates the scenario and reports each value as the schema stores it."""
    new, canonical = apply_params(default, [("faults[0].probability", 0), ("fleet.workers", 50)], source=SOURCE)
    assert new.fleet.workers == 50
    assert new.faults[0].probability == 0.0
    assert canonical == (("faults[0].probability", 0.0), ("fleet.workers", 50))
    assert default.fleet.workers == 10  # the base scenario is untouched


def test_apply_without_params_is_the_same_scenario(default):
    """No parameters: the very same scenario comes back."""
    assert apply_params(default, [], source=SOURCE) == (default, ())


@pytest.mark.parametrize(
    "params, message",
    [
        ([("fleet.wrokers", 3)], "unknown field 'wrokers' in fleet of scenarios/default.yaml"),
        ([("fleet.wrokers", 3)], "did you mean 'workers'?"),
        ([("faults[9].probability", 0.1)], "faults has 6 entries in scenarios/default.yaml (faults[0]..faults[5])"),
        ([("fleet.workers.count", 3)], "fleet.workers is a number"),
        (
            [("faults[0].probability", 1.5)],
            "scenarios/default.yaml with --param faults[0].probability=1.5: faults[0].probability",
        ),
        ([("faults[0].probability", 1.5)], "(got 1.5)"),
        ([("faults[0].probability", 1.5)], "; allowed: 0 <= value <= 1"),
    ],
    ids=["unknown-field", "did-you-mean", "index-out-of-range", "into-a-number", "invalid-value", "shows-value", "fix"],
)
def test_bad_params_name_file_field_value_and_fix(default, params, message):
    """A path that names nothing, or a value the rules refuse, gives one message naming it."""
    with pytest.raises(ParamError) as info:
        apply_params(default, params, source=SOURCE)
    assert message in str(info.value)


def test_grid_points_are_the_product_last_fastest():
    """The grid is every combination, the last parameter varying fastest."""
    assert grid_points({"a": [1, 2], "b": ["x", "y"]}) == [
        (("a", 1), ("b", "x")),
        (("a", 1), ("b", "y")),
        (("a", 2), ("b", "x")),
        (("a", 2), ("b", "y")),
    ]
    assert grid_points({}) == [()]
