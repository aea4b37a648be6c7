"""Dense retrieval: cosine similarity of sentence-transformers vectors in LanceDB.

How a chunk longer than the model's window is read (``read``):

* ``first`` - one vector from the chunk's first 256 word pieces (what the model sees of the whole text);
* ``max`` - the chunk's windows (:mod:`hepwb.index.windows`) are searched and a chunk scores its best
  window's similarity, or with ``top_m`` > 1 the mean of its ``top_m`` best windows;
* ``mean`` - one vector per chunk: the normalised mean of its window vectors.

``max`` and ``mean`` need the window tables, which sweeps build for every cell that asks for them
(``ChunkStore.windows`` in Python).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hepwb import defaults
from hepwb.exceptions import ConfigError, RetrieverUnavailableError
from hepwb.index.ann import AnnTable
from hepwb.index.chunk_store import ann_search
from hepwb.models.embedder import Embedder
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.retrieval.options import Count, Read
from hepwb.types import Hit, JSONObject

__all__ = ["READS", "DenseRetriever", "dense_rows"]

READS: tuple[Read, ...] = ("first", "max", "mean")
"""How a chunk longer than the model's window is read (see the module docstring)."""


@register_retriever("dense")
class DenseRetriever:
    """Nearest chunks by cosine similarity of the query embedding.

    Args:
        table: LanceDB chunk table.
        embedder: Query embedder.
        read: ``first``, ``max`` or ``mean`` (see the module docstring).
        top_m: With ``read="max"``: average the chunk's ``top_m`` best windows.
    """

    name = "dense"

    @staticmethod
    def parts(options: JSONObject) -> set[str]:
        """The table parts it reads: the vectors."""
        return {"vector"}

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        read: Read = defaults.DENSE_READ,
        top_m: Count = defaults.TOP_M,
    ) -> None:
        if embedder is None:
            msg = "the dense retriever needs an embedder: get_retriever('dense', table, embedder=...)"
            raise ConfigError(msg)
        self.table = table
        self.embedder = embedder
        self.read = read
        self.top_m = top_m

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` chunks by cosine similarity."""
        rows = dense_rows(self.table, self.embedder.embed([query])[0], k, read=self.read, top_m=self.top_m)

        def why(r: JSONObject, s: float) -> str:
            return f"cosine {s:.3f} ({r['_windows']})" if r.get("_windows") else f"cosine {s:.3f}"

        return rows_to_hits(rows, self.name, "_distance", distance=True, query=query, why=why)


def companion(table: Any, suffix: str) -> Any:
    """The window table ``<table>__windows`` or ``<table>__wmean`` beside ``table`` (with a clear error)."""
    import lancedb

    db = lancedb.connect(str(Path(table.uri).parent))
    try:
        return db.open_table(f"{table.name}{suffix}")
    except (ValueError, FileNotFoundError):
        msg = (
            f"{table.name} has no window tables, which read='max'/'mean' need: sweeps build them for such "
            "cells; in Python call ChunkStore(db, embedder).windows(chunkset_id, chunks)"
        )
        raise RetrieverUnavailableError(msg) from None


def dense_arrow(
    table: Any, vector: Any, k: int, *, read: str = defaults.DENSE_READ, top_m: int = defaults.TOP_M
) -> Any:
    """Nearest-chunk rows for ``vector`` as an Arrow table, best first.

    Columns: the chunk columns, ``_distance`` (cosine distance), ``_rowid`` and, for windowed reads,
    ``_windows`` (how the score was formed). Exact search unless the table has a vector index (large
    tables, see :mod:`hepwb.index.chunk_store`), then HNSW (:func:`~hepwb.index.chunk_store.ann_search`);
    an :class:`~hepwb.index.ann.AnnTable` (a configured ``vector_index``) is searched through its index.
    """
    import pyarrow as pa

    if read == "first" and isinstance(table, AnnTable):  # a configured vector index (or exact search)
        scored = [(c, 1.0 - float(d), "") for c, d in table.nearest(vector, k)]
    elif read == "first":
        q = ann_search(table, vector)
        return q.select([*columns(), "_distance"]).with_row_id(True).limit(k).to_arrow()
    elif read == "mean":
        means = companion(table, "__wmean")
        hits = (
            ann_search(means, vector)
            .select(["chunk_id", "_distance"]).limit(k).to_list()
        )  # fmt: skip
        scored = [(h["chunk_id"], 1.0 - float(h["_distance"]), "mean vector") for h in hits]
    else:
        scored = _window_scores(table, vector, k, top_m)
    ids = [c for c, _, _ in scored]
    if not ids:
        return (
            table.search(vector, vector_column_name="vector")
            .select([*columns(), "_distance"])
            .limit(0)
            .to_arrow()
        )
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    found = (
        table.search().where(f"chunk_id IN ({quoted})").select(columns()).with_row_id(True).limit(len(ids))
    )
    rows = found.to_arrow()
    at = {cid: i for i, cid in enumerate(rows.column("chunk_id").to_pylist())}
    rows = rows.take([at[c] for c in ids])
    rows = rows.append_column("_distance", pa.array([1.0 - s for _, s, _ in scored], pa.float32()))
    return rows.append_column("_windows", pa.array([d for _, _, d in scored], pa.string()))


def dense_rows(
    table: Any, vector: Any, k: int, *, read: str = defaults.DENSE_READ, top_m: int = defaults.TOP_M
) -> list[JSONObject]:
    """:func:`dense_arrow` as a list of row dicts."""
    return dense_arrow(table, vector, k, read=read, top_m=top_m).to_pylist()  # type: ignore[no-any-return]


def _window_scores(table: Any, vector: Any, k: int, top_m: int) -> list[tuple[str, float, str]]:
    """``(chunk_id, score, description)`` of the best chunks by their best (``top_m``) windows."""
    windows = companion(table, "__windows")
    fetch = max(10 * k, 100)
    hits = (
        ann_search(windows, vector)
        .select(["chunk_id", "_distance"]).limit(fetch).to_list()
    )  # fmt: skip
    candidates = list(dict.fromkeys(h["chunk_id"] for h in hits))
    if top_m == 1:
        best: dict[str, float] = {}
        for h in hits:
            best.setdefault(h["chunk_id"], 1.0 - float(h["_distance"]))
        ranked = sorted(best.items(), key=lambda kv: -kv[1])[:k]
        return [(c, s, "best window") for c, s in ranked]
    # the mean of the top m windows needs every window of the candidates: computed exactly here
    quoted = ", ".join("'" + c + "'" for c in candidates)
    rows = (
        windows.search()
        .where(f"chunk_id IN ({quoted})")
        .select(["chunk_id", "vector"])
        .limit(100_000)
        .to_arrow()
    )
    dim = len(rows.column("vector")[0])
    mat = rows.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, dim)
    sims = mat @ np.asarray(vector, dtype=np.float32)
    per: dict[str, list[float]] = {}
    for cid, s in zip(rows.column("chunk_id").to_pylist(), sims.tolist(), strict=True):
        per.setdefault(cid, []).append(s)
    scored = {c: float(np.mean(sorted(v, reverse=True)[:top_m])) for c, v in per.items()}
    ranked = sorted(scored.items(), key=lambda kv: -kv[1])[:k]
    return [(c, s, f"mean of the best {min(top_m, len(per[c]))} windows") for c, s in ranked]
