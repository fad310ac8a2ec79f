"""Invalid scenario documents, each with the one message a user must see.

Every case names the file, the field path, the offending value, the rule and a fix; the
table is the specification of those messages.  A hypothesis test then fuzzes the loader
with random documents and mutations of valid ones: it returns a Scenario or raises a
ScenarioError, never anything else.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
from dataclasses import dataclass

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from long_worlds import examples

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.errors import ScenarioError
from fleetchaos.scenario.load import (
    MAX_FILE_BYTES,
    MAX_SCHEDULE_SPANS,
    MAX_TASKS,
    MAX_TOOL_CALLS,
    Scenario,
    parse_scenario,
)

STEP = "{tool: work, duration: {mean_s: 10}}"


@dataclass(frozen=True)
class Case:
    """One invalid document and the parts its message must contain."""

    text: str
    expected: tuple[str, ...]
    source: str = "world.yaml"


def _bomb() -> str:
    """The 'billion laughs' alias bomb, YAML edition."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "name: bomb\n" + "\n".join(lines) + "\n"


def _deep(levels: int) -> str:
    return "name: deep\nfleet: " + "[" * levels + "]" * levels + "\n"


CASES: dict[str, Case] = {
    # -- the document itself ------------------------------------------------------------
    "malformed_yaml": Case(
        "name: x\nfleet: [1, 2\n",
        ("world.yaml: not valid YAML", "line 3, column 1", "expected ',' or ']'", "check the indentation"),
    ),
    "malformed_json": Case('{"name": "x",', ("world.json: not valid JSON", "line 1"), source="world.json"),
    "empty_file": Case("", ("world.yaml: (top level)", "the file is empty", "name: my_world")),
    "only_a_comment": Case("# nothing here\n", ("world.yaml: (top level)", "the file is empty")),
    "top_level_list": Case(
        "- name: x\n- name: y\n", ("world.yaml: (top level): expected a mapping of fields, got list",)
    ),
    "top_level_scalar": Case("just words\n", ("world.yaml: (top level): expected a mapping of fields, got str",)),
    "huge_document": Case(
        "name: x\n" + "#" * (MAX_FILE_BYTES + 10), ("world.yaml: file is larger than 1000000 bytes",)
    ),
    "yaml_alias_bomb": Case(_bomb(), ("world.yaml: line 7", "more than 100000 YAML nodes once aliases are expanded")),
    "yaml_undefined_alias": Case(
        "name: x\nworkload: *tpl\n", ("world.yaml: not valid YAML: line 2, column 11", "found undefined alias 'tpl'")
    ),
    "deep_nesting": Case(_deep(40), ("world.yaml: line 2", "nested deeper than 32 levels")),
    "deep_json": Case(
        '{"name": "x", "fleet": ' + "[" * 40 + "]" * 40 + "}",
        ("world.json: nested deeper than 32 levels",),
        source="world.json",
    ),
    "python_object_tag": Case(
        "name: x\nfleet: !!python/object/apply:os.system ['echo pwned']\n",
        ("world.yaml: not valid YAML: line 2", "python/object/apply", "remove the tag"),
    ),
    "duplicate_key": Case(
        "name: x\nfleet:\n  workers: 3\n  workers: 4\n",
        ("world.yaml: line 4", "key 'workers' appears twice", "keep one"),
    ),
    "impossible_date": Case(
        "name: x\nduration_s: 2024-13-45\n",
        ("world.yaml: not valid YAML: a value cannot be read", "month must be in 1..12", "quote anything else"),
    ),
    "huge_integer": Case(
        "name: x\nfleet: {workers: " + "9" * 5000 + "}\n",
        ("world.yaml: not valid YAML: a value cannot be read", "4300 digits"),
    ),
    # -- types ----------------------------------------------------------------------------
    "missing_name": Case(
        "description: no name\n", ("world.yaml: name: required field is missing; add it (string: the scenario's name",)
    ),
    "name_is_a_list": Case("name: [a, b]\n", ("world.yaml: name: must be a string; quote it",)),
    "workers_is_text": Case(
        "name: x\nfleet: {workers: ten}\n",
        ("world.yaml: fleet.workers: must be a whole number (got 'ten')", "without quotes or units"),
    ),
    "workers_fractional": Case(
        "name: x\nfleet: {workers: 2.5}\n", ("world.yaml: fleet.workers: must be a whole number (got 2.5); use 2 or 3",)
    ),
    "fleet_is_a_list": Case(
        "name: x\nfleet: [1, 2]\n", ("world.yaml: fleet: must be a mapping of fields, got a list", "api_burst")
    ),
    "duration_with_units": Case(
        "name: x\nduration_s: 1 day\n",
        ("world.yaml: duration_s: must be a number (got '1 day')", "without quotes or units"),
    ),
    "fault_is_a_number": Case(
        "name: x\nfaults: [5]\n", ("world.yaml: faults[0]: must be a mapping of fields (got 5)",)
    ),
    "faults_not_a_list": Case(
        "name: x\nfaults: {kind: network_blip}\n",
        ("world.yaml: faults: must be a list, got a mapping", "lines starting with '- '"),
    ),
    "infinite_probability": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    probability: .inf\n",
        ("world.yaml: faults[0].probability: must be a finite number", "(got .inf)"),
    ),
    "nan_duration": Case(
        "name: x\nduration_s: .nan\n", ("world.yaml: duration_s: must be a finite number", "(got .nan)")
    ),
    "nan_in_json": Case(
        '{"name": "x", "fleet": {"api_rate_per_s": NaN}}',
        ("world.json: fleet.api_rate_per_s: must be a finite number", "(got .nan)"),
        source="world.json",
    ),
    # -- unknown names --------------------------------------------------------------------
    "unknown_top_field": Case(
        "name: x\nfault:\n  - kind: network_blip\n",
        ("world.yaml: fault: unknown field 'fault'; did you mean 'faults'?",),
    ),
    "unknown_fleet_field": Case(
        "name: x\nfleet: {wrkers: 3}\n", ("world.yaml: fleet.wrkers: unknown field 'wrkers'; did you mean 'workers'?",)
    ),
    "human_response_is_gone": Case(
        "name: x\nfleet: {human_response: {mean_s: 7200}}\n",
        ("world.yaml: fleet: human_response: a page is no longer billed at the wait", "set page_handling"),
    ),
    "unknown_step_field": Case(
        "name: x\nworkload:\n  templates:\n    - name: a\n      steps: [{tool: a, duraton: {mean_s: 1}}]\n",
        ("world.yaml: workload.templates[0].steps[0].duraton: unknown field 'duraton'; did you mean 'duration'?",),
    ),
    "unknown_field_no_match": Case(
        "name: x\nfleet: {colour: blue}\n",
        ("world.yaml: fleet.colour: unknown field 'colour'; remove it (fields here:", "workers"),
    ),
    "unknown_fault_kind": Case(
        "name: x\nfaults:\n  - kind: disk_ful\n",
        ("world.yaml: faults[0]: unknown fault kind 'disk_ful'", "quota_exhausted", "did you mean 'disk_full'?"),
    ),
    "fault_without_kind": Case(
        "name: x\nfaults:\n  - probability: 0.1\n",
        ("world.yaml: faults[0]: a fault needs a kind", "fleetchaos faults list"),
    ),
    "field_of_another_kind": Case(
        "name: x\nfaults:\n  - kind: disk_full\n    probability: 0.1\n",
        (
            "world.yaml: faults[0].probability: unknown field 'probability'",
            "is a parameter of network_blip",
            "not of disk_full",
        ),
    ),
    "misspelt_fault_field": Case(
        "name: x\nfaults:\n  - kind: timeout\n    timout_s: 5\n",
        ("world.yaml: faults[0].timout_s: unknown field 'timout_s'; did you mean 'timeout_s'?",),
    ),
    "dispatch_typo": Case(
        "name: x\nfleet: {dispatch: round_robn}\n",
        (
            "world.yaml: fleet.dispatch: must be one of 'round_robin', 'least_loaded' (got 'round_robn'); did you mean 'round_robin'?",
        ),
    ),
    "side_effect_typo": Case(
        "name: x\nworkload:\n  templates:\n    - name: a\n      steps: [{tool: a, duration: {mean_s: 1}, side_effect: appnd}]\n",
        (
            "world.yaml: workload.templates[0].steps[0].side_effect: must be one of 'none', 'idempotent', 'append' (got 'appnd'); did you mean 'append'?",
        ),
    ),
    "missing_field_typo": Case(
        "name: x\nfaults:\n  - kind: schema_drift\n    missing_fields: [contxt]\n",
        ("world.yaml: faults[0].missing_fields[0]: must be one of", "(got 'contxt'); did you mean 'context'?"),
    ),
    "arrival_unknown_template": Case(
        "name: x\nworkload:\n  arrivals: [{at_s: 0, template: reserch}]\n",
        (
            "world.yaml: workload.arrivals[0].template: unknown template 'reserch' (known: coding, research, crm_sync); did you mean 'research'?",
        ),
    ),
    "fault_tool_not_in_workload": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    tools: [git_psh]\n",
        ("world.yaml: faults[0].tools: no step uses tool 'git_psh'", "did you mean 'git_push'?"),
    ),
    "fault_template_not_in_workload": Case(
        "name: x\nfaults:\n  - kind: timeout\n    templates: [crm-sync]\n",
        (
            "world.yaml: faults[0].templates: unknown template 'crm-sync' (known: coding, research, crm_sync); did you mean 'crm_sync'?",
        ),
    ),
    "needs_a_later_step": Case(
        "name: x\nworkload:\n  templates:\n    - name: a\n      steps:\n        - {tool: merge, duration: {mean_s: 1}, needs: [fetch]}\n        - {tool: fetch, duration: {mean_s: 1}}\n",
        (
            "world.yaml: workload.templates[0]: template 'a': step 0 (merge) needs 'fetch', which is not an earlier step (earlier: none)",
            "list only steps that come before this one",
        ),
    ),
    "duplicate_template_name": Case(
        f"name: x\nworkload:\n  templates:\n    - {{name: a, steps: [{STEP}]}}\n    - {{name: a, steps: [{STEP}]}}\n",
        (
            "world.yaml: workload.templates[1].name: template name 'a' is already used by workload.templates[0]",
            "give each template its own name",
        ),
    ),
    # -- ranges and rules -----------------------------------------------------------------
    "negative_probability": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    probability: -0.5\n",
        ("world.yaml: faults[0].probability: must be >= 0 (got -0.5); allowed: 0 <= value <= 1",),
    ),
    "probability_above_one": Case(
        "name: x\nfaults:\n  - kind: network_blip\n  - kind: timeout\n    probability: 1.5\n",
        ("world.yaml: faults[1].probability: must be <= 1 (got 1.5); allowed: 0 <= value <= 1",),
    ),
    "negative_rate": Case(
        "name: x\nfaults:\n  - kind: disk_full\n    per_worker_per_day: -2\n",
        ("world.yaml: faults[0].per_worker_per_day: must be >= 0 (got -2); allowed: 0 <= value <= 100",),
    ),
    "zero_horizon": Case(
        "name: x\nduration_s: 0\n", ("world.yaml: duration_s: must be > 0 (got 0); allowed: 0 < value <= 31536000",)
    ),
    "window_outside_horizon": Case(
        "name: x\nduration_s: 3600\nfaults:\n  - kind: network_blip\n    windows: [{start_s: 7200, duration_s: 60}]\n",
        (
            "world.yaml: faults[0].windows: start_s 7200 is outside the horizon (duration_s 3600); move it before duration_s, or lengthen duration_s",
        ),
    ),
    "event_outside_horizon": Case(
        "name: x\nduration_s: 3600\nfaults:\n  - kind: node_crash\n    events: [{worker: 0, at_s: 5000}]\n",
        ("world.yaml: faults[0].events: at_s 5000 is outside the horizon (duration_s 3600)",),
    ),
    "worker_beyond_fleet": Case(
        "name: x\nfleet: {workers: 12}\nfaults:\n  - kind: network_blip\n    workers: [14]\n",
        (
            "world.yaml: faults[0].workers: worker 14 does not exist (fleet has 12 workers: 0..11); target an existing one, or enlarge the fleet",
        ),
    ),
    "event_worker_beyond_fleet": Case(
        "name: x\nfleet: {workers: 3}\nfaults:\n  - kind: disk_full\n    events: [{worker: 3, at_s: 10}]\n",
        ("world.yaml: faults[0].events: worker 3 does not exist (fleet has 3 workers: 0..2)",),
    ),
    "override_beyond_fleet": Case(
        "name: x\nfleet:\n  workers: 2\n  overrides: [{worker: 5, tool_slots: 4}]\n",
        ("world.yaml: fleet.overrides: worker 5 does not exist (fleet has 2 workers: 0..1)",),
    ),
    "unknown_orchestrator_in_partition": Case(
        "name: x\nfaults:\n  - kind: network_partition\n    orchestrators: [2]\n    windows: [{start_s: 0, duration_s: 60}]\n",
        ("world.yaml: faults[0].orchestrators: orchestrator 2 does not exist (fleet has 2: 0..1)", "enlarge the fleet"),
    ),
    "partition_without_windows": Case(
        "name: x\nfaults:\n  - kind: network_partition\n",
        ("world.yaml: faults[0].windows: required field is missing; add it (list of Window",),
    ),
    "window_longer_than_period": Case(
        "name: x\nfaults:\n  - kind: latency_spike\n    windows: [{start_s: 0, duration_s: 600, every_s: 300}]\n",
        (
            "world.yaml: faults[0].windows[0]: duration_s 600 is longer than every_s 300",
            "shorten duration_s or lengthen every_s",
        ),
    ),
    "ramp_end_before_start": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    ramp: {start_s: 500, end_s: 100, from_probability: 0, to_probability: 0.5}\n",
        ("world.yaml: faults[0].ramp: ramp end_s 100 must be after start_s 500; make end_s later than start_s",),
    ),
    "no_steps": Case(
        "name: x\nworkload:\n  templates: [{name: a, steps: []}]\n",
        ("world.yaml: workload.templates[0].steps: needs at least 1 item, got 0; add one",),
    ),
    # -- sizes one machine cannot run -------------------------------------------------------
    "absurd_task_count": Case(
        "name: x\nduration_s: 31536000\nworkload: {tasks_per_day: 5000000}\n",
        (
            "world.yaml: workload: about 1,825,000,000 tasks (workload.tasks_per_day 5,000,000 x 365 days)",
            "more than one machine can simulate",
            f"the limit is {MAX_TASKS:,} tasks",
            "shorter duration_s",
        ),
    ),
    "absurd_tool_calls": Case(
        "name: x\nworkload:\n  tasks_per_day: 4000000\n  templates:\n    - name: wide\n      steps: [{tool: scan, duration: {mean_s: 1}, fan_out: 64}]\n",
        (
            "world.yaml: workload: about 256,000,000 tool calls (4,000,000 tasks x 64.0 calls each)",
            f"the limit is {MAX_TOOL_CALLS:,} tool calls",
            "fewer fan-out items",
        ),
    ),
    "absurd_closed_loop": Case(
        "name: x\nduration_s: 8640000\nworkload: {clients: 100000, think: {mean_s: 1}}\n",
        ("world.yaml: workload: about", "100000 closed-loop clients over 100 days", "fewer workload.clients"),
    ),
    "schedule_too_fine": Case(
        "name: x\nduration_s: 8640000\nfaults:\n  - kind: latency_spike\n    windows: [{start_s: 0, duration_s: 0.05, every_s: 0.1}]\n",
        (
            "world.yaml: faults[0]: the fault schedule expands to about 864,000,000 windows",
            f"the limit is {MAX_SCHEDULE_SPANS:,}",
            "longer every_s",
        ),
    ),
    "bursts_too_short": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    burst: {mean_good_s: 0.01, mean_bad_s: 0.01, scope: worker}\n",
        (
            "world.yaml: faults[0]: the fault schedule expands to about 43,200,000 windows, burst phases and events",
            "burst phases",
        ),
    ),
    # Rate-limit windows count as schedule spans: lookups are binary searches, so only building them costs.
    "too_many_rate_windows": Case(
        "name: x\nduration_s: 31536000\nworkload: {tasks_per_day: 10}\nfaults:\n  - kind: rate_limit\n    windows: [{start_s: 0, duration_s: 10, every_s: 30}]\n",
        (
            "world.yaml: faults[0]: the fault schedule expands to about 1,051,200 windows",
            f"the limit is {MAX_SCHEDULE_SPANS:,}",
            "longer every_s",
        ),
    ),
    # -- swarm ranges -----------------------------------------------------------------------
    "swarm_unknown_parameter": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    swarm: {probabilty: [0.01, 0.1]}\n",
        (
            "world.yaml: faults[0].swarm.probabilty: not a numeric parameter of network_blip (numeric: probability); did you mean 'probability'?",
        ),
    ),
    "swarm_non_numeric_parameter": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    swarm: {windows: [0, 1]}\n",
        (
            "world.yaml: faults[0].swarm.windows: not a numeric parameter of network_blip",
            "swarm only draws numeric parameters",
        ),
    ),
    "swarm_out_of_range": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    swarm: {probability: [0.1, 1.5]}\n",
        (
            "world.yaml: faults[0].swarm.probability: end 1.5 of the range [0.1, 1.5] is not a valid probability (must be less than or equal to 1)",
            "keep both ends",
        ),
    ),
    "swarm_fractional_int": Case(
        "name: x\nfaults:\n  - kind: git_push_conflict\n    swarm: {branches: [1, 2.5]}\n",
        (
            "world.yaml: faults[0].swarm.branches: branches is a whole number, so the range needs whole-number ends (got [1, 2.5])",
            "use whole numbers",
        ),
    ),
    "swarm_reversed": Case(
        "name: x\nfaults:\n  - kind: timeout\n    swarm: {timeout_s: [90, 10]}\n",
        ("world.yaml: faults[0].swarm.timeout_s: low 90 is above high 10; write the range as [low, high]",),
    ),
    "swarm_not_a_pair": Case(
        "name: x\nfaults:\n  - kind: network_blip\n    swarm: {probability: [0.1]}\n",
        ("world.yaml: faults[0].swarm.probability: a swarm range is a list of two numbers, [low, high]",),
    ),
}


def message_of(case: Case) -> str:
    """The ScenarioError message parse_scenario gives for a case."""
    with pytest.raises(ScenarioError) as info:
        parse_scenario(case.text, case.source)
    return str(info.value)


def test_the_table_has_at_least_30_cases():
    """The specification covers at least 30 distinct invalid documents."""
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", sorted(CASES))
def test_invalid_scenario_message(name):
    """The case's message names the file, the path, the value, the rule and the fix, on one line."""
    case = CASES[name]
    message = message_of(case)
    assert message.startswith(f"{case.source}: ")
    assert "\n" not in message, message
    assert "Traceback" not in message
    for part in case.expected:
        assert part in message, f"{name}: {part!r} not in {message!r}"


def test_every_problem_gets_its_own_line():
    """Several mistakes in one file give one line each, all naming the file."""
    message = message_of(Case("name: x\nbogus: 1\nfleet: {workers: -1}\nfaults:\n  - kind: nope\n", ()))
    lines = message.splitlines()
    assert len(lines) == 3
    assert all(line.startswith("world.yaml: ") for line in lines)


def test_invalid_file_through_the_cli_exits_2_without_traceback(tmp_path):
    """`scenarios validate` on an invalid file prints the message (brackets intact) and exits 2."""
    path = tmp_path / "bad.yaml"
    path.write_text(CASES["swarm_not_a_pair"].text, encoding="utf-8")
    result = CliRunner().invoke(main, ["scenarios", "validate", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "[low, high]" in result.output and str(path) in result.output


def test_swarm_range_at_the_limits_is_valid():
    """A swarm range whose ends are the parameter's own limits validates."""
    sc = parse_scenario("name: x\nfaults:\n  - kind: network_blip\n    swarm: {probability: [0, 1]}\n", "w.yaml")
    assert sc.faults[0].swarm == {"probability": (0.0, 1.0)}


def test_a_scenario_just_under_the_size_limit_validates():
    """The size check refuses only what is beyond the limit: MAX_TASKS tasks in one day pass."""
    text = f"name: x\nworkload:\n  tasks_per_day: {MAX_TASKS}\n  templates:\n    - name: t\n      steps: [{STEP}]\n"
    assert parse_scenario(text, "w.yaml").workload.tasks_per_day == MAX_TASKS


# -- fuzzing --------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["network_blip", "disk_full", "coding", "search", "round_robin", "swarm", "kind", "windows"]),
)
_keys = st.one_of(
    st.text(max_size=10),
    st.sampled_from(
        [
            "name",
            "fleet",
            "workload",
            "faults",
            "kind",
            "probability",
            "windows",
            "workers",
            "swarm",
            "templates",
            "steps",
            "tool",
            "duration",
            "mean_s",
            "start_s",
            "duration_s",
            "every_s",
        ]
    ),
)
_documents = st.recursive(
    _scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_keys, children, max_size=5)),
    max_leaves=30,
)


def _valid_documents() -> list[dict]:
    """Every catalogue scenario as a plain dict (what a user's file holds)."""
    from fleetchaos.scenario.load import load_scenario

    return [load_scenario(name).model_dump(mode="json", exclude_defaults=True) for name in catalogue.names()]


VALID = _valid_documents()


def _paths(doc, prefix=()):
    """Every (path, value) in a nested document."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def _set(doc, path, value):
    if not path:
        return value
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


@st.composite
def mutated_scenarios(draw):
    """A catalogue scenario with one value replaced, one key renamed or one item dropped."""
    doc = copy.deepcopy(draw(st.sampled_from(VALID)))
    paths = [p for p, _ in _paths(doc) if p]
    path = draw(st.sampled_from(paths))
    action = draw(st.sampled_from(["replace", "rename", "drop", "scale"]))
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    key = path[-1]
    if action == "replace":
        parent[key] = draw(_documents)
    elif action == "rename" and isinstance(parent, dict):
        parent[draw(_keys)] = parent.pop(key)
    elif action == "drop":
        del parent[key]
    else:
        value = parent[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = value * draw(st.sampled_from([-1, 0, 0.5, 1.5, 10, 1e6, math.inf]))
    return doc


def _load(doc, as_json: bool) -> None:
    """parse_scenario must return a Scenario or raise ScenarioError: anything else fails the test."""
    if as_json:
        text, source = json.dumps(doc, allow_nan=True, default=str), "fuzz.json"
    else:
        import yaml

        text, source = yaml.safe_dump(doc, allow_unicode=True), "fuzz.yaml"
    try:
        result = parse_scenario(text, source)
    except ScenarioError as exc:
        assert str(exc).startswith(f"{source}: ") and "Traceback" not in str(exc)
    else:
        assert isinstance(result, Scenario)


@settings(max_examples=examples(50, 150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_documents, as_json=st.booleans())
def test_fuzz_random_documents_never_crash_the_loader(doc, as_json):
    """Random nested documents give a Scenario or a ScenarioError, never another exception."""
    _load(doc, as_json)


@settings(max_examples=examples(80, 250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=mutated_scenarios(), as_json=st.booleans())
def test_fuzz_mutated_scenarios_never_crash_the_loader(doc, as_json):
    """Catalogue scenarios with one mutation give a Scenario or a ScenarioError, never another exception."""
    _load(doc, as_json)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_fuzz_raw_text_never_crashes_the_loader(text):
    """Arbitrary text as a YAML file gives a Scenario or a ScenarioError."""
    with contextlib.suppress(ScenarioError):
        parse_scenario(text, "raw.yaml")


def test_estimated_size_of_open_and_closed_loops():
    """The size estimate: tasks_per_day x days (or clients over think + a round trip, as fast as tasks fail) and calls per task."""
    from fleetchaos.scenario.load import estimated_size

    open_loop = parse_scenario(
        f"name: x\nduration_s: 172800\nworkload:\n  tasks_per_day: 100\n  templates:\n    - name: t\n      steps: [{STEP}, {{tool: fan, duration: {{mean_s: 10}}, fan_out: 4}}]\n",
        "w.yaml",
    )
    assert estimated_size(open_loop) == (200.0, 1000.0)
    closed = parse_scenario(
        f"name: x\nduration_s: 1000\nworkload:\n  clients: 3\n  think: {{mean_s: 90}}\n  templates:\n    - name: t\n      steps: [{STEP}]\n",
        "w.yaml",
    )
    tasks, calls = estimated_size(closed)
    assert tasks == pytest.approx(3 * 1000 / (90 + 2 * 0.08)) and calls == tasks


def test_world_spec_refuses_duplicate_template_names():
    """WorldSpec itself refuses two templates with the same name (arrivals and faults name templates)."""
    from pydantic import ValidationError

    from fleetchaos.sim.config import WorldSpec

    step = {"tool": "work", "duration": {"mean_s": 10}}
    with pytest.raises(ValidationError):
        WorldSpec.model_validate(
            {"workload": {"templates": [{"name": "a", "steps": [step]}, {"name": "a", "steps": [step]}]}}
        )


def test_a_year_of_rate_limit_windows_validates():
    """36,500 rate-limit windows (refused while the token bucket scanned every window on
    every API call) are within the schedule limit now that lookups are binary searches."""
    from fleetchaos.scenario.load import parse_scenario

    text = "name: x\nduration_s: 31536000\nworkload: {tasks_per_day: 10}\nfaults:\n  - kind: rate_limit\n    per_day: 100\n"
    assert parse_scenario(text, "world.yaml").faults[0].per_day == 100


def test_anchors_aliases_and_merge_keys_read_as_the_values_written_out():
    """A scenario sharing a duration through &anchor, *alias and <<: merge loads as if written out in full."""
    from fleetchaos.scenario.load import parse_scenario

    shared = (
        "name: x\nworkload:\n  templates:\n"
        "    - name: a\n      steps: [{tool: t, duration: &d {mean_s: 4, cv: 0.3}}]\n"
        "    - name: b\n      steps: [{tool: u, duration: *d}, {tool: v, duration: {<<: *d, cv: 0.5}}]\n"
    )
    full = (
        "name: x\nworkload:\n  templates:\n"
        "    - name: a\n      steps: [{tool: t, duration: {mean_s: 4, cv: 0.3}}]\n"
        "    - name: b\n      steps: [{tool: u, duration: {mean_s: 4, cv: 0.3}}, {tool: v, duration: {mean_s: 4, cv: 0.5}}]\n"
    )
    assert parse_scenario(shared, "x.yaml") == parse_scenario(full, "x.yaml")


def test_a_schema_error_names_the_line_of_its_place():
    """A value the models refuse ends its message with its YAML line, in a mapping and in a list alike."""
    from fleetchaos.scenario.load import ScenarioError, parse_scenario

    text = "name: x\nfleet:\n  workers: -3\nfaults:\n  - kind: network_blip\n    probability: 2\n  - kind: timeot\n"
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "w.yaml")
    lines = str(caught.value).splitlines()
    assert any(line.startswith("w.yaml: fleet.workers:") and line.endswith("(line 3)") for line in lines), lines
    assert any(line.startswith("w.yaml: faults[0].probability:") and line.endswith("(line 6)") for line in lines)
    assert any("unknown fault kind 'timeot'" in line and line.endswith("(line 7)") for line in lines), lines
    with pytest.raises(ScenarioError) as caught:
        parse_scenario('{"name": "x", "fleet": {"workers": -3}}', "w.json")
    assert "(line" not in str(caught.value)  # JSON: the field path says where


@pytest.mark.parametrize("name", ["default", "mixed_production_day", "swarm_worlds", "crm_sync_403"])
def test_to_yaml_writes_a_scenario_that_loads_back_unchanged(name):
    """to_yaml (what a falsifying world prints as) parses back to the very same scenario."""
    from fleetchaos.scenario.load import load_scenario, parse_scenario, to_yaml

    scenario = load_scenario(name)
    assert parse_scenario(to_yaml(scenario), "pasted.yaml") == scenario


def test_hypothesis_prints_a_scenario_as_the_yaml_to_paste():
    """A falsifying world reads as parse_scenario of its YAML: the YAML between the quotes loads back to it."""
    from hypothesis.vendor.pretty import pretty

    from fleetchaos.scenario.load import load_scenario, parse_scenario

    scenario = load_scenario("crm_sync_403")
    shown = pretty(scenario)
    assert shown.startswith('parse_scenario("""\nname: crm_sync_403\n') and shown.endswith('""", "world.yaml")')
    assert parse_scenario(shown.split('"""')[1], "world.yaml") == scenario
