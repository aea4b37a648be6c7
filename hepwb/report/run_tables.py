"""Tables of one run for people: headline metrics with intervals, groups with *n*, misses, quotes not scored.

Each returns a small pandas frame with human column names and plain values (no ``<NA>``, no index to
read); :func:`~hepwb.report.tables.styled` renders it in a notebook. Intervals follow
:func:`hepwb.evaluation.stats.mean_ci` (Wilson's for found@k), and a group of fewer than
:data:`~hepwb.evaluation.stats.SMALL_N` questions says so in its ``note``.

Example:
    >>> import pandas as pd
    >>> pq = pd.DataFrame({"qid": ["a", "b", "c"], "kind": ["x", "x", "y"], "n_located": [1, 1, 1],
    ...                    "hit_rate@5": [1.0, 0.0, 1.0],
    ...                    "first_relevant_rank": pd.array([1, None, 3], dtype="Int64")})
    >>> by_group(pq, "kind").to_dict("records")[0]["note"]
    'small sample (n < 10)'
    >>> misses(pq, k=5)["first relevant rank"].tolist()
    ['not in the top hits']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.evaluation.stats import SMALL_N, mean_ci
from hepwb.report.tables import DECISION_METRICS
from hepwb.runs.record import RunRecord
from hepwb.text.labels import human

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["by_group", "headline", "misses"]

_SMALL = f"small sample (n < {SMALL_N})"


def _interval(low: float, high: float) -> str:
    return f"{low:.3f} – {high:.3f}"


def headline(record: RunRecord, metrics: Sequence[str] = DECISION_METRICS) -> pd.DataFrame:
    """The run's headline metrics: name, mean, 95 % interval, questions scored and a note when few."""
    import pandas as pd

    s, ci = record.summary, record.summary_ci95
    rows = [
        {
            "metric": human(m),
            "mean": round(s[m], 3),
            "95 % interval": _interval(*ci[m]) if m in ci else "",
            "questions": record.metric_n(m),
            "note": "; ".join(
                x for x in (_SMALL if record.metric_n(m) < SMALL_N else "", record.without(m)) if x
            ),
        }
        for m in metrics
        if m in s
    ]
    return pd.DataFrame(rows, columns=["metric", "mean", "95 % interval", "questions", "note"])


def by_group(per_question: pd.DataFrame, by: str, metric: str = defaults.DECISION_METRIC) -> pd.DataFrame:
    """``metric`` per value of ``by`` (``kind``, ``style``, ``paper``) over the scored questions, with *n*."""
    import pandas as pd

    scored = per_question[per_question["n_located"] > 0]
    rows = []
    for value, part in scored.groupby(by, sort=True):
        ci = mean_ci(part[metric].to_numpy(dtype=float))
        rows.append(
            {
                by: str(value) or "(none)",
                "questions": ci.n,
                human(metric): round(ci.mean, 3),
                "95 % interval": _interval(ci.low, ci.high),
                "note": _SMALL if ci.small else "",
            }
        )
    return pd.DataFrame(rows, columns=[by, "questions", human(metric), "95 % interval", "note"])


def misses(per_question: pd.DataFrame, k: int = defaults.MISSED_K) -> pd.DataFrame:
    """The scored questions without a relevant chunk in the first ``k`` hits, with the rank of the first."""
    import pandas as pd

    scored = per_question[per_question["n_located"] > 0]
    missed = scored[scored[f"hit_rate@{k}"] < 1]
    cols = [c for c in ("qid", "kind", "style", "paper") if c in missed.columns]
    out = missed[cols].astype(str).reset_index(drop=True)
    ranks = missed["first_relevant_rank"].tolist()
    out["first relevant rank"] = ["not in the top hits" if pd.isna(r) else str(int(r)) for r in ranks]
    return out
