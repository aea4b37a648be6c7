"""Sentence-window chunking: each sentence is a chunk for search; its neighbours are its context.

The chunk (one sentence, with any heading just before it) is what gets embedded and matched; the
context span (``window`` sentences either side, never across a bibliography) is what a reader gets
(``Chunk.context``). Overlap is not used: the window provides the surrounding text.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("One is here. Two is here. Three is here.", "S")
    >>> c = SentenceWindowChunker(window=1, tokenizer="words").chunk(doc)[1]
    >>> c.text, doc.markdown[c.context_start:c.context_end]
    ('Two is here.', 'One is here. Two is here. Three is here.')
"""

from __future__ import annotations

import dataclasses

from hepwb import defaults
from hepwb.chunking._packing import SizedChunker, Unit, block_units
from hepwb.chunking._spans import ChunkSpan, TokenIndex, bare_heading, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.options import ChunkSize, Overlap, Window
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document, JSONObject

__all__ = ["SentenceWindowChunker"]


@register_chunker("sentence_window")
class SentenceWindowChunker(SizedChunker):
    """One chunk per sentence (longer sentences cut at ``chunk_size``) with a ±``window`` sentence context.

    Args:
        chunk_size: Largest sentence chunk in tokens (longer sentences are cut).
        chunk_overlap: Ignored (recorded as 0): the window provides the context.
        tokenizer: Token counter name.
        window: Sentences of context on each side.
    """

    name = "sentence_window"

    def __init__(
        self,
        chunk_size: ChunkSize = defaults.SENTENCE_WINDOW_CHUNK_SIZE,
        chunk_overlap: Overlap = 0.0,
        tokenizer: str = defaults.EMBEDDING_MODEL,
        window: Window = defaults.SENTENCE_WINDOW,
    ) -> None:
        super().__init__(chunk_size, 0.0, tokenizer)
        self.window = window

    def params(self) -> JSONObject:
        """Parameters defining this chunker."""
        return {**super().params(), "window": self.window}

    def chunk(self, doc: Document) -> list[Chunk]:
        """One chunk per sentence, with its window as context."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        groups: list[list[Unit]] = [[]]
        for u in block_units(doc, tokens, self.budget, sentences=True):
            if u.kind == "barrier":
                groups.append([])
            else:
                groups[-1].append(u)
        spans: list[ChunkSpan] = []
        contexts: list[tuple[int, int]] = []
        for group in groups:
            sents = [u for u in group if u.kind != "heading"]
            pending: list[Unit] = []  # headings waiting to be attached to the next sentence
            idx = 0

            def emit(a: int, z: int, oversized: bool, ctx: tuple[int, int]) -> None:
                spans.append(ChunkSpan(a, z, a, oversized=oversized))
                contexts.append(ctx)

            def emit_headings(heads: list[Unit]) -> None:
                """Headings without a sentence, packed into chunks within the budget."""
                run: list[Unit] = []
                for h in [*heads, None]:
                    if run and (h is None or tokens.count(run[0].start, h.end) > self.budget):
                        big = tokens.count(run[0].start, run[-1].end) > self.budget
                        emit(run[0].start, run[-1].end, big, (run[0].start, run[-1].end))
                        run = []
                    if h is not None:
                        run.append(h)

            for u in group:
                if u.kind == "heading":
                    pending.append(u)
                    continue
                lo, hi = sents[max(0, idx - self.window)], sents[min(len(sents) - 1, idx + self.window)]
                start = pending[0].start if pending else u.start
                if (
                    pending and tokens.count(start, u.end) > self.budget
                ):  # heading(s) alone, then the sentence
                    emit_headings(pending)
                    start = u.start
                emit(start, u.end, u.oversized, (min(lo.start, start), max(hi.end, u.end)))
                pending = []
                idx += 1
            if pending:  # headings at the end of a group
                emit_headings(pending)
        # headings that introduce no sentence are no chunk (finalize drops them): keep contexts in step
        starts = [b.start for b in doc.blocks]
        kept = [i for i, sp in enumerate(spans) if not bare_heading(doc, sp, starts)]
        spans, contexts = [spans[i] for i in kept], [contexts[i] for i in kept]
        chunks = finalize(doc, spans, tokens, config_key(self))
        return [
            dataclasses.replace(c, context_start=a, context_end=z)
            for c, (a, z) in zip(chunks, contexts, strict=True)
        ]
