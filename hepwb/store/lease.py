"""A lease in the artefact store: one builder of an expensive artefact at a time, across machines.

``fcntl`` locks (:mod:`hepwb.locks`) do not reach across machines that share no file system. A lease is
an object ``locks/<name>.json`` created with a conditional write (``If-None-Match: *``, which AWS S3 and
SeaweedFS honour): the process whose write succeeds holds it; the others wait, polling, and build nothing.
A lease carries its expiry, so one whose holder was killed is taken over once it has expired.

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

import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hepwb.exceptions import CatalogBusyError
from hepwb.locks import WAIT_S
from hepwb.store.objects import ArtefactStore

__all__ = ["LEASE_S", "lease"]

_log = logging.getLogger("hepwb.store")

LEASE_S = 3600.0
"""Seconds a lease lasts; a holder killed before releasing it blocks the others this long at most."""
_POLL_S = 1.0


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
            expires = 0.0
        if raw is not None and expires < time.time():  # its holder died: take it over
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
    try:
        yield
    finally:
        store.delete(rel)
