"""Vector indexes as a sweep dimension: LanceDB's IVF and HNSW variants, and what they cost in recall.

A configuration's ``vector_index`` is

* ``auto`` (the default, :data:`hepwb.defaults.VECTOR_INDEX`): exact search, and on tables of
  :data:`~hepwb.index.chunk_store.ANN_MIN_ROWS` chunks or more the HNSW index
  :mod:`hepwb.index.chunk_store` builds;
* ``exact``: always flat (brute-force) search;
* one of :data:`INDEX_TYPES` (``ivf_flat``, ``ivf_sq``, ``ivf_pq``, ``ivf_hnsw_sq``, ``ivf_hnsw_pq``) with
  build options (``partitions``, ``sub_vectors``, ``m``, ``ef_construction``) and query options
  (``nprobes``, ``ef``, ``refine_factor``); in a sweep file ``{name: ivf_pq, partitions: 64, nprobes: 16}``.
  Each option's range is a :class:`~hepwb.limits.Bound` (``limits.PARTITIONS``, ``limits.NPROBES``, …).

An approximate index lives in an *ANN table* beside the chunk table, ``<table>__ann-<key>``, holding the
chunk ids and vectors with that index. It is built once per build configuration (under the table's lock,
complete when its marker holds its key) and shared by every cell with those build options; query options
are per cell. Dense search (``dense`` and the dense branch of the hybrid retrievers) asks the ANN table
for the nearest chunk ids and reads their rows from the chunk table. Every such cell also measures the
index against exact search on its own questions (:func:`ann_quality`: recall@10, p50/p95 latency).

Example:
    >>> VectorIndex.of("ivf_pq", {"partitions": 16, "nprobes": 8}).approximate
    True
    >>> VectorIndex.of("ivf_flat", {"ef": 50})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: vector_index ivf_flat has no option 'ef' (it applies to ...
    >>> VectorIndex.of("ivf_pq", {"nprobes": 0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: vector index 'ivf_pq': nprobes is ... from 1 to 65536, got 0 (e.g. 16)
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from hepwb import defaults, limits
from hepwb.components.options import bound_check, problem_lines
from hepwb.exceptions import ConfigError
from hepwb.files.io import read_json_object, write_json
from hepwb.index.lance import connect, replace_table, table_lock
from hepwb.text.ids import code_fingerprint, short_hash

__all__ = ["INDEX_TYPES", "KINDS", "AnnTable", "VectorIndex", "ann_quality", "with_vector_index"]

INDEX_TYPES: dict[str, str] = {
    "ivf_flat": "IvfFlat",
    "ivf_sq": "IvfSq",
    "ivf_pq": "IvfPq",
    "ivf_hnsw_sq": "IvfHnswSq",
    "ivf_hnsw_pq": "IvfHnswPq",
}
"""Approximate index types → their ``lancedb.index`` class."""

KINDS = ("auto", "exact", *INDEX_TYPES)
"""Every ``vector_index`` value."""

_OPTIONS: dict[str, tuple[str, ...]] = {
    "partitions": tuple(INDEX_TYPES),
    "sub_vectors": ("ivf_pq", "ivf_hnsw_pq"),
    "m": ("ivf_hnsw_sq", "ivf_hnsw_pq"),
    "ef_construction": ("ivf_hnsw_sq", "ivf_hnsw_pq"),
    "nprobes": tuple(INDEX_TYPES),
    "ef": ("ivf_hnsw_sq", "ivf_hnsw_pq"),
    "refine_factor": tuple(INDEX_TYPES),
}
_BUILD = ("partitions", "sub_vectors", "m", "ef_construction")
RECALL_AT = 10
"""Recall of an approximate index is measured on this many nearest chunks."""


class VectorIndex(BaseModel):
    """A vector index configuration (see the module docstring).

    ``None`` options take LanceDB's defaults or, for ``partitions``, about √rows and, for
    ``sub_vectors``, dimension / 16.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = defaults.VECTOR_INDEX
    partitions: Annotated[int, bound_check(limits.PARTITIONS)] | None = None
    sub_vectors: Annotated[int, bound_check(limits.SUB_VECTORS)] | None = None
    m: Annotated[int, bound_check(limits.HNSW_M)] | None = None
    ef_construction: Annotated[int, bound_check(limits.EF_CONSTRUCTION)] | None = None
    nprobes: Annotated[int, bound_check(limits.NPROBES)] | None = None
    ef: Annotated[int, bound_check(limits.EF)] | None = None
    refine_factor: Annotated[int, bound_check(limits.REFINE_FACTOR)] | None = None

    @classmethod
    def of(cls, kind: str, options: dict[str, Any] | None = None) -> VectorIndex:
        """Validate ``kind`` and its ``options``; one line naming the bad one and the choices."""
        options = dict(options or {})
        if kind not in KINDS:
            msg = f"vector_index {kind!r} is not known; choose one of {', '.join(KINDS)}"
            raise ConfigError(msg)
        mine = [o for o, kinds in _OPTIONS.items() if kind in kinds]
        for name in options:
            if name not in mine:
                where = f" (it applies to {', '.join(_OPTIONS[name])})" if name in _OPTIONS else ""
                have = f"its options: {', '.join(mine)}" if mine else "it takes no options"
                msg = f"vector_index {kind} has no option {name!r}{where}; {have}"
                raise ConfigError(msg)
        try:
            return cls(kind=kind, **options)
        except ValidationError as exc:
            raise ConfigError("\n".join(problem_lines("vector index", kind, exc))) from None

    @property
    def approximate(self) -> bool:
        """Whether this is one of :data:`INDEX_TYPES` (searched through an ANN table)."""
        return self.kind in INDEX_TYPES

    def build_key(self) -> str:
        """Key of the ANN table: the type, the build options and the index code."""
        build = {o: getattr(self, o) for o in _BUILD if getattr(self, o) is not None}
        return short_hash({"kind": self.kind, **build, "code": code_fingerprint("index")}, 10)

    def lance_config(self, rows: int, dim: int) -> Any:
        """The ``lancedb.index`` configuration for a table of ``rows`` vectors of dimension ``dim``."""
        import lancedb.index

        cls = getattr(lancedb.index, INDEX_TYPES[self.kind])
        kw: dict[str, Any] = {"distance_type": "cosine"}
        kw["num_partitions"] = self.partitions or max(1, min(rows // 40, round(math.sqrt(rows))))
        if self.kind in _OPTIONS["sub_vectors"]:
            kw["num_sub_vectors"] = self.sub_vectors or max(1, dim // 16)
            if dim % kw["num_sub_vectors"]:
                msg = f"vector_index {self.kind}: sub_vectors {kw['num_sub_vectors']} must divide {dim}"
                raise ConfigError(msg)
        for opt in ("m", "ef_construction"):
            if getattr(self, opt) is not None:
                kw[opt] = getattr(self, opt)
        return cls(**kw)

    def query(self, builder: Any) -> Any:
        """Apply the query options to a LanceDB vector query."""
        if self.nprobes is not None:
            builder = builder.nprobes(self.nprobes)
        if self.ef is not None:
            builder = builder.ef(self.ef)
        if self.refine_factor is not None:
            builder = builder.refine_factor(self.refine_factor)
        return builder


class AnnTable:
    """A chunk table whose dense search goes through its ANN table; everything else is the chunk table's.

    Args:
        table: The LanceDB chunk table.
        ann: Its ANN table (chunk ids and vectors with the index); ``None``: exact search.
        index: The index configuration (its query options are applied to every search).
    """

    def __init__(self, table: Any, ann: Any | None, index: VectorIndex) -> None:
        self.table = table
        self.ann = ann
        self.index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)

    def nearest(self, vector: Any, k: int) -> list[tuple[str, float]]:
        """``(chunk_id, cosine distance)`` of the ``k`` nearest chunks by the index (or exact search)."""
        if self.ann is None:
            q = self.table.search(vector, vector_column_name="vector").metric("cosine").bypass_vector_index()
        else:
            q = self.index.query(self.ann.search(vector, vector_column_name="vector").metric("cosine"))
        rows = q.select(["chunk_id", "_distance"]).limit(k).to_arrow()
        return list(
            zip(rows.column("chunk_id").to_pylist(), rows.column("_distance").to_pylist(), strict=True)
        )

    def exact(self, vector: Any, k: int) -> list[str]:
        """Chunk ids of the ``k`` nearest chunks by exact (flat) search."""
        q = self.table.search(vector, vector_column_name="vector").metric("cosine").bypass_vector_index()
        return list(q.select(["chunk_id", "_distance"]).limit(k).to_arrow().column("chunk_id").to_pylist())


def _marker(db_path: Path, name: str) -> Path:
    return db_path / "_complete" / f"{name}.json"


def _complete(db_path: Path, name: str, key: str) -> bool:
    try:
        return (
            bool(read_json_object(_marker(db_path, name), "completion marker").get("key") == key)
            and (db_path / f"{name}.lance").is_dir()
        )
    except (OSError, ValueError):
        return False


def with_vector_index(table: Any, index: VectorIndex) -> Any:
    """``table`` searched through ``index``: the table itself for ``auto``, else an :class:`AnnTable`.

    The ANN table is built on first use (one process builds, the others wait and reuse it).
    """
    if index.kind == "auto":
        return table
    if not index.approximate:
        return AnnTable(table, None, index)
    db_path = Path(str(table.uri)).parent
    key = index.build_key()
    name = f"{table.name}__ann-{key}"
    db = connect(db_path)
    if not _complete(db_path, name, key):
        with table_lock(db_path, name, f"vector index {name}"):
            if not _complete(db_path, name, key):
                _build(db, db_path, table, name, key, index)
    return AnnTable(table, db.open_table(name), index)


def _build(db: Any, db_path: Path, table: Any, name: str, key: str, index: VectorIndex) -> None:
    rows = table.count_rows()
    data = table.search().select(["chunk_id", "vector"]).limit(max(rows, 1)).to_arrow()
    dim = len(data.column("vector")[0]) if rows else 0
    if rows < 2:
        msg = f"vector_index {index.kind}: table {table.name} has {rows} chunk(s); an index needs 2 or more"
        raise ConfigError(msg)
    ann = replace_table(db, name, data)
    t0 = time.perf_counter()
    try:
        ann.create_index("vector", config=index.lance_config(rows, dim), replace=True)
    except (RuntimeError, ValueError) as exc:  # LanceDB's training errors
        msg = f"vector_index {index.kind} cannot be built on {rows} chunks: {str(exc).splitlines()[0][:200]}"
        raise ConfigError(msg) from None
    indexed = sum(int(getattr(i, "num_indexed_rows", 0) or 0) for i in ann.list_indices())
    if indexed < rows:  # LanceDB leaves rows it could not train on (PQ: fewer than 256) to flat search
        msg = (
            f"vector_index {index.kind}: LanceDB indexed {indexed} of the {rows} chunks of {table.name} "
            "(product quantisation trains on 256 or more); use exact or ivf_flat/ivf_sq for so few chunks"
        )
        raise ConfigError(msg)
    write_json(
        _marker(db_path, name), {"key": key, "rows": rows, "build_s": round(time.perf_counter() - t0, 3)}
    )


def ann_quality(table: Any, vectors: np.ndarray, k: int = RECALL_AT) -> dict[str, float]:
    """Recall@``k`` of an :class:`AnnTable`'s index against exact search, and both searches' latency.

    ``vectors`` are the query vectors; latencies are p50/p95 in ms; ``{}`` for any other table.

    These go to the run record's ``costs`` (``ann_recall@10``, ``ann_p50_ms``, ``ann_p95_ms``,
    ``exact_p50_ms``, ``exact_p95_ms``).
    """
    if not isinstance(table, AnnTable) or table.ann is None or not len(vectors):
        return {}
    table.nearest(vectors[0], k)  # warm-up: the index is loaded on the first search
    table.exact(vectors[0], k)
    recall, t_ann, t_exact = [], [], []
    for v in vectors:
        t0 = time.perf_counter()
        got = [c for c, _ in table.nearest(v, k)]
        t1 = time.perf_counter()
        truth = table.exact(v, k)
        t2 = time.perf_counter()
        t_ann.append(1000 * (t1 - t0))
        t_exact.append(1000 * (t2 - t1))
        recall.append(len(set(got) & set(truth)) / max(1, len(truth)))
    return {
        f"ann_recall@{k}": round(float(np.mean(recall)), 4),
        "ann_p50_ms": round(float(np.percentile(t_ann, 50)), 3),
        "ann_p95_ms": round(float(np.percentile(t_ann, 95)), 3),
        "exact_p50_ms": round(float(np.percentile(t_exact, 50)), 3),
        "exact_p95_ms": round(float(np.percentile(t_exact, 95)), 3),
    }
