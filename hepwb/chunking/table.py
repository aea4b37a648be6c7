"""``chunks.parquet``: a chunk set's chunks as one Arrow table, the copy that indexing and runs read.

One row per chunk, in order, with the chunk's fields plus its neighbours in its document
(``prev_chunk_id``, ``next_chunk_id``) and whether an embedder limited to its model's input length sees
only part of it (``truncated_by_embedder``). The table is written and read a batch at a time, so neither
direction holds a second copy of a large chunk set in memory.

Example:
    >>> import tempfile
    >>> from hepwb.types import Chunk
    >>> path = Path(tempfile.mkdtemp()) / "chunks.parquet"
    >>> chunks = [Chunk("a", "d", 0, 0, 1, "x", 300), Chunk("b", "d", 1, 1, 2, "y", 100)]
    >>> save_chunks(path, chunks, max_tokens=256)
    >>> load_chunks(path) == chunks
    True
"""

from __future__ import annotations

from pathlib import Path

from hepwb.types import Chunk

__all__ = ["load_chunks", "save_chunks"]


def _neighbours(chunks: list[Chunk]) -> tuple[list[str | None], list[str | None]]:
    """Previous and next chunk ids within each document (None at a document's ends)."""
    prev: list[str | None] = []
    nxt: list[str | None] = []
    for i, c in enumerate(chunks):
        before = chunks[i - 1] if i else None
        after = chunks[i + 1] if i + 1 < len(chunks) else None
        prev.append(before.chunk_id if before and before.document_id == c.document_id else None)
        nxt.append(after.chunk_id if after and after.document_id == c.document_id else None)
    return prev, nxt


_PARQUET_BATCH = 8192  # chunks per row group: the Arrow copy of a chunk set is built a batch at a time


def save_chunks(path: Path, chunks: list[Chunk], max_tokens: int | None) -> None:
    """Write ``chunks`` to ``path`` atomically, with their neighbours and whether an embedder truncates each.

    ``max_tokens``: the input limit of the embedding model the chunks were counted for
    (:func:`~hepwb.chunking.chunksets.truncation_report`); ``None`` leaves ``truncated_by_embedder`` unknown.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    prev, nxt = _neighbours(chunks)
    text, i32, i64 = pa.string(), pa.int32(), pa.int64()
    schema = pa.schema(
        [
            ("prev_chunk_id", text),
            ("next_chunk_id", text),
            # whether an embedder with the model's input limit sees only part of the chunk (null: unknown)
            ("truncated_by_embedder", pa.bool_()),
            ("chunk_id", text),
            ("document_id", text),
            ("index", i32),
            ("start", i64),
            ("end", i64),
            ("text", text),
            ("token_count", i32),
            ("section_path", pa.list_(text)),
            ("pages", pa.list_(i32)),
            ("chunk_type", text),
            ("overlap_tokens", i32),
            ("oversized", pa.bool_()),
            ("context_start", i64),
            ("context_end", i64),
        ]
    )
    tmp = path.with_suffix(".parquet.tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for lo in range(0, max(len(chunks), 1), _PARQUET_BATCH):
            part = chunks[lo : lo + _PARQUET_BATCH]
            columns = [
                prev[lo : lo + _PARQUET_BATCH],
                nxt[lo : lo + _PARQUET_BATCH],
                [c.token_count > max_tokens if max_tokens else None for c in part],
                [c.chunk_id for c in part],
                [c.document_id for c in part],
                [c.index for c in part],
                [c.start for c in part],
                [c.end for c in part],
                [c.text for c in part],
                [c.token_count for c in part],
                [list(c.section_path) for c in part],
                [list(c.pages) for c in part],
                [c.chunk_type for c in part],
                [c.overlap_tokens for c in part],
                [c.oversized for c in part],
                [c.context_start for c in part],
                [c.context_end for c in part],
            ]
            writer.write_table(pa.Table.from_arrays(
                [pa.array(col, f.type) for col, f in zip(columns, schema, strict=True)], schema=schema
            ))  # fmt: skip
    tmp.replace(path)


def load_chunks(path: Path) -> list[Chunk]:
    """The chunks of the table at ``path`` in their order (read a batch at a time).

    Raises:
        OSError, ValueError, KeyError, TypeError: a missing, unreadable or damaged table.
    """
    import pyarrow.parquet as pq

    # batch by batch: the row dicts of one batch at a time, not of the whole chunk set, beside the chunks
    return [
        Chunk(
            chunk_id=r["chunk_id"],
            document_id=r["document_id"],
            index=r["index"],
            start=r["start"],
            end=r["end"],
            text=r["text"],
            token_count=r["token_count"],
            section_path=tuple(r["section_path"]),
            pages=tuple(r["pages"]),
            chunk_type=r["chunk_type"],
            overlap_tokens=r["overlap_tokens"],
            oversized=r["oversized"],
            context_start=r.get("context_start", -1),
            context_end=r.get("context_end", -1),
        )
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096)
        for r in batch.to_pylist()
    ]
