"""The test suite's own shape: its modules import one another by unique names, never through ``conftest``.

pytest imports the suite in its default ``prepend`` mode: each test folder goes on
``sys.path`` and each module is imported by its file name.  Several folders have a
conftest.py, so which of them owns the module name ``conftest`` depends on the order pytest
loaded them (``pytest tests/reliability tests/plugin`` once gave tests/reliability's tests
tests/plugin's conftest).  Shared helpers live in modules of their own, with names no
other folder uses.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _suite_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def _imports_a_conftest(source: str) -> list[int]:
    """The lines of ``source`` that import a module called ``conftest`` (``import conftest``, ``from conftest import x``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(name.split(".")[0] == "conftest" for name in names):
            lines.append(node.lineno)
    return lines


def test_a_conftest_import_would_be_found():
    """Both forms of importing a conftest are found; a module whose name merely starts alike is not."""
    source = "import conftest\nfrom conftest import fleetchaos\nimport conftest_helpers\nfrom x import conftest\n"
    assert _imports_a_conftest(source) == [1, 2]


def test_no_module_of_the_suite_imports_a_conftest():
    """Test modules and helpers take shared code from a helper module, never from a conftest."""
    found = [
        f"{path.relative_to(TESTS)} line {line}"
        for path in _suite_files()
        for line in _imports_a_conftest(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "import these from a helper module of their own instead:\n" + "\n".join(found)


def test_every_module_name_of_the_suite_is_unique():
    """No two folders hold a module of the same name (conftest.py aside, which pytest loads by path)."""
    folders: dict[str, list[str]] = defaultdict(list)
    for path in _suite_files():
        if path.name != "conftest.py":
            folders[path.stem].append(str(path.parent.relative_to(TESTS)))
    clashes = {name: where for name, where in folders.items() if len(where) > 1}
    assert clashes == {}, "rename one of each: pytest imports a test folder's modules by file name"
