"""The commands README.md and docs/cli.md show run, in the order written, and exit as the text says (issue 28).

Each document is run in a scratch folder of its own, as a reader following it from the top would:
every ``sh`` block in order; in a block whose lines start with ``$ `` (a transcript) only those
lines are commands, the rest being their output; a line ending in ``\\`` continues on the next.
A command exits 0 unless its comment says otherwise, in words a reader sees: ``# exits 1: why``.
``.venv/bin/fleetchaos`` and ``fleetchaos`` are the installed command; the repository's
``examples`` and ``scenarios`` folders are there as in a checkout.  ``make demo`` runs the
Makefile's demo recipe; ``make test`` is the suite this test belongs to, so it is not run here.

Slow: the README's commands run comparisons of ten seeds, a tuning, a sweep and robustness
studies (several minutes in all).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

#: A fenced block of shell commands.
BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.M | re.S)
#: The exit a command's comment promises.
EXITS = re.compile(r"#.*?\bexits (\d+)\b")


def commands(markdown: str) -> list[tuple[str, int]]:
    """(command, expected exit) of every shell block of ``markdown``, in the order written."""
    out = []
    for block in BLOCK.findall(markdown):
        lines = block.splitlines()
        transcript = any(line.startswith("$ ") for line in lines)
        joined: list[str] = []
        for line in lines:
            if transcript and not line.startswith("$ "):
                continue
            line = line[2:] if transcript else line
            if joined and joined[-1].endswith("\\"):
                joined[-1] = joined[-1][:-1] + " " + line.strip()
            else:
                joined.append(line)
        for line in joined:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            promised = EXITS.search(line)
            out.append((line.strip(), int(promised.group(1)) if promised else 0))
    return out


def _demo_recipe() -> list[str]:
    """The Makefile's `demo` recipe, with its variables as a checkout has them."""
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe is not None, "the Makefile has a demo target"
    return [line.strip().replace("$(BIN)", ".venv/bin") for line in recipe.group(1).splitlines()]


def scratch(tmp_path: Path) -> Path:
    """A folder laid out like a checkout, holding nothing else: examples and scenarios, and the installed command."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    for name in ("examples", "scenarios"):
        shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (folder / ".venv").mkdir()
    (folder / ".venv" / "bin").symlink_to(BIN, target_is_directory=True)
    return folder


def run_in_order(document: str, tmp_path: Path) -> list[str]:
    """Run ``document``'s commands in a scratch folder; the commands whose exit differs from the text's."""
    folder = scratch(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETCHAOS_", "PYTEST_", "CHAOS_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", COLUMNS="100")
    wrong = []
    for command, promised in commands((ROOT / document).read_text(encoding="utf-8")):
        if command.startswith("make test"):
            continue  # the suite that runs this test
        lines = _demo_recipe() if command.startswith("make demo") else [command]
        for line in lines:
            done = subprocess.run(["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True)
            if done.returncode != promised:
                wrong.append(f"{document}: `{line}` exited {done.returncode}, the text says {promised}:\n"
                             f"{done.stderr[-2000:]}")  # fmt: skip
    return wrong


def test_the_parser_reads_transcripts_continuations_and_promised_exits():
    """What counts as a command, and the exit its comment promises."""
    text = (
        "```sh\nfleetchaos a   # a comment\n# a note\nfleetchaos b \\\n    --c   # exits 2: because\n```\n"
        "```python\nnot = 'a command'\n```\n"
        "```sh\n$ fleetchaos d   # exits 1: it fails\noutput line\n```\n"
    )
    assert commands(text) == [
        ("fleetchaos a   # a comment", 0),
        ("fleetchaos b  --c   # exits 2: because", 2),
        ("fleetchaos d   # exits 1: it fails", 1),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("document", ["README.md", "docs/cli.md"])
def test_the_documented_commands_run_in_order_and_exit_as_written(document, tmp_path):
    """Every command of the document, in order, in one scratch folder: each exits as the text says."""
    wrong = run_in_order(document, tmp_path)
    assert not wrong, "\n\n".join(wrong)
