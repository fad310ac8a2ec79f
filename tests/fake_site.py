"""Installed packages, as ``importlib.metadata`` sees them, without installing anything.

A ``*.dist-info`` folder with an ``entry_points.txt`` in a folder on ``sys.path`` is what pip
writes, so the registries of policies and error formats discover such a package's entry
points exactly as they would after an install.  Imported by name (``from fake_site import
install``) by the registry tests.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest


def install(site: Path, dist: str, group: str, entries: dict[str, str], modules: dict[str, str] | None = None) -> None:
    """Write what installing package ``dist`` would: its modules and a dist-info folder with its ``group`` entry points."""
    for name, source in (modules or {}).items():
        (site / f"{name}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = [f"[{group}]"] + [f"{k} = {v}" for k, v in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def site_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str) -> Iterator[Path]:
    """A fresh folder on sys.path (for a fixture to yield from); modules named ``prefix*`` it adds are forgotten after."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name.startswith(prefix):
            del sys.modules[name]
    importlib.invalidate_caches()
