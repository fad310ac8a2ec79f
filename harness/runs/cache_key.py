"""What a cached run is keyed by: the resolved world, the arm, the seed and the code that ran it.

A run is a pure function of (scenario as validated, policy spec, error format, seed, code):
:func:`run_key` digests all of them, so a stored result is served only to a run that would
have produced it byte for byte.  The code is the installed fleetchaos sources (every ``.py``
file of the package and of its simulated world: :func:`code_digest`), the versions of the
libraries that shape a result, and the Python version.  A policy or error format loaded
from outside fleetchaos (an import path ``pkg.module:Name`` or an installed entry point)
enters the key by the digest of its own package's sources (:func:`module_digest`); one
whose origin cannot be read (a package too large to digest, a module without source) makes
the run uncacheable: :func:`run_key` returns None and the run is made afresh.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "KEY_VERSION",
    "code_digest",
    "job_keys",
    "module_digest",
    "origin_digest",
    "outside_module",
    "run_key",
    "scenario_digest",
    "source_digest",
]

#: Bumped whenever what a key covers, or what an entry stores, changes meaning.
KEY_VERSION = 1
#: Libraries whose version can move a result (the engine, validation, the workload's names,
#: a tenacity configuration's translation).
_LIBRARIES = ("simpy", "pydantic", "pydantic-core", "faker", "tenacity")
#: A user package larger than this is not digested (its runs are not cached).
_MAX_SOURCE_FILES = 2000
_MAX_SOURCE_BYTES = 64 * 1024 * 1024


def source_digest(roots: Iterable[Path]) -> str | None:
    """The sha256 of every ``.py`` file under ``roots`` (path relative to its root, then its bytes).

    None when there are more than :data:`_MAX_SOURCE_FILES` files or bytes than
    :data:`_MAX_SOURCE_BYTES`, or one cannot be read.
    """
    digest = hashlib.sha256()
    files = total = 0
    for root in roots:
        paths = sorted(root.rglob("*.py")) if root.is_dir() else [root]
        for path in paths:
            if "__pycache__" in path.parts:
                continue
            files += 1
            try:
                data = path.read_bytes()
            except OSError:
                return None
            total += len(data)
            if files > _MAX_SOURCE_FILES or total > _MAX_SOURCE_BYTES:
                return None
            name = path.relative_to(root).as_posix() if root.is_dir() else path.name
            digest.update(f"{name}\0{len(data)}\0".encode())
            digest.update(data)
    return digest.hexdigest()


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "-"


@functools.cache
def code_digest() -> str:
    """The digest of the code a run executes: fleetchaos's sources, its libraries' versions, Python's.

    Computed once per process (about 10 ms).  Any change to any source file of the
    package (the simulated world, the policies, the result computation, and the rest)
    gives another digest, so no result made by other code is ever served.
    """
    import fleetchaos
    import fleetchaos.sim

    roots = [Path(fleetchaos.__file__).parent, Path(fleetchaos.sim.__file__).parent]
    sources = source_digest(roots)
    if sources is None:  # our own package is small: this means a file could not be read
        sources = "unreadable"
    parts = {
        "fleetchaos": _version("fleetchaos"),
        "sources": sources,
        "python": ".".join(map(str, sys.version_info[:3])) + sys.implementation.name,
        **{name: _version(name) for name in _LIBRARIES},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def module_digest(module_name: str) -> str | None:
    """The digest of the sources a user module runs: its whole top-level package, or its own file.

    The module is imported (as resolving the policy or format would).  None when it cannot
    be imported, has no source file, or its package is too large to digest.
    """
    try:
        module = importlib.import_module(module_name)
    except Exception:  # resolving it reports the error; here it only means "not cacheable"
        return None
    top = module_name.partition(".")[0]
    top_module = sys.modules.get(top, module)
    top_file = getattr(top_module, "__file__", None)
    if top_file and Path(top_file).name == "__init__.py":
        roots = [Path(top_file).parent]
    else:
        paths = list(getattr(top_module, "__path__", ()) or ())
        if paths:  # a namespace package: its folders
            roots = [Path(p) for p in paths]
        elif getattr(module, "__file__", None):
            roots = [Path(module.__file__)]  # type: ignore[arg-type]  # checked just above: not None
        else:
            return None
    if any(p.suffix not in ("", ".py") for p in roots):  # a compiled extension: its source is not at hand
        return None
    return source_digest(roots)


def outside_module(kind: str, name: str) -> tuple[bool, str | None]:
    """(is outside fleetchaos, its module) for a ``policy`` or ``format`` name; (True, None): origin unknown."""
    if kind == "policy":
        from fleetchaos.policies.registry import ENTRY_POINT_GROUP, POLICIES
        from fleetchaos.policies.spec import PolicySpecError, parse_spec

        try:
            name = parse_spec(name).name
        except PolicySpecError:
            return True, None
        return _origin(name, POLICIES, ENTRY_POINT_GROUP)
    from fleetchaos.sim.formats.registry import ENTRY_POINT_GROUP as FORMATS_GROUP
    from fleetchaos.sim.formats.registry import builtin_formats

    return _origin(name, builtin_formats(), FORMATS_GROUP)


def _origin(name: str, builtins: Iterable[str], group: str | None) -> tuple[bool, str | None]:
    if name in builtins:
        return False, None
    if ":" in name:
        return True, name.partition(":")[0]
    if group is not None:
        found = [ep for ep in importlib.metadata.entry_points(group=group) if ep.name == name]
        if len(found) == 1:
            return True, found[0].module
    return True, None


def origin_digest(kind: str, name: str) -> str | None:
    """'' for a built-in policy or format, a digest for one from outside fleetchaos, None if unknown.

    Not memoised across calls: a user module edited (and reloaded) in a long-lived process
    must give a new digest.
    """
    outside, module = outside_module(kind, name)
    if not outside:
        return ""
    return None if module is None else module_digest(module)


def scenario_digest(scenario: Scenario) -> str:
    """The digest of a scenario as validated (every default filled in, every ``--param`` applied)."""
    doc = scenario.model_dump(mode="json")
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def run_key(
    scenario: str,
    policy: str,
    errors: str,
    seed: int,
    *,
    scenario_ref: str | None,
    params: Sequence[tuple[str, Any]] = (),
    trace_label: str | None = None,
    origins: dict[tuple[str, str], str | None] | None = None,
) -> str | None:
    """The key of one run (``scenario`` is :func:`scenario_digest`), or None if it must not be cached.

    ``scenario_ref`` and ``params`` are in the key because the result records them (its
    replay command); ``trace_label`` is the timeline's label of a traced run (None: untraced).
    ``origins`` memoises :func:`origin_digest` over the runs of one batch.
    """
    origins = {} if origins is None else origins
    extra = []
    for kind, name in (("policy", policy), ("format", errors)):
        if (kind, name) not in origins:
            origins[(kind, name)] = origin_digest(kind, name)
        origin = origins[(kind, name)]
        if origin is None:
            return None
        extra.append(origin)
    from fleetchaos.scenario.params import format_value

    doc = {
        "v": KEY_VERSION,
        "code": code_digest(),
        "scenario": scenario,
        "ref": scenario_ref,
        "params": [[path, format_value(value)] for path, value in params],
        "policy": policy,
        "errors": errors,
        "seed": seed,
        "origins": extra,
        "trace": trace_label,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def job_keys(variants: Sequence[Any], jobs: Sequence[Any]) -> list[str | None]:
    """Each :class:`~fleetchaos.runs.variant.RunJob`'s key (None: not cacheable), as ``run_one`` computes it for its variant."""
    digests: dict[int, str] = {}
    origins: dict[tuple[str, str], str | None] = {}
    keys: list[str | None] = []
    for job in jobs:
        variant = variants[job.variant]
        if job.variant not in digests:
            digests[job.variant] = scenario_digest(variant.scenario)
        keys.append(
            run_key(
                digests[job.variant],
                variant.policy_spec(job.policy),
                job.errors,
                job.seed,
                scenario_ref=variant.ref,
                params=variant.scenario_params,
                origins=origins,
            )
        )
    return keys
