"""Embeddings, HEP search terms and entities, and LanceDB storage."""

from __future__ import annotations

from hepwb.index.analyzer import normalize, search_terms
from hepwb.index.embedder import DEFAULT_MODEL, Embedder, get_embedder, model_slug
from hepwb.index.entities import EntityExtractor
from hepwb.index.store import ChunkStore, connect, open_chunk_table, table_name

__all__ = [
    "DEFAULT_MODEL",
    "ChunkStore",
    "Embedder",
    "EntityExtractor",
    "connect",
    "get_embedder",
    "model_slug",
    "normalize",
    "open_chunk_table",
    "search_terms",
    "table_name",
]


def __dir__() -> list[str]:
    return __all__
