"""LanceDB storage: chunk tables with full-text and vector indexes, and an embedding cache.

One table per (chunk set, embedding model), holding per chunk its text, vector and metadata
(document, label, title, arXiv id, pages, section path, offsets, the reader's context span and
text), the HEP search terms of :func:`~hepwb.models.analyzer.search_terms` and the HEP entities of
:class:`~hepwb.models.entities.EntityExtractor`. Two full-text indexes: ``text`` (LanceDB's simple
tokenizer), ``search_text`` (HEP terms) and ``search_context`` (HEP terms of the paper title, section path and
text). Tables of ``ann_min_rows`` chunks or more also get an
``IVF_HNSW_SQ`` vector index (cosine); smaller ones are searched exactly.

The embedding cache (:mod:`hepwb.index.cache`) is keyed by (model, SHA-256 of the text) so no text is
embedded twice. A table is complete when its marker ``_complete/<table>.json`` holds its index key.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hepwb.exceptions import CorpusNotFoundError
from hepwb.files.io import read_json_object, write_json
from hepwb.index.cache import EmbeddingCache
from hepwb.index.lance import connect, replace_table, table_lock, table_names
from hepwb.index.lexicon import corpus_lexicon, save_lexicon
from hepwb.index.parts import (
    COLUMNS,
    PARTS,
    has_vectors,
    missing_parts,
    part_udf,
    present_parts,
    table_marker,
)
from hepwb.index.windows import build_window_tables, windows_complete, windows_key
from hepwb.models.analyzer import search_terms
from hepwb.models.embedder import Embedder, model_slug
from hepwb.models.tokenizers import model_identity
from hepwb.ner.source import EntitySource, LocalNER, ner_source
from hepwb.runtime.env import release_memory
from hepwb.text.ids import code_fingerprint, short_hash, text_sha256
from hepwb.types import Chunk, Document, JSONObject, one_at_a_time

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa


__all__ = [
    "ANN_EF",
    "ANN_EF_CONSTRUCTION",
    "ANN_MIN_ROWS",
    "ANN_NPROBES",
    "ANN_PARTITION_ROWS",
    "TABLE_SLICE",
    "ChunkStore",
    "ann_partitions",
    "ann_search",
    "build_indexes",
    "chunk_arrow",
    "has_vectors",
    "index_complete",
    "index_key",
    "open_chunk_table",
    "table_name",
]

ANN_MIN_ROWS = 20_000
"""Tables with at least this many chunks get an approximate (HNSW) vector index."""

TABLE_SLICE = 8192
"""Chunks embedded, tagged and written to a new table at a time."""

ANN_EF = 300
"""HNSW search breadth: ANN recall@10 0.93-0.96 against exact search at 100k chunks, ~4 ms
(``bench/bench_retrieval.py``; LanceDB's default reaches about 0.58 there). Ignored by exact search."""

ANN_PARTITION_ROWS = 10_000
"""Rows per IVF partition of the default vector index. Each partition holds its own HNSW graph, so
bounding the partition keeps the build linear in the table: at 140,950 chunks 15 partitions build in
33 s with recall@10 0.94, where 2 partitions took 58 s with recall@10 0.67 (scale-up corpus)."""

ANN_EF_CONSTRUCTION = 150
"""HNSW build breadth of the default vector index (LanceDB's default 300): at 140,950 chunks in 15
partitions it builds in 26 s instead of 35 s at the same recall@10 (0.93 on 200 chunk vectors)."""

ANN_NPROBES = 64
"""Partitions searched per query: all of them up to 640,000 chunks (LanceDB's default is 20)."""


def table_name(chunkset_id: str, model: str) -> str:
    """Name of the table holding ``chunkset_id`` embedded with ``model``."""
    return f"{chunkset_id}__{model_slug(model_identity(model))}"


class ChunkStore:
    """Embeds chunk sets into LanceDB tables, reusing cached vectors."""

    def __init__(
        self,
        db_path: str | Path,
        embedder: Embedder,
        *,
        progress: bool = True,
        ner: EntitySource | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self.embedder = embedder
        self.progress = progress
        self.ner = ner if ner is not None else ner_source()
        self.db = connect(db_path)

    # -- embedding cache -------------------------------------------------------------------------
    @property
    def cache_name(self) -> str:
        """Name of the embedding-cache table for this model."""
        return f"embcache__{model_slug(model_identity(self.embedder.model))}"

    def embed_cached(self, texts: list[str], *, progress: bool | None = None) -> np.ndarray:
        """Vectors for ``texts``, embedding only the unique texts not yet in the cache.

        Texts are taken :data:`TABLE_SLICE` at a time (looked up, embedded, added to the cache), so memory
        holds the result and one slice's vectors, not a map of every vector besides.
        """
        if len(texts) > TABLE_SLICE:
            out = np.empty((len(texts), self.embedder.dim), np.float32)
            for i in range(0, len(texts), TABLE_SLICE):
                out[i : i + TABLE_SLICE] = self.embed_cached(texts[i : i + TABLE_SLICE], progress=progress)
            return out
        cache = EmbeddingCache(self.db_path, self.embedder.model)
        keys = [text_sha256(t) for t in texts]
        known = cache.lookup(keys)
        todo = dict(sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items()))
        if todo:
            vecs = self.embedder.embed(
                list(todo.values()), progress=self.progress if progress is None else progress
            )
            new = dict(zip(todo, vecs, strict=True))
            cache.add(new)
            known.update(new)

            release_memory()  # the model's activations, before LanceDB builds the table
        return np.stack([known[k] for k in keys]) if keys else np.zeros((0, self.embedder.dim), np.float32)

    # -- chunk tables ------------------------------------------------------------------------------
    def table(
        self,
        chunkset_id: str,
        chunks: list[Chunk],
        docs: dict[str, Document],
        *,
        parts: Collection[str] = PARTS,
    ) -> Any:
        """Open the table for ``chunkset_id`` (building it, with its indexes, if needed).

        ``parts``: the :data:`~hepwb.index.parts.PARTS` the caller's retriever reads (default all). A new
        table is built with those alone (a lexical one without vectors: no model is loaded), and a part
        missing from an existing table is added to it in place (:meth:`with_parts`).
        """
        name = table_name(chunkset_id, self.embedder.model)
        ner_model = self.ner.model
        key = index_key(chunkset_id, self.embedder.model, ner_model)
        if not index_complete(self.db_path, name, key):
            # one process builds a table; another asking for it meanwhile waits, then reuses it
            with table_lock(self.db_path, name, f"LanceDB table {name}"):
                if not index_complete(self.db_path, name, key):
                    self._build(name, key, ner_model, chunkset_id, chunks, docs, frozenset(parts))
        return self.with_parts(name, parts)

    def with_parts(self, name: str, parts: Collection[str]) -> Any:
        """The complete table ``name`` opened with ``parts`` (those it lacks added now, in place).

        The columns are added by Lance's ``add_columns``: the rows, their order and the indexes built
        before stay as they are, vectors come from the embedding cache where a text was embedded before,
        and a new column's full-text index is created on it alone. The marker lists the parts last, so an
        interrupted addition is made again.
        """
        if missing_parts(self._marker(name), parts):
            with table_lock(self.db_path, name, f"parts of LanceDB table {name}"):
                missing = missing_parts(self._marker(name), parts)
                if missing:
                    self._add_parts(name, missing)
        return self.db.open_table(name)

    def _marker(self, name: str) -> JSONObject:
        return table_marker(self.db_path, name)

    def _build(
        self,
        name: str,
        key: str,
        ner_model: str,
        chunkset_id: str,
        chunks: list[Chunk],
        docs: dict[str, Document],
        parts: frozenset[str],
    ) -> None:
        before = self.ner.failed_soft
        tbl = None
        stored = [d for d in docs.values() if not d.loaded]  # papers read for context spans go back after
        # slice by slice (vectors, entities, Arrow rows), so memory stays flat in the number of chunks
        for i in range(0, max(len(chunks), 1), TABLE_SLICE):
            part = chunks[i : i + TABLE_SLICE]
            chunk_texts = [c.text for c in part]
            vecs = self.embed_cached(chunk_texts) if "vector" in parts else None
            ents = self.ner.batch(chunk_texts) if "entities" in parts else None
            data = chunk_arrow(part, docs, vecs, ents, parts=parts)
            if tbl is None:
                tbl = replace_table(self.db, name, data)
            else:
                tbl.add(data)
            del data, vecs
            for d in stored:
                d.release()
            release_memory()
        build_indexes(tbl, parts=parts)

        def texts() -> Iterator[str]:  # the papers one at a time, each time it is called
            return (d.markdown for d in one_at_a_time(docs.values()))

        save_lexicon(self.db_path, chunkset_id, corpus_lexicon(self.db_path, texts))
        failed = self.ner.failed_soft - before
        # the marker is written last: a table without it (an interrupted build) is built again, and so is
        # one indexed with empty entities because the NER service failed (fail-soft)
        marker: JSONObject = {"index_key": key, "rows": len(chunks), "ner_model": ner_model}
        marker["parts"] = sorted(parts)
        if "vector" in parts:  # the embedder that would embed here (vectors may also come from the cache)
            marker["embedder"] = self.embedder.describe()
        if failed:
            marker["ner_failed_soft"] = failed
        write_json(self.db_path / "_complete" / f"{name}.json", marker)

    def _add_parts(self, name: str, missing: frozenset[str]) -> None:
        """Add the ``missing`` parts to the complete table ``name`` (see :meth:`with_parts`)."""
        tbl = self.db.open_table(name)
        columns = [c for c in COLUMNS if c in missing]
        before = self.ner.failed_soft
        if columns:
            ds = tbl.to_lance()
            stale = [c for c in columns if c in ds.schema.names]  # left by an interrupted addition
            if stale:
                ds.drop_columns(stale)
            dim = self.embedder.dim if "vector" in columns else 0
            udf = part_udf(columns, dim, self.embed_cached, self.ner.batch)
            ds.add_columns(udf, read_columns=["text"], batch_size=TABLE_SLICE)
            tbl = self.db.open_table(name)
        build_indexes(tbl, parts=missing, base=False)
        marker = self._marker(name)
        added = set(missing) - ({"entities"} if self.ner.failed_soft > before else set())
        marker["parts"] = sorted(present_parts(marker) | added)  # entities the NER failed on: tried again
        if "vector" in added:
            marker["embedder"] = self.embedder.describe()
        write_json(self.db_path / "_complete" / f"{name}.json", marker)

    def ner_model(self, chunkset_id: str) -> str | None:
        """The NER model recorded for the table of ``chunkset_id`` (``None`` if never indexed)."""
        marker = self.db_path / "_complete" / f"{table_name(chunkset_id, self.embedder.model)}.json"
        return (
            str(read_json_object(marker, "completion marker").get("ner_model", ""))
            if marker.is_file()
            else None
        )

    def windows(self, chunkset_id: str, chunks: list[Chunk]) -> None:
        """Build the window tables of ``chunkset_id`` (:mod:`hepwb.index.windows`) unless complete."""
        name = table_name(chunkset_id, self.embedder.model)
        key = windows_key(chunkset_id, self.embedder.model)
        if windows_complete(self.db_path, name, key):
            return
        with table_lock(self.db_path, f"{name}__windows", f"window tables of {name}"):
            if windows_complete(self.db_path, name, key):
                return
            build_window_tables(self.db, name, chunks, self, self.embedder)
            for suffix in ("__windows", "__wmean"):
                tbl = self.db.open_table(name + suffix)
                if tbl.count_rows() >= ANN_MIN_ROWS:
                    _vector_index(tbl)


def index_key(chunkset_id: str, model: str, ner_model: str | None = None) -> str:
    """Key of the table of ``chunkset_id`` embedded with ``model`` and entities from ``ner_model``.

    It also changes with the index code. ``ner_model`` defaults to the active source's
    (:func:`~hepwb.ner.source.ner_source`).
    """
    model = model_identity(model)
    ner = ner_model or ner_source().model
    return short_hash(
        {
            "chunkset": chunkset_id,
            "model": model,
            "ner": ner,
            "code": [code_fingerprint("index"), code_fingerprint("models")],
        }
    )


def index_complete(db_path: str | Path, name: str, key: str) -> bool:
    """Whether table ``name`` was built completely with index key ``key``."""
    marker = Path(db_path) / "_complete" / f"{name}.json"
    if not marker.is_file() or not (Path(db_path) / f"{name}.lance").is_dir():
        return False
    try:
        data = read_json_object(marker, "completion marker")
    except ValueError:
        return False
    return bool(data.get("index_key") == key and not data.get("ner_failed_soft"))


def open_chunk_table(db_path: str | Path, chunkset_id: str, model: str) -> Any:
    """Open the existing table of ``chunkset_id`` embedded with ``model``, or say how to build it."""
    db = connect(db_path)
    name = table_name(chunkset_id, model)
    if name not in table_names(db):
        known = sorted(t for t in table_names(db) if "__" in t and not t.startswith("embcache__"))
        msg = (
            f"no LanceDB table {name!r} in {db_path}; build it with `hepwb evaluate` or `hepwb search` "
            f"(which index on first use), or pick one of {known[:8]}"
        )
        raise CorpusNotFoundError(msg)
    return db.open_table(name)


def build_indexes(
    tbl: Any, *, parts: Collection[str] = PARTS, base: bool = True, ann_min_rows: int = ANN_MIN_ROWS
) -> None:
    """Create the full-text indexes and, for large tables, the HNSW vector index, of a table's ``parts``.

    The full-text indexes: ``search_context`` (the HEP-analysed text with its title and section path; every
    table's, unless ``base`` is off: only ``parts`` are indexed), and of the parts: ``search_text`` (without
    them) and ``text`` (``text_index``); the vector index of ``vector``.
    """
    from lancedb.index import FTS

    hep = FTS(with_position=False, base_tokenizer="whitespace", max_token_length=64)
    if "text_index" in parts:
        tbl.create_index("text", config=FTS(with_position=False), replace=True)
    if "search_text" in parts:
        tbl.create_index("search_text", config=hep, replace=True)
    if base:
        tbl.create_index("search_context", config=hep, replace=True)
    if "vector" in parts and "vector" in tbl.schema.names and tbl.count_rows() >= ann_min_rows:
        _vector_index(tbl)


def ann_partitions(rows: int) -> int:
    """IVF partitions of the default vector index for a table of ``rows`` chunks.

    >>> ann_partitions(20_000), ann_partitions(140_950)
    (2, 15)
    """
    return max(1, math.ceil(rows / ANN_PARTITION_ROWS))


def ann_search(table: Any, vector: Any) -> Any:
    """A cosine vector query on ``table``.

    Exact without a vector index, else HNSW with breadth :data:`ANN_EF` in :data:`ANN_NPROBES` partitions.
    """
    return table.search(vector, vector_column_name="vector").metric("cosine").ef(ANN_EF).nprobes(ANN_NPROBES)


def _vector_index(tbl: Any) -> None:
    """The cosine IVF-HNSW index of :func:`ann_partitions` partitions (searched by :func:`ann_search`)."""
    from lancedb.index import IvfHnswSq

    parts = ann_partitions(tbl.count_rows())
    config = IvfHnswSq(distance_type="cosine", num_partitions=parts, ef_construction=ANN_EF_CONSTRUCTION)
    tbl.create_index("vector", config=config, replace=True)


def chunk_arrow(
    chunks: list[Chunk],
    docs: dict[str, Document],
    vecs: np.ndarray | None,
    entities: list[list[str]] | None = None,
    context_texts: list[str] | None = None,
    *,
    parts: Collection[str] = PARTS,
) -> pa.Table:
    """The Arrow table of ``chunks`` (with metadata from ``docs``), their vectors and entities.

    Of the :data:`~hepwb.index.parts.PARTS`, only the columns of ``parts`` (default all): ``vecs`` (no
    ``vector`` column when ``None``), ``search_text`` and ``entities``, which default to the in-process
    extractor's. ``context_texts`` (the reader's span of each chunk, ``""`` for the chunk itself) default to
    slices of the documents' markdown.
    """
    import pyarrow as pa

    if entities is None and "entities" in parts:
        entities = LocalNER().batch([c.text for c in chunks])

    def context_text(c: Chunk) -> str:
        s, e = c.context
        return "" if (s, e) == (c.start, c.end) else docs[c.document_id].markdown[s:e]

    columns = {
        "chunk_id": [c.chunk_id for c in chunks],
        "document_id": [c.document_id for c in chunks],
        "label": [docs[c.document_id].label for c in chunks],
        "title": [docs[c.document_id].title for c in chunks],
        "arxiv": [str(docs[c.document_id].meta_value("arxiv") or "") for c in chunks],
        "chunk_index": pa.array([c.index for c in chunks], pa.int32()),
        "start": pa.array([c.start for c in chunks], pa.int64()),
        "end": pa.array([c.end for c in chunks], pa.int64()),
        "pages": pa.array([list(c.pages) for c in chunks], pa.list_(pa.int32())),
        "section": [" > ".join(c.section_path) for c in chunks],
        "token_count": pa.array([c.token_count for c in chunks], pa.int32()),
        "context_start": pa.array([c.context[0] for c in chunks], pa.int64()),
        "context_end": pa.array([c.context[1] for c in chunks], pa.int64()),
        "context_text": context_texts if context_texts is not None else [context_text(c) for c in chunks],
        "text": [c.text for c in chunks],
        # the paper's title and the chunk's section path with its text: lexical context
        "search_context": [
            search_terms(f"{docs[c.document_id].title} {' '.join(c.section_path)} {c.text}") for c in chunks
        ],
    }
    if "search_text" in parts:
        columns["search_text"] = [search_terms(c.text) for c in chunks]
    if entities is not None:
        columns["entities"] = pa.array(entities, pa.list_(pa.string()))
    if vecs is not None:
        dim = vecs.shape[1] if vecs.size else 0
        columns["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), dim)
    return pa.table(columns)
