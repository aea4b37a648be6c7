"""Rank metrics of retrieval results against located evidence quotes, computed with ir-measures (trec_eval).

Relevance follows :mod:`hepwb.evaluation.matching`: a hit is relevant to an evidence quote when it
is in the quote's document and covers at least ``min_coverage`` of the quote's key characters.

Because overlapping chunks can hold the same quote, metrics are computed per *evidence*: every
located evidence ``e`` becomes a sub-query ``e.eid`` (``"{qid}#e{i}"``) whose qrels is
``{e.eid: 1}``. Its run is the question's hit list in order, scored ``1 / position``, where the
first hit relevant to ``e`` is renamed ``e.eid`` and every other hit keeps its chunk id - so
positions are preserved and a second chunk holding the same quote does not count twice.

Sub-query metrics (``recall@k`` = found within the top ``k``, ``mrr@k``, ``ndcg@k``, ``hit_rate@k``)
are averaged over a question's located evidence; a question's ``hit_rate@k`` is 1 when *any* of
its evidence is found in the top ``k``. Summary values average over questions with at least one
located evidence; the others are counted in ``n_questions_unlocatable``.

The hit list's order is the ranking: position 1 is the first element of ``results[qid]``.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.evaluation.levels import chunk_level, document_level, level_columns, relevant_chunks, span_level
from hepwb.evaluation.matching import KeyIndex, Located, is_relevant
from hepwb.evaluation.questions import Question
from hepwb.evaluation.rank import rank_scores
from hepwb.exceptions import ConfigError
from hepwb.limits import MIN_COVERAGE, K

if TYPE_CHECKING:
    import pandas as pd
from hepwb.types import Chunk, Hit, JSONObject

__all__ = ["METRICS", "Evaluation", "evaluate", "evaluate_by", "metric_columns"]

METRICS = ("recall", "hit_rate", "mrr", "ndcg")
"""Metric families reported at every cutoff ``k``."""


@dataclass(frozen=True)
class Evaluation:
    """The result of :func:`evaluate`.

    Attributes:
        summary: Means over evaluable questions (``"recall@5"``, ``"mrr@10"`` ...) plus the counts
            ``n_questions``, ``n_questions_evaluated``, ``n_questions_unlocatable``, ``n_evidence``,
            ``n_evidence_located`` and the ``min_coverage`` used.
        per_question: One row per question: ``qid, kind, style, n_evidence, n_located, paper,
            first_relevant_rank`` and the metric columns (NaN for unlocatable questions).
        per_evidence: One row per located evidence: ``eid, qid, label, method, page_ok, rank``
            (position of the first relevant hit, missing when none) and the sub-query metrics.
        relevant_chunks: ``{qid: ids of the chunks relevant to its evidence}`` (when ``chunks`` given).
    """

    summary: dict[str, float]
    per_question: pd.DataFrame
    per_evidence: pd.DataFrame
    relevant_chunks: dict[str, set[str]] = dataclasses.field(default_factory=dict)


def metric_columns(ks: Sequence[int]) -> list[str]:
    """Return the metric column names for cutoffs ``ks``, grouped by metric.

    Example:
        >>> metric_columns((1, 5))
        ['recall@1', 'recall@5', 'hit_rate@1', 'hit_rate@5', 'mrr@1', 'mrr@5', 'ndcg@1', 'ndcg@5']
    """
    return [f"{m}@{k}" for m in METRICS for k in ks]


def _check_args(ks: Sequence[int], min_coverage: float) -> tuple[int, ...]:
    """The cutoffs, sorted; :func:`evaluate` is public, so its raw arguments are checked (by their bounds)."""
    ks = tuple(ks)
    if not ks:
        msg = "ks=(): give one or more rank cutoffs, e.g. ks=(1, 3, 5, 10)"
        raise ConfigError(msg)
    problem = next(filter(None, map(K.problem, ks)), None)  # each cutoff is a k
    if problem:
        msg = f"ks={ks!r}: {problem}"
        raise ConfigError(msg)
    MIN_COVERAGE.check(min_coverage)
    return tuple(sorted(set(ks)))


def _index_for(loc: Located, keyindexes: Mapping[str, KeyIndex]) -> KeyIndex:
    idx = keyindexes.get(loc.document_id)
    if idx is None or idx.label != loc.label or loc.key_end > len(idx.key):
        msg = (
            f"no matching KeyIndex for document {loc.label!r} ({loc.document_id}) of evidence {loc.eid}; "
            "pass keyindexes=build_keyindexes(documents) with the documents given to locate_all"
        )
        raise ConfigError(msg)
    return idx


def _sub_run(
    loc: Located, hits: Sequence[Hit], idx: KeyIndex, min_coverage: float
) -> tuple[dict[str, float], int | None]:
    """Return the run of one evidence sub-query and the position of its first relevant hit."""
    docs: dict[str, float] = {}
    first: int | None = None
    for pos, hit in enumerate(hits, start=1):
        doc_id = hit.chunk_id
        if first is None and is_relevant(loc, hit, idx, min_coverage):
            doc_id, first = loc.eid, pos
        docs.setdefault(doc_id, 1.0 / pos)
    return docs, first


def evaluate(
    questions: Sequence[Question],
    located: Sequence[Located],
    results: Mapping[str, Sequence[Hit]],
    ks: Sequence[int] = (1, 3, 5, 10),
    min_coverage: float = defaults.MIN_COVERAGE,
    *,
    keyindexes: Mapping[str, KeyIndex],
    chunks: Sequence[Chunk] | None = None,
) -> Evaluation:
    """Score ranked hits per question against the located evidence (see the module docstring).

    Args:
        questions: The question set.
        located: Located evidence (from :func:`~hepwb.evaluation.matching.locate_all`).
        results: Ranked hits per ``qid``; every question with located evidence needs an entry
            (an empty list when nothing was retrieved).
        ks: Rank cutoffs.
        min_coverage: Share of a quote's key characters a hit must hold to be relevant.
        keyindexes: ``{document_id: KeyIndex}`` of the documents the evidence was located in,
            i.e. ``build_keyindexes(documents)`` (cached, so cheap after ``locate_all``).
        chunks: The whole chunk set searched; when given, chunk-, document- and span-level metrics
            (:mod:`hepwb.evaluation.levels`) are added, the span ones at k = 5 (or the largest k).

    Returns:
        The :class:`Evaluation`.

    Raises:
        ConfigError: Bad ``ks`` or ``min_coverage``, a question lacks results, or a key index is missing.
    """
    ks = _check_args(ks, min_coverage)
    columns = metric_columns(ks)
    by_qid = _located_by_question(questions, located, results)
    per_evidence = _per_evidence(by_qid, results, keyindexes, min_coverage, ks)
    per_question = _per_question(questions, by_qid, per_evidence, ks)
    relevant: dict[str, set[str]] = {}
    if chunks is not None:
        relevant = relevant_chunks(
            [loc for loc in located if loc.qid in by_qid], chunks, keyindexes, min_coverage
        )
        extra = _levels(questions, located, results, chunks, relevant, ks, by_qid)
        per_question = per_question.join(extra, on="qid")
        columns = [*columns, *extra.columns]
    summary = _summary(questions, per_question, per_evidence, columns, min_coverage)
    return Evaluation(summary, per_question, per_evidence, relevant)


def _located_by_question(
    questions: Sequence[Question], located: Sequence[Located], results: Mapping[str, Sequence[Hit]]
) -> dict[str, list[Located]]:
    """The located evidence of each question of the set; every such question must have results.

    Raises:
        ConfigError: ``results`` lack a question with located evidence.
    """
    qids = {q.qid for q in questions}
    by_qid: dict[str, list[Located]] = defaultdict(list)
    for loc in located:
        if loc.qid in qids:
            by_qid[loc.qid].append(loc)
    missing = [qid for qid in by_qid if qid not in results]
    if missing:
        msg = (
            f"results lack {len(missing)} question(s), e.g. {missing[:3]}; "
            "give every question a (possibly empty) hit list"
        )
        raise ConfigError(msg)
    return by_qid


def _per_evidence(
    by_qid: Mapping[str, list[Located]],
    results: Mapping[str, Sequence[Hit]],
    keyindexes: Mapping[str, KeyIndex],
    min_coverage: float,
    ks: tuple[int, ...],
) -> pd.DataFrame:
    """One row per located evidence: its first relevant rank and its sub-query's metrics (trec_eval)."""
    import pandas as pd

    columns = metric_columns(ks)
    rank_metrics = [c for c in columns if not c.startswith("hit_rate@")]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    ev_rows: list[JSONObject] = []
    for qid, locs in by_qid.items():
        for loc in locs:
            run[loc.eid], first = _sub_run(loc, results[qid], _index_for(loc, keyindexes), min_coverage)
            qrels[loc.eid] = {loc.eid: 1}
            ev_rows.append(
                {
                    "eid": loc.eid,
                    "qid": qid,
                    "label": loc.label,
                    "method": loc.method,
                    "page_ok": loc.page_ok,
                    "rank": first,
                }
            )
    scores = rank_scores(qrels, run, rank_metrics) if qrels else {}
    for row in ev_rows:
        for m in rank_metrics:
            row[m] = scores[m][row["eid"]]
        for k in ks:
            row[f"hit_rate@{k}"] = row[f"recall@{k}"]
    ev_columns = ["eid", "qid", "label", "method", "page_ok", "rank", *columns]
    per_evidence = pd.DataFrame(ev_rows, columns=ev_columns)
    per_evidence["rank"] = per_evidence["rank"].astype("Int64")
    return per_evidence


def _per_question(
    questions: Sequence[Question],
    by_qid: Mapping[str, list[Located]],
    per_evidence: pd.DataFrame,
    ks: tuple[int, ...],
) -> pd.DataFrame:
    """One row per question: what it is, its evidence, and its evidence's metrics aggregated.

    A question's metrics are its evidence's means, but ``hit_rate@k`` is their maximum (any evidence
    found) and ``first_relevant_rank`` their minimum; NaN for a question without located evidence.
    """
    import pandas as pd

    columns = metric_columns(ks)
    grouped = per_evidence.groupby("qid", sort=False)
    agg = grouped[columns].mean()
    for k in ks:
        agg[f"hit_rate@{k}"] = grouped[f"hit_rate@{k}"].max()
    agg["first_relevant_rank"] = grouped["rank"].min()
    per_question = pd.DataFrame(
        {
            "qid": [q.qid for q in questions],
            "kind": [q.kind for q in questions],
            "style": [q.style for q in questions],
            "n_evidence": [len(q.evidence) for q in questions],
            "n_located": [len(by_qid.get(q.qid, ())) for q in questions],
            "paper": [q.evidence[0].doc if q.evidence else "" for q in questions],
        }
    ).join(agg[["first_relevant_rank", *columns]], on="qid")
    per_question["first_relevant_rank"] = per_question["first_relevant_rank"].astype("Int64")
    return per_question


def _summary(
    questions: Sequence[Question],
    per_question: pd.DataFrame,
    per_evidence: pd.DataFrame,
    columns: Sequence[str],
    min_coverage: float,
) -> dict[str, float]:
    """The means of ``columns`` over the evaluable questions, with the counts of the summary."""
    evaluated = per_question[per_question["n_located"] > 0]
    summary: dict[str, float] = {
        c: float(evaluated[c].mean()) if len(evaluated) else float("nan") for c in columns
    }
    summary.update(
        n_questions=len(questions),
        n_questions_evaluated=len(evaluated),
        n_questions_unlocatable=len(questions) - len(evaluated),
        n_evidence=sum(len(q.evidence) for q in questions),
        n_evidence_located=len(per_evidence),
        min_coverage=min_coverage,
    )
    return summary


def _levels(
    questions: Sequence[Question],
    located: Sequence[Located],
    results: Mapping[str, Sequence[Hit]],
    chunks: Sequence[Chunk],
    relevant: Mapping[str, set[str]],
    ks: tuple[int, ...],
    by_qid: Mapping[str, list[Located]],
) -> pd.DataFrame:
    """Chunk-, document- and span-level metrics of the evaluable questions, one row per qid."""
    import pandas as pd

    span_k = 5 if 5 in ks else max(ks)
    mine = [loc for loc in located if loc.qid in by_qid]
    evaluable = {q: results[q] for q in by_qid}
    docs = {q: {loc.document_id for loc in locs} for q, locs in by_qid.items()}
    parts = [
        chunk_level(evaluable, relevant, ks),
        document_level(evaluable, docs, ks),
        span_level(evaluable, mine, chunks, span_k),
    ]
    rows = {q: {k: v for part in parts for k, v in part.get(q, {}).items()} for q in by_qid}
    return pd.DataFrame.from_dict(rows, orient="index", columns=level_columns(ks, span_k))


def evaluate_by(per_question: pd.DataFrame, column: str) -> pd.DataFrame:
    """Break the metrics of ``Evaluation.per_question`` down by ``column`` (e.g. ``kind``, ``style``).

    Unlocatable questions (``n_located == 0``) are left out, as in the summary.

    Args:
        per_question: The ``per_question`` table of an :class:`Evaluation`.
        column: Grouping column.

    Returns:
        One row per value of ``column``: ``n_questions`` and the mean of every metric column.

    Raises:
        ConfigError: ``column`` is not in the table.
    """
    if column not in per_question.columns:
        msg = f"evaluate_by: no column {column!r}; choose one of {list(per_question.columns)}"
        raise ConfigError(msg)
    metrics = [c for c in per_question.columns if "@" in c]
    evaluated = per_question[per_question["n_located"] > 0]
    grouped = evaluated.groupby(column, sort=True)
    out = grouped[metrics].mean()
    out.insert(0, "n_questions", grouped.size())
    return out
