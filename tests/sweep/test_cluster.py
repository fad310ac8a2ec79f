"""Clusters as teams run them: tls:// schedulers, an existing client, user modules shipped, the --executor hook."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import sys
import textwrap
import threading
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path

import patience
import pytest
from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.errors import UserError
from fleetchaos.runs.executors import SerialExecutor, check_scheduler, map_chunks
from fleetchaos.runs.runner import compare
from fleetchaos.scenario.load import load_scenario


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_tls_schedulers_are_accepted_with_dasks_tls_settings(tmp_path):
    check_scheduler("tcp://10.0.0.5:8786")
    with pytest.raises(UserError, match="only tcp:// and tls://"):
        check_scheduler("ucx://10.0.0.5:8786")
    pytest.importorskip("distributed")
    import dask

    def tls(ca: str | None, cert: str | None) -> dict:
        return {"distributed.comm.tls.ca-file": ca, "distributed.comm.tls.client.cert": cert,
                "distributed.comm.tls.client.key": cert}  # fmt: skip

    with dask.config.set(tls(None, None)):
        with pytest.raises(UserError, match="DASK_DISTRIBUTED__COMM__TLS__CA_FILE"):
            check_scheduler("tls://10.0.0.5:8786")
        refused = cli("compare", "--scenario", "default", "--scheduler", "tls://127.0.0.1:1")
        assert refused.exit_code == 2 and "DASK_DISTRIBUTED__COMM__TLS__CA_FILE" in refused.output
    pem = tmp_path / "cert.pem"
    pem.write_text("a certificate")
    with dask.config.set(tls(str(pem), str(pem))):
        check_scheduler("tls://10.0.0.5:8786")
    with (
        dask.config.set(tls(str(tmp_path / "nope.pem"), str(pem))),
        pytest.raises(UserError, match="nope.pem: no such"),
    ):
        check_scheduler("tls://10.0.0.5:8786")


def test_the_executor_hook_takes_any_concurrent_futures_executor(small, tmp_path):
    args = ("compare", "--scenario", small, "--seeds", "2", "--json", "--no-history", "--no-cache")
    pooled = cli(*args, "--executor", "concurrent.futures:ThreadPoolExecutor")
    serial = cli(*args, "--jobs", "1")
    assert pooled.exit_code == serial.exit_code == 0, pooled.output
    assert pooled.stdout == serial.stdout
    for spec, message in (
        ("nosuch_module_x:x", "cannot import nosuch_module_x"),
        ("os:getcwd", "returned str, not a concurrent.futures.Executor"),
        ("os", "not module:factory"),
    ):
        refused = cli(*args, "--executor", spec)
        assert refused.exit_code == 2 and message in refused.output, refused.output
    both = cli(*args, "--executor", "concurrent.futures:ThreadPoolExecutor", "--scheduler", "tcp://127.0.0.1:1")
    assert both.exit_code == 2 and "give one of them" in both.output


def test_an_error_naming_a_module_attribute_is_printed_as_typed():
    refused = cli("compare", "--scenario", "default", "--executor", "nosuch_module_x:x")
    assert "nosuch_module_x:x:" in refused.output  # not an emoji


class Growing(Executor):
    """A thread pool whose advertised workers grow as work finishes (an adaptive cluster)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(8)
        self.workers = 1
        self.in_flight = self.most = 0
        self.lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)

        def run():
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.in_flight -= 1
                    self.workers = min(4, self.workers + 1)

        return self.pool.submit(run)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def test_the_window_follows_the_executors_size():
    executor = Growing()
    done: list[int] = []
    map_chunks(executor, lambda n: n, range(40), done.append)
    executor.shutdown()
    assert done and sorted(done) == list(range(40))
    assert executor.most > 2  # started with a window of 2 (one worker) and widened as workers joined


def test_an_existing_distributed_client_runs_like_the_local_pool(small):
    distributed = pytest.importorskip("distributed")
    scenario = load_scenario(small)
    serial = compare(scenario, [1, 2], policies=("backoff",), executor=SerialExecutor()).model_dump_json()
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        assert compare(scenario, [1, 2], policies=("backoff",), executor=client).model_dump_json() == serial
        assert client.status == "running"  # the caller's client is left open
        ex = client.get_executor()
        assert compare(scenario, [1, 2], policies=("backoff",), executor=ex).model_dump_json() == serial


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate (its own CA) for 127.0.0.1 and localhost, and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fleetchaos test cluster")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


USER_POLICY = """
from dataclasses import dataclass

from fleetchaos.sim.observation import GiveUp, Retry


@dataclass(frozen=True)
class PatientRetry:
    \"\"\"Retries a failed step up to max_retries times after a fixed wait, then gives up.\"\"\"

    max_retries: int = 2
    wait_s: float = 1.0
    name: str = "patient-retry"

    def decide(self, observation, history):
        if history.retries >= self.max_retries:
            return GiveUp("out of retries")
        return Retry(delay_s=self.wait_s)
"""


@pytest.mark.slow
def test_a_sweep_and_a_tune_on_a_tls_cluster_with_a_user_policy_match_the_local_pool(small, tmp_path):
    """A TLS-secured cluster started here, whose workers lack the team's policy package: same bytes as local processes."""
    pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    certs = tmp_path / "certs"
    certs.mkdir()
    cert, key = _self_signed(certs)
    team = tmp_path / "team"
    (team / "teampolicies").mkdir(parents=True)
    (team / "teampolicies" / "__init__.py").write_text("")
    (team / "teampolicies" / "patient.py").write_text(textwrap.dedent(USER_POLICY))
    tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
    dask = str(Path(sys.executable).with_name("dask"))
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",) and not k.startswith("DASK_")}
    elsewhere = tmp_path / "workers"  # the workers' folder: no teampolicies there nor on their path
    elsewhere.mkdir()
    info = tmp_path / "scheduler.json"
    import subprocess

    scheduler = subprocess.Popen(
        [dask, "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
         "--scheduler-file", str(info), *tls],
        cwd=elsewhere, env=base_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    workers = None
    try:
        patience.until(info.exists, watch=scheduler.pid, what="the scheduler to start")
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tls://")
        workers = subprocess.Popen(
            [dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard", *tls],
            cwd=elsewhere, env=base_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        env = {
            **base_env,
            "PYTHONPATH": str(team),
            "FLEETCHAOS_CACHE": "off",
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(cert),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(cert),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(key),
        }
        fleetchaos = str(Path(sys.executable).with_name("fleetchaos"))
        space = tmp_path / "space.yaml"
        space.write_text(
            "families:\n  teampolicies.patient:PatientRetry:\n    max_retries: {int: [1, 4]}\n"
            "    wait_s: {log: [0.5, 30]}\n  backoff:\n    max_retries: {int: [1, 4]}\n"
        )
        commands = [
            ["sweep", "--scenario", small, "--policies", "teampolicies.patient:PatientRetry,backoff",
             "--errors", "generic", "--param", "fleet.workers=2,3", "--seeds", "2", "--json", "--no-history"],
            ["tune", "--scenario", small, "--errors", "generic", "--space", str(space), "--trials", "4",
             "--train-seeds", "3", "--seeds", "2", "--json"],
        ]  # fmt: skip
        for args in commands:
            local = patience.run(
                [fleetchaos, *args, "--jobs", "2"], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            assert local.returncode == 0, local.stderr
            remote = patience.run(
                [fleetchaos, *args, "--scheduler", address], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            assert remote.returncode == 0, remote.stderr
            assert remote.stdout == local.stdout, args[0]
        # Without the TLS settings the same address is refused before anything runs.
        plain = {k: v for k, v in env.items() if not k.startswith("DASK_")}
        refused = patience.run([fleetchaos, *commands[0], "--scheduler", address], cwd=tmp_path, env=plain,
                               capture_output=True, text=True)  # fmt: skip
        assert refused.returncode == 2 and "DASK_DISTRIBUTED__COMM__TLS__CA_FILE" in refused.stderr
    finally:
        for proc in (workers, scheduler):
            if proc is not None:
                proc.terminate()
                patience.wait(proc)


@pytest.mark.slow
def test_a_module_the_workers_cannot_import_is_named_before_any_run(small, tmp_path, monkeypatch):
    """A policy module that imports something only this machine has: shipping it is not enough, and the error says so."""
    distributed = pytest.importorskip("distributed")
    from fleetchaos.runs.cluster import DaskExecutor

    (tmp_path / "onlyhere_dep.py").write_text("VALUE = 1\n")
    (tmp_path / "needsdep.py").write_text("import onlyhere_dep_missing_on_workers  # noqa\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        if True:
            executor = DaskExecutor(client=client)
            with pytest.raises(UserError, match="cannot ship needsdep|workers cannot import needsdep"):
                executor.ship(["needsdep"])


class Elsewhere(Executor):
    """An executor this process cannot vouch for (another machine's pool): it runs in threads here."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(2)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self.pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def test_only_runs_of_this_code_enter_the_run_cache(small, tmp_path, monkeypatch):
    """Runs from an executor that may run other code are served from the cache but never stored in it."""
    from fleetchaos.runs import cluster
    from fleetchaos.runs.cache import RunCache, using_cache

    scenario = load_scenario(small)
    cache = RunCache(tmp_path / "cache")
    with using_cache(cache):
        elsewhere = Elsewhere()
        first = compare(scenario, [1], policies=("backoff",), executor=elsewhere).model_dump_json()
        elsewhere.shutdown()
        assert (cache.stored, cache.misses) == (0, 2)
        assert compare(scenario, [1], policies=("backoff",), executor=SerialExecutor()).model_dump_json() == first
        assert cache.stored == 2
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(cluster, "_code_digest", lambda: "another version")  # what the workers report
    other = RunCache(tmp_path / "other")
    local = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    with local as dask_cluster, distributed.Client(dask_cluster, set_as_default=False) as client, using_cache(other):
        assert compare(scenario, [1], policies=("backoff",), executor=client).model_dump_json() == first
    assert other.stored == 0
