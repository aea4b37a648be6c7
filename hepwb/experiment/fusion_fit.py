"""Fusion weights chosen by cross-validation, folds grouped by paper (``hepwb fit-fusion``, or inside a run).

For every question the two branches of :class:`~hepwb.retrieval.hybrid.HybridRetriever` (dense, once per
candidate ``dense_read``, and BM25 over the chosen ``fields``) are computed once; every candidate fusion -
how the dense branch reads long chunks (``first`` window or best window), weighted RRF or the convex
combination of min-max-normalised scores, the dense share on a grid - is applied with LanceDB's own hybrid
combination, exactly as the retriever will. Questions are split into
folds by paper (a question's paper is that of its first evidence quote; scikit-learn's ``GroupKFold``), so
no paper is in both the fitting and the scoring fold: each fold's weights are chosen on the other folds
(best mean found@5 + MRR@10) and scored on it. The out-of-fold results are evaluated like any run
(every metric with its 95 % interval). The weights fitted on all questions are saved under
``data/models/fusion/<name>.json`` for the ``fusion`` retriever; evaluated on the same question set, that
retriever uses each question's out-of-fold weights, never weights fitted on the question itself.

A run of ``fusion`` without ``fitted`` (a sweep cell, ``hepwb evaluate --retriever fusion``) fits one
itself with :func:`fit_in_run` on its own chunk set, embedder and question set (saved once under a name
derived from those, reused by later runs) and is scored out of fold the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from hepwb import defaults
from hepwb.chunking.chunksets import ChunkSet
from hepwb.evaluation.levels import relevant_chunks
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.keys import STAGE_PACKAGES
from hepwb.experiment.scoring import score
from hepwb.experiment.stages import EvalInputs
from hepwb.files.io import write_json
from hepwb.files.locks import building
from hepwb.models.embedder import Embedder
from hepwb.models.tokenizers import model_identity
from hepwb.paths import Layout
from hepwb.retrieval.hybrid import HybridRetriever
from hepwb.retrieval.options import Read
from hepwb.retrieval.rerankers import weighted_rrf
from hepwb.text.ids import code_fingerprint, short_hash
from hepwb.text.names import under
from hepwb.types import Hit, JSONObject

__all__ = [
    "METHODS",
    "FusionFit",
    "best_candidate",
    "fit_fusion",
    "fit_in_run",
    "out_of_fold_choices",
    "paper_of",
]

METHODS = ("rrf", "linear")
WEIGHTS = tuple(round(float(w), 2) for w in np.arange(0.0, 1.0001, 0.05))


def paper_of(question: Any) -> str:
    """The paper a question is grouped by: the document of its first evidence quote."""
    return str(question.evidence[0].doc) if question.evidence else "-"


def best_candidate(table: NDArray[np.float64], rows: Sequence[int] | NDArray[np.int64] | None = None) -> int:
    """The candidate with the best mean score over the questions ``rows`` (all when ``None``).

    ``table`` holds every candidate's score of every question, ``(candidates, questions)``, or
    ``(candidates, questions, targets)``, whose targets' means are summed (found@5 + MRR@10 in a fit).
    Ties go to the first candidate.

    Example:
        >>> best_candidate(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])), best_candidate(np.eye(2), [1])
        (2, 1)
    """
    chosen = table if rows is None else table[:, np.asarray(rows)]
    mean = chosen.mean(axis=1)
    return int(np.argmax(mean.sum(axis=1) if mean.ndim == 2 else mean))


def out_of_fold_choices(
    table: NDArray[np.float64], groups: Sequence[str], n_folds: int
) -> list[tuple[int, NDArray[np.int64]]]:
    """Each fold's candidate, chosen on the other folds: ``(candidate, the fold's questions)`` per fold.

    Questions are split into ``n_folds`` folds grouped by ``groups`` (their papers; scikit-learn's
    ``GroupKFold``), so no group is in both the choosing and the scored fold; ``table`` is as in
    :func:`best_candidate`. Scoring each fold's questions with its candidate gives out-of-fold results.

    Example:
        >>> t = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # candidate x question
        >>> sorted((test.tolist(), c) for c, test in out_of_fold_choices(t, ["A", "A", "B", "B"], 2))
        [([0, 1], 1), ([2, 3], 0)]
    """
    from sklearn.model_selection import GroupKFold

    folds = GroupKFold(n_splits=n_folds).split(np.zeros(len(groups)), groups=list(groups))
    return [(best_candidate(table, train), np.asarray(test)) for train, test in folds]


@dataclasses.dataclass
class FusionFit:
    """A fitted fusion: the chosen method and dense share, how they were chosen, their out-of-fold metrics."""

    name: str
    method: str
    weight: float
    fields: str
    dense_read: str
    top_m: int
    fetch: int
    embedding_model: str
    chunkset_id: str
    questions_file: str
    questions_sha256: str
    n_questions: int
    n_folds: int
    folds: dict[str, int]
    fold_params: dict[str, JSONObject]
    out_of_fold: dict[str, float]
    out_of_fold_ci95: dict[str, tuple[float, float]]
    grid: JSONObject

    def options(self, fold: str | None = None) -> JSONObject:
        """Retriever options of the fit (or of one fold's fit)."""
        p = self.fold_params[fold] if fold is not None else {"method": self.method, "weight": self.weight}
        return {
            "method": p["method"],
            "weight": p["weight"],
            "fields": self.fields,
            "dense_read": p.get("dense_read", self.dense_read),
            "top_m": self.top_m,
            "fetch": self.fetch,
        }


def _legs(
    table: Any, embedder: Embedder, questions: Sequence[Any], reads: Sequence[Read], opts: JSONObject
) -> dict[str, list[tuple[Any, Any]]]:
    """Per dense reading, both branches of every question (the lexical one is run once for all readings)."""

    def retriever(read: Read) -> HybridRetriever:
        return HybridRetriever(table, embedder, fetch=opts["fetch"], dense_read=read, top_m=opts["top_m"],
                               fields=opts["fields"])  # fmt: skip

    lexical = [retriever(reads[0]).lexical_leg(q.question) for q in questions]
    out: dict[str, list[tuple[Any, Any]]] = {}
    for read in reads:
        r = retriever(read)
        out[read] = [(r.dense_leg(q.question), fts) for q, fts in zip(questions, lexical, strict=True)]
    return out


def _ranking(legs: tuple[Any, Any], method: str, weight: float, n: int) -> list[str]:
    from lancedb.query import LanceHybridQueryBuilder
    from lancedb.rerankers import LinearCombinationReranker

    vec, fts = legs
    if fts is None:  # no lexical terms: the dense branch alone
        return list(vec.column("chunk_id").to_pylist())[:n]
    reranker = (weighted_rrf(vector_weight=weight) if method == "rrf"
                else LinearCombinationReranker(weight=weight))  # fmt: skip
    fused = LanceHybridQueryBuilder._combine_hybrid_results(
        fts_results=fts, vector_results=vec, norm="score", fts_query="", reranker=reranker, limit=n,
        with_row_ids=False,
    )  # fmt: skip
    return list(fused.column("chunk_id").to_pylist())[:n]


def _scores(ranking: list[str], relevant: set[str]) -> tuple[float, float]:
    """(found@5, reciprocal rank within 10) of one ranking."""
    ranks = [i for i, c in enumerate(ranking[:10], 1) if c in relevant]
    return (1.0 if ranks and ranks[0] <= 5 else 0.0), (1.0 / ranks[0] if ranks else 0.0)


def fit_fusion(
    name: str,
    table: Any,
    embedder: Embedder,
    inputs: EvalInputs,
    cs: ChunkSet,
    *,
    fields: str = defaults.HYBRID_FIELDS,
    dense_read: str | Sequence[str] = ("first", "max"),
    top_m: int = defaults.TOP_M,
    fetch: int = defaults.FETCH,
    n_folds: int = defaults.FUSION_FOLDS,
    k: int = defaults.EVAL_K,
    min_coverage: float = defaults.MIN_COVERAGE,
) -> FusionFit:
    """Choose the fusion by cross-validation grouped by paper (see the module docstring)."""
    located = {loc.qid for loc in inputs.located}
    questions = [q for q in inputs.questions if q.qid in located]
    groups = [paper_of(q) for q in questions]
    if len(set(groups)) < n_folds:
        msg = (
            f"{len(set(groups))} papers hold the evidence: n_folds={n_folds} folds grouped by paper need more"
        )
        raise ConfigError(msg)
    reads = cast("tuple[Read, ...]", (dense_read,) if isinstance(dense_read, str) else tuple(dense_read))
    opts = {"fields": fields, "top_m": top_m, "fetch": fetch}
    legs = _legs(table, embedder, questions, reads, opts)
    relevant = relevant_chunks(inputs.located, cs.chunks, inputs.keyindexes, min_coverage)
    # ties go to the first read given (the cheaper "first" by default), then RRF, then the smaller dense share
    cands = [(r, m, w) for r in reads for m in METHODS for w in WEIGHTS]
    # found@5 and RR@10 of every question under every candidate fusion (computed once)
    table_ = np.zeros((len(cands), len(questions), 2))
    rankings: dict[tuple[str, str, float], list[list[str]]] = {}
    for ci, (r, m, w) in enumerate(cands):
        rankings[(r, m, w)] = [_ranking(lg, m, w, k) for lg in legs[r]]
        for qi, q in enumerate(questions):
            table_[ci, qi] = _scores(rankings[(r, m, w)][qi], relevant.get(q.qid, set()))

    # the two targets together (found@5 + MRR@10): smoother than found@5 alone on ~100 questions
    fold_of_paper: dict[str, int] = {}
    fold_params: dict[str, JSONObject] = {}
    oof: dict[str, list[str]] = {}
    for f, (choice, test) in enumerate(out_of_fold_choices(table_, groups, n_folds)):
        fold_read, m, w = cands[choice]
        fold_params[str(f)] = {"method": m, "weight": w, "dense_read": fold_read,
                               "papers": sorted({groups[i] for i in test})}  # fmt: skip
        for i in test:
            fold_of_paper[groups[i]] = f
            oof[questions[i].qid] = rankings[(fold_read, m, w)][i]
    read, method, weight = cands[best_candidate(table_)]
    by_id = {c.chunk_id: c for c in cs.chunks}
    results = {qid: _hits(ids, by_id, cs) for qid, ids in oof.items()}
    cfg = ExperimentConfig.from_params(embedding_model=embedder.model, k=k, min_coverage=min_coverage)
    scores = score(cfg, inputs, cs, questions, results)
    return FusionFit(
        name=name,
        method=method,
        weight=weight,
        fields=fields,
        dense_read=read,
        top_m=top_m,
        fetch=fetch,
        embedding_model=embedder.model,
        chunkset_id=cs.chunkset_id,
        questions_file=str(inputs.questions_path),
        questions_sha256=inputs.questions_sha256,
        n_questions=len(questions),
        n_folds=n_folds,
        folds={p: int(f) for p, f in fold_of_paper.items()},
        fold_params=fold_params,
        out_of_fold={k_: v for k_, v in scores.summary.items() if "@" in k_ or k_.startswith("n_")},
        out_of_fold_ci95=scores.ci95,
        grid={"dense_reads": list(reads), "methods": list(METHODS), "weights": list(WEIGHTS), "k": k},
    )


def _hits(ids: list[str], by_id: JSONObject, cs: ChunkSet) -> list[Any]:
    out = []
    for rank, cid in enumerate(ids, 1):
        c = by_id[cid]
        doc = cs.documents[c.document_id]
        out.append(
            Hit(cid, c.document_id, doc.label, c.start, c.end, rank, 1.0 / rank, c.text, "fusion", c.pages)
        )
    return out


def fit_in_run(
    cfg: ExperimentConfig, table: Any, embedder: Embedder, inputs: EvalInputs, cs: ChunkSet, layout: Layout
) -> Path:
    """The fit of a ``fusion`` run that names none: fitted here on the run's own inputs, saved once, reused.

    Its name follows everything the fit depends on (chunk set, the embedder's weights, the question set,
    ``k``, the vector index, the evidence coverage and hepwb's stage code), so a changed input is fitted
    again and an unchanged one never is; one process fits, others wait for it. The run then answers
    every question with the weights of the fold that left its paper out.

    Raises:
        ConfigError: When the question set's evidence lies in fewer than two papers (folds are papers).
    """
    parts = [cs.chunkset_id, model_identity(embedder.model), inputs.questions_sha256, cfg.k, cfg.vector_index]
    parts += [cfg.min_coverage, *(code_fingerprint(pkg) for pkg in STAGE_PACKAGES)]
    path = under(layout.data / "models" / "fusion", f"run-{short_hash(parts, 16)}", "fusion fit", ".json")
    with building(path.with_suffix(".lock"), f"the fusion fit {path.name}"):
        if not path.is_file():
            located = {loc.qid for loc in inputs.located}
            papers = {paper_of(q) for q in inputs.questions if q.qid in located}
            if len(papers) < 2:
                msg = (
                    f"fusion fits its weights on folds grouped by paper, and the evidence of "
                    f"{inputs.questions_path} lies in {len(papers)} paper(s): it needs 2 or more, or pass "
                    "fitted=NAME of a fit made elsewhere"
                )
                raise ConfigError(msg)
            folds = min(defaults.FUSION_FOLDS, len(papers))  # fewer papers: one fold each
            fit = fit_fusion(
                path.stem, table, embedder, inputs, cs, k=cfg.k, n_folds=folds, min_coverage=cfg.min_coverage
            )
            write_json(path, dataclasses.asdict(fit))
    return path
