"""The chunker protocol and registry.

A chunker turns a :class:`~hepwb.types.Document` into :class:`~hepwb.types.Chunk` records whose
``text`` is exactly ``document.markdown[start:end]``. Chunkers are registered by name so a papermill
parameter such as ``chunker="hepilot"`` selects one; a registered chunker checks its options, declared by
its constructor's signature (:mod:`hepwb.chunking.options`), whenever it is built.

Example:
    >>> from hepwb.chunking import get_chunker
    >>> ch = get_chunker("hepilot", chunk_size=64, chunk_overlap=0.0, tokenizer="words")
    >>> ch.params()["chunk_size"]
    64
    >>> get_chunker("hepilot", chunksize=64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: chunker 'hepilot' has no option(s) ['chunksize']; its options are [...]
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from hepwb.components.options import checked_init
from hepwb.components.registry import Registry
from hepwb.text.ids import short_hash
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
    """Class decorator registering a chunker under ``name``; its constructor then checks its options."""

    def register(cls: type) -> type:
        return CHUNKERS.register(name)(checked_init("chunker", name, cls))

    return register


def get_chunker(name: str, **params: Any) -> Chunker:
    """Build the chunker ``name`` with ``params``; unknown and bad options are refused, one line each."""
    return CHUNKERS.get(name)(**params)  # type: ignore[no-any-return]


def config_key(chunker: Chunker) -> str:
    """Short hash identifying a chunker configuration (used in chunk IDs and folder names)."""
    return short_hash({"chunker": chunker.name, **chunker.params()})
