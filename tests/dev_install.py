"""The development install, checked before the suite runs: every module of the package is linked.

``make install`` installs fleetchaos in setuptools' strict editable mode: each file of the
package is a link in ``build/__editable__.*/fleetchaos`` to its file in this checkout, so
static tools follow import names to real files.  Links are made file by file, so a module
added since the install is not importable until the install runs again (``make`` does it
when the list of files changes).  Without this check, running pytest directly after adding
a module fails with an ImportError deep in collection instead of saying what to do.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The repository's folders that make up the package (pyproject.toml's package-dir).
FOLDERS = ("harness", "simulated_fleet", "reports", "scenarios")


def unlinked_files(root: Path = ROOT, package_dir: Path | None = None) -> list[str]:
    """Package files of ``root`` that the installed package's link tree lacks (empty when it is not a link tree)."""
    if package_dir is None:
        spec = importlib.util.find_spec("fleetchaos")
        if spec is None or spec.origin is None:
            return []
        package_dir = Path(spec.origin).parent
    linked = {path.resolve() for path in package_dir.rglob("*") if path.is_symlink()}
    if not any(path.is_relative_to(root) for path in linked):
        return []  # installed from a wheel or another checkout: nothing here to link
    return sorted(
        str(path.relative_to(root))
        for folder in FOLDERS
        for path in (root / folder).rglob("*")
        if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts and path.resolve() not in linked
    )
