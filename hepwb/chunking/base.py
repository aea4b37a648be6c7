"""The chunker protocol and registry.

A chunker turns a :class:`~hepwb.types.Document` into :class:`~hepwb.types.Chunk` records whose
``text`` is exactly ``document.markdown[start:end]``. Chunkers are registered by name so a papermill
parameter such as ``chunker="hepilot"`` selects one.

Example:
    >>> from hepwb.chunking import get_chunker
    >>> ch = get_chunker("hepilot", chunk_size=64, chunk_overlap=0.0, tokenizer="words")
    >>> ch.params()["chunk_size"]
    64
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from hepwb.exceptions import ConfigError
from hepwb.ids import short_hash
from hepwb.registry import Registry
from hepwb.types import Chunk, Document, JSONObject

__all__ = ["CHUNKERS", "Chunker", "get_chunker", "register_chunker"]


@runtime_checkable
class Chunker(Protocol):
    """What every chunking strategy provides."""

    name: str

    def params(self) -> JSONObject:
        """JSON-able parameters (including the tokenizer) that fully define the strategy."""
        ...

    def chunk(self, doc: Document) -> list[Chunk]:
        """Split one document."""
        ...


CHUNKERS: Registry[type] = Registry("chunker")


def register_chunker(name: str) -> Any:
    """Class decorator registering a chunker under ``name``."""
    return CHUNKERS.register(name)


def get_chunker(name: str, **params: Any) -> Chunker:
    """Build the chunker ``name`` with ``params``; unknown parameters are rejected by name."""
    cls = CHUNKERS.get(name)
    try:
        return cls(**params)  # type: ignore[no-any-return]
    except TypeError as exc:
        msg = f"bad parameters for chunker {name!r}: {exc}"
        raise ConfigError(msg) from None


def config_key(chunker: Chunker) -> str:
    """Short hash identifying a chunker configuration (used in chunk IDs and folder names)."""
    return short_hash({"chunker": chunker.name, **chunker.params()})
