"""Artefacts in object storage: the store URL in force, publication with a manifest written last, leases.

Typical use::

    from hepwb.store import ArtefactStore, resolve_store
    url = resolve_store()                    # --store, $HEPWB_STORE or hepwb-store.json; None: local disk
    store = ArtefactStore(url)
    store.publish("chunkset", key, {"data/processed/chunksets/x/chunks.parquet": path})
    store.fetch("chunkset", key, scratch)    # verified, completion markers last
"""

from __future__ import annotations

from hepwb.store.lease import lease
from hepwb.store.objects import ArtefactStore, StoreError, store_problem
from hepwb.store.s3 import s3_storage_options
from hepwb.store.url import STORE_FILE, check_store_url, resolve_store

__all__ = [
    "STORE_FILE",
    "ArtefactStore",
    "StoreError",
    "check_store_url",
    "lease",
    "resolve_store",
    "s3_storage_options",
    "store_problem",
]


def __dir__() -> list[str]:
    return __all__
