"""Converted documents kept on disk until their text is needed.

A corpus of 3,200 papers held 887 MiB as :class:`~hepwb.types.Document` objects (text 326 MiB, blocks ~150
MiB, metadata 345 MiB, most of it cross-reference records), while an evaluation reads the text of the few
papers its questions cite or its hits come from. :func:`~hepwb.corpus.conversion.ingest` therefore returns a
:class:`StoredDocument` for every converted paper: its id, label and scalar metadata (title, arXiv id,
hashes, conversion key) in memory, its markdown, blocks and full metadata read from the conversion cache on
first use. The chunker hands each paper back after chunking it (:meth:`StoredDocument.release`).

Example:
    >>> import tempfile
    >>> from hepwb.types import Block
    >>> folder = Path(tempfile.mkdtemp())
    >>> meta = {"title": "T", "xrefs": [], "conversion_key": "key-1"}
    >>> doc = Document("id-1", "P01", "# Title\\n\\nText.", (Block("heading", 0, 7, 1, 1),), meta)
    >>> store_document(folder, doc)
    >>> stored = StoredDocument.open(folder, "key-1", keep=False)
    >>> stored.title, stored.meta_value("conversion_key"), stored.loaded
    ('T', 'key-1', False)
    >>> stored.markdown[:7], stored.loaded, stored == doc
    ('# Title', True, True)
    >>> stored.release(force=True); stored.loaded
    False
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from hepwb import defaults, limits
from hepwb.files.io import atomic_write_bytes, read_json_object, write_json
from hepwb.files.readers import ReadError, check_file, read_text
from hepwb.types import Block, Document, JSONObject

__all__ = ["StoredDocument", "read_document", "store_document"]


_FIX = "it is converted again from its corpus file"
_RESIDENT: dict[int, int] = {}
"""Markdown length of each paper read and not released in this process (by object id)."""


def store_document(folder: Path, doc: Document) -> None:
    """Write ``doc`` to a conversion-cache folder (``full_document.md`` and ``document.json``, last).

    ``document.json`` records the size of ``full_document.md``, which is read only up to that size.
    """
    data = doc.markdown.encode("utf-8")
    atomic_write_bytes(folder / "full_document.md", data)
    write_json(
        folder / "document.json",
        {
            "document_id": doc.document_id,
            "label": doc.label,
            "blocks": [asdict(b) for b in doc.blocks],
            "meta": doc.meta,
            "markdown_bytes": len(data),
        },
    )


def read_document(folder: Path, conversion_key: str) -> Document:
    """The whole document in a conversion-cache folder, read by the bounded reader.

    ``full_document.md`` must be a regular file of the size ``document.json`` records (an entry written
    before sizes were recorded: at most :data:`~hepwb.limits.MAX_TEXT_FILE_BYTES`); a FIFO, a link to a
    device, a file that grew or was cut short is refused before it is read.

    Raises:
        OSError, ValueError, KeyError, TypeError: a missing, unreadable, damaged or truncated cache entry
            (:class:`~hepwb.files.readers.ReadError` naming the file is a ``ValueError``).
    """
    rec = read_json_object(folder / "document.json", "cached conversion record", fix=_FIX)
    rec["meta"]["conversion_key"] = conversion_key
    text_file = folder / "full_document.md"
    value = rec.get("markdown_bytes")
    recorded = value if type(value) is int and 0 <= value <= 1 << 40 else None  # None: written before sizes
    cap = limits.MAX_TEXT_FILE_BYTES if recorded is None else recorded
    size = check_file(
        text_file, "cached conversion text", max_bytes=cap if recorded is None else 1 << 40, fix=_FIX
    )
    if recorded is not None and size != recorded:
        msg = f"cached conversion text {text_file} has {size:,} bytes, its record says {recorded:,}; {_FIX}"
        raise ReadError(msg)
    markdown = read_text(text_file, "cached conversion text", max_bytes=cap, fix=_FIX)
    blocks = tuple(Block(**b) for b in rec["blocks"])
    if blocks and max(b.end for b in blocks) > len(markdown):
        msg = f"{text_file} is shorter than its blocks (truncated)"
        raise ValueError(msg)
    return Document(
        document_id=rec["document_id"], label=rec["label"], markdown=markdown, blocks=blocks, meta=rec["meta"]
    )


def _resident_bytes() -> int:
    """Markdown characters of the papers read and kept in this process."""
    return sum(_RESIDENT.values())


class StoredDocument(Document):
    """A :class:`~hepwb.types.Document` whose text, blocks and metadata stay in its cache folder until used.

    It compares equal to the plain document it stands for, and pickles as one (what a Dask worker gets).
    """

    __slots__ = ("_folder", "_full", "_key", "_keys", "_light")
    _folder: Path
    _full: Document | None
    _key: str
    _keys: frozenset[str]
    _light: JSONObject

    def __init__(self, folder: Path, doc: Document, conversion_key: str) -> None:
        # a frozen dataclass: fields are set the way its own __init__ sets them
        object.__setattr__(self, "document_id", doc.document_id)
        object.__setattr__(self, "label", doc.label)
        object.__setattr__(self, "_folder", folder)
        object.__setattr__(self, "_key", conversion_key)
        light = {k: v for k, v in doc.meta.items() if not isinstance(v, dict | list)}
        object.__setattr__(self, "_light", light)
        object.__setattr__(self, "_keys", frozenset(doc.meta))
        object.__setattr__(self, "_full", None)

    @classmethod
    def open(cls, folder: Path, conversion_key: str, *, keep: bool | None = None) -> StoredDocument:
        """Read and check the cache entry in ``folder`` once, keeping only the light fields.

        ``keep``: also keep what was read (text, blocks, metadata), so the first use reads nothing again;
        by default while the papers read in this process stay under
        :data:`~hepwb.defaults.RESIDENT_DOCUMENT_BYTES` (a corpus that fits is read from disk once).

        Raises:
            OSError, ValueError, KeyError, TypeError: as :func:`read_document` (checked now, not on use).
        """
        doc = read_document(folder, conversion_key)
        stored = cls(folder, doc, conversion_key)
        if (
            keep
            if keep is not None
            else _resident_bytes() + len(doc.markdown) <= defaults.RESIDENT_DOCUMENT_BYTES
        ):
            object.__setattr__(stored, "_full", doc)
            _RESIDENT[id(stored)] = len(doc.markdown)
        return stored

    def _document(self) -> Document:
        full: Document | None = self._full
        if full is None:
            full = read_document(self._folder, self._key)
            object.__setattr__(self, "_full", full)
            _RESIDENT[id(self)] = len(full.markdown)
        return full

    @property  # a read-only field of the frozen parent, read on demand
    def markdown(self) -> str:
        """The full CommonMark text (read on first use)."""
        return self._document().markdown

    @property
    def blocks(self) -> tuple[Block, ...]:
        """Blocks in reading order (read on first use)."""
        return self._document().blocks

    @property
    def meta(self) -> JSONObject:
        """All metadata (read on first use; :meth:`meta_value` answers scalar fields without reading)."""
        return self._document().meta

    @property
    def loaded(self) -> bool:
        """Whether the text, blocks and metadata are in memory now."""
        return self._full is not None

    def meta_value(self, key: str, default: Any = None) -> Any:
        """One metadata field; scalar ones (title, arxiv, hashes, conversion key) without reading the disk."""
        if key not in self._keys:
            return default
        if key in self._light:
            return self._light[key]
        return self._document().meta.get(key, default)

    def release(self, *, force: bool = False) -> None:
        """Drop the text, blocks and metadata read so far (read again when next used).

        While the papers read in this process hold less markdown than
        :data:`~hepwb.defaults.RESIDENT_DOCUMENT_BYTES`, a paper stays read unless ``force``: a corpus that
        fits is read from disk once, and a larger one is held one paper at a time.
        """
        if self._full is None:
            return
        if not force and _resident_bytes() <= defaults.RESIDENT_DOCUMENT_BYTES:
            return
        _RESIDENT.pop(id(self), None)
        object.__setattr__(self, "_full", None)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return (self.document_id, self.label, self.markdown, self.blocks, self.meta) == (
            other.document_id,
            other.label,
            other.markdown,
            other.blocks,
            other.meta,
        )

    __hash__ = Document.__hash__

    def __repr__(self) -> str:
        return f"StoredDocument({self.label!r}, {self.document_id!r}, folder={str(self._folder)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Document, (self.document_id, self.label, self.markdown, self.blocks, self.meta))
