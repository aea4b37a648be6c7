"""The embedding cache: one LanceDB table per model, keyed by the SHA-256 of each text.

Lookups read only the rows asked for (a filtered scan over a BTREE index on ``key``), never the whole
table. Additions are appends of keys found missing (a sweep has one writer); should two processes add
the same text at once, the duplicate row holds the same vector and lookups keep one.

Example:
    >>> import tempfile, numpy as np
    >>> cache = EmbeddingCache(tempfile.mkdtemp(), "toy-model")
    >>> cache.add({"k1": np.ones(3, np.float32)})
    >>> sorted(cache.lookup(["k1", "k2"])), cache.missing(["k1", "k2"])
    (['k1'], ['k2'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hepwb.index.lance import connect, drop_unfinished, table_lock, table_names
from hepwb.models.embedder import model_slug
from hepwb.models.tokenizers import model_identity

__all__ = ["EmbeddingCache"]

_BATCH = 4000  # keys per filtered lookup
_REINDEX = 5000  # unindexed rows that trigger a BTREE index rebuild


def _quoted(keys: Sequence[str]) -> str:
    return ", ".join("'" + k.replace("'", "''") + "'" for k in keys)


class EmbeddingCache:
    """Vectors of one model by text hash, in the LanceDB database at ``db_path``."""

    def __init__(self, db_path: str | Path, model: str) -> None:
        self.db = connect(db_path)
        self.name = f"embcache__{model_slug(model_identity(model))}"

    def _table(self) -> Any | None:
        if self.name not in table_names(self.db):
            return None
        try:
            return self.db.open_table(self.name)
        except ValueError:  # an interrupted first write: no vectors yet (add() repairs it under its lock)
            return None

    def lookup(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """``{key: vector}`` of the cached ``keys`` (the others are absent)."""
        tbl = self._table()
        wanted = sorted(set(keys))
        out: dict[str, np.ndarray] = {}
        if tbl is None or not wanted:
            return out
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i : i + _BATCH]
            rows = (
                tbl.search()
                .where(f"key IN ({_quoted(part)})")
                .select(["key", "vector"])
                .limit(len(part) * 2)
                .to_arrow()
            )
            if not rows.num_rows:
                continue
            dim = len(rows.column("vector")[0])
            vecs = rows.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, dim)
            out.update(zip(rows.column("key").to_pylist(), vecs.astype(np.float32), strict=True))
        return out

    def missing(self, keys: Sequence[str]) -> list[str]:
        """The ``keys`` not in the cache, sorted and without repeats."""
        have = self.lookup(keys)
        return sorted({k for k in keys if k not in have})

    def add(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Append ``{key: vector}`` (give keys :meth:`missing` returned)."""
        import pyarrow as pa

        if not vectors:
            return
        keys = sorted(vectors)
        mat = np.stack([np.asarray(vectors[k], dtype=np.float32) for k in keys])
        data = pa.table(
            {
                "key": keys,
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(mat.ravel(), pa.float32()), mat.shape[1]
                ),
            }
        )
        tbl = self._table()
        if tbl is None:
            with table_lock(str(self.db.uri), self.name, f"the {self.name} table"):
                if self.name in table_names(self.db) and not drop_unfinished(self.db, self.name):
                    self.db.open_table(self.name).add(data)  # created meanwhile by another process
                    return
                _key_index(self.db.create_table(self.name, data))
            return
        tbl.add(data)
        if self._unindexed(tbl) >= _REINDEX:
            _key_index(tbl)

    @staticmethod
    def _unindexed(tbl: Any) -> int:
        try:
            names = [ix.name for ix in tbl.list_indices() if "key" in ix.columns]
            return int(tbl.index_stats(names[0]).num_unindexed_rows) if names else tbl.count_rows()
        except Exception:  # stats are an optimisation only
            return 0

    def __len__(self) -> int:
        tbl = self._table()
        return 0 if tbl is None else int(tbl.count_rows())


def _key_index(tbl: Any) -> None:
    """(Re)build the BTREE index on the text-hash column."""
    from lancedb.index import BTree

    tbl.create_index("key", config=BTree(), replace=True)
