"""Writing a ``.ragmd`` file: deterministic bytes for the same contents.

Layout: YAML front matter; a title; ``## Documents`` (a table for people); ``## Chunks`` (a JSON array, one
entry per line, mapping vector positions to document ids and chunk keys); ``## Document Metadata`` (a JSON
object, one line per document header and per chunk, with ``i_start``/``i_end`` offsets and the chunk text);
``## Vectors`` (one line per chunk: its key and its vector as base64 of little-endian float32). Documents
are sorted by label, chunks by document and index, JSON keys sorted, floats stored as their exact bits,
timestamps taken from the source: the same index always gives the same file, and adding a document only
adds lines (plus the counts in the front matter).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from hepwb.files.io import atomic_write_text
from hepwb.ragmd.model import FORMAT_VERSION, RagFile
from hepwb.types import JSONObject

__all__ = ["VECTOR_ENCODING", "dump", "dumps", "front_matter"]

VECTOR_ENCODING = "base64 float32 little-endian, one line per chunk"


def _j(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def front_matter(rf: RagFile) -> JSONObject:
    """The front matter fields of ``rf``."""
    return {
        "format_version": FORMAT_VERSION,
        "model_name": rf.model_name,
        "embedding_dim": rf.embedding_dim,
        "vector_count": len(rf.chunks),
        "document_count": len(rf.documents),
        "index_type": rf.index_type,
        "distance": "inner_product",
        "vector_encoding": VECTOR_ENCODING,
        "chunkset_id": rf.chunkset_id,
        "created_at": rf.created_at,
        "updated_at": rf.updated_at,
    }


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def dumps(rf: RagFile) -> str:
    """The text of ``rf`` as a ``.ragmd`` file."""
    rf = rf.sorted()
    fm = front_matter(rf)
    out = ["---", *(f"{k}: {_j(v)}" for k, v in fm.items()), "---", ""]
    out += [f"# RAG index {rf.chunkset_id}", ""]
    out += [
        f"{len(rf.documents)} documents, {len(rf.chunks)} chunks, embedded with {rf.model_name} "
        f"({rf.embedding_dim} dimensions; exact inner product). Check it with `hepwb validate-ragmd FILE`; "
        "search it with `hepwb search --ragmd FILE`.",
        "",
    ]
    per_doc: dict[str, int] = {}
    for c in rf.chunks:
        per_doc[c.document_id] = per_doc.get(c.document_id, 0) + 1
    out += ["## Documents", "", "| label | title | arXiv | chunks | document id |", "|---|---|---|---|---|"]
    out += [
        f"| {_cell(d.label)} | {_cell(d.title)} | {_cell(d.arxiv)} | {per_doc.get(d.document_id, 0)} | "
        f"{d.document_id} |"
        for d in rf.documents
    ]
    out += [
        "",
        "## Chunks",
        "",
        "Vector positions in order: entry *i* is the chunk of vector *i*.",
        "",
        "```json",
        "[",
    ]
    entries = [_j({"chunk_id": c.chunk_id, "document_id": c.document_id}) for c in rf.chunks]
    out += [e + ("," if i < len(entries) - 1 else "") for i, e in enumerate(entries)]
    out += [
        "]",
        "```",
        "",
        "## Document Metadata",
        "",
        "Per document: label, title, arXiv id and its chunks with `i_start`/`i_end` offsets into the "
        "document's `full_document.md`, pages, section and text.",
        "",
        "```json",
        "{",
    ]
    by_doc: dict[str, list[str]] = {d.document_id: [] for d in rf.documents}
    for c in rf.chunks:
        by_doc[c.document_id].append(_j(c.meta()))
    for i, d in enumerate(rf.documents):
        head = _j({"arxiv": d.arxiv, "label": d.label, "title": d.title})[:-1]
        out.append(f'{_j(d.document_id)}: {head}, "chunks": [')
        rows = by_doc[d.document_id]
        out += [r + ("," if j < len(rows) - 1 else "") for j, r in enumerate(rows)]
        out.append("]}" + ("," if i < len(rf.documents) - 1 else ""))
    out += ["}", "```", "", "## Vectors", "", "```base64"]
    vecs = rf.vectors.astype("<f4", copy=False)
    out += [
        f"{c.chunk_id} {base64.b64encode(vecs[i].tobytes()).decode('ascii')}" for i, c in enumerate(rf.chunks)
    ]
    out += ["```", ""]
    return "\n".join(out)


def dump(rf: RagFile, path: str | Path) -> Path:
    """Write ``rf`` to ``path`` atomically (a reader never sees half a file)."""
    atomic_write_text(path, dumps(rf))
    return Path(path)
