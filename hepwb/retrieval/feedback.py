"""Pseudo-relevance feedback in the manner of RM3, on LanceDB's full-text query objects.

The question's top ``docs`` BM25 hits are taken as relevant; each term of their HEP search terms is
weighted by ``sum_d P(term | d) × score(d)`` (scores normalised to sum to one, ``P`` the term's share of
the chunk's terms); the ``terms`` heaviest new terms (not stop words, not the question's own, at least
three characters) are added to the question as a ``SHOULD`` clause each, beside the question itself (each
of its terms counting once): a LanceDB ``BooleanQuery`` of ``MatchQuery``s. An expansion term's boost is
``weight`` × its share × the number of expansion terms, so on average an added term counts ``weight``
times a question term.

Example:
    >>> rows = [{"search_text": "dvcs beam spin asymmetry hermes", "_score": 3.0},
    ...         {"search_text": "dvcs asymmetry amplitude positron", "_score": 1.0}]
    >>> [t for t, _ in feedback_terms(rows, "search_text", {"dvcs"}, 3)]
    ['asymmetry', 'beam', 'hermes']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from hepwb.types import JSONObject

__all__ = ["feedback_query", "feedback_terms"]

_STOP = frozenset(
    (
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "are",
        "was",
        "were",
        "have",
        "has",
        "had",
        "been",
        "their",
        "its",
        "into",
        "than",
        "then",
        "also",
        "which",
        "these",
        "those",
        "such",
        "not",
        "can",
        "may",
        "our",
        "all",
        "one",
        "two",
        "both",
        "each",
        "other",
        "more",
        "most",
        "only",
        "over",
        "under",
        "between",
        "using",
        "used",
        "use",
        "well",
        "data",
        "events",
        "event",
        "results",
        "result",
        "measurement",
        "measured",
    )
)


def feedback_terms(
    rows: Sequence[JSONObject], column: str, exclude: set[str], n: int
) -> list[tuple[str, float]]:
    """The ``n`` heaviest feedback terms of ``rows`` (with ``_score``), weights normalised to sum to 1."""
    total = sum(float(r["_score"]) for r in rows) or 1.0
    weight: dict[str, float] = {}
    for r in rows:
        toks = str(r[column]).split()
        if not toks:
            continue
        share = float(r["_score"]) / total
        for term, tf in Counter(toks).items():
            weight[term] = weight.get(term, 0.0) + share * tf / len(toks)
    ranked = sorted(weight.items(), key=lambda tw: (-tw[1], tw[0]))
    picked = [(t, w) for t, w in ranked if len(t) >= 3 and t not in _STOP and t not in exclude
              and not t.isdigit()][:n]  # fmt: skip
    norm = sum(w for _, w in picked) or 1.0
    return [(t, w / norm) for t, w in picked]


def feedback_query(terms: str, column: str, expansion: Sequence[tuple[str, float]], weight: float) -> Any:
    """The question's terms OR each expansion term (boosted as the module docstring says), on ``column``."""
    from lancedb.query import BooleanQuery, MatchQuery, Occur

    n = len(expansion)
    # lancedb's pydantic dataclass has defaults its type stubs do not show
    match: Any = MatchQuery
    clauses = [(Occur.SHOULD, match(terms, column, boost=1.0))]
    clauses += [(Occur.SHOULD, match(t, column, boost=max(weight * w * n, 1e-3))) for t, w in expansion]
    return BooleanQuery(clauses)
