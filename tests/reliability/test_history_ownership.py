"""Issue 17 items 10 and 15: the history store only ever changes its own files, and a damaged or read-only store is read or refused cleanly."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3

import patience
import pytest
from reliability_cli import FLEETCHAOS, fleetchaos

from fleetchaos.errors import UserError
from fleetchaos.gates.history import SCHEMA_VERSION, open_store


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _foreign(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('mine')")
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("kind", ["foreign-sqlite", "one-byte", "newer-store"])
def test_a_file_that_is_not_a_current_store_is_refused_untouched(tmp_path, kind):
    """Run, compare and the history listing refuse a foreign SQLite file, a 1-byte file and a newer store, changing no byte."""
    path = tmp_path / "h.db"
    if kind == "foreign-sqlite":
        _foreign(path)
    elif kind == "one-byte":
        path.write_bytes(b"x")
    else:
        with open_store(tmp_path / "new.db") as store:
            store.finish_group(store.new_group("run", "x"))
        shutil.copy(tmp_path / "new.db", path)
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        db.close()
    before = _digest(path)
    for args in (["history"], ["run", "--seed", "1"], ["compare", "--seeds", "1", "--policies", "backoff"]):
        out = fleetchaos(*args, "--history", str(path), cwd=tmp_path)
        assert out.returncode == 2, (args, out.stderr)
        assert "Traceback" not in out.stderr
        assert _digest(path) == before, args
    assert not (tmp_path / "h.db-wal").exists()
    if kind != "one-byte":
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_the_history_listing_never_creates_a_store(tmp_path):
    """`fleetchaos history` on a path with no file says so and leaves no file behind."""
    out = fleetchaos("history", "--history", str(tmp_path / "none.db"), cwd=tmp_path)
    assert out.returncode == 2 and "no history here" in out.stderr
    assert not (tmp_path / "none.db").exists()


def test_damaged_rows_and_huge_ids_are_user_errors(tmp_path):
    """A row whose JSON was broken by hand, and an id beyond SQLite's integers, give exit 2 naming the problem."""
    path = tmp_path / "h.db"
    with open_store(path) as store:
        store.finish_group(store.new_group("run", "x", meta={"seeds": [1]}))
    db = sqlite3.connect(path)
    db.execute("UPDATE groups SET meta = '{not json'")
    db.commit()
    db.close()
    out = fleetchaos("history", "--history", str(path), cwd=tmp_path)
    assert out.returncode == 2 and "its meta is not a JSON object" in out.stderr, out.stderr
    out = fleetchaos("history", "99999999999999999999999999", "--history", str(path), cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr


def test_a_label_with_rich_markup_is_stored_and_listed_as_text(tmp_path, tiny):
    """A --label of Rich markup neither crashes the run nor breaks `history` on that store afterwards."""
    label = "[/][bold red]x[/bold red] [link=javascript:alert(1)]y"
    out = fleetchaos("run", "--scenario", str(tiny), "--label", label, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    listing = fleetchaos("history", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "[/][bold" in listing.stdout


def test_a_store_on_a_read_only_mount_can_be_read(tmp_path):
    """The listing and a baseline read a store on a read-only file system (a bind mount remounted read-only)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    with open_store(folder / "h.db") as store:
        store.finish_group(store.new_group("run", "x", label="main"))
    script = (
        f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} || exit 99; "
        f"touch {folder}/probe 2>/dev/null && exit 98; "
        f"{FLEETCHAOS} history --history {folder}/h.db"
    )
    out = patience.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, cpu_s=120)
    if out.returncode in (99, 98):
        pytest.skip("this machine cannot make a read-only bind mount (needs unshare and mount)")
    assert out.returncode == 0, out.stderr
    assert "main" in out.stdout and "complete" in out.stdout


def test_read_only_opens_never_write(tmp_path):
    """open_store(readonly=True) refuses a missing file and an empty one, creating and converting nothing."""
    with pytest.raises(UserError, match="no history here"):
        open_store(tmp_path / "missing.db", create=False, readonly=True)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(UserError, match="no runs stored here yet"):
        open_store(empty, readonly=True)
    assert empty.read_bytes() == b"" and not (tmp_path / "missing.db").exists()
