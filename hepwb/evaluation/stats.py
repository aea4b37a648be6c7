"""Uncertainty of retrieval metrics: bootstrap confidence intervals and paired comparisons.

A metric averaged over ~100 questions moves by several points when a handful of questions change;
these functions say how much. Both resample *questions* (the unit that varies between test sets),
with a fixed seed so the numbers are reproducible.

* :func:`bootstrap_ci` - percentile bootstrap interval of a mean (``scipy.stats.bootstrap``).
* :func:`paired_test` - two configurations scored on the same questions: the mean difference, its
  bootstrap interval, and a two-sided paired permutation test (``scipy.stats.permutation_test``,
  ``permutation_type="samples"``: random sign flips of the per-question differences).

Example:
    >>> a = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1] * 5
    >>> ci = bootstrap_ci(a)
    >>> round(ci.mean, 2), ci.low < ci.mean < ci.high
    (0.7, True)
    >>> paired_test(a, [0] * 50).p_value < 0.001
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from hepwb.exceptions import ConfigError

Values: TypeAlias = "Sequence[float] | np.ndarray"

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ALPHA",
    "CI",
    "PairedResult",
    "bootstrap_ci",
    "compare_runs",
    "holm",
    "paired_test",
    "summary_with_ci",
]

SEED = 12345
ALPHA = 0.05
"""The significance level of every test hepwb reports (after Holm's adjustment where several are made)."""


@dataclass(frozen=True)
class CI:
    """A mean with its confidence interval."""

    mean: float
    low: float
    high: float
    n: int
    level: float = 0.95

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class PairedResult:
    """Comparison of configuration A against B on the same questions (``diff`` = A - B)."""

    diff: CI
    p_value: float
    n_a_better: int
    n_b_better: int

    @property
    def significant(self) -> bool:
        """Whether the difference is significant at the 5 % level (this one test alone)."""
        return self.p_value < ALPHA


def _values(values: Values) -> np.ndarray:
    arr: np.ndarray = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        msg = "no values to summarise (all missing); evaluate at least one question"
        raise ConfigError(msg)
    return arr


def bootstrap_ci(values: Values, level: float = 0.95, n_resamples: int = 10_000) -> CI:
    """Percentile bootstrap interval of the mean of ``values`` (NaNs dropped)."""
    from scipy.stats import bootstrap

    arr = _values(values)
    if arr.size == 1 or np.all(arr == arr[0]):
        return CI(float(arr.mean()), float(arr.mean()), float(arr.mean()), int(arr.size), level)
    res = bootstrap(
        (arr,),
        np.mean,
        confidence_level=level,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(SEED),
    )
    ci = res.confidence_interval
    return CI(float(arr.mean()), float(ci.low), float(ci.high), int(arr.size), level)


def paired_test(a: Values, b: Values, n_resamples: int = 10_000) -> PairedResult:
    """Compare per-question scores ``a`` and ``b`` (same questions, same order)."""
    from scipy.stats import permutation_test

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        msg = f"paired_test needs scores of the same questions: got {x.size} and {y.size} values"
        raise ConfigError(msg)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    d = x - y
    diff = bootstrap_ci(d, n_resamples=n_resamples)
    if np.all(d == 0):
        p = 1.0
    else:
        res = permutation_test(
            (x, y),
            lambda u, v: np.mean(u - v),
            permutation_type="samples",
            n_resamples=n_resamples,
            alternative="two-sided",
            rng=np.random.default_rng(SEED),
        )
        p = float(res.pvalue)
    return PairedResult(diff, p, int((d > 0).sum()), int((d < 0).sum()))


def summary_with_ci(per_question: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean and 95 % interval of each metric column of a per-question table (one row per metric).

    Default columns: every ``…@k`` metric, ``precision_omega`` and the ``ragas_`` metrics.
    """
    import pandas as pd

    cols = list(metrics or ()) or [
        c for c in per_question.columns if "@" in c or c.startswith("ragas_") or c == "precision_omega"
    ]
    rows = []
    for col in cols:
        if col not in per_question.columns:
            msg = f"no column {col!r} in the per-question table; choose from {list(per_question.columns)}"
            raise ConfigError(msg)
        ci = bootstrap_ci(per_question[col].to_numpy(dtype=float))
        rows.append({"metric": col, "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high, "n": ci.n})
    return pd.DataFrame(rows)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (family-wise error rate over all the comparisons).

    Compare each adjusted p-value with the level (0.05): it then holds for the whole family of tests,
    not for each test alone. Holm is uniformly more powerful than Bonferroni and assumes nothing about
    the dependence between tests (the runs here share questions, so they are dependent).

    Example:
        >>> holm([0.01, 0.04, 0.03])
        [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[idx]))
        adjusted[idx] = running
    return [round(float(v), 12) for v in adjusted]


def compare_runs(
    per_question: Mapping[str, pd.DataFrame], metric: str = "hit_rate@5", baseline: str | None = None
) -> pd.DataFrame:
    """Paired comparison of each run against ``baseline`` (default: the first) on ``metric``.

    ``p_value`` is each test's own; ``p_holm`` is Holm-adjusted over the comparisons in this table,
    and ``significant`` uses ``p_holm`` < 0.05 (testing many runs makes some look better by chance).
    """
    import pandas as pd

    names = list(per_question)
    if not names:
        return pd.DataFrame()
    base = baseline or names[0]
    ref = per_question[base].set_index("qid")[metric]
    rows = []
    for name in names:
        if name == base:
            continue
        other = per_question[name].set_index("qid")[metric].reindex(ref.index)
        res = paired_test(other.to_numpy(), ref.to_numpy())
        rows.append(
            {
                "run": name,
                "baseline": base,
                "metric": metric,
                "diff": res.diff.mean,
                "ci_low": res.diff.low,
                "ci_high": res.diff.high,
                "p_value": res.p_value,
                "better": res.n_a_better,
                "worse": res.n_b_better,
            }
        )
    for row, adjusted in zip(rows, holm([float(str(r["p_value"])) for r in rows]), strict=True):
        row["p_holm"] = adjusted
        row["significant"] = adjusted < ALPHA
    columns = ["run", "baseline", "metric", "diff", "ci_low", "ci_high", "p_value", "p_holm", "significant",
               "better", "worse"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)
