"""One verdict over a whole sweep: the best configuration, how sure that is, and what each candidate costs.

:func:`verdict` ranks every finished run of a sweep by the decision metric, tests the best against
each other run on the same questions (paired permutation test, Holm-adjusted over all those
comparisons) and keeps as *indistinguishable* every run whose adjusted p-value is at least 0.05. Each
row also says how many questions it does better, worse and the same on than the best, and the interval
of its difference (``pt.Experiment``'s ``+``/``-`` columns; runs scored from a TREC run file take part).
Each row carries its cost: the LanceDB table's size on disk, the median query latency and the
compute its stages took. Among the indistinguishable runs the cheapest (lowest query p50) is the
*recommended* one: as good as the best on this question set, and cheaper. A latency within the cheapest's
noise (the interval of its measured median, :func:`~hepwb.evaluation.stats.median_interval`) is as cheap:
among those the one scoring highest is recommended, and the sentence says that several are. Runs tied at the
best value are called a tie, broken by MRR@10 when the decision metric is another.

Example:
    >>> import pandas as pd
    >>> wide = pd.DataFrame({"run_id": ["a", "b", "c"], "chunk_size": [256, 512, 512],
    ...                      "retriever": ["bm25", "bm25", "dense"], "hit_rate@5": [0.7, 0.75, 0.2],
    ...                      "query_p50_ms": [3.0, 4.0, 9.0], "index_mib": [1.0, 0.8, 0.8]})
    >>> scores = {"a": [1, 1, 0, 1] * 5, "b": [1, 1, 1, 1, 0] * 4, "c": [0, 0, 0, 1] * 5}
    >>> pq = lambda r: pd.DataFrame({"qid": range(20), "hit_rate@5": scores[r]})
    >>> v = verdict(wide, pq, "hit_rate@5")
    >>> v.best, v.recommended, list(v.table["verdict"])
    ('b', 'a', ['best', 'indistinguishable', 'worse'])
    >>> "No configuration does better than plain bm25 here." in v.sentence()
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.evaluation.stats import ALPHA, SMALL_N, compare_runs, mean_ci
from hepwb.text.labels import config_label, human
from hepwb.text.plaintext import escape_html

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COST_COLUMNS", "INDEX_RECALL", "NOISE_COLUMNS", "Verdict", "verdict"]

COST_COLUMNS = ("index_mib", "query_p50_ms", "compute_s")
"""The cost of a configuration: table size on disk (MiB), median query latency (ms), stage compute (s)."""

NOISE_COLUMNS = ("query_p50_low_ms", "query_p50_high_ms")
"""The interval of a run's measured query p50 (its noise), where the run recorded it."""

INDEX_RECALL = "ann_recall@10"
"""What an approximate vector index keeps of exact search's top 10 (:mod:`hepwb.index.ann`)."""


@dataclass(frozen=True)
class Verdict:
    """The sweep's verdict: ``table`` has one row per run, best first."""

    metric: str
    best: str
    recommended: str
    table: pd.DataFrame
    n_questions: int
    n_comparisons: int
    tied: int
    """Runs at the best value of the metric (the best among them by ``tie_break``)."""
    tie_break: str
    as_cheap: int
    """Runs as good as the best whose query p50 is within the noise of the cheapest's (the recommended one
    scores highest among them)."""
    n_papers: int
    """The papers the runs searched among (0: not recorded)."""

    def sentence(self) -> str:
        """The verdict in words (HTML-safe text)."""
        rows = {str(r["run_id"]): r for r in self.table.to_dict("records")}
        b = rows[self.best]
        name = human(self.metric)
        small = f", a small sample: fewer than {SMALL_N}" if self.n_questions < SMALL_N else ""
        text = (
            f"Best: {b['configuration']} with {name} {b[name]:.3f} "
            f"(95 % interval {b['ci_low']:.3f}–{b['ci_high']:.3f}, {self.n_questions} questions{small})."
        )
        if self.tied > 1:
            broken = f"; it is first by {human(self.tie_break)}" if self.tie_break else ""
            text += f" {self.tied} configurations tie at {b[name]:.3f}{broken}."
        same_rows = self.table[self.table["verdict"] == "indistinguishable"]
        same = len(same_rows)
        if same:
            text += (
                f" {same} other configuration(s) cannot be told apart from it (paired permutation tests, "
                f"Holm-adjusted over {self.n_comparisons} comparisons, p ≥ {ALPHA}; the intervals of the "
                "differences are adjusted alike, so each of theirs holds 0)."
            )
            detectable = same_rows["detectable"].dropna()
            if len(detectable):
                text += (
                    f" With {self.n_questions} questions, differences under about {detectable.max():.2f} "
                    "cannot be detected: that they are indistinguishable does not make them equal."
                )
        elif self.n_comparisons:
            text += (
                f" It is significantly better than every other configuration (paired permutation tests, "
                f"Holm-adjusted over {self.n_comparisons} comparisons, p < {ALPHA})."
            )
        text += self._against_bm25(rows)
        text += self._saturated()
        if self.recommended != self.best:
            r = rows[self.recommended]
            text += (
                f" Recommended: {r['configuration']}, as good on these questions and cheaper "
                f"(query p50 {_cost(r, 'query_p50_ms', 'ms')}, index {_cost(r, 'index_mib', 'MiB')})."
            )
        if self.as_cheap > 1:
            text += (
                f" {self.as_cheap} configurations as good as the best answer within the latency noise of the "
                "fastest: any of these will do; the recommended one scores highest among them."
            )
        return escape_html(text)

    def _saturated(self) -> str:
        """When most configurations reach the ceiling: why the comparison cannot decide, and the fix."""
        values = self.table[human(self.metric)]
        top = int((values >= defaults.SATURATED).sum())
        few = 0 < self.n_papers < defaults.FEW_PAPERS
        if len(values) < 2 or (top * 2 < len(values) and not few):
            return ""
        stricter = "MRR@10" if self.metric != "mrr@10" else "span recall"
        why = (
            f"{top} of {len(values)} configurations reach {defaults.SATURATED:.2f} or more"
            if top * 2 >= len(values)
            else f"only {self.n_papers} papers to search among, so {human(self.metric)} comes easily"
        )
        return (
            f" {human(self.metric)} saturates: {why}, and this comparison can hardly discriminate between "
            f"them. Read {stricter} beside it, and evaluate the same questions with your papers inside a "
            "larger haystack: a background corpus, e.g. the shipped papers (hepwb run "
            "--background shipped, or haystack(corpus, 'shipped') in Python)."
        )

    def _against_bm25(self, rows: Mapping[str, Mapping[Any, Any]]) -> str:
        """Whether the best configuration beats plain ``bm25`` (the baseline physicists know) here."""
        plain = [r for r in rows.values() if r.get("plain_bm25")]
        if not plain:
            return ""
        name = human(self.metric)
        bm25 = max(plain, key=lambda r: float(r[name]))
        if bm25["run_id"] == self.best:
            return " No configuration does better than plain bm25 here."
        gain, p = -float(bm25["difference"]), float(bm25["p (Holm)"])
        verdict = "beats it" if p < ALPHA else "cannot be told apart from it"
        return (
            f" Against the best plain bm25 ({bm25['configuration']}, {name} {float(bm25[name]):.3f}) the "
            f"best configuration gains {gain:+.3f} and {verdict} (Holm-adjusted p = {p:.3g})."
        )


def _cost(row: Mapping[Any, Any], column: str, unit: str) -> str:
    value = row.get(column)
    return f"{float(value):.3g} {unit}" if isinstance(value, int | float) and not math.isnan(value) else "–"


def verdict(
    wide: pd.DataFrame,
    per_question: Callable[[str], pd.DataFrame],
    metric: str = defaults.DECISION_METRIC,
    compute_s: Callable[[str], float] | None = None,
) -> Verdict:
    """Rank every run of ``wide`` by ``metric`` and test the best against all the others.

    Args:
        wide: One row per run (``Catalog.metrics_wide``) with ``run_id`` and the configuration columns;
            ``query_p50_ms`` and ``index_mib`` where the runs recorded them.
        per_question: A run's per-question table (``Catalog.per_question``).
        metric: The decision metric.
        compute_s: A run's stage compute in seconds (``Catalog.compute_seconds``), if known.

    Returns:
        The :class:`Verdict`; its table has ``configuration``, the metric with its 95 % interval, the
        difference to the best with its interval (``diff_low``, ``diff_high``) and Holm-adjusted ``p``, the
        questions it does ``better``, ``worse`` and the ``same`` on, ``verdict`` (best / indistinguishable
        / worse / better-but-not-best is impossible by construction) and the cost columns.
    """
    import pandas as pd

    if metric in wide.columns:  # runs without the metric (a run file scored at paper level) are not ranked
        wide = wide[wide[metric].notna()]
    if wide.empty or metric not in wide.columns:
        msg = f"no finished run has the metric {metric!r}: nothing to decide"
        raise ValueError(msg)
    tie_break = "mrr@10" if metric != "mrr@10" and "mrr@10" in wide.columns else ""
    order = [metric, *([tie_break] if tie_break else []), "run_id"]
    ranked = wide.sort_values(order, ascending=[False] * (len(order) - 1) + [True]).reset_index(drop=True)
    top = float(ranked[metric].iloc[0])
    tied = int((abs(ranked[metric].astype(float) - top) < 1e-12).sum())
    best = str(ranked.loc[0, "run_id"])
    frames = {str(r): per_question(str(r)) for r in ranked["run_id"]}
    compared = compare_runs(frames, metric=metric, baseline=best) if len(ranked) > 1 else None
    tests = {str(t["run"]): t for t in compared.to_dict("records")} if compared is not None else {}
    rows = []
    for rec in ranked.to_dict("records"):
        run = str(rec["run_id"])
        ci = mean_ci(frames[run][metric].to_numpy(dtype=float))
        plain = (
            rec.get("retriever") == "bm25"
        )  # the wide table folds options into the label: bm25(fields=...)
        row = {
            "run_id": run,
            "configuration": config_label(rec),
            human(metric): float(rec[metric]),
            "ci_low": ci.low,
            "ci_high": ci.high,
            "n": ci.n,
            "difference": 0.0,
            "p (Holm)": float("nan"),
            "detectable": float("nan"),
            "verdict": "best",
            "plain_bm25": plain,
            "better": float("nan"),
            "worse": float("nan"),
            "same": float("nan"),
            "diff_low": float("nan"),
            "diff_high": float("nan"),
        }
        if run in tests:
            t = tests[run]
            better, worse = int(t["better"]), int(t["worse"])  # questions this run does better/worse on
            row |= {"better": better, "worse": worse, "same": int(t["n"]) - better - worse}
            row["diff_low"], row["diff_high"] = float(t["ci_low"]), float(t["ci_high"])
            row["difference"] = float(t["diff"])
            row["p (Holm)"] = float(t["p_holm"])
            row["detectable"] = float(t["detectable"])
            row["verdict"] = "worse" if bool(t["significant"]) else "indistinguishable"
        if tie_break:  # the stricter metric that breaks ties, at the best and among the as-cheap
            row[tie_break] = float(rec[tie_break])
        for col in (*COST_COLUMNS, *NOISE_COLUMNS, INDEX_RECALL):
            row[col] = float(rec[col]) if col in rec and rec[col] is not None else float("nan")
        if compute_s is not None:
            row["compute_s"] = compute_s(run)
        rows.append(row)
    table = pd.DataFrame(rows)
    recommended, as_cheap = _recommended(table[table["verdict"] != "worse"], human(metric))
    n = int(str(rows[0]["n"]))
    papers = float(wide["n_papers"].max()) if "n_papers" in wide.columns else float("nan")
    n_papers = 0 if math.isnan(papers) else int(papers)
    breaker = tie_break if tied > 1 else ""
    return Verdict(metric, best, recommended, table, n, len(tests), tied, breaker, as_cheap, n_papers)


def _recommended(candidates: pd.DataFrame, name: str) -> tuple[str, int]:
    """The run to recommend among ``candidates`` (as good as the best), and how many are as cheap as it.

    As cheap: a query p50 whose interval reaches the cheapest's (the measured noise; ±10 % when a run has
    none). Among those the highest ``name`` wins, then the smaller index; without latencies, the smaller one.
    """
    p50 = candidates["query_p50_ms"]
    if p50.isna().all():
        first = candidates.sort_values(["index_mib", name], ascending=[True, False], na_position="last")
        return str(first.iloc[0]["run_id"]), 1
    share = defaults.LATENCY_NOISE_SHARE
    low = candidates["query_p50_low_ms"].fillna(p50 * (1 - share))
    high = candidates["query_p50_high_ms"].fillna(p50 * (1 + share))
    ceiling = float(high[p50 == p50.min()].min())  # the cheapest run's upper noise edge
    within = candidates[low <= ceiling]
    order = [name, *(["mrr@10"] if "mrr@10" in within and name != "mrr@10" else []), "index_mib", "run_id"]
    pick = within.sort_values(order, ascending=[False] * (len(order) - 2) + [True, True], na_position="last")
    return str(pick.iloc[0]["run_id"]), len(within)
