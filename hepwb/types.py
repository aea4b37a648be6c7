"""Typed records passed between pipeline stages.

Every span is a half-open character range ``[start, end)`` into the document's ``full_document.md``
text, so ``document.markdown[span.start:span.end] == span.text`` always holds.

Example:
    >>> doc = Document(document_id="d", label="P00", markdown="# A\\n\\nText.", blocks=(
    ...     Block(kind="heading", start=0, end=3, page=1, level=1),
    ...     Block(kind="text", start=5, end=10, page=1)))
    >>> doc.block_text(doc.blocks[1])
    'Text.'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = ["Block", "BlockKind", "Chunk", "Document", "Hit", "JSONObject"]

JSONObject: TypeAlias = dict[str, Any]  # values: any JSON type (see the docstring below)
"""A JSON object read from or written to a file: configs, records, metadata, options.

``Any`` because JSON is recursive and its shape is checked where it enters hepwb (pydantic
models, JSON schemas, :mod:`hepwb.limits`), not again by every reader."""

BlockKind = Literal[
    "heading", "text", "list", "table", "math", "code", "caption", "reference", "front", "figure_text"
]


@dataclass(frozen=True, slots=True)
class Block:
    """One structural block of a converted document.

    Attributes:
        kind: What the block holds; ``table``, ``math`` and ``code`` are atomic for chunkers;
            ``reference`` (bibliography entries), ``front`` (author and affiliation lists, contact
            and date lines of the front matter) and ``figure_text`` (a plot's tick labels, axis titles
            and legends, which a PDF stores as text inside the figure) stay in ``full_document.md`` but
            are not chunked.
        start: Offset of the first character in ``full_document.md``.
        end: Offset one past the last character.
        page: 1-based page number of the source where the block starts.
        level: Heading level (1-6) for headings, 0 otherwise.
        page_end: Last page the block touches (equal to ``page`` for most blocks).
    """

    kind: BlockKind
    start: int
    end: int
    page: int
    level: int = 0
    page_end: int = 0

    @property
    def atomic(self) -> bool:
        """Whether a chunker must keep the block whole (tables, display math, code)."""
        return self.kind in ("table", "math", "code")

    @property
    def retrievable(self) -> bool:
        """Whether chunkers include the block (bibliography, front matter and figure text are kept out)."""
        return self.kind not in ("reference", "front", "figure_text")


@dataclass(frozen=True, slots=True)
class Document:
    """A processed document: its markdown, its blocks and its bibliographic metadata.

    Attributes:
        document_id: Content-derived UUID (from the source file's SHA-256).
        label: Short human name, e.g. ``"P01"`` (used to match evaluation evidence).
        markdown: The full CommonMark text (``full_document.md``).
        blocks: Blocks in reading order, non-overlapping, sorted by ``start``.
        meta: Bibliographic and provenance fields (title, authors, source file, hashes ...).
    """

    document_id: str
    label: str
    markdown: str
    blocks: tuple[Block, ...]
    meta: JSONObject = field(default_factory=dict)

    def block_text(self, block: Block) -> str:
        """Return the exact text of ``block``."""
        return self.markdown[block.start : block.end]

    def page_at(self, offset: int) -> int:
        """Return the page of the last block starting at or before ``offset`` (1 if none)."""
        page = 1
        for b in self.blocks:
            if b.start > offset:
                break
            page = b.page
        return page

    @property
    def title(self) -> str:
        """Document title from metadata, else its label."""
        return str(self.meta_value("title") or self.label)

    def meta_value(self, key: str, default: Any = None) -> Any:
        """One metadata field (a stored document answers scalar ones without reading its cache)."""
        return self.meta.get(key, default)

    @property
    def loaded(self) -> bool:
        """Whether the text, blocks and metadata are in memory (always, for a document made in memory)."""
        return True

    def release(self) -> None:
        """Drop what was read from disk (nothing for a document made in memory; see ``StoredDocument``)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable span of a document.

    Attributes:
        chunk_id: Deterministic UUID from document, chunker configuration and span.
        document_id: The parent document's UUID.
        index: Zero-based position in the document's chunk sequence.
        start: Offset into ``full_document.md``.
        end: One past the last character.
        text: Exactly ``markdown[start:end]``.
        token_count: Tokens of ``text`` under the chunk set's tokenizer.
        section_path: Headings from the top level down to this chunk's section.
        pages: Source pages the chunk touches, ascending.
        chunk_type: ``text``, ``table``, ``equation`` or ``mixed``.
        overlap_tokens: Tokens shared with the previous chunk (0 for the first).
        oversized: True when a single atomic unit alone exceeds the token budget.
        context_start: Start of the span to hand to a reader instead of the chunk (the parent of a
            hierarchical child, the sentence window); -1 when it is the chunk itself.
        context_end: End of that span; -1 when it is the chunk itself.
    """

    chunk_id: str
    document_id: str
    index: int
    start: int
    end: int
    text: str
    token_count: int
    section_path: tuple[str, ...] = ()
    pages: tuple[int, ...] = ()
    chunk_type: str = "text"
    overlap_tokens: int = 0
    oversized: bool = False
    context_start: int = -1
    context_end: int = -1

    @property
    def context(self) -> tuple[int, int]:
        """The span a reader should get: the context span when set, else the chunk's own."""
        return (self.context_start, self.context_end) if self.context_start >= 0 else (self.start, self.end)


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved chunk, as every retriever returns it.

    Attributes:
        chunk_id: The chunk's UUID.
        document_id: The parent document's UUID.
        label: The parent document's short name (e.g. ``"P01"``).
        start: Chunk start offset in ``full_document.md``.
        end: Chunk end offset.
        rank: 1-based rank in the result list.
        score: Retriever score (higher is better; cosine similarity for ``dense``, BM25 for ``bm25``).
        text: The chunk text.
        retriever: Name of the retriever that produced the hit.
        pages: Source pages of the chunk.
        section_path: Section headings of the chunk.
        title: The parent document's title.
        arxiv: The parent document's arXiv identifier ("" when unknown).
        why: Why it matched, in words (``"bm25 7.31 on jpsi, lhcb"``, ``"rrf: dense #3, bm25 #1"``).
        matched: Query terms or entities found in the text.
        highlights: ``(start, end)`` spans of ``text`` to highlight (offsets into ``text``).
        tier: Memory tier the hit came from (``lt``, ``hot`` or ``lt+hot``; ``""`` outside
            :mod:`hepwb.tiers`).
    """

    chunk_id: str
    document_id: str
    label: str
    start: int
    end: int
    rank: int
    score: float
    text: str = ""
    retriever: str = ""
    pages: tuple[int, ...] = ()
    section_path: tuple[str, ...] = ()
    title: str = ""
    arxiv: str = ""
    why: str = ""
    matched: tuple[str, ...] = ()
    highlights: tuple[tuple[int, int], ...] = ()
    tier: str = ""


def one_at_a_time(docs: Iterable[Document]) -> Iterator[Document]:
    """Each document in turn; one stored on disk and not read before is released after its turn.

    What loops over a whole corpus use, so a corpus of thousands of papers is never in memory at once.
    """
    for d in docs:
        was = d.loaded
        yield d
        if not was:
            d.release()
