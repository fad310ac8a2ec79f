"""The `--param` fuzzer (issue 28): every path of the scenario schema, fields the file leaves at their default and
the serialiser hides included, set to hostile values (deep nesting, subnormal, huge and non-finite numbers, strings
where numbers go): `run` exits 0 or 2, never 3 (an internal error) and never a traceback.

The paths are walked from the pydantic models, not from a dumped document (a dump hides fields that hold their
default), against a small world holding one fault of every kind.  The CLI runs in-process (click's CliRunner), and
the machine-size limits are lowered for the fuzz, so a legitimately large world is refused at once rather than
simulated for minutes: the size limits have their own tests (test_bad_input_and_resources.py).
"""

from __future__ import annotations

import json
import math
from typing import Any, get_args, get_origin

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.scenario import load
from fleetchaos.scenario.fields import tag_of, union_members, unwrap
from fleetchaos.scenario.load import Scenario
from fleetchaos.scenario.params import path_text
from fleetchaos.testing.kind_strategies import ALL_KINDS

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

#: Fields that name things other fields refer to: changing them only moves the refusal elsewhere.
_TARGETS = ("tools", "templates", "provider", "workers", "orchestrators", "events")


def _world() -> dict:
    """A six-hour default world with one fault of every kind, taken from the catalogue scenarios."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc.update(name="fuzz", duration_s=21600.0, faults=[], goodput_bin_s=3600.0)
    doc["workload"]["tasks_per_day"] = 40
    seen: set[str] = set()
    for name in catalogue.names():
        for fault in yaml.safe_load(catalogue.path(name).read_text()).get("faults") or []:
            if fault["kind"] in seen:
                continue
            moved = {k: v for k, v in fault.items() if k not in _TARGETS}
            moved["windows"] = [{**w, "start_s": 3600.0} for w in fault.get("windows") or []] or moved.get("windows")
            if "provider" in fault:
                moved["provider"] = doc["fleet"]["providers"][0]["name"]
            for candidate in (fault, {k: v for k, v in moved.items() if v is not None}):
                trial = {**doc, "faults": [*doc["faults"], candidate]}
                try:
                    Scenario.model_validate(trial)
                except ValidationError:
                    continue
                doc = trial
                seen.add(fault["kind"])
                break
    return doc


WORLD = _world()


def _paths(annotation: Any, node: Any, prefix: tuple) -> list[tuple]:
    """Every path under ``annotation`` (a model, a list, a union of fault kinds), with indices the document has."""
    ann = unwrap(annotation)
    members = union_members(ann)
    out: list[tuple] = []
    if members:  # one item of a list of fault kinds: each kind's fields at the index of that kind's fault
        for member in members:
            out += _paths(member, node if isinstance(node, dict) and node.get("kind") == tag_of(member) else {}, prefix)
        return out
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        for name, field in ann.model_fields.items():
            child = node.get(name) if isinstance(node, dict) else None
            out.append((*prefix, name))
            out += _paths(field.annotation, child, (*prefix, name))
        return out
    origin = get_origin(ann)
    if origin is list:
        (item,) = get_args(ann)
        items = node if isinstance(node, list) and node else [None]
        if union_members(item):  # faults: every kind at the index where the world has it
            for index, value in enumerate(items):
                kind = value.get("kind") if isinstance(value, dict) else None
                chosen = [m for m in union_members(item) if tag_of(m) == kind] or union_members(item)[:1]
                out += _paths(chosen[0], value, (*prefix, index))
            return out
        return [(*prefix, 0), *_paths(item, items[0], (*prefix, 0))]
    if origin is tuple:
        return [(*prefix, i) for i in range(len([a for a in get_args(ann) if a is not Ellipsis]))]
    if origin is dict:
        keys = list(node) if isinstance(node, dict) and node else ["probability"]
        return [(*prefix, k) for k in keys]
    return out


PATHS = sorted({path_text(p) for p in _paths(Scenario, WORLD, ())})

_NUMBERS = [
    "5e-324", "-5e-324", "1e-310", "2.2250738585072014e-308", "1e-300", "0", "-0.0", "-1",
    "1e308", "1.7976931348623157e308", "-1.7976931348623157e308", "1e400", "-1e400",
    str(2**63), str(2**64 + 1), str(10**30), "1" + "0" * 5000,
    ".inf", "-.inf", ".nan", "Infinity", "-Infinity", "NaN", "nan", "inf",
]  # fmt: skip
_NOT_NUMBERS = ["abc", "'0.1'", '"0.1"', "0x10", "1_000", "true", "null", "~", "[]", "{}", "[1, 2]", "{a: 1}",
                "{mean_s: 5e-324}", "[5e-324, 1e308]", "\x1b[31mred", "é", "[/]"]  # fmt: skip


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


_values = st.one_of(
    st.sampled_from(_NUMBERS),
    st.sampled_from(_NOT_NUMBERS),
    st.integers(1, 3000).map(_nested),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(min_value=0, max_value=1e-300).map(repr),
    st.integers(-(2**70), 2**70).map(str),
)


@pytest.fixture(scope="module")
def world_file(tmp_path_factory):
    """The fuzz world written as YAML."""
    path = tmp_path_factory.mktemp("params") / "fuzz.yaml"
    path.write_text(yaml.safe_dump(WORLD))
    return path


@pytest.fixture(scope="module")
def small_machine():
    """Size limits for a world the fuzz can simulate in well under a second."""
    mp = pytest.MonkeyPatch()
    mp.setattr(load, "MAX_TASKS", 2_000)
    mp.setattr(load, "MAX_TOOL_CALLS", 10_000)
    mp.setattr(load, "MAX_SCHEDULE_SPANS", 20_000)
    mp.delenv("FLEETCHAOS_DEBUG", raising=False)
    yield
    mp.undo()


def _run(world_file, params: list[str]):
    args = ["run", "--scenario", str(world_file), "--no-history", "--json", "--time-limit", "120"]
    for param in params:
        args += ["--param", param]
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in text, (params, text)
    assert result.exit_code in (0, 2), (params, result.exit_code, text[-2000:], repr(result.exception))
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), (params, repr(result.exception))
    if result.exit_code == 2:  # one clear line on stderr, never a partial result on stdout
        assert result.stdout == "", (params, result.stdout[:500])
        assert result.stderr.startswith("error: "), (params, result.stderr[:500])
    else:
        json.loads(result.stdout)
    return result


def test_the_walk_reaches_hidden_defaults_and_every_fault_kind():
    """The schema walk names fields a dump hides and a field of each fault kind (the world has one fault of each)."""
    dumped = json.dumps(Scenario.model_validate(WORLD).model_dump(mode="json"))
    for hidden in ("fleet.max_actions_per_task", "expect", "workload.arrival_schedule"):
        assert hidden in PATHS and hidden.rsplit(".", 1)[-1] not in dumped, hidden
    assert sorted(f["kind"] for f in WORLD["faults"]) == sorted(ALL_KINDS)  # context_overflow emerges: never declared
    assert len(PATHS) > 300


@pytest.mark.parametrize(
    "scenario, param, value",
    [
        ("default", "fleet.max_actions_per_task=3", 3),
        ("flaky_network", "fleet.providers=[{name: api, servers: 4}]", [{"name": "api", "servers": 4}]),
        ("flaky_network", "fleet.providers=[]", []),
        ("default", "goodput_bin_s=60", 60.0),
        ("default", "workload.templates[0].steps[0].after_timeout=cancel", "cancel"),
    ],
    ids=["max-actions", "providers", "providers-default", "scenario-level", "step-level"],
)
def test_a_field_the_file_leaves_at_its_default_can_be_set(tmp_path, monkeypatch, scenario, param, value):
    """`--param` sets a field the serialiser hides while it holds its default (it was "unknown field")."""
    monkeypatch.chdir(tmp_path)
    args = [
        "run",
        "--scenario",
        scenario,
        "--param",
        param,
        "--param",
        "workload.tasks_per_day=50",
        "--no-history",
        "--json",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    path = param.partition("=")[0]
    recorded = json.loads(result.stdout)["params"][path]
    assert recorded == value if not isinstance(value, list) or not value else recorded[0].items() >= value[0].items()


def test_a_hidden_default_set_by_param_takes_effect():
    """`--param fleet.max_actions_per_task=3` caps a policy that retries 60 times at 3 retries."""
    from fleetchaos.runs.runner import run_one
    from fleetchaos.scenario.params import apply_params

    spec = Scenario.model_validate(WORLD)
    most = {}
    for cap in (3, 100):
        capped, _ = apply_params(spec, [("fleet.max_actions_per_task", cap)], source="fuzz.yaml")
        result = run_one(capped, "retry-immediate", "generic", 1, keep_tasks=True)
        most[cap] = max(row["retries"] for row in result.tasks)
    assert most == {3: 3, 100: 59}


@pytest.mark.parametrize(
    "param",
    [
        "workload.tasks_per_day=5e-324",
        "x=" + _nested(3000),
        "fleet.workers=" + _nested(3000),
        "fleet.network_latency.mean_s=5e-324",
        "duration_s=5e-324",
        "workload.templates[0].steps[0].duration.mean_s=1.7976931348623157e308",
        "faults[0].probability=1e400",
    ],
    ids=["subnormal-rate", "deep-unknown", "deep-value", "subnormal-latency", "subnormal-horizon", "max-float", "inf"],
)
def test_the_issues_cases_are_a_result_or_one_clear_line(world_file, small_machine, param):
    """The cases the issue found (ZeroDivisionError, RecursionError) and their neighbours: exit 0 or 2."""
    _run(world_file, [param])


@FAST
@given(path=st.sampled_from(PATHS), value=_values)
def test_fuzz_every_schema_path_with_hostile_values(world_file, small_machine, path, value):
    """Any schema path (hidden defaults included) set to any hostile value: exit 0 or 2, one clear line."""
    _run(world_file, [f"{path}={value}"])


@pytest.mark.slow  # 600 examples, about 4 minutes: make test-all runs it
@LONG
@given(params=st.lists(st.tuples(st.sampled_from(PATHS), _values), min_size=1, max_size=3))
def test_fuzz_schema_paths_long(world_file, small_machine, params):
    """The same with up to three parameters at once, at a larger budget."""
    _run(world_file, [f"{path}={value}" for path, value in params])


def test_values_are_finite_or_refused():
    """The value texts the fuzz relies on parse as intended (a check of the fuzz itself)."""
    from fleetchaos.scenario.params import parse_value

    assert parse_value("5e-324") == 5e-324 and math.isinf(parse_value("1e400"))
    assert isinstance(parse_value("1" + "0" * 5000), str)
