"""Span-level retrieval metrics of Chroma's "Evaluating Chunking Strategies for Retrieval".

For a question with relevant excerpts ``E`` (character spans of a document) and retrieved chunks
``R`` (character spans), with ``|·|`` a length in characters:

* ``recall = |∪(E ∩ R)| / Σ|E|`` - the share of the excerpts' characters retrieved;
* ``precision = |∪(E ∩ R)| / Σ|R|`` - the share of retrieved characters that are relevant;
* ``iou = |∪(E ∩ R)| / (Σ|R| + |E \\ R|)``;
* ``precision_omega``: the precision of the best possible retrieval with this chunking, i.e. of
  every chunk that overlaps an excerpt: ``|∪(E ∩ Ω)| / |∪Ω ∪ (E \\ Ω)|``.

This follows ``chunking_evaluation/evaluation_framework/base_evaluation.py`` (commit d451fc4):
the paper writes the formulas over tokens, the code - and hepwb - counts characters of the corpus;
retrieved chunks of *other* documents count in ``Σ|R|`` but never in the numerator; ``Σ|R|`` sums
chunk lengths, so characters shared by two overlapping retrieved chunks count twice (overlap costs
precision). Where hepwb differs: a chunk merely *touching* an excerpt (zero-length intersection)
does not count as overlapping it for ``precision_omega`` (Chroma's ``intersect_two_ranges``
accepts ``start == end``), and chunk spans are exact offsets from the chunker rather than found
again by fuzzy text search.

Example:
    >>> s = span_scores([(10, 20)], [(0, 15), (100, 130)])
    >>> s["recall"], round(s["precision"], 3), round(s["iou"], 3)
    (0.5, 0.111, 0.1)
    >>> precision_omega([(10, 20)], [(0, 15), (15, 40), (50, 60)])
    0.25
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["SPAN_METRICS", "precision_omega", "span_scores", "union"]

SPAN_METRICS = ("span_recall", "span_precision", "span_iou", "precision_omega")
"""Names of the span metrics in evaluation summaries."""

Span = tuple[int, int]


def union(spans: Iterable[Span]) -> list[Span]:
    """Merge overlapping or adjacent spans.

    Example:
        >>> union([(5, 8), (0, 3), (3, 4), (7, 10)])
        [(0, 4), (5, 10)]
    """
    out: list[Span] = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _length(spans: Iterable[Span]) -> int:
    return sum(e - s for s, e in spans)


def _intersections(excerpts: Sequence[Span], chunks: Iterable[Span]) -> list[Span]:
    return [(max(s, cs), min(e, ce)) for cs, ce in chunks for s, e in excerpts if max(s, cs) < min(e, ce)]


def span_scores(excerpts: Sequence[Span], retrieved: Sequence[Span], foreign: int = 0) -> dict[str, float]:
    """Recall, precision and IoU of ``retrieved`` chunk spans against ``excerpts`` (one document).

    Args:
        excerpts: Relevant spans of the question's document.
        retrieved: Spans of the retrieved chunks *of that document*.
        foreign: Total characters of retrieved chunks from other documents (they dilute precision).
    """
    relevant = _length(union(excerpts))
    if relevant == 0:
        msg = "span_scores needs at least one non-empty excerpt"
        raise ValueError(msg)
    hit = _length(union(_intersections(excerpts, retrieved)))
    got = _length(retrieved) + foreign
    missed = relevant - hit
    return {
        "recall": hit / relevant,
        "precision": hit / got if got else 0.0,
        "iou": hit / (got + missed) if got + missed else 0.0,
    }


def precision_omega(excerpts: Sequence[Span], chunks: Iterable[Span]) -> float:
    """Precision of retrieving exactly the chunks (of ``chunks``) that overlap an excerpt."""
    chunks = list(chunks)
    touching = [(cs, ce) for cs, ce in chunks if any(max(s, cs) < min(e, ce) for s, e in excerpts)]
    hit = union(_intersections(excerpts, touching))
    uncovered = _length(union(excerpts)) - _length(hit)
    denominator = _length(union(touching)) + uncovered
    return _length(hit) / denominator if denominator else 0.0
