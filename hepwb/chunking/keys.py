"""The key and the readable id of a chunk set, computed from its inputs without chunking anything.

Example:
    >>> key = chunkset_key("hepilot", {"chunk_size": 512, "chunk_overlap": 0.1}, ["doc-a", "doc-b"])
    >>> chunkset_id_of("hepilot", {"chunk_size": 512, "chunk_overlap": 0.1}, key)[:-8]
    'hepilot-cs512-ov0.1-'
"""

from __future__ import annotations

from collections.abc import Sequence

from hepwb.text.ids import code_fingerprint, short_hash
from hepwb.types import JSONObject

__all__ = ["chunkset_id_of", "chunkset_key"]


def chunkset_key(chunker: str, params: JSONObject, conversion_keys: Sequence[str]) -> str:
    """Key of a chunk set: chunker configuration, chunking code and the converted documents."""
    return short_hash(
        {
            "config": short_hash({"chunker": chunker, **params}),
            "code": [code_fingerprint(pkg) for pkg in ("models", "chunking", "hepilot", "processing")],
            "docs": sorted(conversion_keys),
        }
    )


def chunkset_id_of(chunker: str, params: JSONObject, key: str) -> str:
    """The readable id (and folder name) of a chunk set with key ``key``."""
    overlap = float(params.get("chunk_overlap") or 0)  # every digit: 0.7499999 is no 'ov0.75'
    return f"{chunker}-cs{params.get('chunk_size', 'x')}-ov{overlap:.15g}-{key[:8]}"
