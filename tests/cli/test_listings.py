"""Listings as a user reads them: plain text without reST, aligned names, cut lines marked, and --json everywhere."""

from __future__ import annotations

import json

from click.testing import CliRunner

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.listings import plain_doc
from fleetchaos.cli.main import main


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_docstrings_print_as_plain_text():
    """``code``, :func:`~a.b.name` and :mod:`a.b` read as code, name and a.b; policies show prints no reST."""
    assert plain_doc("up to ``max_retries`` via :func:`~fleetchaos.sim.world.run` in :mod:`fleetchaos.sim`") == (
        "up to max_retries via run in fleetchaos.sim"
    )
    shown = _cli("policies", "show", "backoff").output
    assert "max_retries" in shown and "``" not in shown and ":func:" not in shown


def test_scenarios_list_aligns_every_name_and_marks_cut_descriptions():
    """The descriptions start in one column whatever the name's length; a cut one ends with an ellipsis."""
    lines = _cli("scenarios", "list").output.splitlines()
    names = catalogue.names()
    assert len(lines) == len(names)
    width = max(map(len, names))
    assert all(line[width : width + 2] == "  " and line[width + 2] != " " for line in lines)
    assert any(line.endswith("\u2026") for line in lines) and all(len(line) <= width + 2 + 100 for line in lines)


def test_scenarios_and_faults_speak_json():
    """scenarios list/show and faults show --json give documents a script can read."""
    listed = json.loads(_cli("scenarios", "list", "--json").output)
    assert [row["name"] for row in listed] == catalogue.names()
    assert "network_blip" in next(row for row in listed if row["name"] == "default")["faults"]
    shown = json.loads(_cli("scenarios", "show", "default", "--json").output)
    assert shown["name"] == "default" and shown["fleet"]["workers"] == 10
    kind = json.loads(_cli("faults", "show", "timeout", "--json").output)
    assert kind["kind"] == "timeout" and kind["error_code"] and kind["parameters"]
    assert "properties" in kind["json_schema"]


def test_help_says_one_value_per_param_and_one_run_for_run():
    """run and compare take one value per --param (PATH=VALUE); run's determinism check speaks of one run."""
    for command in ("run", "compare"):
        text = _cli(command, "--help").output
        assert "--param PATH=VALUE" in text and "V1,V2" not in text, command
    assert "run this policy on this seed twice" in " ".join(_cli("run", "--help").output.split())
    assert "--param PATH=V1,V2,..." in _cli("sweep", "--help").output


def test_a_groups_runs_are_listed_arm_by_arm_in_seed_order():
    """Runs stored as parallel workers finished them are shown by arm (first finished first), then by seed."""
    from types import SimpleNamespace

    from fleetchaos.cli.history import in_seed_order

    stored = [SimpleNamespace(id=i, policy=p, errors="generic", seed=s)
              for i, (p, s) in enumerate([("b", 3), ("a", 2), ("b", 1), ("a", 1), ("b", 2), ("a", 3)], 1)]  # fmt: skip
    assert [(r.policy, r.seed) for r in in_seed_order(stored)] == [
        ("b", 1), ("b", 2), ("b", 3), ("a", 1), ("a", 2), ("a", 3)
    ]  # fmt: skip
