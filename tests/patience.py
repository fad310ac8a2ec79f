"""Waiting on child processes by their progress, never by a wall clock a busy machine trips.

A child process on a loaded machine gets a fraction of a core: it may take twenty times
as long in wall-clock time, while the processor time it needs stays the same.  So the
tests wait on a child for as long as it makes progress, and stop it only when it

* has used more processor time (its own and its descendants') than ``cpu_s``: a runaway,
  whatever the load; or
* has used no processor time at all for ``stall_s`` seconds: a deadlock or a child
  waiting for something that never comes (a quiet machine or a busy one, a working child
  uses some processor time every few seconds).

:func:`run` is ``subprocess.run`` with these limits instead of ``timeout``;
:func:`wait` waits on a started ``Popen``, and :func:`until` polls a condition while
watching the processes it depends on.
Where ``/proc`` is missing (not Linux), a wall-clock limit of 20 times ``cpu_s`` stands in.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = Path("/proc")


class Stalled(AssertionError):
    """A child process that stopped making progress, or used more processor time than allowed."""


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, processor seconds of the process and its reaped children), or None if it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    # After the name: state, ppid, ... utime (14th field of the line), stime, cutime, cstime.
    ppid = int(fields[1])
    cpu = sum(int(f) for f in fields[11:15]) / _TICK
    return ppid, cpu


def _tree(pid: int) -> dict[int, float]:
    """``pid`` and every live descendant, with the processor seconds of each."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                children.setdefault(stat[0], []).append(int(entry.name))
                cpu[int(entry.name)] = stat[1]
    tree, todo = {}, [pid]
    while todo:
        p = todo.pop()
        if p in cpu:
            tree[p] = cpu[p]
        todo.extend(children.get(p, ()))
    return tree


def tree_cpu_s(pid: int) -> float | None:
    """Processor seconds used by ``pid`` and every live descendant (None when ``pid`` is gone)."""
    tree = _tree(pid)
    return sum(tree.values()) if pid in tree else None


class Watch:
    """Progress of one child process: :meth:`check` raises :class:`Stalled` once it should be stopped."""

    def __init__(self, pid: int | Sequence[int], *, cpu_s: float = 600.0, stall_s: float = 300.0):
        self.pids = [pid] if isinstance(pid, int) else list(pid)
        self.cpu_s, self.stall_s = cpu_s, stall_s
        self.started = self.moved = time.monotonic()
        self.cpu = 0.0
        self.proc_fs = _PROC.is_dir()

    def check(self) -> None:
        """Raise :class:`Stalled` if the child used too much processor time or none for too long."""
        now = time.monotonic()
        if not self.proc_fs:
            if now - self.started > 20 * self.cpu_s:
                raise Stalled(f"still running after {now - self.started:.0f} s (no /proc to see its progress)")
            return
        used = [c for c in (tree_cpu_s(p) for p in self.pids) if c is not None]
        if not used:
            return
        cpu = sum(used)
        if cpu > self.cpu + 0.005:
            self.cpu, self.moved = cpu, now
        if self.cpu > self.cpu_s:
            raise Stalled(f"used {self.cpu:.0f} s of processor time, more than the {self.cpu_s:.0f} s allowed")
        if now - self.moved > self.stall_s:
            raise Stalled(f"used no processor time for {now - self.moved:.0f} s (stalled after {self.cpu:.1f} s)")


def until(
    condition: Callable[[], bool],
    *,
    watch: int | Sequence[int],
    what: str,
    cpu_s: float = 600.0,
    stall_s: float = 300.0,
    poll_s: float = 0.05,
) -> None:
    """Poll ``condition`` until it holds; :class:`Stalled` naming ``what`` if the watched processes stop progressing."""
    watcher = Watch(watch, cpu_s=cpu_s, stall_s=stall_s)
    while not condition():
        try:
            watcher.check()
        except Stalled as exc:
            raise Stalled(f"waiting for {what}: {exc}") from None
        time.sleep(poll_s)


def _kill_tree(pid: int) -> None:
    for member in _tree(pid) if _PROC.is_dir() else [pid]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(member, signal.SIGKILL)


def wait(proc: subprocess.Popen, *, cpu_s: float = 600.0, stall_s: float = 300.0, input: Any = None) -> tuple[Any, Any]:
    """``proc.communicate(input)`` for as long as the child makes progress; :class:`Stalled` (it is killed) if not."""
    watch = Watch(proc.pid, cpu_s=cpu_s, stall_s=stall_s)
    while True:
        try:
            return proc.communicate(input, timeout=1.0)
        except subprocess.TimeoutExpired:
            input = None  # handed over by the first call
        try:
            watch.check()
        except Stalled as exc:
            _kill_tree(proc.pid)
            out, err = proc.communicate()
            raise Stalled(f"{proc.args!r}: {exc}\n--- stdout:\n{out}\n--- stderr:\n{err}") from None


def run(
    args: Sequence[str] | str,
    *,
    cpu_s: float = 600.0,
    stall_s: float = 300.0,
    capture_output: bool = False,
    check: bool = False,
    input: Any = None,
    **kw: Any,
) -> subprocess.CompletedProcess:
    """``subprocess.run`` limited by progress (see the module's text) rather than by ``timeout``."""
    if capture_output:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
    if input is not None:
        kw.setdefault("stdin", subprocess.PIPE)
    with subprocess.Popen(args, **kw) as proc:
        out, err = wait(proc, cpu_s=cpu_s, stall_s=stall_s, input=input)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done
