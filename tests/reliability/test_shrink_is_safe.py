"""Issue 17 items 7, 11 and 14 (shrink): generated code holds scenario text only as literals, and shrink never
overwrites an input, an existing file (without --force) or works before it knows it can write."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest
from reliability_cli import fleetchaos

from fleetchaos.testing.shrink.properties import MetricProperty, TaskSilent
from fleetchaos.testing.shrink.writer import regression_test

HOSTILE = 'x"""\nimport os; os.system("touch PWNED")  # \\\'\'\'\r\n"""\\'


class _Event:
    at_s = 1.0

    def describe(self) -> str:
        return f"tool {HOSTILE} failed"


def _result(prop) -> SimpleNamespace:
    return SimpleNamespace(
        prop=prop, events=[_Event()], met=[], tasks=1, duration_s=10.0, workers=1, original_events=5,
        original_tasks=9, trials=3, policy=HOSTILE, errors=HOSTILE, seed=7,
        schedule_lines=lambda: [f"tool {HOSTILE} failed", "\nimport sys; sys.exit(3)"],
    )  # fmt: skip


@pytest.mark.parametrize(
    "prop",
    [TaskSilent(template=HOSTILE, arrival_s=1.5, original_id=3), MetricProperty("recovery_rate", "<", 0.7)],
    ids=["task-silent", "metric"],
)
def test_generated_test_parses_to_literals_and_runs_nothing_else(tmp_path, prop):
    """Names with newlines, triple quotes and backslashes end up as string constants: the module's top level is a
    docstring, imports, constant assignments and function definitions, and the values round-trip exactly."""
    source = regression_test(_result(prop), f"{HOSTILE}.yaml")
    tree = ast.parse(source)
    body = tree.body
    assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    assert HOSTILE in body[0].value.value  # the docstring keeps the text, as text
    allowed = (ast.ImportFrom, ast.Assign, ast.FunctionDef)
    assert all(isinstance(node, allowed) for node in body[1:]), [type(n).__name__ for n in body]
    constants = {n.targets[0].id: n.value for n in body if isinstance(n, ast.Assign)}
    assert ast.literal_eval(constants["POLICY"]) == HOSTILE and ast.literal_eval(constants["ERRORS"]) == HOSTILE
    for fn in (n for n in body if isinstance(n, ast.FunctionDef)):
        first = fn.body[0]
        if fn.name.startswith("test_"):
            assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)  # a literal docstring
    namespace: dict = {"__file__": str(tmp_path / "t.py")}
    exec(compile(tree, "t.py", "exec"), namespace)  # defining the module runs nothing: no file appears
    assert not (tmp_path / "PWNED").exists() and not any(tmp_path.iterdir())


def test_shrink_never_overwrites_its_input_scenario(tmp_path, tiny):
    """`shrink -o NAME.py` whose NAME.yaml is the input scenario is refused before any trial, even with --force."""
    scenario = tmp_path / "case.yaml"
    scenario.write_text(tiny.read_text())
    before = scenario.read_bytes()
    for extra in ([], ["--force"]):
        out = fleetchaos("shrink", "--scenario", "case.yaml", "--property", "recovery_rate<2", "-o", "case.py",
                         *extra, cwd=tmp_path)  # fmt: skip
        assert out.returncode == 2 and "would overwrite the input scenario" in out.stderr, out.stderr
    assert scenario.read_bytes() == before and not (tmp_path / "case.py").exists()


def test_shrink_refuses_an_existing_output_without_force_and_an_unwritable_folder(tmp_path, tiny):
    """An existing test file is kept unless --force; an output folder that cannot be written is refused before work."""
    (tmp_path / "test_x.py").write_text("# mine\n")
    out = fleetchaos(
        "shrink", "--scenario", str(tiny), "--property", "recovery_rate<2", "-o", "test_x.py", cwd=tmp_path
    )
    assert out.returncode == 2 and "pass --force" in out.stderr, out.stderr
    assert (tmp_path / "test_x.py").read_text() == "# mine\n"
    (tmp_path / "afile").write_text("")
    out = fleetchaos(
        "shrink", "--scenario", str(tiny), "--property", "recovery_rate<2", "-o", "afile/t.py", cwd=tmp_path
    )
    assert out.returncode == 2 and "cannot write into afile" in out.stderr, out.stderr
    assert "trial" not in out.stderr  # refused before the first trial run
