"""A document's matching key with a map from every key character back to markdown offsets.

The key is :func:`hepwb.text.textkey.key` of the document's markdown (the rule of
``shared/eval/check_quotes.py``); a match in key space maps back to a ``[start, end)`` span of
``Document.markdown`` and to the block (and page) it lies in.
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from hepwb.exceptions import ConfigError
from hepwb.text.textkey import NON_KEY, key
from hepwb.types import Block, Document

__all__ = ["KeyIndex", "as_index", "build_keyindexes", "key_index"]


@dataclass(frozen=True, eq=False)
class KeyIndex:
    """A document's key string with a map from key characters back to markdown offsets.

    Attributes:
        document_id: The document's UUID.
        label: The document's short name (``"P01"``).
        key: ``key(markdown)``, built segment by segment (a base character plus its combining marks).
        starts: ``starts[i]`` is the markdown offset of the source of key character ``i`` (non-decreasing).
        ends: ``ends[i]`` is one past the source of key character ``i``.
        blocks: The document's blocks, for page look-ups.
        block_starts: ``Block.start`` of every block, ascending.

    Example:
        >>> idx = KeyIndex.build(Document("d", "P00", "Ef-ﬁcient α!", ()))
        >>> idx.key, idx.starts.tolist(), idx.span(0, len(idx.key))
        ('efficient', [0, 1, 3, 3, 4, 5, 6, 7, 8], (0, 9))
    """

    document_id: str
    label: str
    key: str
    starts: np.ndarray
    ends: np.ndarray
    blocks: tuple[Block, ...]
    block_starts: np.ndarray
    markdown: str = field(default="", repr=False)
    """The document's text (the same string, not a copy), for showing a passage."""

    @classmethod
    def build(cls, document: Document) -> KeyIndex:
        """Build the index of ``document`` (vectorised over ASCII; non-ASCII handled one by one)."""
        text = document.markdown
        n = len(text)
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        lower = codes | 0x20
        counts = (((codes >= 48) & (codes <= 57)) | ((lower >= 97) & (lower <= 122))).astype(np.int64)
        seg_end = np.arange(1, n + 1, dtype=np.int64)
        special: dict[int, str] = {}
        cache: dict[str, str] = {}
        base = prev_mark = -2
        for i in np.flatnonzero(codes > 127).tolist():
            if not unicodedata.combining(text[i]):
                special[i] = ""
                continue
            if prev_mark != i - 1:  # first mark after a base character (or at the very start)
                base = max(i - 1, 0)
            if base != i:
                counts[i] = 0
            seg_end[base] = i + 1
            special[base] = ""
            prev_mark = i
        for s in special:
            seg = text[s : int(seg_end[s])]
            piece = cache.get(seg)
            if piece is None:
                piece = cache[seg] = key(seg)
            special[s] = piece
            counts[s] = len(piece)
        parts: list[str] = []
        prev = 0
        for s in sorted(special):
            parts.append(text[prev:s].lower())
            parts.append(special[s])
            prev = int(seg_end[s])
        parts.append(text[prev:].lower())
        key_text = NON_KEY.sub("", "".join(parts))
        # int32 offsets (a document is far below 2**31 characters): half the memory of the map
        starts = np.repeat(np.arange(n, dtype=np.int32), counts)
        ends = np.repeat(seg_end.astype(np.int32), counts)
        if len(key_text) != len(starts):  # pragma: no cover - guards the construction above
            msg = f"KeyIndex of document {document.label!r}: key/offset length mismatch; please report"
            raise ConfigError(msg)
        return cls(
            document_id=document.document_id,
            label=document.label,
            key=key_text,
            starts=starts,
            ends=ends,
            blocks=document.blocks,
            block_starts=np.fromiter((b.start for b in document.blocks), dtype=np.int64),
            markdown=text,
        )

    def span(self, key_start: int, key_end: int) -> tuple[int, int]:
        """Return the markdown span ``[start, end)`` of key characters ``[key_start, key_end)``."""
        if key_end <= key_start:
            msg = f"empty key range [{key_start}, {key_end}) in document {self.label!r}"
            raise ConfigError(msg)
        return int(self.starts[key_start]), int(self.ends[key_end - 1])

    def key_range(self, start: int, end: int) -> tuple[int, int]:
        """Return the key characters ``[ks, ke)`` whose source starts in markdown span ``[start, end)``."""
        # bisect over the array: one offset at a time it is ~20x faster than np.searchsorted (called per hit)
        return bisect.bisect_left(self.starts, start), bisect.bisect_left(self.starts, end)

    def block_at(self, offset: int) -> Block | None:
        """Return the last block starting at or before ``offset`` (None before the first block)."""
        i = bisect.bisect_right(self.block_starts, offset) - 1
        return self.blocks[i] if i >= 0 else None


_INDEX_CACHE: dict[tuple[str, int, int], KeyIndex] = {}
_CACHE_SIZE = 256


def key_index(document: Document) -> KeyIndex:
    """Return the (cached) :class:`KeyIndex` of ``document``; built once per document content."""
    ck = (document.document_id, len(document.markdown), hash(document.markdown))
    idx = _INDEX_CACHE.get(ck)
    if idx is None or idx.blocks != document.blocks:
        _INDEX_CACHE.pop(ck, None)
        if len(_INDEX_CACHE) >= _CACHE_SIZE:
            _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))
        idx = _INDEX_CACHE[ck] = KeyIndex.build(document)
    return idx


def build_keyindexes(documents: Iterable[Document | KeyIndex]) -> dict[str, KeyIndex]:
    """Return ``{document_id: KeyIndex}`` for ``documents`` (the ``keyindexes`` of ``evaluate``).

    Raises:
        ConfigError: Two documents share a ``document_id`` but differ in text.
    """
    out: dict[str, KeyIndex] = {}
    for d in documents:
        idx = as_index(d)
        if idx.document_id in out and out[idx.document_id].key != idx.key:
            msg = f"two different documents share document_id {idx.document_id!r}; evaluate one at a time"
            raise ConfigError(msg)
        out[idx.document_id] = idx
    return out


def as_index(value: Document | KeyIndex) -> KeyIndex:
    """``value`` itself when it is a :class:`KeyIndex`, else its document's cached index."""
    return value if isinstance(value, KeyIndex) else key_index(value)
