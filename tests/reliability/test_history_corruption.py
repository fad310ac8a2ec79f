"""Byte-level damage to the history store (issue 28): every command that reads or writes the history exits 0 (the
damage is in bytes it never needs), 1 (a gate) or 2 with one line naming the file, never 3; a refused file is left
byte for byte as it was, with nothing written beside it.

The damage is done to a real store (two compares, one labelled, and a sweep): bytes flipped in a page header, in a
table page and in the schema, the file cut short, a wrong page size, a database size or freelist that lies, a file
that is not SQLite, another program's SQLite file, a store of another schema version and a garbage write-ahead log.
Each of the 18 commands below meets each of the 21 kinds of damage, in-process (click's CliRunner).
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import fleetchaos.catalogue as catalogue
from fleetchaos.cli.main import main

_COMPARE = ["compare", "--scenario", "tiny.yaml", "--seeds", "1", "--policies", "structured", "--errors", "structured",
            "--jobs", "1"]  # fmt: skip

COMMANDS = {
    "history": ["history"],
    "history-show": ["history", "show", "1"],
    "history-json": ["history", "1", "--json"],
    "history-latest": ["history", "latest"],
    "history-label": ["history", "base"],
    "diff": ["history", "diff", "1", "2"],
    "diff-label": ["history", "diff", "base", "latest"],
    "export": ["history", "export", "1"],
    "export-file": ["history", "export", "1", "-o", "export.json"],
    "prune-dry-run": ["history", "prune", "--keep", "0"],
    "prune": ["history", "prune", "--keep", "0", "--yes"],
    "run": ["run", "--scenario", "tiny.yaml"],
    "run-baseline": ["run", "--scenario", "tiny.yaml", "--baseline", "base"],
    "compare-baseline": [*_COMPARE, "--baseline", "1"],
    "compare-latest": [*_COMPARE, "--baseline", "latest"],
    "compare-resume": [*_COMPARE, "--resume"],
    "sweep": ["sweep", "--file", "sweep.yaml", "--jobs", "1"],
    "sweep-resume": ["sweep", "--file", "sweep.yaml", "--jobs", "1", "--resume"],
}


def _flip(data: bytes, offsets) -> bytes:
    out = bytearray(data)
    for offset in offsets:
        if offset < len(out):
            out[offset] ^= 0xFF
    return bytes(out)


def _edited(good: Path, folder: Path, name: str, *statements: str) -> bytes:
    copy = folder / f"{name}.db"
    shutil.copy(good, copy)
    db = sqlite3.connect(copy)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return copy.read_bytes()


def _damages(good: Path, folder: Path) -> dict[str, tuple[bytes, bytes | None]]:
    """Each kind of damage: (the store's bytes, a write-ahead log's bytes or None)."""
    data = good.read_bytes()
    page = struct.unpack(">H", data[16:18])[0]
    pages = len(data) // page
    foreign = folder / "foreign.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE notes (text TEXT)")
    db.commit()
    db.close()
    damages = {
        "flip-page-2-header": _flip(data, range(page, page + 12)),
        "flip-table-page": _flip(data, range(2 * page + 8, 3 * page, 7)),
        "flip-every-page": _flip(data, [p * page + 100 for p in range(1, pages)]),
        "flip-schema": _flip(data, range(100, 400, 3)),
        "truncated-half": data[: pages // 2 * page],
        "truncated-one-page": data[:page],
        "truncated-mid-page": data[: page + 1234],
        "truncated-header": data[:100],
        "page-size-768": data[:16] + struct.pack(">H", 768) + data[18:],
        "page-size-512": data[:16] + struct.pack(">H", 512) + data[18:],
        "page-size-65536": data[:16] + struct.pack(">H", 1) + data[18:],
        "size-lies": data[:28] + struct.pack(">I", 10**9) + data[32:],
        "freelist-lies": data[:32] + struct.pack(">II", 9999, 9999) + data[40:],
        "not-sqlite": bytes((i * 31 + 7) % 256 for i in range(8192)),
        "sqlite-header-then-garbage": b"SQLite format 3\x00" + bytes((i * 13) % 256 for i in range(8000)),
        "foreign-sqlite": foreign.read_bytes(),
        "newer-schema": data[:60] + struct.pack(">I", 2) + data[64:],
        "unversioned": data[:60] + struct.pack(">I", 0) + data[64:],
        "missing-column": _edited(good, folder, "column", "ALTER TABLE runs DROP COLUMN params"),
        "index-on-no-column": _edited(
            good,
            folder,
            "index",
            "PRAGMA writable_schema=ON",
            "UPDATE sqlite_master SET sql='CREATE INDEX runs_by_key ON runs(nokey)' WHERE name='runs_by_key'",
        ),
    }
    out: dict[str, tuple[bytes, bytes | None]] = {k: (v, None) for k, v in damages.items()}
    out["garbage-wal"] = (data, b"\x37\x7f\x06\x82" + bytes((i * 7) % 256 for i in range(5000)))
    return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A folder with a tiny scenario, a sweep file and a sound store to damage."""
    root = tmp_path_factory.mktemp("damage")
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["workload"]["tasks_per_day"], doc["duration_s"] = "tiny", 20, 21600
    (root / "tiny.yaml").write_text(yaml.safe_dump(doc))
    sweep = {"scenarios": ["tiny.yaml"], "seeds": [1], "policies": ["structured"], "errors": ["structured"],
             "params": {"fleet.workers": [5, 6]}}  # fmt: skip
    (root / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    good = root / "good.db"
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    mp.delenv("FLEETCHAOS_DEBUG", raising=False)
    for args in ([*_COMPARE, "--label", "base"], _COMPARE, ["sweep", "--file", "sweep.yaml", "--jobs", "1"]):
        result = CliRunner().invoke(main, [*args, "--history", str(good)] if args[0] != "sweep" else args,
                                    env={"FLEETCHAOS_HISTORY": str(good)})  # fmt: skip
        assert result.exit_code == 0, result.output
    db = sqlite3.connect(good)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    yield root, _damages(good, root)
    mp.undo()


def test_every_command_on_every_damaged_store_is_a_result_or_one_clear_line(workspace):
    """18 commands x 21 kinds of damage: never exit 3 or a traceback; a refusal is one line naming the file and
    leaves it as it was."""
    root, damages = workspace
    crashes = []
    for damage, (data, wal) in damages.items():
        for command, args in COMMANDS.items():
            folder = root / f"{damage}-{command}"
            folder.mkdir()
            store = folder / "history.db"
            store.write_bytes(data)
            if wal is not None:
                (folder / "history.db-wal").write_bytes(wal)
            before = sorted(p.name for p in folder.iterdir())
            shutil.copy(root / "tiny.yaml", folder)
            shutil.copy(root / "sweep.yaml", folder)
            result = CliRunner().invoke(main, args, env={"FLEETCHAOS_HISTORY": str(store)}, catch_exceptions=True)
            case = f"{damage} / {command}: exit {result.exit_code}: {result.output.strip()[-300:]}"
            if result.exit_code not in (0, 1, 2) or "Traceback" in result.output:
                crashes.append(case)
                continue
            if result.exit_code == 2:
                lines = result.stderr.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("error: "), case
                if "history" in lines[0]:
                    assert store.read_bytes() == data, f"{case}: the refused store was changed"
                    # A reader of a write-ahead-log store makes its (empty) log and index, as any SQLite reader does.
                    after = {p.name for p in folder.iterdir() if p.suffix not in (".yaml", ".json")}
                    made = after - set(before) - {"history.db-shm", "history.db-wal"}
                    assert not made, f"{case}: files appeared beside the refused store: {made}"
                    if wal is None and (folder / "history.db-wal").exists():
                        assert (folder / "history.db-wal").stat().st_size == 0, f"{case}: a log was written"
    assert not crashes, f"{len(crashes)} of {len(damages) * len(COMMANDS)} commands crashed:\n" + "\n".join(crashes)


@pytest.mark.parametrize("damage", ["flip-table-page", "freelist-lies"])
def test_a_store_damaged_where_only_writing_looks_is_refused_before_any_run(workspace, damage, tmp_path):
    """Damage a read never meets (a table page, the freelist) is found before a writing command runs anything."""
    root, damages = workspace
    store = tmp_path / "history.db"
    data = damages[damage][0]
    store.write_bytes(data)
    shutil.copy(root / "tiny.yaml", tmp_path)
    result = CliRunner().invoke(main, ["run", "--scenario", str(tmp_path / "tiny.yaml"), "--history", str(store)])
    assert result.exit_code == 2, result.output
    assert "not a readable fleetchaos history" in result.stderr and result.stdout == ""
    assert store.read_bytes() == data
