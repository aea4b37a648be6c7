"""The sections of a ``.ragmd`` file made into a :class:`~hepwb.ragmd.model.RagFile`, disagreements noted.

:mod:`hepwb.ragmd.reader` checks the file's structure (front matter, sections, fenced blocks, JSON) and
hands the parsed sections to :func:`assemble`, which checks that they agree with each other: the Chunks
entries and the Document Metadata (ids, counts, text lengths), the vectors (one base64 line per chunk, of
``embedding_dim`` finite floats) and the Documents table. Every problem is added to a :class:`Problems`
list with its line and section; nothing is returned while there is one.
"""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from typing import Any

import numpy as np

from hepwb.ragmd.model import RagChunk, RagDocument, RagFile
from hepwb.types import JSONObject

__all__ = ["Problems", "assemble"]


class Problems(list[str]):
    """The problems of one file, each ``source:line [section] message``.

    Example:
        >>> probs = Problems("paper.ragmd")
        >>> probs.add(41, "Vectors", "chunk 'c7': not base64")
        >>> probs
        ["paper.ragmd:41 [Vectors] chunk 'c7': not base64"]
    """

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def add(self, line: int, section: str, msg: str) -> None:
        """Record ``msg`` at ``line`` of ``section``."""
        self.append(f"{self.source}:{line} [{section}] {msg}")


def assemble(
    fm: JSONObject,
    order: Any,
    meta: Any,
    vec_lines: list[str],
    vec_at: int,
    lines: list[str],
    starts: dict[str, int],
    probs: Problems,
    chunks_at: int,
) -> RagFile | None:
    """The file's contents when its sections agree; else ``None`` with every problem added to ``probs``.

    Args:
        fm: The front matter (its required keys present, ``embedding_dim`` checked).
        order: The JSON of the Chunks block.
        meta: The JSON of the Document Metadata block.
        vec_lines: The lines of the Vectors block.
        vec_at: The line number of the first vector line.
        lines: The file's lines.
        starts: The index of each section's ``## `` line in ``lines``.
        probs: Where problems are added.
        chunks_at: The line number of the Chunks block's first line.
    """
    if not _shapes_agree(order, meta, starts, probs):
        return None
    dim, n_vec = fm["embedding_dim"], fm["vector_count"]
    _check_counts(order, meta, n_vec, fm["document_count"], probs)
    ids = [e["chunk_id"] for e in order]
    dup = sorted(c for c, n in Counter(ids).items() if n > 1)  # linear: validation time grows with the file
    if dup:
        probs.add(starts["Chunks"] + 1, "Chunks", f"chunk ids repeated: {dup[:5]}")
    meta_line = starts["Document Metadata"] + 1
    docs, by_id = _documents(meta, meta_line, probs)
    _check_entries(order, by_id, chunks_at, meta_line, probs)
    twice = sorted(
        k for k, n in Counter((c.document_id, c.chunk_index) for c in by_id.values()).items() if n > 1
    )
    if twice:  # a document's chunks are numbered once each: two with one index are a hand edit or a merge
        probs.add(meta_line, "Document Metadata", f"chunk_index given twice in a document: {twice[:3]}")
    extra = sorted(set(by_id) - set(ids))
    if extra:
        probs.add(meta_line, "Document Metadata", f"chunks not in the Chunks section: {extra[:5]}")
    vecs = _vectors(vec_lines, ids, dim, n_vec, vec_at, probs)
    if vecs is None:
        return None
    _check_table(lines, starts, docs, by_id, probs)
    if probs:
        return None
    return RagFile(
        str(fm["model_name"]),
        str(fm["chunkset_id"]),
        str(fm["created_at"]),
        str(fm["updated_at"]),
        docs,
        [by_id[c] for c in ids],
        vecs,
        str(fm["index_type"]),
    )


def _shapes_agree(order: Any, meta: Any, starts: dict[str, int], probs: Problems) -> bool:
    """Whether Chunks is an array of ``{chunk_id, document_id}`` and Document Metadata an object.

    The first of the two that is not gets its problem; nothing else can be checked then.
    """
    if not isinstance(order, list) or not all(
        isinstance(e, dict) and isinstance(e.get("chunk_id"), str) and isinstance(e.get("document_id"), str)
        for e in order
    ):
        probs.add(starts["Chunks"] + 1, "Chunks", "must be a JSON array of {chunk_id, document_id} entries")
        return False
    if not isinstance(meta, dict):
        probs.add(
            starts["Document Metadata"] + 1, "Document Metadata", "must be a JSON object keyed by document id"
        )
        return False
    return True


def _check_counts(order: list[Any], meta: JSONObject, n_vec: Any, n_doc: Any, probs: Problems) -> None:
    """The front matter's ``vector_count`` and ``document_count`` must match the sections."""
    if len(order) != n_vec:
        probs.add(
            1, "front matter", f"vector_count is {n_vec} but the Chunks section has {len(order)} entries"
        )
    if len(meta) != n_doc:
        probs.add(
            1, "front matter", f"document_count is {n_doc} but Document Metadata has {len(meta)} documents"
        )


def _whole(value: Any, field: str, low: int = 0) -> int:
    """``value`` as an index or count: a JSON whole number from ``low`` to 2**31 - 1 (not a string).

    Example:
        >>> _whole(3, "i_start")
        3
        >>> _whole("3", "i_start")
        Traceback (most recent call last):
        ...
        ValueError: i_start is '3', not a whole number from 0 to 2147483647
    """
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 2**31:
        msg = f"{field} is {str(value)[:30]!r}, not a whole number from {low} to 2147483647"
        raise ValueError(msg)
    return value


def _chunk(c: Any, did: str) -> RagChunk:
    """The chunk of the Document Metadata entry ``c`` of document ``did`` (KeyError, ValueError... if bad)."""
    return RagChunk(
        c["chunk_id"],
        did,
        _whole(c["chunk_index"], "chunk_index"),
        _whole(c["i_start"], "i_start"),
        _whole(c["i_end"], "i_end"),
        str(c["text"]),
        tuple(_whole(p, "pages", 1) for p in c.get("pages", ())),
        str(c.get("section", "")),
        _whole(c.get("token_count", 0), "token_count"),
        _whole(c.get("context_start", -1), "context_start", -1),
        _whole(c.get("context_end", -1), "context_end", -1),
        str(c.get("context_text", "")),
    )


def _documents(
    meta: JSONObject, meta_line: int, probs: Problems
) -> tuple[list[RagDocument], dict[str, RagChunk]]:
    """The documents of Document Metadata and their chunks by id; a bad entry is a problem of its document."""
    docs, by_id = [], {}
    for did, d in meta.items():
        try:
            docs.append(RagDocument(did, str(d["label"]), str(d.get("title", "")), str(d.get("arxiv", ""))))
            for c in d["chunks"]:
                by_id[c["chunk_id"]] = _chunk(c, did)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:  # 1e400 is inf: int() overflows
            probs.add(meta_line, "Document Metadata", f"document {did!r}: bad entry ({exc!r})")
    return docs, by_id


def _check_entries(
    order: list[Any], by_id: dict[str, RagChunk], chunks_at: int, meta_line: int, probs: Problems
) -> None:
    """Each Chunks entry needs a Document Metadata chunk of the same document whose text fits its offsets."""
    for pos, e in enumerate(order):
        c = by_id.get(e["chunk_id"])
        if c is None:
            probs.add(
                chunks_at + 1 + pos,
                "Chunks",
                f"chunk {e['chunk_id']!r} has no Document Metadata entry",
            )
        elif c.document_id != e["document_id"]:
            probs.add(
                chunks_at + 1 + pos,
                "Chunks",
                f"chunk {e['chunk_id']!r} belongs to {c.document_id}, not {e['document_id']}",
            )
        elif len(c.text) != c.i_end - c.i_start:
            probs.add(
                meta_line,
                "Document Metadata",
                f"chunk {c.chunk_id!r}: text length {len(c.text)} != i_end - i_start = {c.i_end - c.i_start}",
            )


def _vectors(
    vec_lines: list[str], ids: list[str], dim: Any, n_vec: Any, vec_at: int, probs: Problems
) -> np.ndarray[Any, Any] | None:
    """The vectors of the chunks ``ids``, a row each (a bad line leaves its row zero and adds a problem).

    ``None`` (with a problem) when the lines cannot hold that many vectors: no array far larger than the
    file is ever allocated.
    """
    width = int(dim) if isinstance(dim, int) and dim > 0 else 0
    have = sum(len(ln) for ln in vec_lines) * 3 // 4  # bytes the base64 lines can hold at most
    if len(ids) * 4 * width > 2 * have + 2**20:  # never allocate far more than the file can fill
        probs.add(
            vec_at,
            "Vectors",
            f"the vector lines hold at most {have:,} bytes; {len(ids)} chunks × embedding_dim {width} "
            f"need {len(ids) * 4 * width:,}",
        )
        return None
    vecs = np.zeros((len(ids), width), dtype="<f4")
    if len(vec_lines) != len(ids):
        probs.add(
            vec_at,
            "Vectors",
            f"{len(vec_lines)} vector lines for {len(ids)} chunks "
            f"(embedding_dim × vector_count = {dim} × {n_vec})",
        )
    for k, ln in enumerate(vec_lines[: len(ids)]):
        cid, _, b64 = ln.partition(" ")
        if cid != ids[k]:
            probs.add(
                vec_at + k, "Vectors", f"vector {k} is keyed {cid!r}, the Chunks section says {ids[k]!r}"
            )
            continue
        try:
            raw = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            probs.add(vec_at + k, "Vectors", f"chunk {cid!r}: not base64")
            continue
        if len(raw) != 4 * vecs.shape[1]:
            probs.add(vec_at + k, "Vectors", f"chunk {cid!r}: {len(raw) // 4} floats, embedding_dim is {dim}")
            continue
        vector = np.frombuffer(raw, dtype="<f4")
        if not np.isfinite(vector).all():
            probs.add(vec_at + k, "Vectors", f"chunk {cid!r}: the vector holds NaN or infinite values")
            continue
        vecs[k] = vector
    return vecs


def _check_table(
    lines: list[str],
    starts: dict[str, int],
    docs: list[RagDocument],
    by_id: dict[str, RagChunk],
    probs: Problems,
) -> None:
    """The Documents table (for people) must list the same documents as the metadata."""
    rows = [ln for ln in lines[starts["Documents"] + 1 : starts["Chunks"]] if ln.startswith("| ")][1:]
    counts = {d.document_id: 0 for d in docs}
    for c in by_id.values():
        counts[c.document_id] = counts.get(c.document_id, 0) + 1
    table = {r.rstrip(" |").rsplit("| ", 1)[-1].strip(): r for r in rows}
    if set(table) != set(counts):
        probs.add(
            starts["Documents"] + 1,
            "Documents",
            f"the table lists {len(table)} documents, the metadata "
            f"{len(counts)}; differing ids: {sorted(set(table) ^ set(counts))[:4]}",
        )
