"""The run cache: each deterministic run made once, its result served again byte for byte.

A run is a pure function of its world, its arm, its seed and the code
(:mod:`fleetchaos.runs.cache_key`), so a stored result stands for a new run of the same
key.  The store is one SQLite file (``runs.sqlite``) in the cache folder: an entry is
written in one transaction (a killed process leaves it whole or absent), several commands
may read and write at once (WAL), and an entry that fails its checksum, its key or its
validation is a miss, deleted, never a crash nor a wrong result.  The store is bounded:
past its size the least recently used entries are pruned.

Commands use the cache of the folder ``$FLEETCHAOS_CACHE`` (default
``fleetchaos-out/cache``; ``off`` turns it off) unless given ``--no-cache``;
the Python API uses one only inside :func:`using_cache`.  Lookups and writes happen in
the process that plans the runs, never in workers, so a remote cluster needs no access
to the folder.  Connections are opened per batch and closed at once, so no worker
process forked meanwhile inherits one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fleetchaos.results.models import RunResult

__all__ = [
    "CacheStats",
    "CacheUnavailableError",
    "Need",
    "RunCache",
    "active_cache",
    "default_folder",
    "open_default_cache",
    "using_cache",
]

#: ``PRAGMA application_id`` of a run cache ("FCRC"): a file without it is never written to.
APPLICATION_ID = 0x46435243
SCHEMA_VERSION = 1
FILE_NAME = "runs.sqlite"
#: The default bound on the store (bytes of compressed entries).
DEFAULT_MAX_BYTES = 1 << 30
#: Pruning brings the store down to this share of its bound, so it does not prune at every write.
PRUNE_TO = 0.8
#: Results are written in batches of this many (and at the end of every batch of runs).
FLUSH_EVERY = 32
_BUSY_TIMEOUT_S = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY,
    code TEXT NOT NULL,
    tasks INTEGER NOT NULL,
    csv INTEGER NOT NULL,
    size INTEGER NOT NULL,
    used REAL NOT NULL,
    checksum TEXT NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_used ON runs (used)
"""


class CacheUnavailableError(Exception):
    """The cache folder cannot be used (not writable, or a file there that is not a run cache)."""


@dataclass(frozen=True, slots=True)
class Need:
    """What a caller needs of a cached run besides its result: its per-task rows, its tasks.csv lines."""

    tasks: bool = False
    csv: bool = False


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What a cache folder holds, and what this process did with it."""

    path: Path
    entries: int
    bytes: int
    max_bytes: int
    other_code: int
    """Entries made by other code (another fleetchaos version or source): never served by this one."""
    hits: int
    misses: int
    stored: int


class RunCache:
    """A bounded store of run results in ``folder``/runs.sqlite (created on first use).

    Raises :class:`CacheUnavailableError` when the folder or the file cannot be used.
    """

    def __init__(self, folder: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES):
        from fleetchaos.runs.cache_key import code_digest

        self.folder = Path(folder)
        self.path = self.folder / FILE_NAME
        self.max_bytes = max_bytes
        self.code = code_digest()
        self.hits = self.misses = self.stored = 0
        self._pending: dict[str, tuple] = {}
        """Rows encoded at :meth:`put` (the caller may change the result afterwards), written at :meth:`flush`."""
        # Nothing is created before the first result is stored: a command that fails its
        # checks leaves no folder behind.  A file already there must be a run cache.
        try:
            if self.path.exists() or self.path.is_symlink():
                with self._connect():
                    pass
        except (OSError, sqlite3.Error) as exc:
            raise CacheUnavailableError(f"{self.path}: cannot use the run cache ({_reason(exc)})") from None

    # -- reading -------------------------------------------------------------------------

    def get_many(self, wanted: Mapping[str, Need]) -> dict[str, RunResult]:
        """The stored results of the keys in ``wanted`` that hold what each needs; a miss is absent.

        A damaged entry (checksum, key or validation failing) is a miss and is deleted; a
        store that cannot be read right now (locked past the busy timeout) misses every key.
        """
        found: dict[str, RunResult] = {}
        keys = [k for k in wanted if k not in self._pending]
        for key in wanted:
            if key in self._pending:
                _, code, tasks, csv, _, _, checksum, body = self._pending[key]
                result = _decode(key, checksum, body) if self._fits(wanted[key], code, tasks, csv) else None
                if result is not None:
                    found[key] = _served(result, wanted[key])
        damaged: list[str] = []
        try:
            with self._connect() as db:
                for start in range(0, len(keys), 500):
                    part = keys[start : start + 500]
                    marks = ",".join("?" * len(part))
                    rows = db.execute(
                        f"SELECT key, code, tasks, csv, checksum, body FROM runs WHERE key IN ({marks})", part
                    ).fetchall()
                    for key, code, tasks, csv, checksum, body in rows:
                        if not self._fits(wanted[key], code, tasks, csv):
                            continue
                        result = _decode(key, checksum, body)
                        if result is None:
                            damaged.append(key)
                        else:
                            found[key] = _served(result, wanted[key])
                if found:
                    now = time.time()
                    hit = [k for k in found if k not in self._pending]
                    for start in range(0, len(hit), 500):
                        part = hit[start : start + 500]
                        db.execute(f"UPDATE runs SET used = ? WHERE key IN ({','.join('?' * len(part))})", [now, *part])
                if damaged:
                    db.executemany("DELETE FROM runs WHERE key = ?", [(k,) for k in damaged])
        except sqlite3.Error:
            found = {k: v for k, v in found.items() if k in self._pending}
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        return found

    def _fits(self, need: Need, code: str, tasks: int, csv: int) -> bool:
        """An entry of this code holding what ``need`` asks for."""
        return code == self.code and (bool(tasks) or not need.tasks) and (bool(csv) or not need.csv)

    def get(self, key: str, need: Need = Need()) -> RunResult | None:
        """One stored result, or None (see :meth:`get_many`)."""
        return self.get_many({key: need}).get(key)

    def get_blob(self, key: str) -> bytes | None:
        """Bytes stored by :meth:`put_blob` (a drawn chart), or None; a damaged entry is a miss."""
        if key in self._pending:
            return zlib.decompress(self._pending[key][-1])
        try:
            with self._connect() as db:
                row = db.execute("SELECT code, checksum, body FROM runs WHERE key = ?", (key,)).fetchone()
                if row is None or row[0] != self.code:
                    return None
                if _checksum(row[2]) != row[1]:
                    db.execute("DELETE FROM runs WHERE key = ?", (key,))
                    return None
                db.execute("UPDATE runs SET used = ? WHERE key = ?", (time.time(), key))
            return zlib.decompress(row[2])
        except (sqlite3.Error, zlib.error):
            return None

    def put_blob(self, key: str, data: bytes) -> None:
        """Store bytes that a deterministic computation of this code made (a chart's PNG) under ``key``."""
        body = zlib.compress(data, 1)
        self._pending[key] = (key, self.code, 0, 0, len(body), 0.0, _checksum(body), body)
        if len(self._pending) >= FLUSH_EVERY:
            self.flush()

    # -- writing -------------------------------------------------------------------------

    def put(self, key: str, result: RunResult, need: Need = Need()) -> None:
        """Store ``result`` (made with what ``need`` says it carries); written with the next flush.

        It is encoded now, so the caller may change or drop it afterwards.
        """
        body = _encode(key, result, need)
        self._pending[key] = (key, self.code, int(need.tasks), int(need.csv), len(body), 0.0, _checksum(body), body)
        if len(self._pending) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Write every pending result in one transaction, then prune past the bound.

        A store locked past the busy timeout, or a full disk, loses the pending results
        (they are only a cache); nothing is raised.
        """
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        now = time.time()
        rows = [(*row[:5], now, *row[6:]) for row in pending.values()]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with self._connect(create=True) as db:
                db.execute("BEGIN IMMEDIATE")
                # An entry that holds more (its rows) than this one is kept: it serves both.
                db.executemany(
                    "INSERT INTO runs (key, code, tasks, csv, size, used, checksum, body) VALUES (?,?,?,?,?,?,?,?) "
                    "ON CONFLICT (key) DO UPDATE SET code=excluded.code, tasks=excluded.tasks, csv=excluded.csv, "
                    "size=excluded.size, used=excluded.used, checksum=excluded.checksum, body=excluded.body "
                    "WHERE runs.code != excluded.code OR excluded.tasks >= runs.tasks AND excluded.csv >= runs.csv",
                    rows,
                )
                db.execute("COMMIT")
                self.stored += len(rows)
                self._prune(db, self.max_bytes)
        except (sqlite3.Error, OSError):
            return

    def prune(self, max_bytes: int | None = None) -> tuple[int, int]:
        """Delete least recently used entries until the store holds at most ``max_bytes``; (entries, bytes) freed."""
        self.flush()
        with self._connect() as db:
            return self._prune(db, self.max_bytes if max_bytes is None else max_bytes, target=1.0)

    def drop_other_code(self) -> tuple[int, int]:
        """Delete the entries made by other code (never served by this one); (entries, bytes) freed."""
        self.flush()
        with self._connect() as db:
            freed = db.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM runs WHERE code != ?", (self.code,))
            count, size = freed.fetchone()
            db.execute("DELETE FROM runs WHERE code != ?", (self.code,))
        return int(count), int(size)

    def clear(self) -> tuple[int, int]:
        """Delete every entry; (entries, bytes) freed."""
        self._pending.clear()
        with self._connect() as db:
            freed = db.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM runs").fetchone()
            db.execute("DELETE FROM runs")
        with self._connect() as db:
            db.execute("VACUUM")
        return int(freed[0]), int(freed[1])

    def stats(self) -> CacheStats:
        """What the store holds now (pending writes flushed first)."""
        self.flush()
        with self._connect() as db:
            entries, size = db.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM runs").fetchone()
            other = db.execute("SELECT COUNT(*) FROM runs WHERE code != ?", (self.code,)).fetchone()[0]
        return CacheStats(self.path, entries, size, self.max_bytes, other, self.hits, self.misses, self.stored)

    def close(self) -> None:
        """Write what is pending."""
        self.flush()

    # -- plumbing ------------------------------------------------------------------------

    def _prune(self, db: sqlite3.Connection, max_bytes: int, *, target: float = PRUNE_TO) -> tuple[int, int]:
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM runs").fetchone()[0]
        if total <= max_bytes:
            return 0, 0
        goal = int(max_bytes * target)
        removed = freed = 0
        victims = []
        for key, size in db.execute("SELECT key, size FROM runs ORDER BY used, key"):
            if total - freed <= goal:
                break
            victims.append((key,))
            freed += size
            removed += 1
        db.executemany("DELETE FROM runs WHERE key = ?", victims)
        return removed, freed

    @contextmanager
    def _connect(self, *, create: bool = False) -> Iterator[sqlite3.Connection]:
        if not create and not self.path.exists():
            raise sqlite3.OperationalError("no cache file yet")
        if self.path.is_symlink():  # never written through: it may point at anything
            raise sqlite3.DatabaseError("the cache file is a symbolic link; it was left untouched")
        db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            app, version = _identity(db)
            if (app, version) != (APPLICATION_ID, SCHEMA_VERSION):
                if app != 0 or version != 0 or db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                    raise sqlite3.DatabaseError(
                        "a file that is not a fleetchaos run cache (or of another version) is there; it was "
                        "left untouched: point $FLEETCHAOS_CACHE elsewhere or remove it"
                    )
                db.execute("BEGIN IMMEDIATE")
                if _identity(db) == (0, 0):  # another process may have made it meanwhile
                    db.execute("PRAGMA journal_mode = WAL")
                    for statement in _SCHEMA.split(";"):
                        db.execute(statement)
                    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                db.execute("COMMIT")
            db.execute("PRAGMA synchronous = NORMAL")
            yield db
        finally:
            db.close()


def _identity(db: sqlite3.Connection) -> tuple[int, int]:
    return db.execute("PRAGMA application_id").fetchone()[0], db.execute("PRAGMA user_version").fetchone()[0]


def _reason(exc: BaseException) -> str:
    return " ".join(str(getattr(exc, "strerror", None) or exc).split())[:200]


def _checksum(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _encode(key: str, result: RunResult, need: Need) -> bytes:
    header = {"key": key, "csv": list(result.tasks_csv) if need.csv and result.tasks_csv is not None else None}
    plain = json.dumps(header, separators=(",", ":")).encode() + b"\n" + result.model_dump_json().encode()
    return zlib.compress(plain, 6)


def _decode(key: str, checksum: str, body: bytes) -> RunResult | None:
    """The result an entry holds, or None if anything about it is wrong."""
    try:
        if _checksum(body) != checksum:
            return None
        head, _, rest = zlib.decompress(body).partition(b"\n")
        header = json.loads(head)
        if header.get("key") != key:
            return None
        result = RunResult.model_validate_json(rest)
        csv = header.get("csv")
        if csv is not None:
            lines, count = csv
            if not isinstance(lines, str) or not isinstance(count, int):
                return None
            result.tasks_csv = (lines, count)
        return result
    except Exception:  # any damage (zlib, JSON, validation, shape) is a miss
        return None


def _served(result: RunResult, need: Need) -> RunResult:
    """A copy of ``result`` carrying only what ``need`` asks for (a caller may drop its rows)."""
    served = result.model_copy()
    served.tasks = list(result.tasks) if need.tasks else []
    served.tasks_csv = result.tasks_csv if need.csv else None
    return served


# -- the cache in use ------------------------------------------------------------------------

_ACTIVE: RunCache | None = None


def active_cache() -> RunCache | None:
    """The cache runs use now (None: every run is made afresh)."""
    return _ACTIVE


@contextmanager
def using_cache(cache: RunCache | None) -> Iterator[RunCache | None]:
    """Runs made inside use ``cache`` (None: no cache); its pending results are written on the way out."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, cache
    try:
        yield cache
    finally:
        _ACTIVE = previous
        if cache is not None:
            with contextlib.suppress(Exception):
                cache.flush()


def open_default_cache(warn: Callable[[str], object] | None = None) -> RunCache | None:
    """The cache of :func:`default_folder` (None when off); one that cannot be used is None, and ``warn`` hears why."""
    folder = default_folder()
    if folder is None:
        return None
    try:
        return RunCache(folder)
    except CacheUnavailableError as exc:
        if warn is not None:
            warn(f"{exc}; runs are made without it")
        return None


def default_folder() -> Path | None:
    """``$FLEETCHAOS_CACHE`` or ``fleetchaos-out/cache``; None when ``$FLEETCHAOS_CACHE`` is ``off``."""
    value = os.environ.get("FLEETCHAOS_CACHE", "").strip()
    if value.lower() in ("off", "0", "no", "false", "none"):
        return None
    return Path(value) if value else Path("fleetchaos-out") / "cache"
