"""Error formats as plug-ins: built-ins found in their modules, entry points of installed packages, import paths.

Installed packages are simulated with ``*.dist-info`` folders on ``sys.path`` (what pip writes),
so ``importlib.metadata`` discovers their entry points exactly as it would after an install.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import fake_site
import pytest

from fleetchaos.sim.formats import ErrorFormat, FormatLookupError, format_names, get_format
from fleetchaos.sim.formats.generic import GenericFormat
from fleetchaos.sim.formats.registry import ENTRY_POINT_GROUP, builtin_formats, format_entry_points
from fleetchaos.sim.truth import AttemptReport

FORMAT_MODULE = '''
from fleetchaos.sim.observation import Observation


class Problem:
    """RFC 9457-style problem details: a status and a title, nothing to resume from."""

    name = "problem"
    partial_batch = "failed"
    misread_setting = None
    misread_factor = 0.5
    failure_flag = True

    def render(self, report):
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        return Observation(ok=False, status="failed", worker=report.worker, text=f"problem: {report.failure}")


class NeedsArgs(Problem):
    def __init__(self, x):
        self.x = x


class NoRender:
    name = "no-render"
    partial_batch = "yes"
    partial_step_ok = True
    misread_setting = "xml"
    misread_factor = -1.0
    failure_flag = False


INSTANCE = Problem()
'''

#: The built-in formats: one family per public module of fleetchaos.sim.formats.
BUILT_IN = {
    "ablation:failure_type", "ablation:+partial_results", "ablation:+alternatives", "ablation:+retry_recommended",
    "failure-type", "generic", "status", "raw", "structured", "agent-tool-error", "subagent-result", "empty-success",
    "fabricated-defaults", "tool-envelope", "agent-sdk-default", "langgraph-toolnode", "mcp", "mcp-structured",
    "jsonrpc", "problem-details", "google-rpc",
}  # fmt: skip


def install(site: Path, dist: str, entries: dict[str, str], modules: dict[str, str] | None = None) -> None:
    """Write what installing package ``dist`` would, registering ``entries`` in this registry's group."""
    fake_site.install(site, dist, ENTRY_POINT_GROUP, entries, modules)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A fresh site folder on sys.path; modules it adds are forgotten afterwards."""
    yield from fake_site.site_folder(tmp_path, monkeypatch, "fc_fmt_")


@pytest.fixture
def installed(site):
    """One package, fc-formats, registering a good format, broken ones, and one a built-in shadows."""
    install(
        site,
        "fc_formats",
        {
            "problem": "fc_fmt_problem:Problem",
            "problem-instance": "fc_fmt_problem:INSTANCE",
            "missing-module": "fc_fmt_no_such_module:Problem",
            "missing-attr": "fc_fmt_problem:Nope",
            "needs-args": "fc_fmt_problem:NeedsArgs",
            "no-render": "fc_fmt_problem:NoRender",
            "generic": "fc_fmt_problem:Problem",
        },
        {"fc_fmt_problem": FORMAT_MODULE},
    )
    return site


def _failed() -> AttemptReport:
    return AttemptReport(task_id=7, worker=1, start_step=0, failed_step=0, step_names=("fetch",), failure="disk_full")


def test_the_built_ins_are_the_formats_their_modules_define():
    """Every public module of fleetchaos.sim.formats contributes its formats, each under its own name, each an ErrorFormat."""
    assert set(builtin_formats()) == BUILT_IN
    for name, cls in builtin_formats().items():
        assert cls.name == name and cls.__module__.startswith("fleetchaos.sim.formats.")
        assert isinstance(get_format(name), ErrorFormat)
    assert builtin_formats()["generic"] is GenericFormat


def test_a_new_built_in_format_is_one_module(tmp_path, monkeypatch):
    """A module dropped into fleetchaos.sim.formats is a built-in format by its name: no table to edit."""
    import fleetchaos.sim.formats as package
    from fleetchaos.sim.formats import registry

    folder = tmp_path / "more_formats"
    folder.mkdir()
    problem = FORMAT_MODULE.split("\n\nclass NeedsArgs", 1)[0]  # the one good format of the module
    (folder / "problem_line.py").write_text(textwrap.dedent(problem))
    (folder / "_helpers.py").write_text("class NotAFormat:\n    name = 'helper'\n\n    def render(self, report): ...\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    registry.builtin_formats.cache_clear()
    try:
        assert set(registry.builtin_formats()) == BUILT_IN | {"problem"}  # a module named _helpers holds no format
        assert get_format("problem").render(_failed()).text == "problem: disk_full"
    finally:
        registry.builtin_formats.cache_clear()
        sys.modules.pop("fleetchaos.sim.formats.problem_details", None)


def test_a_format_loads_from_an_import_path(site):
    """pkg.module:Name gives a fresh instance of the class (or a copy of the instance) it names."""
    (site / "fc_fmt_local.py").write_text(textwrap.dedent(FORMAT_MODULE))
    a, b = get_format("fc_fmt_local:Problem"), get_format("fc_fmt_local:Problem")
    assert type(a).__name__ == "Problem" and a is not b
    assert a.render(_failed()).text == "problem: disk_full"
    one, two = get_format("fc_fmt_local:INSTANCE"), get_format("fc_fmt_local:INSTANCE")
    assert one is not two and type(one) is type(a)


def test_a_format_loads_from_an_entry_point_of_an_installed_package(installed):
    """A name registered in the fleetchaos.formats group is found without importing it, and loads on request."""
    assert "fc_fmt_problem" not in sys.modules
    assert set(format_entry_points()) >= {"problem", "problem-instance", "generic"}
    assert "fc_fmt_problem" not in sys.modules  # only the metadata was read
    fmt = get_format("problem")
    assert type(fmt).__module__ == "fc_fmt_problem" and fmt.render(_failed()).text == "problem: disk_full"
    assert type(get_format("problem-instance")).__name__ == "Problem"
    assert "problem" in format_names() and format_names().count("generic") == 1


def test_built_in_names_win_over_entry_points(installed):
    """An installed package cannot replace a built-in format by registering its name."""
    assert type(get_format("generic")) is GenericFormat


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("missing-module", ["cannot load it", "fc_fmt_no_such_module", "fc_formats", "pyproject.toml"]),
        ("missing-attr", ["cannot load it", "Nope", "fc_formats"]),
        ("needs-args", ["NeedsArgs() failed", "must build with no arguments"]),
        ("no-render", ["not an error format", "a partial_batch of None or one of failed, ok, count (got 'yes')",
                       "partial_batch instead of partial_step_ok", "misread_factor >= 0",
                       "misread_setting of None or one of generic", "'xml'", "render(report)"]),
    ],
)  # fmt: skip
def test_a_broken_entry_point_is_one_clear_lookup_error(installed, name, fragments):
    """Each way an entry point can be broken gives one message naming the format, the package and the fix."""
    with pytest.raises(FormatLookupError) as caught:
        get_format(name)
    message = str(caught.value)
    assert f"error format {name!r}" in message
    for fragment in fragments:
        assert fragment in message


def test_a_name_two_packages_register_is_refused(site):
    """Picking one of two registrations would make results depend on installation order."""
    install(site, "fc_one", {"twice": "fc_fmt_a:Problem"}, {"fc_fmt_a": FORMAT_MODULE})
    install(site, "fc_two", {"twice": "fc_fmt_b:Problem"}, {"fc_fmt_b": FORMAT_MODULE})
    with pytest.raises(FormatLookupError, match="several installed packages: fc_one .*fc_two"):
        get_format("twice")


def test_an_unknown_name_lists_the_built_ins_and_suggests(installed):
    """A typo names the built-ins, the installed entry points and the import-path form, and suggests the nearest."""
    with pytest.raises(FormatLookupError) as caught:
        get_format("structurd")
    message = str(caught.value)
    assert "'structurd'" in message and "generic" in message and "problem" in message
    assert "mypkg.formats:MyFormat" in message and "did you mean 'structured'?" in message


def test_an_import_path_that_is_not_a_format_says_what_it_lacks(site):
    """An import path to something else names each missing attribute."""
    with pytest.raises(FormatLookupError, match="error format 'fleetchaos.sim.formats.registry:ENTRY_POINT_GROUP'"):
        get_format("fleetchaos.sim.formats.registry:ENTRY_POINT_GROUP")


def test_importing_the_formats_loads_no_simpy():
    """The registry, the built-in formats and an import-path format load without SimPy."""
    code = "import sys; from fleetchaos.sim.formats import format_names; format_names(); print('simpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_a_scenario_naming_built_ins_is_checked_without_reading_the_entry_points(installed, monkeypatch):
    """A scenario names formats and policies in its tuned policies, references and gate arms: built-in names are
    checked without reading any package's metadata (once per name, it was most of a scenario's load time); a
    format only an installed package registers is still known, and an unknown one is still refused."""
    import importlib.metadata

    import yaml

    import fleetchaos.catalogue as catalogue
    from fleetchaos.errors import ScenarioError
    from fleetchaos.scenario.load import parse_scenario

    reads: list[str] = []
    read = importlib.metadata.entry_points

    def counted(**kw):
        reads.append(kw.get("group", ""))
        return read(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", counted)
    doc = yaml.safe_load(catalogue.path("default").read_text())
    assert doc["tuned"]["policies"] and doc["tuned"]["references"]
    doc["expect"] = [{"metric": "success_rate", "at_least": 0.5, "arm": "structured/structured"}]
    assert parse_scenario(yaml.safe_dump(doc), "built-ins.yaml").expect[0].arm == "structured/structured"
    assert reads == []
    doc["expect"][0]["arm"] = "structured/problem"  # registered by the installed package only
    assert parse_scenario(yaml.safe_dump(doc), "plug-in.yaml").expect[0].arm == "structured/problem"
    assert reads == [ENTRY_POINT_GROUP]
    doc["expect"][0]["arm"] = "structured/problme"
    with pytest.raises(ScenarioError, match=r"unknown error format 'problme' in arm \(known: .*generic.*problem"):
        parse_scenario(yaml.safe_dump(doc), "typo.yaml")
