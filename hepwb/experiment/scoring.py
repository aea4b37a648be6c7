"""Score one run's retrieval results: rank, chunk, paper, span and ragas metrics with 95 % intervals.

Also the share of evidence in the top-5 reader contexts, with the chunk alone and with the captions
of the figures and tables it mentions (``evidence_in_context@5``, ``evidence_in_context_captions@5``;
:mod:`hepwb.evaluation.context`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.chunking.chunksets import ChunkSet
from hepwb.evaluation import KeyIndex, Located, Question, evaluate
from hepwb.evaluation.context import evidence_in_context
from hepwb.evaluation.matching import is_relevant
from hepwb.evaluation.ragas_eval import llm_scores, offline_scores, ragas_samples
from hepwb.evaluation.stats import summary_with_ci
from hepwb.exceptions import DependencyError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.stages import EvalInputs, needs_windows
from hepwb.models.tokenizers import max_input_tokens
from hepwb.runtime.llm import LLMEndpoint
from hepwb.types import Chunk, Hit

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Scores", "score", "scored_hits_frame"]

_log = logging.getLogger("hepwb.scoring")


@dataclass(frozen=True)
class Scores:
    """Metrics of one run."""

    summary: dict[str, float]
    ci95: dict[str, tuple[float, float]]
    n: dict[str, int]
    """The questions a metric averages where fewer than all scored ones (:attr:`RunRecord.summary_n`)."""
    per_question: pd.DataFrame = field(repr=False)
    relevant: dict[tuple[str, int], bool] = field(repr=False)
    """``{(qid, rank): whether that hit is relevant to one of the question's quotes}``."""


def score(
    cfg: ExperimentConfig,
    inputs: EvalInputs,
    cs: ChunkSet,
    questions: list[Question],
    results: dict[str, list[Hit]],
    *,
    with_ci: bool = True,
) -> Scores:
    """Evaluate ``results`` against the located evidence of ``questions``."""
    qids = {q.qid for q in questions}
    located = [loc for loc in inputs.located if loc.qid in qids]
    ks = tuple(sorted({k for k in (1, 3, 5, 10) if k <= cfg.k} | {cfg.k}))
    ev = evaluate(
        questions,
        located,
        results,
        ks=ks,
        min_coverage=cfg.min_coverage,
        keyindexes=inputs.keyindexes,
        chunks=cs.chunks,
    )
    per_question = ev.per_question.join(
        _ragas(
            questions,
            results,
            located,
            cs,
            ev.relevant_chunks,
            k=min(defaults.RAGAS_TOP_K, cfg.k),
            llm_embeddings=cfg.embedding_model if cfg.ragas_llm else None,
        ),
        on="qid",
    )
    evaluated = per_question[per_question["n_located"] > 0]
    if not any(q.answer for q in questions):
        _log.info("no question has an 'answer': the answer metrics are left out, everything else is scored")
    ci95 = _intervals(evaluated) if with_ci and len(evaluated) else {}
    relevant = _relevant_hits(results, located, inputs.keyindexes, cfg.min_coverage)
    # read through windows, a chunk loses nothing to the model's input limit
    limit = 10**9 if needs_windows(cfg) else max_input_tokens(cfg.embedding_model)  # the model is not loaded
    # what a reader of the top hits is handed: the chunk, or the chunk and linked captions
    kc = min(defaults.RAGAS_TOP_K, cfg.k)
    summary = {
        **{k: float(v) for k, v in ev.summary.items()},
        **_ragas_means(per_question, evaluated),
        **_in_context(located, results, cs, inputs.keyindexes, k=kc, min_coverage=cfg.min_coverage),
        **_chunk_costs(cs.chunks, limit),
        "n_papers": float(len(cs.documents)),  # what there is to search among (few: found@k comes easily)
    }
    counts = {c: int(evaluated[c].notna().sum()) for c in summary if c in evaluated.columns}
    n = {c: v for c, v in counts.items() if v < len(evaluated)}
    return Scores(summary, ci95, n, per_question, relevant)


def _ragas_means(per_question: pd.DataFrame, evaluated: pd.DataFrame) -> dict[str, float]:
    """The mean of each ragas metric over the evaluated questions.

    A metric without any value (answer metrics of questions without answers) is left out.
    """
    return {
        c: float(evaluated[c].mean())
        for c in per_question.columns
        if c.startswith("ragas_") and evaluated[c].notna().any()
    }


def _intervals(evaluated: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """``{metric: (low, high)}``: the bootstrap 95 % interval of each metric's mean, rounded."""
    ci = summary_with_ci(evaluated)
    return {
        str(m): (round(float(lo), 4), round(float(hi), 4))
        for m, lo, hi in zip(ci["metric"], ci["ci_low"], ci["ci_high"], strict=True)
    }


def _relevant_hits(
    results: dict[str, list[Hit]],
    located: list[Located],
    keyindexes: dict[str, KeyIndex],
    min_coverage: float,
) -> dict[tuple[str, int], bool]:
    """``{(qid, rank): whether that hit is relevant to one of the question's located quotes}``."""
    by_q: dict[str, list[Located]] = {}
    for loc in located:
        by_q.setdefault(loc.qid, []).append(loc)
    return {
        (qid, h.rank): any(
            is_relevant(loc, h, keyindexes[loc.document_id], min_coverage) for loc in by_q.get(qid, [])
        )
        for qid, hits in results.items()
        for h in hits
    }


def _in_context(
    located: list[Located],
    results: dict[str, list[Hit]],
    cs: ChunkSet,
    keyindexes: dict[str, KeyIndex],
    *,
    k: int,
    min_coverage: float,
) -> dict[str, float]:
    """The share of evidence a reader of the top ``k`` hits is handed: the chunks alone, and with captions."""
    return {
        f"evidence_in_context{'_captions' if captions else ''}@{k}": evidence_in_context(
            located, results, cs.documents, k=k, captions=captions, min_coverage=min_coverage,
            keyindexes=keyindexes,
        )
        for captions in (False, True)
    }  # fmt: skip


def _chunk_costs(chunks: list[Chunk], limit: int) -> dict[str, float]:
    """The chunk count and size, and what a dense embedder reading only ``limit`` word pieces never sees.

    Example:
        >>> from hepwb.types import Chunk
        >>> chunks = [Chunk("a", "d", 0, 0, 1, "x", 300), Chunk("b", "d", 1, 1, 2, "y", 100)]
        >>> costs = _chunk_costs(chunks, 256)
        >>> costs["n_chunks"], costs["share_chunks_truncated"], costs["share_tokens_dropped"]
        (2.0, 0.5, 0.11)
    """
    total = sum(c.token_count for c in chunks)
    n = max(len(chunks), 1)
    return {
        "n_chunks": float(len(chunks)),
        # what a dense embedder reading only the first `limit` word pieces of each chunk never sees
        "share_chunks_truncated": sum(c.token_count > limit for c in chunks) / n,
        "share_tokens_dropped": sum(max(0, c.token_count - limit) for c in chunks) / max(total, 1),
        "mean_chunk_tokens": total / n,
    }


def scored_hits_frame(results: dict[str, list[Hit]], relevant: dict[tuple[str, int], bool]) -> pd.DataFrame:
    """One row per retrieved chunk: qid, rank, chunk, label, score, offsets, pages, relevant."""
    import pandas as pd

    rows = [
        {
            "qid": qid,
            "rank": h.rank,
            "chunk_id": h.chunk_id,
            "label": h.label,
            "score": h.score,
            "start": h.start,
            "end": h.end,
            "pages": list(h.pages),
            "relevant": relevant.get((qid, h.rank), False),
        }
        for qid, hits in results.items()
        for h in hits
    ]
    columns = ["qid", "rank", "chunk_id", "label", "score", "start", "end", "pages", "relevant"]
    return pd.DataFrame(rows, columns=columns)


def _ragas(
    questions: Any,
    results: Any,
    located: Any,
    cs: Any,
    relevant: Any,
    *,
    k: int,
    llm_embeddings: str | None,
) -> pd.DataFrame:
    """The ragas metrics of the top ``k`` hits per question, prefixed ``ragas_``.

    ``llm_embeddings``: the embedding model of the LLM-judged metrics, which are added when it is given.
    """
    import pandas as pd

    samples = ragas_samples(questions, results, located, relevant, cs.documents, k=k)
    try:
        out = offline_scores(samples)
    except DependencyError as exc:
        if llm_embeddings is not None:
            raise
        _log.info("no ragas metrics in this run: %s", exc)
        return pd.DataFrame(index=pd.Index([q.qid for q in questions], name="qid"))
    if llm_embeddings is not None:
        out = out.join(llm_scores(samples, LLMEndpoint.from_env(), llm_embeddings).drop(columns="response"))
    return out.add_prefix("ragas_")
