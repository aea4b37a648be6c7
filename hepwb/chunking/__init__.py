"""Chunking strategies, registered by name (see :func:`get_chunker`)."""

from __future__ import annotations

from hepwb.chunking import hepilot as _hepilot  # noqa: F401  (registers "hepilot")
from hepwb.chunking.base import CHUNKERS, Chunker, config_key, get_chunker, register_chunker
from hepwb.chunking.tokenizers import DEFAULT_TOKENIZER, get_tokenizer

__all__ = [
    "CHUNKERS",
    "DEFAULT_TOKENIZER",
    "Chunker",
    "config_key",
    "get_chunker",
    "get_tokenizer",
    "register_chunker",
]


def __dir__() -> list[str]:
    return __all__
