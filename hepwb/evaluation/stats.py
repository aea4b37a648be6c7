"""Uncertainty of retrieval metrics: confidence intervals and paired comparisons that agree.

A metric averaged over ~100 questions moves by several points when a handful of questions change;
these functions say how much. They treat *questions* as the unit that varies between test sets, and
are reproducible (fixed seed).

* :func:`mean_ci` - the 95 % interval of a mean. A metric whose per-question values are all 0 or 1
  (found@k, ``hit_rate@k``) is a proportion: **Wilson's score interval**, which is never degenerate at 0
  or 1 (one question found out of one gives [0.207, 1.000], not [1, 1]). Other metrics in [0, 1]
  (MRR, recall, nDCG) get the percentile **bootstrap** when there are at least ``SMALL_N`` questions and
  their values differ; otherwise Wilson's interval of the mean, which is conservative for any variable in
  [0, 1] (its variance is at most ``mean * (1 - mean)``). Unbounded values get the bootstrap.
* :func:`paired_test` - two configurations scored on the same questions: the mean difference, a
  two-sided **paired sign-flip permutation test**, and the interval obtained by **inverting that test**:
  every shift ``delta`` the same sign flips do not reject. The test and the interval therefore agree by
  construction: ``p < 0.05`` exactly when 0 lies outside the 95 % interval. For a 0/1 metric the interval
  is at least ``±6/n`` around the observed difference (:func:`min_detectable`: no smaller difference can
  ever be declared with ``n`` questions, so those shifts stay plausible; the agreement is kept, since a
  significant difference is at least ``6/n``). ``detectable`` is the
  interval's half-width: the smallest difference these questions could tell from chance.
* Fewer than ``SMALL_N`` (10) questions are a small sample: :class:`CI` says so beside its number.

Example:
    >>> a = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1] * 5
    >>> ci = mean_ci(a)
    >>> round(ci.mean, 2), ci.method, ci.low < ci.mean < ci.high
    (0.7, 'wilson', True)
    >>> str(mean_ci([1.0]))
    '1.000 [0.207, 1.000] (n=1, small sample)'
    >>> t = paired_test(a, [0] * 50)
    >>> t.p_value < 0.001, t.diff.low > 0
    (True, True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np

from hepwb import defaults
from hepwb.exceptions import ConfigError

Values: TypeAlias = "Sequence[float] | np.ndarray"

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ALPHA",
    "CI",
    "SMALL_N",
    "PairedResult",
    "bootstrap_ci",
    "compare_runs",
    "holm",
    "holm_levels",
    "mean_ci",
    "median_interval",
    "min_detectable",
    "paired_test",
    "summary_with_ci",
    "wilson",
]

SEED = 12345
ALPHA = 0.05
"""The significance level of every test hepwb reports (after Holm's adjustment where several are made)."""
SMALL_N = 10
"""Fewer questions than this are a small sample: every number on them says so."""
_RESAMPLES = 10_000


@dataclass(frozen=True)
class CI:
    """A mean with its confidence interval (``method``: ``wilson``, ``bootstrap`` or ``sign-flip``)."""

    mean: float
    low: float
    high: float
    n: int
    level: float = defaults.CI_LEVEL
    method: Literal["wilson", "bootstrap", "sign-flip"] = "bootstrap"

    @property
    def small(self) -> bool:
        """Whether the interval rests on fewer than ``SMALL_N`` questions."""
        return self.n < SMALL_N

    def __str__(self) -> str:
        text = f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"
        return f"{text} (n={self.n}, small sample)" if self.small else text


@dataclass(frozen=True)
class PairedResult:
    """Comparison of configuration A against B on the same questions (``diff`` = A - B).

    ``diff`` is the interval of the sign-flip test inverted (so ``significant`` iff 0 is outside it);
    ``detectable`` is its half-width, and for 0/1 metrics at least :func:`min_detectable`: differences
    smaller than that cannot be told from chance here.
    """

    diff: CI
    p_value: float
    n_a_better: int
    n_b_better: int
    detectable: float = float("nan")

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


def wilson(successes: float, n: int, level: float = defaults.CI_LEVEL) -> tuple[float, float]:
    """Wilson's score interval of a proportion (never degenerate at 0 or 1).

    Example:
        >>> [round(v, 3) for v in wilson(3, 3)], [round(v, 3) for v in wilson(0, 10)]
        ([0.439, 1.0], [0.0, 0.278])
    """
    if n <= 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + level / 2)  # the standard library: no scipy import (2 s)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_ci(values: Values, level: float = defaults.CI_LEVEL, n_resamples: int = _RESAMPLES) -> CI:
    """The mean of ``values`` (NaNs dropped) with its interval; the rule is in the module docstring."""
    arr = _values(values)
    mean, n = float(arr.mean()), int(arr.size)
    binary = bool(np.all((arr == 0) | (arr == 1)))
    bounded = bool(np.all((arr >= 0) & (arr <= 1)))
    if binary or (bounded and (n < SMALL_N or np.all(arr == arr[0]))):
        low, high = wilson(mean * n, n, level)
        return CI(mean, min(low, mean), max(high, mean), n, level, "wilson")
    return bootstrap_ci(arr, level, n_resamples)


def bootstrap_ci(values: Values, level: float = defaults.CI_LEVEL, n_resamples: int = _RESAMPLES) -> CI:
    """Percentile bootstrap interval of the mean of ``values`` (NaNs dropped); see :func:`mean_ci`.

    The resamples are those ``scipy.stats.bootstrap(..., method="percentile")`` draws with the generator
    seeded :data:`SEED` (the same rows, the same percentiles: ``tests/unit/test_stats.py`` compares the two),
    computed as counts of each question per resample: with the seed fixed they depend on the number of
    questions alone, so the metrics of one run share them and each interval costs a matrix product.
    """
    arr = _values(values)
    if arr.size == 1 or np.all(arr == arr[0]):
        return CI(float(arr.mean()), float(arr.mean()), float(arr.mean()), int(arr.size), level)
    means = np.concatenate([block @ arr for block in _resample_counts(arr.size, n_resamples)]) / arr.size
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return CI(float(arr.mean()), float(low), float(high), int(arr.size), level)


_COUNTS_CACHED = 4_000_000  # resample counts kept per question count (32 MB); larger sets drawn per call
_BLOCK_DRAWS = 2_000_000  # row indices drawn at a time when drawing per call


@functools.lru_cache(maxsize=8)
def _cached_counts(n: int, n_resamples: int) -> tuple[np.ndarray, ...]:
    return tuple(_draw_counts(n, n_resamples))


def _resample_counts(n: int, n_resamples: int) -> tuple[np.ndarray, ...] | list[np.ndarray]:
    """How often each of ``n`` questions is drawn in each bootstrap resample, in blocks of resamples."""
    if n * n_resamples <= _COUNTS_CACHED:
        return _cached_counts(n, n_resamples)
    return _draw_counts(n, n_resamples)


def _draw_counts(n: int, n_resamples: int) -> list[np.ndarray]:
    """The resample counts of :func:`bootstrap_ci`, a block of resamples at a time.

    ``integers(0, n, (n_resamples, n))`` of the seeded generator (scipy's draw), counted per row.
    """
    rng = np.random.default_rng(SEED)
    rows = max(1, _BLOCK_DRAWS // n)
    out = []
    for lo in range(0, n_resamples, rows):
        b = min(rows, n_resamples - lo)
        idx = rng.integers(0, n, (b, n)) + n * np.arange(b)[:, None]
        out.append(np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(np.float64))
    return out


def _signs(n: int, n_resamples: int) -> np.ndarray:
    """Sign-flip vectors: all ``2**n`` when that is at most ``n_resamples`` (an exact test), else random."""
    if 2**n <= n_resamples:
        grid = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
        return np.where(grid == 1, -1.0, 1.0)
    return np.random.default_rng(SEED).choice((-1.0, 1.0), size=(n_resamples, n))


def paired_test(
    a: Values, b: Values, n_resamples: int = _RESAMPLES, level: float = defaults.CI_LEVEL
) -> PairedResult:
    """Compare per-question scores ``a`` and ``b`` (same questions, same order; pairs with a NaN dropped).

    The p-value is the two-sided sign-flip test of a zero mean difference; the interval is every shift
    ``delta`` for which the same test on ``d - delta`` gives ``p >= 1 - level`` (the test inverted, with
    the same sign flips). For each flip the rejection of ``delta`` can only grow as ``delta`` moves away
    from the observed mean, so that set is an interval and the two never disagree.

    Example:
        >>> t = paired_test([1, 1, 1, 0, 1, 1], [0, 0, 1, 0, 0, 1])
        >>> t.p_value >= 0.05, t.diff.low <= 0 <= t.diff.high, t.diff.small
        (True, True, True)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        msg = f"paired_test needs scores of the same questions: got {x.size} and {y.size} values"
        raise ConfigError(msg)
    keep = ~(np.isnan(x) | np.isnan(y))
    d = (x - y)[keep]
    if d.size == 0:
        msg = "no values to summarise (all missing); evaluate at least one question"
        raise ConfigError(msg)
    n, m = int(d.size), float(d.mean())
    signs = _signs(n, n_resamples)
    exact = signs.shape[0] == 2**n
    flipped, shares = signs @ d / n, signs.mean(axis=1)  # mean(s * (d - delta)) = flipped - delta * shares

    def p_at(delta: float) -> float:
        observed = abs(m - delta)
        count = int(np.count_nonzero(np.abs(flipped - delta * shares) >= observed - 1e-12 * (1 + observed)))
        total = int(signs.shape[0])
        return count / total if exact else (count + 1) / (total + 1)

    alpha = 1 - level
    span = float(np.ptp(d)) if n > 1 else 0.0
    bounded = bool(np.all(np.abs(d) <= 1))
    reach = 1.0 if bounded else 10 * (span + abs(m) + 1)

    def edge(direction: float) -> float:
        inside, outside = m, m + direction * 2 * reach
        if p_at(outside) >= alpha:  # the test can never reject here (too few questions): the range's end
            return m + direction * reach if not bounded else direction * 1.0
        for _ in range(60):
            mid = (inside + outside) / 2
            inside, outside = (mid, outside) if p_at(mid) >= alpha else (inside, mid)
        return inside

    low, high = edge(-1.0), edge(1.0)
    floor = 0.0
    if np.all(np.isin(d, (-1.0, 0.0, 1.0))):  # 0/1 metrics: no difference under `floor` can ever be declared
        floor = min_detectable(n, alpha)
        low, high = min(low, m - floor * (1 - 1e-9)), max(high, m + floor * (1 - 1e-9))
    if bounded:
        low, high = max(low, -1.0), min(high, 1.0)
    p = 1.0 if np.all(d == 0) else p_at(0.0)
    diff = CI(m, min(low, m), max(high, m), n, level, "sign-flip")
    detectable = max((high - low) / 2, floor)
    return PairedResult(
        diff, p, int((d > 0).sum()), int((d < 0).sum()), detectable if detectable > 0 else float("nan")
    )


def min_detectable(n: int, alpha: float = ALPHA) -> float:
    """The smallest difference of a 0/1 metric (found@k) that ``n`` paired questions could ever declare.

    The two-sided sign-flip test's smallest p-value with ``j`` questions going one way and the rest tied is
    ``2 ** (1 - j)``; it falls below ``alpha`` from ``j = 6`` on (at 5 %), so a difference under ``6 / n``
    can never be significant, whatever the data.

    Example:
        >>> round(min_detectable(11), 3), round(min_detectable(124), 3)
        (0.545, 0.048)
    """
    j = 1
    while 2.0 ** (1 - j) >= alpha:
        j += 1
    return min(1.0, j / max(n, 1))


def summary_with_ci(per_question: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean and 95 % interval of each metric column of a per-question table (one row per metric).

    Default columns: every ``…@k`` metric, ``precision_omega`` and the ``ragas_`` metrics; a column
    without any value (answer metrics of questions without answers) is left out. Intervals: :func:`mean_ci`.
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
        values = per_question[col].to_numpy(dtype=float)
        if np.isnan(values).all():  # e.g. answer metrics of a question set without answers
            continue
        ci = mean_ci(values)
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


def median_interval(values: Values, level: float = defaults.CI_LEVEL) -> tuple[float, float]:
    """A distribution-free interval of the median: two order statistics of ``values`` (binomial ranks).

    The noise of a measured median (a run's query latency p50): two runs whose intervals overlap cannot be
    told apart on that cost.

    Example:
        >>> median_interval([4.0, 5.0, 6.0, 5.5, 4.5, 5.2, 4.8, 30.0, 5.1, 4.9])
        (4.5, 6.0)
        >>> median_interval([3.0, 9.0])  # too few to narrow it: the whole range
        (3.0, 9.0)
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = int(x.size)
    ranks = np.arange(n + 1)
    log_pmf = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in ranks])
    cdf = np.cumsum(np.exp(log_pmf - n * math.log(2)))  # P(fewer than i + 1 values below the median)
    j = max(1, int(np.searchsorted(cdf, (1 - level) / 2, side="right")))
    return float(x[j - 1]), float(x[n - j])


def holm_levels(p_values: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """The significance level of each test that Holm's procedure holds it to (its intervals use ``1 -`` it).

    In ascending order of p, the ``i``-th test (0-based) of ``m`` is held to ``alpha / (m - i)`` while every
    test before it was rejected; from the first test that is not rejected on, all are held to that test's
    level. An interval at ``1 -`` that level excludes 0 exactly when the Holm-adjusted p-value is below
    ``alpha``: the interval, the verdict and the detectable difference tell one story.

    Example:
        >>> holm_levels([0.001, 0.04, 0.03])  # 0.001 < 0.05/3 is rejected; 0.03 >= 0.05/2 is not
        [0.016666666666666666, 0.025, 0.025]
        >>> [p < a for p, a in zip([0.001, 0.04, 0.03], holm_levels([0.001, 0.04, 0.03]))]
        [True, False, False]
    """
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    m = p.size
    levels = [alpha] * m
    stopped: float | None = None
    for i, idx in enumerate(order):
        level = alpha / (m - i) if stopped is None else stopped
        if stopped is None and p[idx] >= level:
            stopped = level
        levels[idx] = level
    return levels


def compare_runs(
    per_question: Mapping[str, pd.DataFrame],
    metric: str = defaults.DECISION_METRIC,
    baseline: str | None = None,
) -> pd.DataFrame:
    """Paired comparison of each run against ``baseline`` (default: the first) on ``metric``.

    ``p_value`` is each test's own; ``p_holm`` is Holm-adjusted over the comparisons in this table,
    and ``significant`` uses ``p_holm`` < 0.05 (testing many runs makes some look better by chance). The
    interval of the difference (``ci_low``, ``ci_high``) and ``detectable`` are adjusted the same way: each is
    the test inverted at the level Holm holds that comparison to (``level``, :func:`holm_levels`), so an
    interval excludes 0 exactly when the difference is significant. With one comparison nothing changes.
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
                "n": res.diff.n,
                "detectable": res.detectable,
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
    raw = [float(str(r["p_value"])) for r in rows]
    for row, adjusted, alpha in zip(rows, holm(raw), holm_levels(raw), strict=True):
        row["p_holm"] = adjusted
        row["significant"] = adjusted < ALPHA
        row["level"] = 1 - alpha
        if alpha < ALPHA:  # the interval and the detectable difference at Holm's level for this comparison
            other = per_question[str(row["run"])].set_index("qid")[metric].reindex(ref.index)
            res = paired_test(other.to_numpy(), ref.to_numpy(), level=1 - alpha)
            row["ci_low"], row["ci_high"], row["detectable"] = res.diff.low, res.diff.high, res.detectable
    columns = ["run", "baseline", "metric", "diff", "ci_low", "ci_high", "level", "p_value", "p_holm",
               "significant", "better", "worse", "n", "detectable"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)
