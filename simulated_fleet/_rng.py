"""Keyed random streams.

Every random draw in the simulation is a pure function of the run seed and stable
identifiers (task, step, item, execution number, worker, time window).  Two arms of a
comparison therefore see the same faults for the same seed even when their policies
make different numbers of calls: the k-th execution of step s of task t draws the same
numbers in both arms.  No draw depends on how many draws came before it.

The mixer is SplitMix64's finaliser, which is fast in pure Python and has good
avalanche behaviour; stream names are hashed with CRC-32 (never ``hash()``, which is
salted per process).

The keys of a tool call are derived in one chain, each step named below
(:func:`run_key` -> :func:`task_key` -> :func:`step_key` -> :func:`call_key` ->
:func:`transport_key`), with :func:`persistent_key` and :func:`dependency_key` for faults
that must hit every execution alike.  A real-code runtime that computes the same
identifiers for a real call gets the same draws (docs/ARCHITECTURE.md, "Determinism").
"""

from __future__ import annotations

import math
import zlib

_MASK = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15
_TWO_POW_MINUS_53 = 2.0**-53
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
"""SplitMix64's two multipliers (for callers that inline :func:`draw` on a per-call path)."""


def mix(z: int) -> int:
    """Scramble a 64-bit integer (SplitMix64 finaliser)."""
    z = (z + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def stream_id(name: str) -> int:
    """A stable 64-bit identifier for a stream name (independent of PYTHONHASHSEED)."""
    return mix(zlib.crc32(name.encode("utf-8")))


def key(*parts: int) -> int:
    """Fold integers into one 64-bit key; order matters."""
    z = 0
    for part in parts:
        z = mix(z ^ (part & _MASK))
    return z


def extend(prefix: int, *parts: int) -> int:
    """Fold more integers into a key: ``extend(key(a, b), c, d) == key(a, b, c, d)``.

    A key whose first parts are fixed for a run (its seed and stream) is folded once and
    extended per task, with :func:`mix` inlined.
    """
    z = prefix
    for part in parts:
        z = ((z ^ (part & _MASK)) + _GOLDEN) & _MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        z ^= z >> 31
    return z


# -- the keys of a run, a task, a step execution and a tool call --------------------------

S_TASK = stream_id("task")
S_TRANSPORT = stream_id("call:transport_retry")
S_BRANCH = stream_id("task:branch")


def run_key(seed: int) -> int:
    """The key every per-task key of the run with ``seed`` hangs from."""
    return key(seed, S_TASK)


def task_key(run: int, task_id: int) -> int:
    """The key of one task (``run`` is :func:`run_key` of the seed)."""
    return mix(run ^ task_id)


def step_key(task: int, step: int, execution: int) -> int:
    """The key of the ``execution``-th execution (1-based) of step ``step`` of a task."""
    return mix(task ^ (step << 40) ^ execution)


def call_key(step: int, item: int) -> int:
    """The key of item ``item``'s tool call in one step execution (an XOR, not a mix: it is on every call)."""
    return step ^ (item << 32)


def transport_key(call: int, n: int) -> int:
    """The key of the ``n``-th try (1-based count of retries) the transport layer makes of a call."""
    return mix(call ^ (S_TRANSPORT + n))


def layer_key(request: int, layer: int, n: int) -> int:
    """The key of the ``n``-th retry that transport layer ``layer`` (1 and up; 0 is :func:`transport_key`'s)
    makes of a request, from the request's key: each retry's tries below it draw from it."""
    return key(request, S_TRANSPORT, layer, n)


def layer_stream(layer: int) -> int:
    """The stream of transport layer ``layer``'s jitter draws (:data:`S_TRANSPORT` for layer 0)."""
    return S_TRANSPORT if layer == 0 else key(S_TRANSPORT, layer)


def persistent_key(task: int, step: int, item: int = 0, source: int = 0) -> int:
    """The key of a fault that hits every execution alike: no execution number in it.

    A fault of a task's step leaves ``item`` at 0, one of an item leaves ``source`` at 0
    (the item's original source; each alternative source has its own key).
    """
    return mix(task ^ (step << 40) ^ (item << 32) ^ (source << 16))


def dependency_key(seed: int, worker: int, tool: str) -> int:
    """The key of a tool on a worker for the whole run (a missing dependency)."""
    return key(seed, worker, stream_id(tool))


def branch_of(task: int, branches: int) -> int:
    """The shared branch a task pushes to, of ``branches``."""
    return mix(task ^ S_BRANCH) % branches


def uniform(k: int) -> float:
    """A uniform float in [0, 1) from a key."""
    # mix() inlined (here and below): these run several times per tool call, and a
    # Python call costs as much as the arithmetic.  Same numbers as mix().
    z = (k + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) * _TWO_POW_MINUS_53


def draw(k: int, stream: int) -> float:
    """The uniform draw of one named stream for an already-folded key."""
    z = ((k ^ stream) + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) * _TWO_POW_MINUS_53


_BOX_MULLER_PARTNER = 0x5851F42D4C957F2D
"""XORed into a stream to give the second uniform of a Box-Muller pair."""


def normal(k: int, stream: int) -> float:
    """A standard normal draw (Box-Muller) for a key and stream.

    The same number as ``sqrt(-2 ln u1) cos(2 pi u2)`` with ``u1 = draw(k, stream)``
    (0 replaced by 2**-53) and ``u2 = draw(k, stream ^ partner)``, with both draws inlined.
    """
    z = ((k ^ stream) + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    u1 = ((z ^ (z >> 31)) >> 11) * _TWO_POW_MINUS_53 or _TWO_POW_MINUS_53
    z = ((k ^ stream ^ _BOX_MULLER_PARTNER) + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    u2 = ((z ^ (z >> 31)) >> 11) * _TWO_POW_MINUS_53
    return _sqrt(-2.0 * _log(u1)) * _cos(_TWO_PI * u2)


def normal_pair(k: int, stream: int) -> tuple[float, float]:
    """Two independent standard normals from one key: both halves of one Box-Muller transform.

    ``r cos t`` and ``r sin t`` with ``r = sqrt(-2 ln u1)``, ``t = 2 pi u2``, and ``u1`` and
    ``u2`` the high and low 32 bits of one SplitMix64 output (``u1`` never 0).  One mix and
    one logarithm for two normals, against two mixes and a logarithm for each from
    :func:`normal`: a tool call needs two (its latency and its duration).  32-bit
    uniforms put the smallest ``u1`` at 2**-32, so ``|z|`` stays below 6.7; a normal
    beyond that comes once in about 4e10 draws.
    """
    z = ((k ^ stream) + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    r = _sqrt(-2.0 * _log(((z >> 32) + 1) * _TWO_POW_MINUS_32))
    t = _TWO_PI * (z & 0xFFFFFFFF) * _TWO_POW_MINUS_32
    return r * _cos(t), r * _sin(t)


_TWO_POW_MINUS_32 = 2.0**-32
_sqrt, _log, _cos, _sin = math.sqrt, math.log, math.cos, math.sin
_TWO_PI = 2.0 * math.pi
