"""Type-check the package as it installs: ``python .ci/typecheck.py [mypy options]``.

The repository's folders become one package, ``fleetchaos``, only at install time
(pyproject.toml's ``package-dir``), and mypy cannot follow the editable install's import
hook.  So this script builds the installed layout out of symbolic links in a scratch
folder, runs mypy on it, and prints mypy's findings with the repository's own paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def link_tree(dest: Path) -> dict[str, str]:
    """Lay out the installed package under ``dest`` with links; map each linked path back to the source."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    back: dict[str, str] = {}
    # Parents before children: a child package is a folder linked inside its parent's folder.
    for package, folder in sorted(mapping.items(), key=lambda kv: kv[0].count(".")):
        target = dest.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        source = ROOT / folder
        for entry in source.iterdir():
            if entry.name == "__pycache__" or (target / entry.name).exists():
                continue
            (target / entry.name).symlink_to(entry)
        back[str(target)] = folder
    return back


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="fleetchaos-typecheck-") as scratch:
        back = link_tree(Path(scratch))
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *sys.argv[1:]]
        cmd += ["-p", "fleetchaos"]
        proc = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True, env={**os.environ, "MYPYPATH": ""})
        out = proc.stdout + proc.stderr
        # Longest scratch paths first, so fleetchaos/sim/... maps to simulated_fleet/..., not harness/sim/...
        for linked, folder in sorted(back.items(), key=lambda kv: -len(kv[0])):
            rel = os.path.relpath(linked, scratch)
            out = out.replace(rel + "/", folder + "/")
        sys.stdout.write(out)
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
