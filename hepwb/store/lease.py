"""A lease in the artefact store: one builder of an expensive artefact at a time, across machines.

``fcntl`` locks (:mod:`hepwb.files.locks`) do not reach across machines that share no file system. A lease is
an object ``locks/<name>.json`` created with a conditional write (``If-None-Match: *``, which AWS S3 and
SeaweedFS honour): the process whose write succeeds holds it; the others wait, polling, and build nothing.
A lease carries its holder (host and process) and its expiry, renewed by the holder while it builds: one
whose holder was killed is taken over at once when that process ran on this machine and is gone, else once
it has expired (:data:`LEASE_S` after its last renewal), so a task that Dask retries after its worker was
killed does not wait behind the dead worker's lease.

Leases only save duplicate work. Correctness does not rest on them: artefacts are published under prefixes
of their own with the manifest written last by a conditional write, so two builders that both go ahead
(an expired lease taken over by two at once) publish one artefact and never a mix (:mod:`.objects`).

Example:
    >>> import tempfile
    >>> from hepwb.store.objects import ArtefactStore
    >>> store = ArtefactStore(f"file://{tempfile.mkdtemp()}")
    >>> with lease(store, "table-x", "table x"):
    ...     store.cat("locks/table-x.json") is not None
    True
    >>> store.cat("locks/table-x.json") is None  # released
    True
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hepwb.exceptions import CatalogBusyError
from hepwb.files.locks import WAIT_S
from hepwb.files.publish import pid_alive
from hepwb.store.objects import ArtefactStore

__all__ = ["LEASE_S", "lease"]

_log = logging.getLogger("hepwb.store")

LEASE_S = 120.0
"""Seconds a lease lasts after its last renewal (the holder renews it every third of that while it builds)."""
_POLL_S = 1.0


def _dead(held: dict[str, object]) -> bool:
    """Whether the lease's holder was a process of this machine that no longer exists."""
    host, _, pid = str(held.get("holder", "")).rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not pid_alive(int(pid))


@contextmanager
def lease(store: ArtefactStore, name: str, what: str, *, ttl_s: float = LEASE_S) -> Iterator[None]:
    """Hold the lease ``name`` while building ``what``; wait (one log line) while another process holds it."""
    rel = f"locks/{name}.json"
    me = f"{socket.gethostname()}:{os.getpid()}"
    wait_s = float(os.environ.get("HEPWB_BUILD_WAIT_S", WAIT_S))
    start = time.monotonic()
    told = False
    while True:
        body = {"holder": me, "what": what, "expires": time.time() + ttl_s}
        if store.put_if_absent(rel, json.dumps(body).encode()):
            break
        raw = store.cat(rel)
        try:
            held = json.loads(raw or b"{}")
            expires = float(held.get("expires", 0))
        except (ValueError, TypeError, AttributeError):
            held, expires = {}, 0.0
        if raw is not None and (expires < time.time() or _dead(held)):  # its holder died: take it over
            store.delete(rel)
            continue
        if not told:
            _log.warning("waiting for %s, which another process is building (lease %s)", what, store.uri(rel))
            told = True
        if time.monotonic() - start > wait_s:
            msg = (
                f"{what} has been built by another process for over {wait_s:.0f} s (lease {store.uri(rel)}); "
                "let it finish, or delete that object and run again"
            )
            raise CatalogBusyError(msg)
        time.sleep(_POLL_S)
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(store, rel, me, what, ttl_s, stop), daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        store.delete(rel)


def _renew(store: ArtefactStore, rel: str, me: str, what: str, ttl_s: float, stop: threading.Event) -> None:
    """Push the lease's expiry forward every third of ``ttl_s`` until ``stop`` (a failed renewal retried)."""
    while not stop.wait(ttl_s / 3):
        body = {"holder": me, "what": what, "expires": time.time() + ttl_s}
        with contextlib.suppress(Exception):  # the next renewal tries again; the build goes on meanwhile
            store.put(rel, json.dumps(body).encode())
