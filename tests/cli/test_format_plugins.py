"""A format of a team's own, named by import path: checked before any run, run on every executor, reproducible.

The format is the one docs/formats.md shows ("Your own format"), written into a package of
its own in a temporary folder, as a reader would save it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"
FLEETCHAOS = str(Path(sys.executable).parent / "fleetchaos")
PATH = "fc_teamfmt.formats:StatusLine"


def documented_format() -> str:
    """The first Python block of docs/formats.md's "Your own format" section."""
    section = DOCS.read_text(encoding="utf-8").split("\n## Your own format\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


@pytest.fixture
def project(tmp_path) -> Path:
    """A working directory holding the team's package fc_teamfmt with the documented format."""
    package = tmp_path / "fc_teamfmt"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "formats.py").write_text(documented_format())
    return tmp_path


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FLEETCHAOS, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_documented_format_is_short():
    """The example a reader copies stays small: one class, under 25 lines."""
    code = documented_format()
    assert len(code.strip().splitlines()) < 25, code
    assert code.count("\nclass ") == 1


def test_compare_runs_a_format_given_by_import_path(project, small):
    """compare --errors with a module:Format path from the working directory runs it in its worker processes."""
    out = _cli(project, "compare", "--scenario", small, "--policies", "structured", "--errors", f"structured,{PATH}",
               "--seeds", "2", "--jobs", "2", "--json", "--no-history")  # fmt: skip
    assert out.returncode == 0, out.stderr
    arms = {arm["errors"]: arm for arm in json.loads(out.stdout)["arms"]}
    assert set(arms) == {"structured", PATH}
    mine, theirs = arms[PATH]["metrics"], arms["structured"]["metrics"]
    assert mine["faulted_tasks"] > 0
    # A status line is no envelope: the structured policy cannot read a category from it, so it recovers less.
    assert mine["recovery_rate"] < theirs["recovery_rate"]


SCRIPT = """
import json, sys
sys.path.append({folder!r})  # the team's package, found as the command line finds it: not through PYTHONPATH
from fleetchaos.runs.executors import LocalProcessExecutor, SerialExecutor
from fleetchaos.runs.runner import compare
from fleetchaos.scenario.load import load_scenario

pool = SerialExecutor() if {method!r} == "serial" else LocalProcessExecutor(2, method={method!r})
try:
    result = compare(load_scenario({scenario!r}), [1, 2], policies=("structured",), errors=({path!r},), executor=pool)
finally:
    pool.shutdown()
print(result.model_dump_json(exclude={{"versions"}}))
"""


def _compare_on(method: str, project: Path, scenario: str) -> str:
    code = SCRIPT.format(folder=str(project), method=method, scenario=scenario, path=PATH)
    out = subprocess.run([sys.executable, "-c", code], cwd=project.parent, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and forkserver are Linux start methods")
def test_workers_of_every_start_method_load_the_format_and_agree(project, small):
    """Forked, forkserver and spawned workers import the format by its path; every executor gives the same bytes."""
    serial = _compare_on("serial", project, small)
    for method in ("fork", "forkserver", "spawn"):
        assert _compare_on(method, project, small) == serial, method
    assert json.loads(serial)["arms"][0]["errors"] == PATH


@pytest.mark.parametrize(
    ("errors", "fragments"),
    [
        ("fc_teamfmt.formats:Nope", ["module 'fc_teamfmt.formats' has no attribute 'Nope'"]),
        ("fc_teamfmt.nowhere:StatusLine", ["cannot import 'fc_teamfmt.nowhere'"]),
        ("fc_teamfmt.formats:rendered_kind", ["not an error format", "render(report)"]),
        ("structurd", ["unknown error format 'structurd'", "did you mean 'structured'?"]),
    ],
)
def test_a_format_that_cannot_be_used_stops_compare_before_any_run(project, small, errors, fragments):
    """One line naming --errors, the format and what is wrong; exit 2; no history group, no traceback."""
    out = _cli(project, "compare", "--scenario", small, "--errors", errors, "--seeds", "2")
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: --errors: "), out.stderr
    for fragment in fragments:
        assert fragment in out.stderr
    assert not (project / "fleetchaos-out").exists()
