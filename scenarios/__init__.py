"""The built-in scenario catalogue: YAML files beside this module, one per scenario."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _folder() -> Path:
    return Path(str(files(__name__)))


def names() -> list[str]:
    """Names of the catalogue's scenarios, sorted."""
    return sorted(p.stem for p in _folder().glob("*.yaml"))


def path(name: str) -> Path:
    """The file of a catalogue scenario."""
    p = _folder() / f"{name}.yaml"
    if not p.is_file():
        raise KeyError(name)
    return p


__all__ = ["names", "path"]
