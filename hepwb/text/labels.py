"""Human names of hepwb's metrics and configuration columns: one name for each, everywhere.

The report, the CLI, the notebooks and the documentation say *found@5* for ``hit_rate@5`` (the share of
questions with a relevant chunk among the first five hits); every table and plot takes its column
names from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hepwb import defaults

__all__ = ["LABELS", "config_label", "human"]

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
    "ann_recall@10": "index recall@10",
}
"""Human names of the catalog's columns (others are shown as they are)."""


def human(column: str) -> str:
    """The human name of a catalog column.

    Example:
        >>> human("hit_rate@5"), human("something_else")
        ('found@5', 'something_else')
    """
    return LABELS.get(column, column)


def _given(value: Any) -> bool:
    """Whether a table cell holds a value (not ``None``, NaN or pandas' missing value)."""
    return value is not None and str(value) not in ("nan", "<NA>", "None", "NaT")


def config_label(row: Mapping[Any, Any]) -> str:
    """A configuration in one line: chunker, size, overlap, retriever (options); model, index if not default.

    Example:
        >>> config_label({"chunker": "hepilot", "chunk_size": 512, "chunk_overlap": 0.1, "retriever": "bm25",
        ...               "embedding_model": "all-MiniLM-L6-v2"})
        'hepilot · 512 tokens · overlap 0.1 · bm25'
        >>> config_label({"chunker": "paper level", "chunk_size": float("nan"), "retriever": "run:tfidf"})
        'paper level · run:tfidf'
    """
    parts = [str(row.get("chunker") or "")]
    size, overlap = row.get("chunk_size"), row.get("chunk_overlap")
    if _given(size):  # a run file scored at paper level has neither
        parts.append(f"{int(float(str(size)))} tokens")
    if _given(overlap):
        parts.append(f"overlap {overlap}")
    parts.append(str(row.get("retriever") or ""))
    opts = row.get("retriever_options")
    if isinstance(opts, str) and opts not in ("", "{}"):
        parts.append(opts)
    model = row.get("embedding_model")
    if model is not None and str(model) != defaults.EMBEDDING_MODEL:
        parts.append(str(model))
    index = row.get("vector_index")
    if index and str(index) != "auto":
        parts.append(f"index {index}")
    return " · ".join(p for p in parts if p)
