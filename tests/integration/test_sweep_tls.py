"""A sweep's LocalCluster speaks mutual TLS with its own credentials: no other client can run code there."""

from __future__ import annotations

import time

import pytest

from hepwb.sweep.executors.dask import DaskExecutor


def _pid() -> int:
    import os

    return os.getpid()


def _tls_without_a_certificate(port: int) -> bytes:
    """What the scheduler answers a TLS client that trusts anything but shows no certificate (nothing)."""
    import socket
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            ctx.wrap_socket(raw) as tls,
        ):
            tls.sendall(b"\x00" * 64)
            return tls.recv(1024)  # the server refuses the handshake: an error or the connection closed
    except (ssl.SSLError, ConnectionError):
        return b""


def test_a_client_without_the_credentials_cannot_run_code_in_the_workers():
    from distributed import Client
    from distributed.security import Security

    with DaskExecutor(n_workers=1) as ex:
        address = ex.client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert ex.result(ex.submit(_pid)) > 0  # the sweep's own client works
        port = address.rsplit(":", 1)[1]
        for target, security in (
            (f"tcp://127.0.0.1:{port}", None),  # plain TCP to the TLS port
            (address, Security.temporary()),  # TLS with credentials of another CA
        ):
            start = time.perf_counter()
            with pytest.raises((OSError, TimeoutError)):
                Client(target, timeout="3s", security=security).run(_pid)
            assert time.perf_counter() - start < 20, target
        assert not _tls_without_a_certificate(int(port))
        workers = list(ex.client.scheduler_info()["workers"])
        assert workers and all(w.startswith("tls://127.0.0.1:") for w in workers)
        start = time.perf_counter()
        with pytest.raises((OSError, TimeoutError, ValueError)):  # a worker's port: the same
            Client(workers[0].replace("tls://", "tcp://"), timeout="3s").run(_pid)
        assert time.perf_counter() - start < 20
        assert ex.result(ex.submit(_pid)) > 0
