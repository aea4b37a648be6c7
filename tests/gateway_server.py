"""A real Dask Gateway for the tests: ``dask-gateway-server`` with its local-process backend on 127.0.0.1.

Clusters' schedulers and workers are processes of this machine started by the gateway in working folders
of their own (not the project) with an environment of its whitelist (no ``HEPWB_HOME``), plus the cluster
option ``environment`` a client sends. Basic authentication with a password made here. :func:`gateway`
stops the server (which stops its clusters) when the block ends and checks no process of it is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.s3_server import free_port

__all__ = ["Gateway", "descendants", "gateway"]

BIN = Path(sys.executable).parent

_CONFIG = """
from dask_gateway_server.options import Float, Integer, Mapping, Options

c.DaskGateway.address = "127.0.0.1:{port}"
c.Proxy.address = "127.0.0.1:{proxy}"
c.DaskGateway.backend_class = "dask_gateway_server.backends.local.UnsafeLocalBackend"
c.DaskGateway.authenticator_class = "dask_gateway_server.auth.SimpleAuthenticator"
c.SimpleAuthenticator.password = {password!r}
c.DaskGateway.log_level = "WARN"
c.LocalClusterConfig.clusters_directory = {clusters!r}
c.ClusterConfig.scheduler_cmd = [{dask!r}, "scheduler"]
c.ClusterConfig.worker_cmd = [{dask!r}, "worker"]
c.ClusterConfig.idle_timeout = 600
c.LocalBackend.inherited_environment = ["PATH", "VIRTUAL_ENV", "LANG", "LC_ALL"{extra_env}]


def _options(o):
    return {{
        "worker_cores": o.worker_cores,
        "worker_memory": int(o.worker_memory * 2**30),
        "environment": dict(o.environment),
    }}


c.Backend.cluster_options = Options(
    Integer("worker_cores", 1, min=1, max=2),
    Float("worker_memory", 2.0, min=0.5, max=8.0),
    Mapping("environment", {{}}),
    handler=_options,
)
"""


@dataclass(frozen=True)
class Gateway:
    """A running gateway: its address, scheduler proxy and the password of any user."""

    address: str
    proxy_address: str
    password: str
    pid: int
    clusters: Path

    def dask_config(self, user: str = "physicist") -> dict[str, object]:
        """The ``gateway.*`` Dask configuration a facility's image would hold for it."""
        return {
            "gateway.address": self.address,
            "gateway.proxy-address": self.proxy_address,
            "gateway.auth.type": "basic",
            "gateway.auth.kwargs": {"username": user, "password": self.password},
        }


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children of children included), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def gateway(folder: Path, *, inherit: tuple[str, ...] = (), timeout_s: float = 60.0) -> Iterator[Gateway]:
    """Run ``dask-gateway-server`` (local processes) in ``folder`` for the duration of the block.

    ``inherit``: more variables of this process the clusters' processes get (beside PATH and VIRTUAL_ENV).
    """
    folder.mkdir(parents=True, exist_ok=True)
    port, proxy, password = free_port(), free_port(), secrets.token_hex(12)
    clusters = folder / "clusters"
    clusters.mkdir(exist_ok=True)
    config = folder / "dask_gateway_config.py"
    config.write_text(
        _CONFIG.format(
            port=port,
            proxy=proxy,
            password=password,
            clusters=str(clusters),
            dask=str(BIN / "dask"),
            extra_env="".join(f", {json.dumps(k)}" for k in inherit),
        )
    )
    log = (folder / "gateway.log").open("wb")
    proc = subprocess.Popen(
        [str(BIN / "dask-gateway-server"), "-f", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=folder,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("DASK_")},
    )
    server = Gateway(f"http://127.0.0.1:{port}", f"tls://127.0.0.1:{proxy}", password, proc.pid, clusters)
    try:
        deadline = time.monotonic() + timeout_s
        while not (_answers(port) and _answers(proxy)):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (folder / "gateway.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"dask-gateway-server did not start (exit {proc.poll()}): {tail}")
            time.sleep(0.2)
        yield server
    finally:
        below = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)  # the server stops its clusters, then itself
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while [p for p in below if Path(f"/proc/{p}").exists()] and time.monotonic() < deadline:
            time.sleep(0.2)
        for p in below:  # a cluster process the server failed to stop: stopped here, and reported by the test
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        log.close()
