"""Cluster-semantic chunking (Chroma's ``ClusterSemanticChunker``): the best grouping of small pieces.

The document is cut into pieces of at most ``piece_size`` tokens (paragraphs, sentences and words
packed greedily; display math, tables and code stay whole); pieces are embedded, and consecutive
pieces are grouped into chunks of at most ``chunk_size // piece_size`` pieces (and ``chunk_size``
tokens) so that the
sum, over chunks, of the pairwise similarities of their pieces is maximal - found exactly by
dynamic programming. Similarities are cosine similarities minus their document mean, so a group
only pays when its pieces are more alike than average. Groups never cross the bibliography.

Differences from Chroma's implementation: pieces are hepwb's sentence units packed on exact
offsets (Chroma: a 50-token ``RecursiveTokenChunker`` whose chunks are found again by text search);
the DP also enforces the token budget, not only the piece count; similarities are computed in a
band of ``chunk_size // piece_size`` neighbours with the mean over all pairs from vector sums,
instead of the full matrix.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> quarks = ["Quarks carry colour charge in quantum chromodynamics."] * 6
    >>> budget = ["The city budget rose in spring after the vote."] * 6
    >>> doc = markdown_document("# A\\n\\n" + " ".join(quarks + budget), "S")
    >>> chunks = ClusterSemanticChunker(chunk_size=64, piece_size=8, tokenizer="words").chunk(doc)
    >>> counts = [(c.text.count("Quarks"), c.text.count("budget")) for c in chunks]
    >>> counts[0], sum(b for _, b in counts[1:]), any(q and b for q, b in counts)  # topics never mixed
    ((6, 0), 6, False)
"""

from __future__ import annotations

import bisect

import numpy as np

from hepwb import defaults
from hepwb.chunking._packing import SizedChunker, add_overlap, block_units, pack
from hepwb.chunking._spans import ChunkSpan, TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.options import ChunkSize, Overlap, PieceSize
from hepwb.exceptions import ConfigError
from hepwb.limits import MIN_CHUNK_SIZE
from hepwb.models.embedder import get_embedder
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document, JSONObject

__all__ = ["ClusterSemanticChunker", "best_grouping"]


def best_grouping(
    vecs: np.ndarray, max_group: int, sizes: list[int], budget: int, cut_after: set[int]
) -> list[int]:
    """Start indices of the groups maximising the summed centred pairwise similarity.

    Args:
        vecs: Unit vectors of the pieces, in order.
        max_group: Most pieces per group.
        sizes: Tokens per piece.
        budget: Most tokens per group (a single larger piece still forms its own group).
        cut_after: Piece indices after which a group must end.

    Example:
        >>> v = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
        >>> best_grouping(v, 3, [1, 1, 1, 1], 10, set())
        [0, 2]
    """
    n = len(vecs)
    if n == 0:
        return []
    total = vecs.sum(axis=0)
    norms = np.einsum("ij,ij->i", vecs, vecs)
    mean = (float(total @ total) - float(norms.sum())) / (n * (n - 1)) if n > 1 else 0.0
    prefix = np.vstack([np.zeros(vecs.shape[1]), np.cumsum(vecs, axis=0)])
    nprefix = np.concatenate([[0.0], np.cumsum(norms)])
    tprefix = np.concatenate([[0], np.cumsum(sizes)])
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    start_of = np.zeros(n + 1, dtype=int)
    for i in range(1, n + 1):  # groups ending with piece i-1
        for j in range(i - 1, max(i - max_group, 0) - 1, -1):  # group = pieces j .. i-1
            if j < i - 1 and (j in cut_after or (tprefix[i] - tprefix[j] > budget)):
                break
            if j < i - 1 and any(c in cut_after for c in range(j, i - 1)):
                break
            s = prefix[i] - prefix[j]
            length = i - j
            reward = float(s @ s) - (nprefix[i] - nprefix[j]) - mean * length * (length - 1)
            if best[j] + reward > best[i]:
                best[i], start_of[i] = best[j] + reward, j
    starts, i = [], n
    while i > 0:
        starts.append(int(start_of[i]))
        i = start_of[i]
    return starts[::-1]


@register_chunker("cluster_semantic")
class ClusterSemanticChunker(SizedChunker):
    """Pieces of ``piece_size`` tokens grouped by dynamic programming on embedding similarity.

    Args:
        chunk_size: Token budget per chunk.
        chunk_overlap: Overlap as a fraction of ``chunk_size`` (default 0, as in Chroma's study).
        tokenizer: Token counter name.
        piece_size: Tokens per piece (default: Chroma's 50, or a quarter of ``chunk_size`` when smaller).
        embedding_model: Sentence-transformers model embedding the pieces.
    """

    name = "cluster_semantic"

    def __init__(
        self,
        chunk_size: ChunkSize = defaults.CLUSTER_CHUNK_SIZE,
        chunk_overlap: Overlap = 0.0,
        tokenizer: str = defaults.EMBEDDING_MODEL,
        piece_size: PieceSize | None = None,
        embedding_model: str = defaults.EMBEDDING_MODEL,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer)
        if piece_size is None:
            piece_size = min(defaults.PIECE_SIZE, max(MIN_CHUNK_SIZE, chunk_size // 4))
        if piece_size > chunk_size:
            msg = (
                f"chunker 'cluster_semantic': piece_size ({piece_size}) must be at most chunk_size "
                f"({chunk_size}), e.g. {min(defaults.PIECE_SIZE, chunk_size)}"
            )
            raise ConfigError(msg)
        self.piece_size = piece_size
        self.embedding_model = embedding_model

    def params(self) -> JSONObject:
        """Parameters defining this chunker."""
        return {**super().params(), "piece_size": self.piece_size, "embedding_model": self.embedding_model}

    def chunk(self, doc: Document) -> list[Chunk]:
        """Group ``doc``'s pieces into the most coherent chunks."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        piece_budget = max(1, min(self.piece_size, self.budget))
        pieces = pack(block_units(doc, tokens, piece_budget, sentences=True), tokens, piece_budget)
        if not pieces:
            return []
        texts = [doc.markdown[p.start : p.end] for p in pieces]
        vecs = get_embedder(self.embedding_model).embed(texts)
        barriers = sorted(b.start for b in doc.blocks if not b.retrievable)
        cut_after = {
            i
            for i in range(len(pieces) - 1)
            if bisect.bisect_left(barriers, pieces[i].end) < bisect.bisect_left(barriers, pieces[i + 1].start)
            or pieces[i].alone
            or pieces[i + 1].alone  # a caption is a chunk of its own
        }
        sizes = [tokens.count(p.start, p.end) for p in pieces]
        starts = best_grouping(vecs, max(1, self.budget // piece_budget), sizes, self.budget, cut_after)
        ends = [*starts[1:], len(pieces)]
        own = [
            ChunkSpan(
                pieces[a].start,
                pieces[b - 1].end,
                pieces[a].start,
                any(p.oversized for p in pieces[a:b]),
                alone=all(p.alone for p in pieces[a:b]),
            )
            for a, b in zip(starts, ends, strict=True)
        ]
        return finalize(doc, add_overlap(doc, own, tokens, self.overlap_tokens), tokens, config_key(self))
