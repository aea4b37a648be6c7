"""Embeddings, HEP search terms and entities, and LanceDB storage."""

from __future__ import annotations

from hepwb.index.chunk_store import ChunkStore, open_chunk_table, table_name
from hepwb.index.lance import connect
from hepwb.models.analyzer import normalize, search_terms
from hepwb.models.embedder import Embedder, get_embedder, model_slug
from hepwb.models.entities import EntityExtractor

__all__ = [
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
