"""Metrics at the chunk, document and span level, from the same results as the evidence level.

* **chunk** (``chunk_recall@k``, ``chunk_precision@k``, ``chunk_hit_rate@k``, ``chunk_mrr@k``,
  ``chunk_ndcg@k``): the
  relevant set of a question is every chunk of the chunk set relevant to one of its located quotes
  (:func:`~hepwb.evaluation.matching.is_relevant`); ir-measures (trec_eval) scores the ranked hits against it.
* **document** (``doc_recall@k``, ``doc_precision@k``, ``doc_hit_rate@k``, ``doc_mrr@k``, ``doc_ndcg@k``):
  relevant = the
  documents holding the question's evidence; the ranking is each document's first appearance.
* **span** (``span_recall@k``, ``span_precision@k``, ``span_iou@k`` and ``precision_omega``): Chroma's
  character-level metrics (:mod:`hepwb.evaluation.spans`) of the top ``k`` hits against the located
  quote spans, summed over the question's documents (``precision_omega`` of several documents is
  their mean weighted by excerpt length).

Example:
    >>> from hepwb.types import Hit
    >>> hits = [Hit("c2", "dB", "B", 0, 10, 1, 1.0), Hit("c1", "dA", "A", 0, 10, 2, 0.5)]
    >>> document_level({"q": hits}, {"q": {"dA"}}, ks=(1, 2))["q"]["doc_recall@2"]
    1.0
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from hepwb import defaults
from hepwb.evaluation.matching import KeyIndex, Located
from hepwb.evaluation.rank import rank_scores
from hepwb.evaluation.spans import precision_omega, union
from hepwb.types import Chunk, Hit

__all__ = ["chunk_level", "document_level", "level_columns", "relevant_chunks", "span_level"]

_FAMILIES = ("recall", "precision", "hit_rate", "mrr", "ndcg")


def level_columns(ks: Sequence[int], span_k: int) -> list[str]:
    """Column names this module adds for cutoffs ``ks`` (span metrics at ``span_k``).

    Example:
        >>> level_columns((5,), 5)[:4], level_columns((5,), 5)[-4:]
        (['chunk_recall@5', 'chunk_precision@5', 'chunk_hit_rate@5', 'chunk_mrr@5'], \
['span_recall@5', 'span_precision@5', 'span_iou@5', 'precision_omega'])
    """
    cols = [f"{lvl}_{m}@{k}" for lvl in ("chunk", "doc") for k in ks for m in _FAMILIES]
    return [
        *cols,
        f"span_recall@{span_k}",
        f"span_precision@{span_k}",
        f"span_iou@{span_k}",
        "precision_omega",
    ]


def _scores(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], ks: Sequence[int], prefix: str
) -> dict[str, dict[str, float]]:
    """Per-query scores ``{qid: {prefix_metric@k: value}}`` (queries without qrels left out)."""
    qrels = {q: r for q, r in qrels.items() if r}
    if not qrels:
        return {}
    metrics = [f"{m}@{k}" for k in ks for m in _FAMILIES]
    scores = rank_scores(qrels, run, metrics)
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for m in metrics:
        for q, v in scores[m].items():
            out[q][f"{prefix}_{m}"] = v
    return dict(out)


def _positions(ids: Sequence[str]) -> dict[str, float]:
    """``{id: 1/position}`` of the first appearance of each id."""
    run: dict[str, float] = {}
    for pos, i in enumerate(ids, start=1):
        run.setdefault(i, 1.0 / pos)
    return run


def relevant_chunks(
    located: Sequence[Located],
    chunks: Sequence[Chunk],
    keyindexes: Mapping[str, KeyIndex],
    min_coverage: float = defaults.MIN_COVERAGE,
) -> dict[str, set[str]]:
    """``{qid: ids of the chunks relevant to one of its located quotes}``.

    The rule of :func:`~hepwb.evaluation.matching.is_relevant`, applied to all chunks of a quote's document
    at once: each chunk's key range is computed once per document, coverage is one vector operation per
    quote, a strict quote's verbatim repeats are found by searching the document's key for it (a chunk
    holds a repeat when its key range contains one), and a chunk holding one of the quote's
    :attr:`~hepwb.evaluation.matching.Located.copies` whole is relevant (a repeated sentence, quoted
    verbatim or with a typo). Chroma's five corpora (472 questions, ~1,000 chunks a corpus) took some
    100 s a run chunk by chunk.
    """
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.document_id].append(c)
    ranges: dict[str, tuple[np.ndarray, np.ndarray, list[str]]] = {}
    out: dict[str, set[str]] = defaultdict(set)
    for loc in located:
        doc_chunks = by_doc.get(loc.document_id)
        if not doc_chunks:
            continue
        idx = keyindexes[loc.document_id]
        if loc.document_id not in ranges:
            spans = np.array([idx.key_range(c.start, c.end) for c in doc_chunks], dtype=np.int64)
            ranges[loc.document_id] = (spans[:, 0], spans[:, 1], [c.chunk_id for c in doc_chunks])
        ks, ke, ids = ranges[loc.document_id]
        total = loc.key_end - loc.key_start
        hit = np.zeros(len(ids), dtype=bool)
        if total > 0:
            inside = np.maximum(np.minimum(ke, loc.key_end) - np.maximum(ks, loc.key_start), 0)
            hit |= inside / total >= min_coverage
        if loc.method == "strict":  # the quote verbatim anywhere in the chunk counts too
            quote = idx.key[loc.key_start : loc.key_end]
            if not quote:
                hit |= ke >= ks
            at = idx.key.find(quote) if quote else -1
            while at >= 0:
                hit |= (ks <= at) & (ke >= at + len(quote))
                at = idx.key.find(quote, at + 1)
        for start, end in loc.copies:  # every other place the quote stands, held whole
            hit |= (ks <= start) & (ke >= end)
        out[loc.qid].update(ids[i] for i in np.flatnonzero(hit))
    return dict(out)


def chunk_level(
    results: Mapping[str, Sequence[Hit]], relevant: Mapping[str, set[str]], ks: Sequence[int]
) -> dict[str, dict[str, float]]:
    """Chunk-level rank metrics per question; ``relevant`` from :func:`relevant_chunks`."""
    qrels = {q: dict.fromkeys(ids, 1) for q, ids in relevant.items()}
    run = {q: _positions([h.chunk_id for h in hits]) for q, hits in results.items()}
    return _scores(qrels, run, ks, "chunk")


def document_level(
    results: Mapping[str, Sequence[Hit]], relevant_docs: Mapping[str, set[str]], ks: Sequence[int]
) -> dict[str, dict[str, float]]:
    """Document-level rank metrics per question (relevant: the documents of its evidence)."""
    qrels = {q: dict.fromkeys(docs, 1) for q, docs in relevant_docs.items()}
    run = {q: _positions([h.document_id for h in hits]) for q, hits in results.items()}
    return _scores(qrels, run, ks, "doc")


def span_level(
    results: Mapping[str, Sequence[Hit]], located: Sequence[Located], chunks: Sequence[Chunk], k: int
) -> dict[str, dict[str, float]]:
    """Chroma's span metrics of each question's top ``k`` hits, over all its documents."""
    excerpts: dict[str, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    for loc in located:
        excerpts[loc.qid][loc.document_id].append((loc.start, loc.end))
    spans_by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for c in chunks:
        spans_by_doc[c.document_id].append((c.start, c.end))
    out: dict[str, dict[str, float]] = {}
    for qid, docs in excerpts.items():
        hits = list(results.get(qid, ()))[:k]
        got = sum(h.end - h.start for h in hits)
        relevant = hit = 0
        omega_num = omega_den = 0.0
        for doc_id, spans in docs.items():
            ex = union(spans)
            relevant += sum(e - s for s, e in ex)
            mine = [(h.start, h.end) for h in hits if h.document_id == doc_id]
            inter = union((max(s, a), min(e, b)) for a, b in mine for s, e in ex if max(s, a) < min(e, b))
            hit += sum(e - s for s, e in inter)
            po = precision_omega(ex, spans_by_doc.get(doc_id, ()))
            weight = sum(e - s for s, e in ex)
            omega_num += po * weight
            omega_den += weight
        out[qid] = {
            f"span_recall@{k}": hit / relevant if relevant else 0.0,
            f"span_precision@{k}": hit / got if got else 0.0,
            f"span_iou@{k}": hit / (got + relevant - hit) if got + relevant - hit else 0.0,
            "precision_omega": omega_num / omega_den if omega_den else 0.0,
        }
    return out
