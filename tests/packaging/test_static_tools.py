"""Static tools see the package's modules as the files of this checkout.

The development install (``make install``) is setuptools' strict editable mode: a tree of
links, one per file, instead of an import hook that only a running interpreter follows.
These tests run what an editor or a checker runs, on the source, without importing it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import jedi
import pytest
from dev_install import ROOT, unlinked_files


def _installed_from_this_checkout() -> bool:
    (name,) = jedi.Script("import fleetchaos").goto(1, 7, follow_imports=True)
    return name.module_path is not None and name.module_path.resolve().is_relative_to(ROOT)


pytestmark = pytest.mark.skipif(
    not _installed_from_this_checkout(), reason="fleetchaos is not installed from this checkout (make install)"
)


@pytest.mark.parametrize(
    ("source", "real_file"),
    [
        ("from fleetchaos.sim.world import World\nWorld", "simulated_fleet/world.py"),
        ("from fleetchaos.reports.tables import compare_table\ncompare_table", "reports/tables.py"),
        ("import fleetchaos.catalogue\nfleetchaos.catalogue.path", "scenarios/__init__.py"),
        ("from fleetchaos.runs.runner import run_one\nrun_one", "harness/runs/runner.py"),
    ],
)
def test_go_to_definition_reaches_the_checkouts_file(source, real_file):
    """jedi (most editors' go-to-definition) follows an import name to a link to the module's file here."""
    lines = source.splitlines()
    (name,) = jedi.Script(source).goto(len(lines), len(lines[-1]) - 1, follow_imports=True)
    assert name.module_path is not None
    assert name.module_path.resolve() == ROOT / real_file
    assert name.type in ("class", "function")


def test_mypy_needs_no_arguments():
    """`mypy` from the repository root checks the installed package by the project's own configuration."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["packages"] == ["fleetchaos"]
    assert not (ROOT / ".ci" / "typecheck.py").exists()


def test_the_package_declares_its_annotations():
    """py.typed sits in the package's folder and is package data, so the wheel ships it (make wheel-check)."""
    assert (ROOT / "harness" / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["fleetchaos"]


def test_a_module_added_since_the_install_would_be_named(tmp_path):
    """The suite's start-up check names a package file that the link tree lacks."""
    checkout = tmp_path / "checkout"
    (checkout / "harness").mkdir(parents=True)
    for name in ("__init__.py", "linked.py", "added.py"):
        (checkout / "harness" / name).write_text("")
    links = tmp_path / "links" / "fleetchaos"
    links.mkdir(parents=True)
    for name in ("__init__.py", "linked.py"):
        (links / name).symlink_to(checkout / "harness" / name)
    assert unlinked_files(checkout, links) == ["harness/added.py"]
    assert unlinked_files(ROOT) == []
    assert unlinked_files(Path(tmp_path / "elsewhere"), links) == []
