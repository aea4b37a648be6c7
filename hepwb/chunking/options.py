"""Chunker options, declared once: the option types of the chunkers' constructor signatures.

Each is an ``Annotated`` type built from a :class:`~hepwb.limits.Bound`
(:func:`hepwb.components.options.bounded`), so a chunker's signature is its declaration:
:func:`~hepwb.chunking.base.register_chunker` makes every registered chunker check it on construction, whether
built by name (:func:`~hepwb.chunking.base.get_chunker`, the configuration, a sweep file) or directly
(``HepilotChunker(min_section_fill=2)``), with the bound's one message. Rules between options (``parent_size``
larger than ``chunk_size``) stay in the constructors.

Example:
    >>> from hepwb.chunking import HepilotChunker
    >>> HepilotChunker(min_section_fill=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: chunker 'hepilot': min_section_fill is ... from 0 to 1, got 2 (e.g. 0.5)
"""

from __future__ import annotations

from hepwb import limits
from hepwb.components.options import bounded

__all__ = ["ChunkSize", "Overlap", "ParentSize", "Percentile", "PieceSize", "SectionFill", "Window"]

ChunkSize = bounded(limits.CHUNK_SIZE)
"""Token budget per chunk, overlap included."""
Overlap = bounded(limits.CHUNK_OVERLAP)
"""Overlap between neighbouring chunks, as a fraction of the chunk size."""
SectionFill = bounded(limits.MIN_SECTION_FILL)
"""How full a chunk is before a section heading ends it."""
ParentSize = bounded(limits.PARENT_SIZE)
"""A parent chunk's size in tokens."""
Window = bounded(limits.WINDOW)
"""Sentences of context on each side."""
Percentile = bounded(limits.BREAKPOINT_PERCENTILE)
"""A percentile of the neighbour distances."""
PieceSize = bounded(limits.PIECE_SIZE)
"""Tokens per piece."""
