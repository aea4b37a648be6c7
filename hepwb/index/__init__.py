"""Embeddings and LanceDB storage."""

from __future__ import annotations

from hepwb.index.embedder import DEFAULT_MODEL, Embedder, get_embedder, model_slug
from hepwb.index.store import ChunkStore, connect, table_name

__all__ = ["DEFAULT_MODEL", "ChunkStore", "Embedder", "connect", "get_embedder", "model_slug", "table_name"]


def __dir__() -> list[str]:
    return __all__
