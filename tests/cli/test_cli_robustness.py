"""Bad command lines never give a traceback: a hypothesis fuzzer over every command, broken policy import paths, size refusal, determinism check and secret-free output."""

from __future__ import annotations

import sys

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from long_worlds import catalogue_params, examples

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main
from fleetchaos.sim.sanitise import PlantedSecrets

OK_CODES = {0, 1, 2}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A working directory with a tiny scenario (about 20 tasks), a plain file and broken JSON/YAML files."""
    root = tmp_path_factory.mktemp("fuzz")
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"] = "tiny"
    doc["workload"]["tasks_per_day"] = 20
    (root / "tiny.yaml").write_text(yaml.safe_dump(doc))
    (root / "afile.txt").write_text("not a folder\n")
    (root / "bad.json").write_text('{"arms": [1, 2')
    (root / "empty.json").write_text("")
    (root / "list.json").write_text("[1, 2, 3]")
    (root / "bad.yaml").write_text("a: [1, 2\n")
    (root / "alias.yaml").write_text("a: &a [1, 2]\nb: [*a, *a, *a]\n")
    return root


def _invoke(workdir, monkeypatch, args: list[str]):
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("FLEETCHAOS_HISTORY", str(workdir / "history.db"))
    monkeypatch.delenv("FLEETCHAOS_DEBUG", raising=False)
    return CliRunner().invoke(main, args, catch_exceptions=True)


def _assert_clean(result, args) -> None:
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in text, (args, text)
    assert result.exit_code in OK_CODES, (args, result.exit_code, text, result.exception)
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), (args, repr(result.exception))


# ---- the fuzzer -----------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
_number = st.one_of(
    st.integers(-(2**65), 2**65).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["0", "1", "-1", "2", "1e309", "nan", "0x10", "", " ", "1,2", "true"]),
)
_path = st.sampled_from(["tiny.yaml", "afile.txt", "bad.json", "empty.json", "list.json", "bad.yaml", "alias.yaml",
                         "missing.yaml", ".", "/", "", "no/such/dir/x.db", "afile.txt/x"])  # fmt: skip
_policy = st.sampled_from(["backoff", "structured", "blind-retyr", "os:path", "no_such_mod:P", ":", "a:", ":b",
                           "fleetchaos.policies.registry:POLICIES", "fleetchaos.runs.runner:RunJob", "fleetchaos.policies.builtins:Backoff"])  # fmt: skip
_bad_dir = st.sampled_from(["afile.txt", "afile.txt/sub", "/proc/fc/report"])
_format = st.sampled_from(["generic", "structured", "raw", "genric", "ablation:nope", "ablation:", ""])
_param = st.one_of(
    _text.map(lambda t: f"{t}=1"),
    _text,
    st.tuples(
        st.sampled_from(
            [
                "fleet.workers",
                "faults[0].probability",
                "faults[9].probability",
                "workload.tasks_per_day",
                "fleet.nope",
                "faults[-1].kind",
                "name",
                "seeds",
            ]
        ),
        st.one_of(_number, _text, st.integers(0, 40).map(str)),
    ).map(lambda pv: f"{pv[0]}={pv[1]}"),
)
_value = st.one_of(_number, _text, _path)

OPTIONS = {
    "run": {
        "--scenario": _path,
        "--param": _param,
        "--policy": _policy,
        "--errors": _format,
        "--seed": _number,
        "--json": None,
        "--report": _bad_dir,
        "--label": _text,
        "--baseline": _text,
        "--fail-on": _text,
        "--history": _path,
        "--check-determinism": None,
    },
    "compare": {
        "--scenario": _path,
        "--seeds": st.sampled_from(["0", "1", "-3", "x", "10001"]),
        "--first-seed": _number,
        "--policies": st.lists(_policy, max_size=3).map(",".join),
        "--errors": st.lists(_format, max_size=3).map(",".join),
        "--jobs": st.sampled_from(["0", "1", "513", "x"]),
        "--confidence": _number,
        "--json": None,
        "--report": _bad_dir,
        "--label": _text,
        "--baseline": _text,
        "--fail-on": _text,
        "--history": _path,
        "--check-determinism": None,
    },
    "sweep": {
        "--file": _path,
        "--scenario": st.one_of(_path, _text),
        "--param": _param,
        "--seeds": st.sampled_from(["0", "1", "-3", "x"]),
        "--first-seed": _number,
        "--policies": st.lists(_policy, max_size=2).map(",".join),
        "--errors": st.lists(_format, max_size=2).map(",".join),
        "--metric": _text,
        "--x": _text,
        "--jobs": st.sampled_from(["0", "1", "x"]),
        "--confidence": _number,
        "--json": None,
        "--report": _bad_dir,
        "--history": _path,
        "--resume": None,
    },
    "ablation": {
        "--scenario": _path,
        "--seeds": st.sampled_from(["0", "1", "x"]),
        "--first-seed": _number,
        "--policy": _policy,
        "--jobs": st.sampled_from(["0", "1", "x"]),
        "--confidence": _number,
        "--json": None,
    },
    "report": {"-o": st.one_of(_path, _bad_dir), "--output": _path},
    "history": {"--history": _path, "--limit": _number, "--json": None},
    "schema": {"--markdown": None},
    "scenarios list": {},
    "scenarios show": {},
    "scenarios validate": {},
    "faults list": {"--json": None},
    "faults show": {},
    "policies list": {},
}
#: Appended last, so they win over fuzzed values: every run stays tiny, serial and unstored.
SAFE = {
    "run": ["--scenario", "tiny.yaml", "--no-history"],
    "compare": ["--scenario", "tiny.yaml", "--seeds", "1", "--jobs", "1", "--no-history"],
    "sweep": ["--scenario", "tiny.yaml", "--seeds", "1", "--jobs", "1", "--no-history"],
    "ablation": ["--scenario", "tiny.yaml", "--seeds", "1", "--jobs", "1"],
}
POSITIONAL = {
    "report": _path,
    "history": _text,
    "schema": st.sampled_from(["scenario", "envelope", "x", ""]),
    "scenarios show": st.one_of(_text, st.sampled_from(["default", "defualt"])),
    "scenarios validate": _path,
    "faults show": st.one_of(_text, st.sampled_from(["rate_limit", "ratelimit"])),
}


@st.composite
def command_lines(draw) -> list[str]:
    """A command, a few of its options with random values, unknown options and stray words, then SAFE."""
    command = draw(st.sampled_from(sorted(OPTIONS)))
    args = command.split()
    known = OPTIONS[command]
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 9))
        if kind <= 6 and known:
            name = draw(st.sampled_from(sorted(known)))
            args.append(name)
            if known[name] is not None:
                args.append(draw(known[name]))
        elif kind == 7:
            args.append("--" + draw(_text))
        elif kind == 8:
            args.append(draw(_value))
        elif command in POSITIONAL:
            args.append(draw(POSITIONAL[command]))
    if command in POSITIONAL and draw(st.booleans()):
        args.append(draw(POSITIONAL[command]))
    return args + SAFE.get(command, [])


@settings(max_examples=examples(100, 300), deadline=None, suppress_health_check=list(HealthCheck))
@given(args=command_lines())
def test_fuzz_command_lines_never_give_a_traceback(workdir, monkeypatch, args):
    """Random options and values for every command: exit 0, 1 or 2, never a traceback or an internal error (3)."""
    _assert_clean(_invoke(workdir, monkeypatch, args), args)


# ---- --jobs / --seeds / --seed values (the fuzzer's are overridden by SAFE) ----------------------

HUGE = str(10**30)
#: compare, sweep and ablation take ``--jobs`` in 1..512 and ``--seeds`` in 1..10000.
BAD_COUNTS = [(option, value) for option, values in (("--jobs", ["0", "-1", "x", "513", HUGE]),
                                                     ("--seeds", ["0", "-3", "x", "10001"])) for value in values]  # fmt: skip


def _safe_without(command: str, option: str) -> list[str]:
    """SAFE[command] less ``option`` and its value, so the value under test is the only one given."""
    safe, out = SAFE[command], []
    i = 0
    while i < len(safe):
        if safe[i] == option:
            i += 2
            continue
        out.append(safe[i])
        i += 1
    return out


def _assert_one_usage_error(result, args, *needles: str) -> None:
    """Exit 2, no traceback, nothing run or printed, exactly one error line naming the problem.

    ``needles`` are what click's own message says; the option name alone is required of
    any other single ``error:`` line (a later check such as the executor's may word it its way).
    """
    _assert_clean(result, args)
    assert result.exit_code == 2, (args, result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), (args, repr(result.exception))
    errors = [line for line in result.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1, (args, result.stderr)
    [error] = errors
    if error.startswith("Error:"):  # click's usage error
        for needle in needles:
            assert needle in error, (args, error)
    else:
        assert needles[0].split("'")[1] in error, (args, error)  # the option's name
        assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1, (args, result.stderr)
    assert result.stdout == "", (args, result.stdout)  # nothing ran, nothing was printed


@pytest.mark.parametrize("option, value", BAD_COUNTS)
@pytest.mark.parametrize("command", ["compare", "sweep", "ablation"])
def test_invalid_jobs_or_seeds_is_one_usage_error(workdir, monkeypatch, command, option, value):
    """--jobs 0/-1/x/513/10**30 and --seeds 0/-3/x/10001: exit 2, one 'Invalid value' message, never a traceback."""
    args = [command, *_safe_without(command, option), option, value]
    result = _invoke(workdir, monkeypatch, args)
    _assert_one_usage_error(result, args, f"Invalid value for '{option}'", value)


@pytest.mark.parametrize("option, value", [("--jobs", "0"), ("--jobs", "x"), ("--seeds", "-3"), ("--seeds", "x")])
def test_run_has_no_jobs_or_seeds_option(workdir, monkeypatch, option, value):
    """run takes one --seed and runs in this process: --jobs and --seeds are unknown options (exit 2, one message)."""
    args = ["run", *SAFE["run"], option, value]
    result = _invoke(workdir, monkeypatch, args)
    _assert_one_usage_error(result, args, f"No such option '{option}'")


@pytest.mark.parametrize("value", ["-1", "-3", "x", str(2**63), HUGE])
def test_invalid_run_seed_is_one_usage_error(workdir, monkeypatch, value):
    """run --seed outside 0..2**63-1 or not a number: exit 2, one 'Invalid value' message (0 is a valid seed)."""
    args = ["run", *SAFE["run"], "--seed", value]
    result = _invoke(workdir, monkeypatch, args)
    _assert_one_usage_error(result, args, "Invalid value for '--seed'", value)


# ---- policy import paths ----------------------------------------------------------------------

BROKEN_MODULES = {
    "fc_raises_on_import": "raise RuntimeError('cannot start: no config')\n",
    "fc_exits_on_import": "import sys\nsys.exit(3)\n",
    "fc_syntax_error": "def broken(:\n",
    "fc_not_policies": (
        "VALUE = 3\n"
        "class NeedsArgs:\n    def __init__(self, a, b):\n        pass\n    def decide(self, o, h):\n        return None\n"
        "class InitRaises:\n    def __init__(self):\n        raise ValueError('bad init')\n"
        "class NoDecide:\n    pass\n"
    ),
}


@pytest.mark.parametrize(
    "policy, message",
    [
        ("fc_no_such_module_anywhere:Policy", "cannot import 'fc_no_such_module_anywhere'"),
        ("fc_raises_on_import:Policy", "cannot import 'fc_raises_on_import' (RuntimeError: cannot start: no config)"),
        ("fc_exits_on_import:Policy", "cannot import 'fc_exits_on_import' (SystemExit: 3)"),
        ("fc_syntax_error:Policy", "cannot import 'fc_syntax_error' (SyntaxError"),
        ("fc_not_policies:Missing", "module 'fc_not_policies' has no attribute 'Missing'"),
        ("fc_not_policies:VALUE", "VALUE has no decide(observation, history) method"),
        ("fc_not_policies:NoDecide", "NoDecide has no decide(observation, history) method"),
        ("fc_not_policies:NeedsArgs", "NeedsArgs() failed (TypeError"),
        ("fc_not_policies:InitRaises", "InitRaises() failed (ValueError: bad init)"),
        ("fc_not_policies:", "module 'fc_not_policies' has no attribute ''"),
        (":Policy", "cannot import ''"),
    ],
)
@pytest.mark.parametrize("command", ["run", "compare", "ablation"])
def test_broken_policy_import_path_is_one_message_and_exit_2(workdir, monkeypatch, tmp_path, command, policy, message):
    """A policy path whose module is missing, raises or exits on import, or names a non-policy: exit 2, one error line."""
    for name, source in BROKEN_MODULES.items():
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in BROKEN_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    option = {"run": "--policy", "compare": "--policies", "ablation": "--policy"}[command]
    result = _invoke(workdir, monkeypatch, [command, option, policy, *SAFE[command]])
    assert result.exit_code == 2, (result.output, result.exception)
    assert "Traceback" not in result.output
    assert message in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --polic"), result.stderr


@pytest.mark.parametrize("command", ["run", "compare", "sweep", "ablation", "report"])
def test_a_report_folder_that_cannot_be_created_is_exit_2_before_any_run(workdir, monkeypatch, command):
    """--report (or report -o) under a file or in /proc: exit 2 naming the folder (was an internal error after the run)."""
    args = (
        ["report", "bad.json", "-o", "afile.txt/sub"]
        if command == "report"
        else [command, *SAFE[command], "--report", "afile.txt/sub"]
    )
    result = _invoke(workdir, monkeypatch, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert "afile.txt/sub: cannot create the report folder" in result.stderr, result.stderr


# ---- size refusal, determinism check, secrets --------------------------------------------------


BIG = ["--param", "workload.tasks_per_day=1000000", "--param", "duration_s=864000"]


@pytest.mark.parametrize(
    "args",
    [
        ["run", *SAFE["run"], *BIG],
        ["sweep", *SAFE["sweep"], *BIG],
        ["compare", *SAFE["compare"], "--scenario", "huge.yaml"],
        ["ablation", *SAFE["ablation"], "--scenario", "huge.yaml"],
        ["scenarios", "validate", "huge.yaml"],
    ],
    ids=["run", "sweep", "compare", "ablation", "validate"],
)
def test_a_run_too_big_for_the_machine_is_refused_before_it_starts(workdir, monkeypatch, args):
    """10M tasks (~15 GB of task records) exits 2, saying it exceeds one machine, before any run starts
    (no world is built: the refusal comes from the size estimate, whatever the machine's load)."""
    from fleetchaos.sim import world

    def no_world(*_args, **_kwargs):
        raise AssertionError("a run started before the size check refused it")

    doc = yaml.safe_load((workdir / "tiny.yaml").read_text())
    doc["workload"]["tasks_per_day"], doc["duration_s"] = 1_000_000, 864_000
    (workdir / "huge.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(world.World, "__init__", no_world)
    result = _invoke(workdir, monkeypatch, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert "about 10,000,000 tasks" in result.stderr and "is more than one machine can simulate" in result.stderr
    assert "the limit is 5,000,000 tasks per run" in result.stderr, result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("name", catalogue_params())  # the long worlds (tests/long_worlds.py) in `make test-all`
def test_check_determinism_passes_on_every_catalogue_scenario(monkeypatch, workdir, name):
    """run --check-determinism: each catalogue scenario's seed 1 runs twice with identical event-log hashes (exit 0)."""
    args = ["run", "--scenario", name, "--check-determinism", "--no-history", "--no-expect"]  # gates need their arms
    result = _invoke(workdir, monkeypatch, args)
    assert result.exit_code == 0, result.output
    assert "determinism check passed: 1 runs" in result.stderr


def test_check_determinism_on_compare_checks_every_arm_and_stores_nothing(workdir, monkeypatch):
    """compare --check-determinism: every arm and seed run twice, exit 0, no history written."""
    args = ["compare", "--scenario", "tiny.yaml", "--seeds", "2", "--jobs", "1", "--policies", "backoff,raw-parse",
            "--errors", "generic,raw", "--check-determinism", "--history", "det.db"]  # fmt: skip
    result = _invoke(workdir, monkeypatch, args)
    assert result.exit_code == 0, result.output
    assert "determinism check passed: 8 runs" in result.stderr
    assert not (workdir / "det.db").exists()


def test_check_determinism_names_the_arm_and_seed_that_differ(workdir, monkeypatch, tmp_path):
    """A policy with state that outlives a run: exit 1, naming policy, errors and seed, and the replay command."""
    (tmp_path / "fc_drifting.py").write_text(
        "from fleetchaos.sim.observation import Retry\n"
        "STATE = [0]\n"
        "class Drifting:\n    name = 'drifting'\n"
        "    def decide(self, observation, history):\n"
        "        STATE[0] += 1\n        return Retry(delay_s=float(STATE[0] % 7))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["compare", "--scenario", "tiny.yaml", "--seeds", "1", "--first-seed", "5", "--jobs", "1",
            "--policies", "backoff,fc_drifting:Drifting", "--errors", "generic", "--check-determinism"]  # fmt: skip
    result = _invoke(workdir, monkeypatch, args)
    assert result.exit_code == 1, (result.output, result.exception)
    assert "not deterministic: policy 'fc_drifting:Drifting', errors 'generic', seed 5" in result.stderr
    assert "'backoff'" not in result.stderr
    assert "determinism check failed: 1 of 2 runs differ" in result.stderr
    replay = "fleetchaos run --scenario tiny.yaml --policy fc_drifting:Drifting --errors generic --seed 5 --check-determinism"
    assert replay in " ".join(result.stderr.split()), result.stderr


def test_sweep_check_determinism_checks_every_grid_point(workdir, monkeypatch, tmp_path):
    """sweep --check-determinism: exit 0 over a grid of built-in arms; exit 1 naming the swept --param of a drifting arm."""
    (tmp_path / "fc_drifting2.py").write_text(
        "from fleetchaos.sim.observation import Retry\n"
        "STATE = [0]\n"
        "class Drifting:\n    name = 'drifting'\n"
        "    def decide(self, observation, history):\n"
        "        STATE[0] += 1\n        return Retry(delay_s=float(STATE[0] % 7))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    base = ["sweep", "--scenario", "tiny.yaml", "--param", "fleet.workers=4,6", "--seeds", "1", "--errors", "generic",
            "--jobs", "1", "--check-determinism"]  # fmt: skip
    ok = _invoke(workdir, monkeypatch, [*base, "--policies", "backoff,structured"])
    assert ok.exit_code == 0 and "determinism check passed: 4 runs" in ok.stderr, ok.output
    bad = _invoke(workdir, monkeypatch, [*base, "--policies", "fc_drifting2:Drifting"])
    assert bad.exit_code == 1, bad.output
    assert "--param fleet.workers=4 --policy fc_drifting2:Drifting" in " ".join(bad.stderr.split()), bad.stderr


def test_no_planted_secret_in_cli_output_or_error_messages(workdir, monkeypatch):
    """stdout and stderr of runs that leak secrets to the orchestrator (raw format), and of error paths, hold no planted secret."""
    secrets = set()
    invocations = [
        ["run", "--scenario", "field_ablation", "--policy", "raw-parse", "--errors", "raw", "--seed", "1", "--json", "--no-history"],
        ["run", "--scenario", "field_ablation", "--policy", "raw-parse", "--errors", "raw", "--seed", "2", "--no-history"],
        ["compare", "--scenario", "field_ablation", "--seeds", "1", "--jobs", "1", "--policies", "raw-parse,blind-retry",
         "--errors", "raw,generic", "--json", "--no-history"],
        ["compare", "--scenario", "field_ablation", "--seeds", "1", "--jobs", "1", "--policies", "raw-parse",
         "--errors", "raw", "--no-history"],
        ["run", "--scenario", "field_ablation", "--policy", "raw-parse", "--errors", "raw", "--check-determinism"],
        ["run", "--scenario", "field_ablation", "--policy", "raw-parse", "--errors", "raw", "--param", "fleet.workers=-1"],
        ["run", "--scenario", "field_ablation", "--policy", "raw-parse", "--errors", "rawx"],
        ["compare", "--scenario", "field_ablation", "--policies", "no_such_mod:X", "--errors", "raw"],
    ]  # fmt: skip
    seen = []
    for args in invocations:
        result = _invoke(workdir, monkeypatch, args)
        _assert_clean(result, args)
        seen.append(result.output + result.stderr)
    for seed in (1, 2):
        secrets.update(PlantedSecrets.for_run(seed).all())
    text = "\n".join(seen)
    assert '"secrets_leaked"' in text, "the raw arm ran and reported its leak count"
    leaked = sorted(s for s in secrets if s in text)
    assert not leaked, leaked
