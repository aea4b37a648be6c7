"""Windows over chunks longer than the embedding model reads, so dense retrieval sees the whole chunk.

all-MiniLM-L6-v2 reads 256 word pieces (254 after ``[CLS]``/``[SEP]``); a 1024-token chunk is otherwise
embedded from its first quarter only. Each chunk is cut into overlapping windows of at most that many
tokens of the model's own tokenizer (a chunk that fits is its own single window, with the very vector of
the chunk), and every window is embedded. The windows live in a LanceDB table beside the chunk table,
``<chunk table>__windows`` (``chunk_id``, ``window``, ``start``/``end`` offsets in ``full_document.md``,
``vector``), with a second table ``<chunk table>__wmean`` holding one vector per chunk: the normalised
mean of its window vectors. :class:`~hepwb.retrieval.dense.DenseRetriever` scores a chunk by its best
window, the mean of its best ``m`` windows, or the mean vector (``read="max" | "mean"``, ``top_m``).

Example:
    >>> windows_of("one two three four five six seven", "words", size=3, overlap=1)
    [(0, 13), (8, 23), (19, 33)]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hepwb.files.io import read_json_object, write_json
from hepwb.index.lance import chunkset_of, replace_table
from hepwb.models.embedder import Embedder
from hepwb.models.tokenizers import get_tokenizer, model_identity
from hepwb.text.ids import code_fingerprint, short_hash
from hepwb.types import Chunk

__all__ = [
    "WINDOW_OVERLAP",
    "build_window_tables",
    "window_size",
    "windows_complete",
    "windows_key",
    "windows_of",
]

WINDOW_OVERLAP = 64
"""Tokens shared by consecutive windows of a chunk."""


def window_size(model: str) -> int:
    """Content tokens the model reads: its ``max_seq_length`` minus ``[CLS]`` and ``[SEP]``."""
    limit = getattr(get_tokenizer(model), "max_seq_length", 256)
    return max(int(limit) - 2, 8)


def windows_of(
    text: str, tokenizer: str, *, size: int, overlap: int = WINDOW_OVERLAP
) -> list[tuple[int, int]]:
    """Character spans of the overlapping windows of ``size`` tokens covering ``text``."""
    spans = get_tokenizer(tokenizer).spans(text)
    n = len(spans)
    if n <= size:
        return [(0, len(text))]
    step = max(size - overlap, 1)
    out = []
    for first in range(0, n, step):
        last = min(first + size, n) - 1
        out.append((int(spans[first][0]), int(spans[last][1]) if last + 1 < n else len(text)))
        if last + 1 >= n:
            break
    out[0] = (0, out[0][1])
    return out


def windows_key(chunkset_id: str, model: str) -> str:
    """Key of the window tables of ``chunkset_id`` × ``model`` (their cut and the index code)."""
    cut = {"size": window_size(model), "overlap": WINDOW_OVERLAP}
    return short_hash(
        {
            "chunkset": chunkset_id,
            "model": model_identity(model),
            "cut": cut,
            "code": [code_fingerprint("index"), code_fingerprint("models")],
        }
    )


def _marker(db_path: str | Path, name: str) -> Path:
    return Path(db_path) / "_complete" / f"{name}__windows.json"


def windows_complete(db_path: str | Path, name: str, key: str) -> bool:
    """Whether the window tables of chunk table ``name`` were built completely with key ``key``."""
    marker = _marker(db_path, name)
    return marker.is_file() and read_json_object(marker, "completion marker").get("windows_key") == key


def window_texts(chunks: list[Chunk], model: str) -> list[list[tuple[int, int, str]]]:
    """Per chunk, its windows as ``(start, end, text)`` with offsets into ``full_document.md``."""
    size = window_size(model)
    return [
        [(c.start + a, c.start + b, c.text[a:b]) for a, b in windows_of(c.text, model, size=size)]
        for c in chunks
    ]


def build_window_tables(db: Any, name: str, chunks: list[Chunk], store: Any, embedder: Embedder) -> None:
    """Embed every window of ``chunks`` (through the cache); write ``name__windows`` and ``name__wmean``."""
    import pyarrow as pa

    wins = window_texts(chunks, embedder.model)
    flat = [w for ws in wins for w in ws]
    vecs = store.embed_cached([t for _, _, t in flat])
    dim = vecs.shape[1]
    ids = [c.chunk_id for c, ws in zip(chunks, wins, strict=True) for _ in ws]
    index = [i for ws in wins for i in range(len(ws))]
    replace_table(
        db,
        f"{name}__windows",
        pa.table(
            {
                "chunk_id": ids,
                "window": pa.array(index, pa.int32()),
                "start": pa.array([s for s, _, _ in flat], pa.int64()),
                "end": pa.array([e for _, e, _ in flat], pa.int64()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), dim),
            }
        ),
    )
    means, pos = [], 0
    for ws in wins:
        m = vecs[pos : pos + len(ws)].mean(axis=0)
        means.append(m / max(float(np.linalg.norm(m)), 1e-12))
        pos += len(ws)
    mat = np.asarray(means, dtype=np.float32)
    replace_table(
        db,
        f"{name}__wmean",
        pa.table(
            {
                "chunk_id": [c.chunk_id for c in chunks],
                "n_windows": pa.array([len(ws) for ws in wins], pa.int32()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(mat.ravel(), pa.float32()), dim),
            }
        ),
    )
    key = windows_key(chunkset_of(name), embedder.model)
    write_json(
        _marker(store.db_path, name), {"windows_key": key, "windows": len(flat), "chunks": len(chunks)}
    )
