"""Rank metrics per query with ir-measures (trec_eval's definitions, through pytrec_eval).

Metric names follow hepwb's columns: ``recall@k`` (trec_eval ``R@k``), ``precision@k`` (``P@k``),
``hit_rate@k`` (``Success@k``), ``mrr@k`` (``RR@k``) and ``ndcg@k`` (``nDCG@k``, gain = relevance,
log2 discount). Runs give each document ``1/rank``, so scores never tie and trec_eval keeps hepwb's order.
A query with relevance judgements but no ranked documents scores 0.

Example:
    >>> qrels = {"q1": {"a": 1}, "q2": {"c": 1}}
    >>> run = {"q1": {"b": 1.0, "a": 0.5}}
    >>> s = rank_scores(qrels, run, ["mrr@10", "recall@1", "hit_rate@5"])
    >>> s["mrr@10"], s["recall@1"]["q1"], s["hit_rate@5"]["q2"]
    ({'q1': 0.5, 'q2': 0.0}, 0.0, 0.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hepwb.exceptions import ConfigError

__all__ = ["FAMILIES", "rank_scores"]

FAMILIES = {"recall": "R", "precision": "P", "hit_rate": "Success", "mrr": "RR", "ndcg": "nDCG"}
"""hepwb metric family → ir-measures measure."""


def rank_scores(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], metrics: Sequence[str]
) -> dict[str, dict[str, float]]:
    """``{metric: {query: value}}`` for every query of ``qrels`` and every ``family@k`` in ``metrics``."""
    import ir_measures

    wanted = {}
    for name in metrics:
        family, _, k = name.partition("@")
        if family not in FAMILIES or not k.isdigit():
            msg = f"unknown rank metric {name!r}; use family@k with a family in {sorted(FAMILIES)}"
            raise ConfigError(msg)
        wanted[name] = ir_measures.parse_measure(f"{FAMILIES[family]}@{k}")
    out = {name: dict.fromkeys(qrels, 0.0) for name in wanted}
    judged = [ir_measures.Qrel(q, d, int(rel)) for q, docs in qrels.items() for d, rel in docs.items()]
    ranked = [
        ir_measures.ScoredDoc(q, d, float(s))
        for q, docs in run.items()
        if q in qrels
        for d, s in docs.items()
    ]
    if not judged or not ranked:
        return out
    names = {str(m): name for name, m in wanted.items()}
    for provider, measures in _by_provider(list(wanted.values())).items():
        for value in provider.iter_calc(measures, judged, ranked):
            out[names[str(value.measure)]][value.query_id] = float(value.value)
    return out


def _by_provider(measures: list[Any]) -> dict[Any, list[Any]]:
    """``measures`` grouped by the first of pytrec_eval (trec_eval itself) and msmarco that computes each.

    The same values as ``ir_measures.iter_calc``, which tries every provider in turn and, on a run of 124
    queries, spends about ten times the computation in its own bookkeeping.
    """
    import ir_measures

    groups: dict[Any, list[Any]] = {}
    for m in measures:
        provider = next(
            (p for p in (ir_measures.pytrec_eval, ir_measures.msmarco) if p.is_available() and p.supports(m)),
            ir_measures,
        )  # any other: ir_measures' own choice
        groups.setdefault(provider, []).append(m)
    return groups
