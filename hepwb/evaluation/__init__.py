"""Retrieval evaluation: question sets, evidence location and rank metrics (ir-measures).

Typical use::

    questions = load_questions("hepqa-dev.jsonl")
    located, unlocated = locate_all(questions, documents)
    result = evaluate(questions, located, results, keyindexes=build_keyindexes(documents))
    result.summary["recall@5"], evaluate_by(result.per_question, "kind")

Example:
    >>> key("Λ-baryon ﬁt: χ² = 1.2")
    'baryonfit212'
"""

from __future__ import annotations

from hepwb.evaluation.matching import (
    KeyIndex,
    Located,
    Unlocated,
    build_keyindexes,
    coverage,
    is_relevant,
    key,
    key_index,
    locate,
    locate_all,
    locate_evidence,
    unlocated_reason,
)
from hepwb.evaluation.metrics import Evaluation, evaluate, evaluate_by, metric_columns
from hepwb.evaluation.questions import Evidence, Question, load_questions

__all__ = [
    "Evaluation",
    "Evidence",
    "KeyIndex",
    "Located",
    "Question",
    "Unlocated",
    "build_keyindexes",
    "coverage",
    "evaluate",
    "evaluate_by",
    "is_relevant",
    "key",
    "key_index",
    "load_questions",
    "locate",
    "locate_all",
    "locate_evidence",
    "metric_columns",
    "unlocated_reason",
]


def __dir__() -> list[str]:
    return __all__
