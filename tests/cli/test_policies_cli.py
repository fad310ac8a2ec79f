"""`fleetchaos policies list|show` as a user meets them: tables, JSON, entry points, and one-line errors with exit 2.

An installed package is simulated with a ``*.dist-info`` folder on ``sys.path`` (what pip
writes), so the entry point is discovered as it would be after ``pip install``.
"""

from __future__ import annotations

import importlib
import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.policies import ENTRY_POINT_GROUP, POLICIES

POLICY_MODULE = '''
from dataclasses import dataclass

from fleetchaos.sim.observation import Escalate


@dataclass(frozen=True)
class Careful:
    """Escalate every failure, behind a final-answer guardrail."""

    reason: str = "careful"
    guardrail: bool = True
    name: str = "careful"

    def decide(self, observation, history):
        return Escalate(self.reason)
'''


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Invoke the CLI in a temporary working directory holding a local policy module and a fake installed package."""
    site = tmp_path / "site"
    site.mkdir()
    (tmp_path / "fc_cli_local_policies.py").write_text(textwrap.dedent(POLICY_MODULE))
    (site / "fc_cli_ep_policies.py").write_text(textwrap.dedent(POLICY_MODULE))
    info = site / "fc_cli_demo-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fc_cli_demo\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ncareful = fc_cli_ep_policies:Careful\nbroken = fc_cli_no_such_module:Policy\n"
    )
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])  # restored afterwards, with what the CLI appends
    monkeypatch.chdir(tmp_path)
    importlib.invalidate_caches()
    yield lambda *args: CliRunner().invoke(main, list(args), catch_exceptions=False)
    for name in ("fc_cli_ep_policies", "fc_cli_local_policies"):
        sys.modules.pop(name, None)


def test_list_shows_built_ins_and_entry_points(cli):
    """The table names every built-in and every entry point (marked as such); a broken one is listed, with a warning."""
    result = cli("policies", "list")
    assert result.exit_code == 0, result.output
    for name in POLICIES:
        assert name in result.stdout
    assert "careful" in result.stdout and "entry point:" in result.stdout
    assert "Escalate every failure" in result.stdout  # the start of its description (cells wrap)
    assert "cannot load" in result.stdout
    assert "warning: 1 entry point(s) cannot be loaded: broken" in result.stderr
    assert "Traceback" not in result.output


def test_list_json(cli):
    """list --json: one document, built-ins first, then entry points with their source, parameters or error."""
    result = cli("policies", "list", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert [d["name"] for d in doc] == [*POLICIES, "broken", "careful"]
    careful = doc[-1]
    assert (
        careful["source"] == "entry point" and careful["origin"] == "fc_cli_ep_policies:Careful (package fc_cli_demo)"
    )
    assert careful["parameters"] == {"reason": "careful", "guardrail": True} and careful["error"] is None
    assert "ModuleNotFoundError" in doc[-2]["error"]
    assert all(d["source"] == "built-in" and d["description"] for d in doc[: len(POLICIES)])


def test_show_built_in(cli):
    """show NAME: source, description, details, every parameter with its value."""
    result = cli("policies", "show", "structured")
    assert result.exit_code == 0
    out = result.stdout
    assert "source:      built-in (fleetchaos.policies.builtins:StructuredDecisionTree)" in out
    assert "description: The category decision tree of a structured error contract." in out
    assert "* auth: refresh the worker's credentials" in out
    for line in ("max_retries     = 5", "max_same        = 3", "cap_s           = 120.0"):
        assert line in out
    assert "driver attributes: none" in out


def test_show_entry_point_with_driver_attributes(cli):
    """An entry point's show names its package and the driver attributes it sets, with what they do."""
    result = cli("policies", "show", "careful")
    assert result.exit_code == 0
    assert "source:      entry point (fc_cli_ep_policies:Careful (package fc_cli_demo))" in result.stdout
    assert "  guardrail = True: a final-answer guardrail blocks a success claim" in result.stdout


def test_show_local_import_path_and_recipe(cli):
    """An import path to a module in the working directory works as in compare; a blocks Policy shows its recipe."""
    local = cli("policies", "show", "fc_cli_local_policies:Careful", "--json")
    assert local.exit_code == 0, local.output
    assert json.loads(local.stdout)["source"] == "import path"
    recipe = cli("policies", "show", "fleetchaos.policies.blocks:Policy")
    assert "recipe:      Policy(name='composed', retry=retry_always()" in recipe.stdout


@pytest.mark.parametrize(
    "name, fragments",
    [
        ("structurd", ["unknown policy 'structurd'", "did you mean 'structured'?"]),
        (
            "carefull",
            ["unknown policy 'carefull'", "an installed entry point (broken, careful)", "did you mean 'careful'?"],
        ),
        (
            "broken",
            [
                "policy 'broken' (entry point broken = 'fc_cli_no_such_module:Policy' of package fc_cli_demo)",
                "cannot load it (ModuleNotFoundError",
                f'[project.entry-points."{ENTRY_POINT_GROUP}"]',
            ],
        ),
        ("fc_cli_no_such_mod:P", ["cannot import 'fc_cli_no_such_mod'"]),
    ],
)
def test_show_errors_are_one_line_and_exit_2(cli, name, fragments):
    """A name that does not resolve: one message (with a close match for typos), exit 2, no traceback."""
    result = cli("policies", "show", name)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: policies show: "), result.stderr
    text = " ".join(result.stderr.split())
    for fragment in fragments:
        assert fragment in text
    assert "Traceback" not in result.output


def test_broken_entry_point_in_compare_is_exit_2(cli):
    """compare with a broken entry point stops before any run with the same one-line message."""
    result = cli("compare", "--policies", "structured,broken", "--seeds", "1", "--jobs", "1", "--no-history")
    assert result.exit_code == 2
    assert "cannot load it (ModuleNotFoundError" in " ".join(result.stderr.split())
    assert "Traceback" not in result.output
