"""Issue 17's fuzz suite: scenario leaves, command-line options, results files and history rows, each fuzzed by
hypothesis (bounded: a few seconds per target) -- no exit 3 and no traceback for any user input."""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.gates.history import open_store

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
_markup = st.sampled_from(["[/]", "[bold]x[/bold", "<script>", "=1+1", "$\\frac{$", "\n\r\t", "'\"\\", "javascript:x"])
_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e300, 1e-300, 2**63, 2**64 + 1, 10**30]),
    _text,
    _markup,
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "mean_s", "kind"]), st.integers(0, 3), max_size=2),
)


def _invoke(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLEETCHAOS_HISTORY", str(tmp_path / "history.db"))
    monkeypatch.delenv("FLEETCHAOS_DEBUG", raising=False)
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)


def _assert_clean(result, args) -> None:
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in text, (args, text)
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, text[-2000:], repr(result.exception))
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), (args, repr(result.exception))


@pytest.fixture(scope="module")
def small_doc():
    """A small scenario document (about 10 tasks in 6 hours), quick to run whatever a leaf is set to."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["duration_s"] = "fuzz", 21600
    doc["workload"]["tasks_per_day"] = 40
    return doc


def _leaves(doc, path=()):
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _leaves(value, (*path, i))
    yield path


@FUZZ
@given(data=st.data())
def test_fuzz_scenario_leaves_run_or_refuse(tmp_path_factory, small_doc, data, monkeypatch_module):
    """Any leaf of a scenario set to any value: `run` exits 0 or 2, never 3 and never a traceback."""
    tmp_path = tmp_path_factory.mktemp("leaf")
    doc = copy.deepcopy(small_doc)
    paths = [p for p in _leaves(doc) if p]
    path = data.draw(st.sampled_from(paths))
    value = data.draw(_value)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    args = ["run", "--scenario", "s.yaml", "--no-history", "--time-limit", "60"]
    _assert_clean(_invoke(tmp_path, monkeypatch_module, args), (path, value))


_OPTIONS = {
    "run": ["--seed", "--param", "--policy", "--errors", "--report", "--label", "--baseline", "--fail-on",
            "--time-limit", "--history"],
    "compare": ["--seeds", "--first-seed", "--policies", "--errors", "--jobs", "--scheduler", "--confidence",
                "--report", "--label", "--baseline", "--fail-on", "--time-limit"],
    "report": ["-o"],
    "history": ["--history", "--limit"],
    "shrink": ["--property", "--task-silent", "-o", "--max-trials", "--seed"],
}  # fmt: skip
_flags = ["--fail-on-new", "--allow-policy-errors", "--allow-partial-baseline", "--json", "--no-history", "--force"]


@FUZZ
@given(data=st.data())
def test_fuzz_new_and_old_options_never_crash(tmp_path_factory, data, monkeypatch_module):
    """Random values for each command's options (the gate's permissions and --time-limit included): exit 0, 1 or 2."""
    tmp_path = tmp_path_factory.mktemp("opts")
    command = data.draw(st.sampled_from(sorted(_OPTIONS)))
    args = [command]
    if command == "report":
        args.append(data.draw(st.sampled_from(["missing.json", "", "/dev/null"])))
    for option in data.draw(st.lists(st.sampled_from(_OPTIONS[command]), max_size=3, unique=True)):
        args += [option, data.draw(st.one_of(_text, _markup, st.integers(-5, 10**20).map(str)))]
    args += data.draw(st.lists(st.sampled_from(_flags), max_size=2, unique=True))
    if command in ("run", "compare"):
        args += ["--scenario", "tiny", "--no-history"] if "--history" not in args else ["--scenario", "tiny"]
        args += ["--seeds", "1"] if command == "compare" and "--seeds" not in args else []
    tiny = yaml.safe_load(catalogue.path("default").read_text())
    tiny["name"], tiny["workload"]["tasks_per_day"], tiny["duration_s"] = "tiny", 20, 21600
    (tmp_path / "tiny").write_text(yaml.safe_dump(tiny))
    _assert_clean(_invoke(tmp_path, monkeypatch_module, args), args)


@pytest.fixture(scope="module")
def results_doc(tiny):
    """The results.json of a small two-arm comparison."""
    runner = CliRunner()
    out = runner.invoke(main, ["compare", "--seeds", "2", "--jobs", "1", "--policies", "backoff,structured",
                               "--errors", "generic", "--no-history", "--json", "--scenario", str(tiny)])  # fmt: skip
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


@pytest.mark.slow  # 12 whole reports with charts, about 25 s: make test-all runs it
@settings(FUZZ, max_examples=12)  # each valid one draws a whole report (charts): ~0.6 s
@given(data=st.data())
def test_fuzz_mutated_results_files_rebuild_or_refuse(tmp_path_factory, results_doc, data, monkeypatch_module):
    """A results.json with one leaf changed (or deleted): `report` exits 0 or 2, never 3, never a traceback."""
    tmp_path = tmp_path_factory.mktemp("res")
    doc = copy.deepcopy(results_doc)
    paths = [p for p in _leaves(doc) if p and not (len(p) > 3 and p[0] in ("timelines", "scenario_config"))]
    path = data.draw(st.sampled_from(paths))
    target = doc
    for key in path[:-1]:
        target = target[key]
    if data.draw(st.booleans()) and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = data.draw(_value)
    text = json.dumps(doc, allow_nan=True)
    (tmp_path / "results.json").write_text(text)
    result = _invoke(tmp_path, monkeypatch_module, ["report", "results.json", "-o", "rep"])
    _assert_clean(result, path)


_COLUMNS = {
    "groups": ["kind", "scenario", "label", "status", "created_at", "meta"],
    "runs": ["key", "scenario", "policy", "errors", "seed", "params", "metrics", "result", "created_at"],
}


@pytest.fixture(scope="module")
def stored_history(tmp_path_factory, tiny):
    """A history with one complete group of two runs, to corrupt one cell at a time."""
    root = tmp_path_factory.mktemp("hist")
    runner = CliRunner()
    out = runner.invoke(main, ["compare", "--seeds", "2", "--jobs", "1", "--policies", "backoff", "--errors",
                               "generic", "--history", str(root / "h.db"), "--scenario", str(tiny)])  # fmt: skip
    assert out.exit_code == 0, out.output
    return (root / "h.db").read_bytes()


@FUZZ
@given(data=st.data())
def test_fuzz_corrupt_history_rows_are_read_or_refused(tmp_path_factory, stored_history, data, monkeypatch_module):
    """One cell of a stored group or run set to any value: `history`, `history 1` and a --baseline gate exit 0-2."""
    tmp_path = tmp_path_factory.mktemp("rows")
    path = tmp_path / "h.db"
    path.write_bytes(stored_history)
    table = data.draw(st.sampled_from(sorted(_COLUMNS)))
    column = data.draw(st.sampled_from(_COLUMNS[table]))
    value = data.draw(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.floats(), _text, _markup,
                                st.sampled_from(['{"seeds": "x"}', "[]", '{"recovery_rate": "NaN"}', "{}"])))  # fmt: skip
    db = sqlite3.connect(path)
    try:
        db.execute(f"UPDATE {table} SET {column} = ?", (value,))
        db.commit()
    except sqlite3.IntegrityError:
        return  # a NOT NULL column: SQLite itself keeps that value out
    finally:
        db.close()
    for args in (["history"], ["history", "1"], ["history", "1", "--json"]):
        _assert_clean(_invoke(tmp_path, monkeypatch_module, [*args, "--history", str(path)]), (table, column, value))
    with open_store(path, create=False, readonly=True):
        pass  # still recognised: the corruption was in the data, not the schema


@pytest.fixture(scope="module")
def monkeypatch_module():
    """A monkeypatch that lasts the module (hypothesis forbids function-scoped fixtures inside @given)."""
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()
