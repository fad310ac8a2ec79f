"""Reading and writing files safely: bounded reads, atomic writes, no write outside its folder.

Every file fleetchaos reads from a user (scenario, sweep and results files, baselines)
and every file it writes (report folders, generated tests) goes through here:

* :func:`read_bounded` / :func:`read_text_bounded`: read at most ``limit`` bytes.  A
  regular file's size is checked before anything is read, and anything else (``/dev/zero``,
  a pipe) is read only up to the limit, so no input can exhaust memory; a named pipe
  nothing writes to, or a terminal, is refused rather than waited on (:func:`open_input`),
  so no input can hang a reader.
* :func:`atomic_write` (and :func:`write_text`, :func:`write_bytes`): write to a temporary
  file in the same folder and rename it over the target only once it is complete, so an
  interrupted or failed write (a full disk) never leaves a truncated or 0-byte file
  behind, and an existing symlink at the target is replaced, never followed.
* ``root=``: the folder a write must stay in (a report folder).  A target whose folder
  resolves outside it (a symlinked sub-folder pointing elsewhere) is refused with
  :class:`UnsafePathError` before anything is written.
* :func:`check_targets`: before any work, the files a command will write: none may be one
  of its inputs (whatever ``--force`` says, through symlinks and hard links too), an
  existing one is replaced only with ``--force``, and their folders must be writable.

Light to import: the standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from fleetchaos.errors import UserError

__all__ = [
    "DISK_FULL",
    "FileTooLargeError",
    "NotReadableError",
    "StrictJsonError",
    "UnsafePathError",
    "atomic_write",
    "check_inside",
    "check_targets",
    "loads_json",
    "open_input",
    "read_bounded",
    "read_text_bounded",
    "read_user_text",
    "write_bytes",
    "write_text",
]

#: errno values that mean there is no room to write: a full disk, a full quota, or a file-size
#: limit (``ulimit -f``); not a user mistake and not a bug.
DISK_FULL = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG) if e is not None)


class FileTooLargeError(UserError):
    """An input file larger than the reader's limit (checked before it is read whole)."""


class UnsafePathError(UserError):
    """A write target outside the folder it must stay in (a symlink out of a report folder)."""


class NotReadableError(UserError):
    """An input that is not a file to read: a terminal, or a named pipe nothing writes to."""


def open_input(path: str | Path, *, what: str = "file") -> BinaryIO:
    """``path`` opened for reading bytes, never blocking on the open itself.

    ``open()`` of a named pipe (a FIFO) waits until some process opens it for writing, for
    ever if none does; here the open does not wait, and reading then stops at once when
    nothing is writing (the pipe reads as empty: :func:`read_bounded` refuses it with
    :class:`NotReadableError`), or waits for the writer that is there (``<(command)``). A
    terminal is refused (reading it would wait for typing). ``OSError`` as ``open`` raises
    it (no such file, a folder, no permission).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if stat.S_ISCHR(mode) and os.isatty(fd):
            raise NotReadableError(f"{path}: a terminal, not a {what}; give the path of the file itself")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | Path, limit: int, *, what: str = "file") -> bytes:
    """The bytes of ``path``, refusing more than ``limit`` bytes before reading them.

    Raises :class:`FileTooLargeError` naming the file, its size (when known) and the
    limit; :class:`NotReadableError` for a terminal or a named pipe with nothing writing to
    it (:func:`open_input`: neither is ever waited on); ``OSError`` as ``open`` raises it
    (no such file, a folder, no permission).
    """
    with open_input(path, what=what) as fh:
        info = os.fstat(fh.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise FileTooLargeError(
                f"{path}: {info.st_size:,} bytes is larger than the {limit:,} bytes a {what} may have; "
                f"is this the right file?"
            )
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(
            f"{path}: more than the {limit:,} bytes a {what} may have (read stopped there); is this the right file?"
        )
    if not data and stat.S_ISFIFO(info.st_mode):
        raise NotReadableError(
            f"{path}: a named pipe with nothing writing to it (it reads as empty, and is not waited on); "
            f"give a regular {what}, or start what writes to the pipe first"
        )
    return data


def read_text_bounded(path: str | Path, limit: int, *, what: str = "file") -> str:
    """:func:`read_bounded` decoded as UTF-8 (``UnicodeDecodeError`` when it is not text)."""
    return read_bounded(path, limit, what=what).decode("utf-8")


def read_user_text(path: str | Path, limit: int, *, option: str, what: str, error: type[UserError] = UserError) -> str:
    """A user's small text file (a mapping, a space), bounded, or one ``error`` naming ``option``, the file and why.

    ``what`` names the file in messages ("code mapping"); each failure (missing, a folder,
    too large, not UTF-8, unreadable) is one message with the fix.
    """
    try:
        return read_text_bounded(path, limit, what=what)
    except FileNotFoundError:
        raise error(f"{option} {path}: no such file; check the path") from None
    except FileTooLargeError as exc:
        raise error(f"{option} {exc}") from None
    except IsADirectoryError:
        raise error(f"{option} {path}: is a folder; give the {what} file") from None
    except UnicodeDecodeError as exc:
        raise error(f"{option} {path}: not UTF-8 text (byte {exc.start + 1}); a {what} is YAML or JSON") from None
    except OSError as exc:
        raise error(f"{option} {path}: cannot read ({exc.strerror or exc}); check its permissions") from None


class StrictJsonError(ValueError):
    """JSON that parses but is not plain data: a key repeated in one object, NaN or Infinity."""


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StrictJsonError(
                f"key {key!r} appears twice in the same object (the first value would be lost); keep one"
            )
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise StrictJsonError(f"{name} is not a JSON number; write a finite number (or null)")


def loads_json(text: str | bytes, *, nonfinite: bool = False) -> Any:
    """Parse JSON as plain data, as the YAML loader does: a repeated key is refused, and ``NaN`` or
    ``Infinity`` too unless ``nonfinite`` (a scenario's models refuse them naming the field).

    Raises ``json.JSONDecodeError`` for malformed text, :class:`StrictJsonError` for the
    above, and ``RecursionError`` for absurd nesting (callers turn each into a message).
    """
    if nonfinite:
        return json.loads(text, object_pairs_hook=_no_repeats)
    return json.loads(text, object_pairs_hook=_no_repeats, parse_constant=_no_constant)


def check_inside(target: Path, root: Path) -> None:
    """Refuse ``target`` unless its folder, with symlinks resolved, is ``root`` or inside it."""
    base = root.resolve()
    folder = target.parent.resolve()
    if folder != base and base not in folder.parents:
        raise UnsafePathError(
            f"{target}: its folder resolves to {folder}, outside the folder {root} being written "
            "(a symbolic link?); remove the link or write the report elsewhere"
        )


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file (symlinks followed, hard links included); False when either is missing."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_targets(targets: dict[Path, str], *, inputs: dict[Path, str] | None = None, force: bool = False) -> None:
    """Refuse, before any work, to write ``targets`` (path -> the option that names it) when one is an input.

    ``inputs`` maps each input file to the option (or argument) that named it.  A target
    that is an input is refused even with ``force``: an input is often not reproducible
    (a day of traces, a hand-written scenario).  A target that exists (a symbolic link
    counts, even a dangling one: it is replaced, never followed) is refused unless
    ``force``; one that is a folder is refused.  Each target's folder is created if
    needed and must be writable.  Raises :class:`UserError` naming the option and the fix.
    """
    seen: dict[Path, Path] = {}
    for target, option in targets.items():
        for source, named in (inputs or {}).items():
            if same_file(target, source) or target.resolve() == source.resolve():
                raise UserError(
                    f"{option} {target}: is {named} {source}, an input of this command; "
                    "it is never written over (even with --force): choose another path"
                )
        first = seen.setdefault(target.parent.resolve() / target.name, target)  # a link at it is replaced, not followed
        if first is not target:
            raise UserError(f"{option} {target}: is also {targets[first]} {first}; give each output its own path")
        if target.is_dir():
            raise UserError(f"{option} {target}: is a folder; give a file's path")
        if os.path.lexists(target) and not force:
            raise UserError(f"{option} {target}: exists; choose another path, or pass --force to replace it")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=target.parent):
                pass
        except OSError as exc:
            raise UserError(
                f"{option} {target}: cannot write into {target.parent} ({exc.strerror or exc}); choose a writable folder"
            ) from None


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", *, root: Path | None = None, **open_args: Any) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it replaces ``path``, on failure it is removed.

    ``mode`` is ``"w"`` (text, UTF-8 unless ``encoding`` is given) or ``"wb"``.  With ``root``
    the target must lie inside that folder (:func:`check_inside`).
    """
    target = Path(path)
    if root is not None:
        check_inside(target, root)
    if "b" not in mode:
        open_args.setdefault("encoding", "utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # as open() would create it: mkstemp makes it private
        with os.fdopen(fd, mode, **open_args) as fh:
            yield fh
            fh.flush()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@functools.cache
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str | Path, text: str, *, root: Path | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_write(path, "w", root=root) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes, *, root: Path | None = None) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    with atomic_write(path, "wb", root=root) as fh:
        fh.write(data)
    return Path(path)
