"""Runs on a team's Dask cluster: TLS, an existing client, user modules shipped, a window that follows the cluster.

* :class:`DaskExecutor` connects to ``--scheduler tcp://HOST:PORT`` or ``tls://HOST:PORT``
  (the TLS settings come from Dask's own configuration: ``distributed.comm.tls.*``, e.g.
  ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE``), or wraps a ``distributed.Client`` the caller
  already has (the Python API: ``compare(..., executor=client)``), which it never closes.
* Its ``workers`` is read from the live cluster (at most once a second), so the window of
  work :func:`fleetchaos.runs.executors.map_chunks` keeps in flight follows an adaptive
  cluster as it grows or shrinks.
* :meth:`DaskExecutor.ship` makes the user's policy and format modules (an import path
  ``pkg.module:Name``) importable on the workers: a module the workers cannot import is
  uploaded (its file, or its top-level package as a zip) through Dask's own upload, which
  also reaches workers that join later; one still not importable is a clear error before
  any run starts.

``distributed`` is imported only here, and only when a cluster is asked for.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from fleetchaos.errors import UserError

__all__ = [
    "DaskExecutor",
    "as_executor",
    "check_scheduler",
    "import_distributed",
    "ship_modules",
    "tls_security",
    "user_modules",
]

R = TypeVar("R")

#: How long the live worker count is trusted before the scheduler is asked again.
_REFRESH_S = 1.0

_TLS_FIX = (
    "give the TLS files in Dask's configuration: DASK_DISTRIBUTED__COMM__TLS__CA_FILE, "
    "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY "
    "(or distributed.comm.tls.ca-file, .client.cert and .client.key in a Dask config file)"
)


def import_distributed() -> ModuleType:
    """The ``distributed`` module, or a user error saying how to install the extra."""
    try:
        import distributed
    except ImportError:
        raise UserError(
            "--scheduler needs Dask distributed, which is not installed; "
            "install the extra with: pip install 'fleetchaos[dask]'"
        ) from None
    return distributed


def check_scheduler(address: str) -> None:
    """A usage error unless ``address`` is ``tcp://HOST:PORT`` or ``tls://HOST:PORT``, checked before anything runs.

    A ``tls://`` address needs Dask's TLS settings (:func:`tls_security`); ``ucx://`` and
    anything else is not supported: each is one message, never a crash.
    """
    from urllib.parse import urlsplit

    fix = "give the scheduler's address as tcp://HOST:PORT or tls://HOST:PORT (see `dask scheduler`)"
    try:
        parts = urlsplit(address.strip())
        port = parts.port
    except ValueError:
        raise UserError(f"--scheduler {address!r}: not an address; {fix}") from None
    if "://" not in address:
        raise UserError(f"--scheduler {address!r}: not an address with a scheme; {fix}")
    if parts.scheme not in ("tcp", "tls"):
        raise UserError(
            f"--scheduler {address!r}: only tcp:// and tls:// schedulers are supported "
            f"(got {parts.scheme or 'no'} scheme); {fix}"
        )
    if not parts.hostname or port is None or parts.path not in ("", "/"):
        raise UserError(f"--scheduler {address!r}: expected {parts.scheme}://HOST:PORT; {fix}")
    if parts.scheme == "tls":
        tls_security(address)  # its settings, checked before anything is stored or started


def tls_security(address: str) -> Any:
    """The ``distributed.Security`` for a ``tls://`` scheduler, from Dask's configuration; a user error if it has none."""
    distributed = import_distributed()
    security = distributed.Security()  # reads distributed.comm.tls.* from Dask's configuration
    missing = [
        name
        for name, value in (
            ("ca-file", security.tls_ca_file),
            ("client.cert", security.tls_client_cert),
        )
        if not value
    ]
    if missing:
        raise UserError(f"--scheduler {address}: a tls:// scheduler needs {' and '.join(missing)}; {_TLS_FIX}")
    for what, path in (
        ("ca-file", security.tls_ca_file),
        ("client.cert", security.tls_client_cert),
        ("client.key", security.tls_client_key),
    ):
        if path and not Path(path).is_file():
            raise UserError(f"--scheduler {address}: distributed.comm.tls.{what} {path}: no such file; {_TLS_FIX}")
    return security


class DaskExecutor(Executor):
    """Runs chunks on a Dask ``distributed`` cluster, through a client it opens or one the caller gives.

    Workers need fleetchaos installed (``pip install 'fleetchaos[dask]'``) and, for speed,
    one thread each (``dask worker ADDRESS --nthreads 1 --nworkers N``): the simulation is
    pure Python, so threads in one worker process share one core.
    """

    def __init__(self, address: str | None = None, *, client: Any = None, timeout_s: float = 10.0):
        distributed = import_distributed()
        self._owned = client is None
        if client is None:
            if address is None:
                raise ValueError("DaskExecutor needs a scheduler address or a client")
            security = tls_security(address) if address.strip().startswith("tls://") else None
            try:
                client = distributed.Client(address, timeout=timeout_s, set_as_default=False, security=security)
            except Exception as exc:  # third-party code: an unreachable or odd address may raise anything
                raise UserError(
                    f"--scheduler {address}: cannot connect to a Dask scheduler ({' '.join(str(exc).split())[:200]}); "
                    "check the address (tcp://HOST:PORT or tls://HOST:PORT), the TLS settings, and that "
                    "`dask scheduler` is running there"
                ) from None
        self.client = client
        self._executor = client.get_executor(pure=False)
        self._closed = False
        self._lock = threading.Lock()
        self._workers, self._checked = 1, -1.0
        self._shipped: set[str] = set()
        self._same_code: bool | None = None

    @property
    def workers(self) -> int:
        """Threads the cluster has now (at least 1), read from the scheduler at most once a second."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= _REFRESH_S:
                self._checked = now
                # A scheduler busy or gone: keep the last count; the runs report the failure.
                with contextlib.suppress(Exception):
                    self._workers = max(1, sum(self.client.nthreads().values()))
            return self._workers

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        """Submit ``fn(*args, **kwargs)`` to the cluster; a ``concurrent.futures`` future."""
        return self._executor.submit(fn, *args, **kwargs)

    def same_code(self) -> bool:
        """Whether every worker up now runs the code this process runs (its run-cache code digest); asked once."""
        if self._same_code is None:
            from fleetchaos.runs.cache_key import code_digest

            try:
                digests = set(self.client.run(_code_digest).values())
            except Exception:  # cannot tell: its results are not stored
                digests = {"unknown"}
            self._same_code = digests <= {code_digest()}
        return self._same_code

    def ship(self, modules: Iterable[str]) -> None:
        """Make ``modules`` (a user's policy and format modules) importable on the workers, or a user error.

        Each module the workers cannot import is uploaded from this machine: a top-level
        module's file, or its top-level package as a zip; workers that join later get it
        too.  Modules shipped once are not checked again.
        """
        todo = sorted({m for m in modules if m} - self._shipped)
        if not todo:
            return
        missing = self._missing(todo)
        for module in sorted({m.partition(".")[0] for m in missing}):
            self._upload(module)
        still = self._missing(todo) if missing else {}
        if still:
            name, problem = next(iter(still.items()))
            raise UserError(
                f"the cluster's workers cannot import {name} ({problem}), a module a policy or error format "
                "of this command needs, and it could not be shipped to them; install it on the workers "
                "(pip install it there) or run without --scheduler"
            )
        self._shipped.update(todo)

    def _missing(self, modules: list[str]) -> dict[str, str]:
        """Modules some worker cannot import, with the first worker's reason (none when no worker is up yet)."""
        try:
            answers = self.client.run(_import_problems, modules)
        except Exception as exc:  # the cluster itself failing: say so, with the module names
            raise UserError(
                f"could not ask the cluster's workers whether they can import {', '.join(modules)} "
                f"({' '.join(str(exc).split())[:200]})"
            ) from None
        out: dict[str, str] = {}
        for problems in answers.values():
            for name, problem in problems.items():
                out.setdefault(name, problem)
        return out

    def _upload(self, top: str) -> None:
        """Upload a top-level module or package of this machine to every worker (and to those joining later)."""
        try:
            module = importlib.import_module(top)
        except Exception as exc:
            raise UserError(f"cannot ship {top} to the cluster: it does not import here either ({exc})") from None
        source = getattr(module, "__file__", None)
        if not source:
            raise UserError(f"cannot ship {top} to the cluster: it has no source file here; install it on the workers")
        path = Path(source)
        if path.name == "__init__.py":  # a package: zipped, as Dask puts a .zip on the workers' sys.path
            folder = Path(tempfile.mkdtemp(prefix="fleetchaos-ship-"))
            archive = folder / f"{top}.zip"
            with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
                for file in sorted(path.parent.rglob("*.py")):
                    if "__pycache__" not in file.parts:
                        zf.write(file, (Path(top) / file.relative_to(path.parent)).as_posix())
            path = archive
        elif path.suffix != ".py":
            raise UserError(f"cannot ship {top} to the cluster: {path.name} is compiled; install it on the workers")
        try:
            self.client.upload_file(str(path), load=True)  # a .zip goes on the workers' sys.path only when loaded
        except Exception as exc:
            raise UserError(f"cannot ship {top} to the cluster ({' '.join(str(exc).split())[:200]})") from None

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Wait for (or cancel) submitted work; close the client if this executor opened it (the cluster keeps running)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._executor.shutdown(wait=wait and not cancel_futures)
        finally:
            if self._owned:
                self.client.close()

    def terminate(self) -> None:
        """Cancel submitted work and disconnect."""
        self.shutdown(wait=False, cancel_futures=True)


def _code_digest() -> str:
    """On a worker: the run-cache digest of the code it runs."""
    from fleetchaos.runs.cache_key import code_digest

    return code_digest()


def _import_problems(modules: list[str]) -> dict[str, str]:
    """On a worker: the modules it cannot import, each with the error's name and message."""
    importlib.invalidate_caches()
    problems = {}
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            problems[name] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
    return problems


def is_dask_client(obj: object) -> bool:
    """Whether ``obj`` is a ``distributed.Client`` (or its ``get_executor()``), without importing Dask."""
    module = type(obj).__module__
    return module.startswith("distributed") and (hasattr(obj, "nthreads") or hasattr(obj, "_client"))


def as_executor(obj: Any) -> Executor:
    """``obj`` as an executor: a ``distributed.Client`` (or its executor) becomes a :class:`DaskExecutor` it keeps."""
    if "distributed" in sys.modules and is_dask_client(obj):
        client = obj if hasattr(obj, "nthreads") else obj._client
        return DaskExecutor(client=client)
    return obj


def user_modules(policies: Iterable[str], errors: Iterable[str]) -> list[str]:
    """The modules outside fleetchaos that the policies and error formats named come from (import paths, entry points)."""
    from fleetchaos.runs.cache_key import outside_module

    found = []
    for kind, names in (("policy", policies), ("format", errors)):
        for name in names:
            _, module = outside_module(kind, name)
            if module:
                found.append(module)
    return sorted(set(found))


def ship_modules(executor: Executor, policies: Sequence[str], errors: Sequence[str]) -> None:
    """Have a cluster's workers import the user modules ``policies`` and ``errors`` come from (see ``DaskExecutor.ship``)."""
    ship = getattr(as_executor(executor), "ship", None)
    if callable(ship):
        ship(user_modules(dict.fromkeys(policies), dict.fromkeys(errors)))
