"""The installed distribution: one import package, and it never shadows or breaks a user's own packages.

A wheel is built from this checkout once per session (with the build backend pyproject.toml
names) and installed into a fresh virtual environment.  The environment gets fleetchaos from
the wheel and nothing else of this checkout; its dependencies (SimPy, pydantic, pytest, ...)
come from the test's own environment through a path file, so the test needs no network.
The slow test installs the wheel as a user does, dependencies from the package index, into a
bare environment (``make wheel-check`` does the same in CI).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import venv
import zipfile
from pathlib import Path

import patience
import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Generic names a user's project may well have as its own packages.
USER_PACKAGES = ("harness", "reports", "scenarios", "simulated_fleet")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from this checkout; what the build printed is ``build.log`` beside it."""
    out = tmp_path_factory.mktemp("wheel")
    build = patience.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--wheel-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
        cpu_s=600,
    )
    (out / "build.log").write_text(build.stdout + build.stderr)
    (built,) = out.glob("fleetchaos-*.whl")
    return built


def test_the_build_prints_no_deprecation_and_the_license_is_spdx(wheel):
    """No deprecation banner while building (the license is an SPDX expression), and the wheel carries the text."""
    log = (wheel.parent / "build.log").read_text()
    assert [line for line in log.splitlines() if "deprecat" in line.lower()] == []
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("fleetchaos-0.1.0.dist-info/METADATA").decode()
        names = archive.namelist()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    assert not any(line.startswith("Classifier: License") for line in metadata.splitlines())
    assert "fleetchaos-0.1.0.dist-info/licenses/LICENSE" in names


def test_every_upper_bound_is_explained():
    """Each dependency with an upper bound has its row in docs/dependencies.md naming the same bound."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    docs = (ROOT / "docs" / "dependencies.md").read_text()
    bounded = {}
    for requirement in project["dependencies"]:
        name, spec = re.match(r"([A-Za-z0-9_.-]+)(.*)", requirement).groups()
        if "<" in spec:
            bounded[name] = spec
    assert bounded, "no dependency has an upper bound"
    for name, spec in bounded.items():
        wanted = ",".join(sorted(spec.split(","), key=lambda part: part.startswith("<")))
        assert f"| {name} | `{wanted}` |" in docs, f"docs/dependencies.md has no row for {name} {spec}"


@pytest.mark.slow
def test_the_wheel_installs_from_the_index_into_a_bare_venv(wheel, tmp_path):
    """pip install of the wheel in a new venv fetches the dependencies from the index; `fleetchaos --help` answers."""
    env = tmp_path / "bare"
    venv.EnvBuilder(with_pip=True).create(env)
    install = patience.run(
        [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        cpu_s=1200,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    out = patience.run([str(env / "bin" / "fleetchaos"), "--help"], capture_output=True, text=True, cpu_s=120)
    assert out.returncode == 0, out.stderr
    assert "Chaos and fault injection" in out.stdout
    where = subprocess.run(
        [
            str(env / "bin" / "python"),
            "-c",
            "import fleetchaos, simpy, pydantic; print(simpy.__file__, pydantic.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.count(str(env)) == 2  # the dependencies are the bare environment's own


@pytest.fixture(scope="session")
def fresh_env(wheel, tmp_path_factory) -> Path:
    """A new virtual environment with the wheel installed; returns its python."""
    env = tmp_path_factory.mktemp("venv") / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    patience.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        cpu_s=600,
    )
    # The dependencies, from this environment: a path file adds its site-packages to sys.path
    # but runs none of its .pth files, so this checkout's editable install stays out.
    (Path(purelib) / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_wheel_installs_exactly_one_top_level_package(wheel):
    """The wheel holds one importable top-level name, fleetchaos (beside its dist-info)."""
    names = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    packages = {n for n in names if not n.endswith((".dist-info", ".data"))}
    assert packages == {"fleetchaos"}, sorted(names)


def test_the_wheel_declares_its_annotations(wheel):
    """py.typed ships in the package (PEP 561), so a team's type checker reads fleetchaos' annotations."""
    assert "fleetchaos/py.typed" in zipfile.ZipFile(wheel).namelist()


def test_installed_command_and_entry_points_work(fresh_env):
    """In the fresh environment the console script answers --help and pytest finds the plugin by entry point."""
    script = fresh_env.parent / "fleetchaos"
    out = patience.run([str(script), "--help"], capture_output=True, text=True, cpu_s=120)
    assert out.returncode == 0, out.stderr
    assert "Chaos and fault injection" in out.stdout
    where = subprocess.run(
        [str(fresh_env), "-c", "import fleetchaos, fleetchaos.sim; print(fleetchaos.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "site-packages" in where and str(ROOT) not in where


def test_a_project_with_its_own_harness_reports_and_scenarios_runs_a_chaos_test(fresh_env, tmp_path):
    """A project holding packages named harness, reports and scenarios loads the plugin and passes a scenario test."""
    project = tmp_path / "project"
    for name in USER_PACKAGES:
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(f"WHO = {name!r}\n")
    (project / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers -p no:cacheprovider\npythonpath = .\n")
    (project / "tiny.yaml").write_text(
        "name: tiny\nduration_s: 1800\nfleet: {orchestrators: 1, workers: 2}\n"
        "workload: {tasks_per_day: 960, diurnal_amplitude: 0}\nfaults:\n  - {kind: network_blip, probability: 0.2}\n"
    )
    (project / "test_chaos.py").write_text(
        textwrap.dedent(
            """
            import pytest

            import harness, reports, scenarios, simulated_fleet
            from fleetchaos import assert_rate


            def test_own_packages_are_the_projects():
                assert (harness.WHO, reports.WHO, scenarios.WHO, simulated_fleet.WHO) == (
                    "harness", "reports", "scenarios", "simulated_fleet")


            @pytest.mark.fleetchaos(scenario="tiny.yaml", seeds=2, policy="structured", errors="structured")
            def test_recovers(fleetchaos_result):
                assert_rate(fleetchaos_result.recovery_rate, at_least=0.1)
            """
        )
    )
    report = project / "out"
    proc = patience.run(
        [str(fresh_env), "-m", "pytest", "-q", f"--fleetchaos-report={report}"],
        cwd=project,
        capture_output=True,
        text=True,
        cpu_s=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    assert list(report.rglob("results.json")), sorted(report.rglob("*"))  # written by fleetchaos.reports


def test_nothing_imports_the_repository_folders_by_their_own_names():
    """No module of the package, its tests or benchmarks imports harness, reports, scenarios or simulated_fleet."""
    offenders = []
    for folder in ("harness", "simulated_fleet", "reports", "scenarios", "tests", "benchmarks", "examples"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "test_install.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in USER_PACKAGES]
    assert offenders == []
