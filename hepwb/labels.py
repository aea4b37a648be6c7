"""Human names of hepwb's metrics and configuration columns: one name for each, everywhere.

The report, the CLI, the notebooks and the README say *found@5* for ``hit_rate@5`` (the share of
questions with a relevant chunk among the first five hits); every table and plot takes its column
names from here.
"""

from __future__ import annotations

__all__ = ["LABELS", "human"]

LABELS = {
    "chunker": "chunker",
    "chunk_size": "chunk size (tokens)",
    "chunk_overlap": "overlap",
    "embedding_model": "embedding model",
    "tokenizer": "tokenizer",
    "retriever": "retriever",
    "retriever_options": "retriever options",
    "k": "k",
    "n_questions": "questions",
    "n_chunks": "chunks",
    "mean_chunk_tokens": "mean tokens per chunk",
    "hit_rate@5": "found@5",
    "recall@1": "recall@1",
    "recall@5": "recall@5",
    "recall@10": "recall@10",
    "mrr@10": "MRR@10",
    "ndcg@10": "nDCG@10",
    "chunk_precision@5": "chunk precision@5",
    "doc_recall@5": "paper recall@5",
    "span_recall@5": "span recall@5 (Chroma)",
    "span_iou@5": "span IoU@5 (Chroma)",
    "precision_omega": "precision Ω (Chroma)",
    "share_chunks_truncated": "chunks truncated by the embedder",
    "n_evidence_located": "evidence located",
    "index_mib": "index (MiB)",
    "query_p50_ms": "query p50 (ms)",
    "query_p95_ms": "query p95 (ms)",
    "compute_s": "compute (s)",
}
"""Human names of the catalog's columns (others are shown as they are)."""


def human(column: str) -> str:
    """The human name of a catalog column.

    Example:
        >>> human("hit_rate@5"), human("something_else")
        ('found@5', 'something_else')
    """
    return LABELS.get(column, column)
