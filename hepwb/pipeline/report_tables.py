"""The report's tables for people: human column names, the best value marked, and a "what to use" summary.

``headline_html`` renders the runs of a sweep as one HTML table (never cut with "…"), each metric's best
value in bold on green. ``what_to_use`` picks the best configuration per chunk size and says, with a paired
permutation test on the same questions, whether it is really better than the runner-up.

Example:
    >>> import pandas as pd
    >>> wide = pd.DataFrame({"chunk_size": [256, 256], "retriever": ["bm25", "dense"],
    ...                      "hit_rate@5": [0.8, 0.6], "run_id": ["a", "b"]})
    >>> html = headline_html(wide, ["chunk_size", "retriever", "hit_rate@5"], "hit_rate@5")
    >>> "found@5" in html and "hw-best" in html and "…" not in html
    True
"""

from __future__ import annotations

import html as _html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hepwb import defaults

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LABELS", "headline_html", "human", "what_to_use"]

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
}
"""Human names of the catalog's columns (others are shown as they are)."""

_LOWER_IS_BETTER = {"share_chunks_truncated"}
_NOT_SCORES = {"n_questions", "n_chunks", "mean_chunk_tokens", "n_evidence_located", "chunk_size", "k"}
_STYLE = (
    "<style>.hw-headline{border-collapse:collapse;font-size:13px}"
    ".hw-headline th,.hw-headline td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right;"
    "white-space:nowrap}.hw-headline th{background:#f4f4f8}.hw-headline td.hw-text{text-align:left}"
    ".hw-headline td.hw-best{font-weight:bold;background:#d9f2d9}</style>"
)


def human(column: str) -> str:
    """The human name of a catalog column.

    Example:
        >>> human("hit_rate@5"), human("something_else")
        ('found@5', 'something_else')
    """
    return LABELS.get(column, column)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value == value else "–"  # NaN
    return _html.escape(str(value))


def headline_html(wide: pd.DataFrame, columns: Sequence[str], metric: str) -> str:
    """The runs as one HTML table sorted by ``metric``, best value of every score column marked."""
    import pandas as pd

    cols = [c for c in columns if c in wide.columns]
    frame = wide[cols].sort_values(metric, ascending=False) if metric in cols else wide[cols]
    best: dict[str, float] = {}
    for c in cols:
        if c in _NOT_SCORES or not pd.api.types.is_numeric_dtype(frame[c]) or frame[c].isna().all():
            continue
        best[c] = float(frame[c].min() if c in _LOWER_IS_BETTER else frame[c].max())
    head = "".join(f"<th>{_html.escape(human(c))}</th>" for c in cols)
    rows = []
    for rec in frame.itertuples(index=False):
        cells = []
        for c, v in zip(cols, rec, strict=True):
            cls = "hw-text" if isinstance(v, str) else ""
            if c in best and isinstance(v, int | float) and abs(float(v) - best[c]) < 1e-12:
                cls += " hw-best"
            cells.append(f'<td class="{cls.strip()}">{_fmt(v)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f'{_STYLE}<table class="hw-headline"><tr>{head}</tr>{"".join(rows)}</table>'


def _label(row: pd.Series) -> str:
    parts = [
        str(row.get("chunker", "")),
        f"overlap {row.get('chunk_overlap', '')}",
        str(row.get("retriever", "")),
    ]
    opts = row.get("retriever_options")
    if isinstance(opts, str) and opts not in ("", "{}"):
        parts.append(opts)
    if "embedding_model" in row and str(row["embedding_model"]) != defaults.EMBEDDING_MODEL:
        parts.append(str(row["embedding_model"]))
    return " · ".join(p for p in parts if p)


def what_to_use(
    wide: pd.DataFrame, per_question: Callable[[str], pd.DataFrame], metric: str = "hit_rate@5"
) -> pd.DataFrame:
    """Per chunk size: the best configuration, the runner-up, and whether the difference is real.

    Args:
        wide: One row per run (``Catalog.metrics_wide``) with ``run_id`` and ``chunk_size``.
        per_question: Returns a run's per-question table (``Catalog.per_question``).
        metric: The deciding metric.

    Returns:
        One row per chunk size: ``best``, its ``metric``, ``runner_up``, ``diff``, ``p_value`` and a
        ``verdict`` sentence.
    """
    import pandas as pd

    from hepwb.evaluation.stats import paired_test

    rows = []
    for size, group in wide.groupby("chunk_size", sort=True):
        ranked = group.sort_values(metric, ascending=False)
        top = ranked.iloc[0]
        row = {"chunk size": int(str(size)), "best": _label(top), human(metric): float(top[metric])}
        if len(ranked) < 2:
            rows.append({**row, "runner-up": "", "difference": float("nan"), "p": float("nan"),
                         "verdict": "the only configuration at this size"})  # fmt: skip
            continue
        second = ranked.iloc[1]
        a = per_question(str(top["run_id"])).set_index("qid")[metric]
        b = per_question(str(second["run_id"])).set_index("qid")[metric].reindex(a.index)
        res = paired_test(a.tolist(), b.tolist())
        verdict = (
            f"significantly better than the runner-up (p = {res.p_value:.3f})"
            if res.significant
            else f"not distinguishable from the runner-up on these questions (p = {res.p_value:.2f})"
        )
        rows.append({**row, "runner-up": _label(second), "difference": float(res.diff.mean), "p": res.p_value,
                     "verdict": verdict})  # fmt: skip
    return pd.DataFrame(rows)
