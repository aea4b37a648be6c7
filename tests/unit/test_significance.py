"""One significance story (issue 47, item 3): the verdict, the intervals, ``detectable`` and the star agree.

A difference whose interval excludes 0 is significant after Holm's adjustment, and one that is not has an
interval holding 0; runs tied at the best value are called a tie; the star never goes to a run for a query
latency inside the cheapest's measured noise; ``compare()`` says what the report says.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hepwb.evaluation.stats import compare_runs, holm, holm_levels, median_interval
from hepwb.report.verdict import verdict


def _frames(seed: int, metric: str) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 130))
    base = (rng.random(n) < 0.7).astype(float)
    frames = {"best": pd.DataFrame({"qid": range(n), metric: base})}
    for r in range(int(rng.integers(2, 12))):
        flip = rng.random(n) < rng.uniform(0, 0.35)
        frames[f"r{r}"] = pd.DataFrame({"qid": range(n), metric: np.where(flip, rng.random(n) < 0.5, base)})
    return frames


@pytest.mark.parametrize("seed", range(12))
def test_an_adjusted_interval_excludes_zero_exactly_when_holm_calls_the_difference_significant(seed):
    table = compare_runs(_frames(seed, "hit_rate@5"), "hit_rate@5", baseline="best")
    for row in table.to_dict("records"):
        outside = row["ci_low"] > 0 or row["ci_high"] < 0
        assert outside == bool(row["significant"]), row
        assert row["detectable"] >= (row["ci_high"] - row["ci_low"]) / 2 - 1e-12


def test_holm_levels_reject_what_holm_rejects():
    rng = np.random.default_rng(3)

    for _ in range(200):
        p = list(rng.random(int(rng.integers(1, 15))) ** 3)
        assert [a < 0.05 for a in holm(p)] == [x < lv for x, lv in zip(p, holm_levels(p), strict=True)]


def _wide(p50: dict[str, float], noise: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    rows = []
    for run, ms in p50.items():
        row = {"run_id": run, "chunk_size": 512, "retriever": run, "hit_rate@5": 0.0, "query_p50_ms": ms,
               "index_mib": 1.0}  # fmt: skip
        if noise:
            row["query_p50_low_ms"], row["query_p50_high_ms"] = noise[run]
        rows.append(row)
    return pd.DataFrame(rows)


def test_a_tie_at_the_best_value_is_called_a_tie_and_broken_by_mrr():
    scores = {"a": [1] * 8, "b": [1] * 8, "c": [1] * 8, "d": [1] * 6 + [0] * 2}
    mrr = {"a": 0.5, "b": 0.9, "c": 0.7, "d": 0.4}
    wide = _wide({"a": 5.0, "b": 6.0, "c": 7.0, "d": 8.0})
    wide["hit_rate@5"] = [np.mean(scores[r]) for r in wide["run_id"]]
    wide["mrr@10"] = [mrr[r] for r in wide["run_id"]]
    v = verdict(wide, lambda r: pd.DataFrame({"qid": range(8), "hit_rate@5": scores[r]}), "hit_rate@5")
    assert v.best == "b" and v.tied == 3
    assert "3 configurations tie at 1.000; it is first by MRR@10." in v.sentence()


def test_the_star_is_not_given_for_a_latency_inside_the_measured_noise():
    """The reported case: the star went to 11.76 over 11.96 ms, to a run finding 6 of 8 over one finding 8."""
    scores = {"fast": [1] * 6 + [0] * 2, "good": [1] * 8}
    noise = {"fast": (10.9, 13.0), "good": (11.0, 13.4)}
    wide = _wide({"fast": 11.76, "good": 11.96}, noise)
    wide["hit_rate@5"] = [np.mean(scores[r]) for r in wide["run_id"]]
    v = verdict(wide, lambda r: pd.DataFrame({"qid": range(8), "hit_rate@5": scores[r]}), "hit_rate@5")
    assert v.table.set_index("run_id").loc["fast", "verdict"] == "indistinguishable"
    assert v.recommended == "good" and v.as_cheap == 2
    assert "any of these will do" in v.sentence()
    # a latency outside the noise is cheaper: then the faster run is recommended
    apart = _wide({"fast": 5.0, "good": 11.96}, {"fast": (4.8, 5.3), "good": (11.0, 13.4)})
    apart["hit_rate@5"] = wide["hit_rate@5"]
    w = verdict(apart, lambda r: pd.DataFrame({"qid": range(8), "hit_rate@5": scores[r]}), "hit_rate@5")
    assert w.recommended == "fast" and w.as_cheap == 1


def test_the_median_interval_covers_the_median_and_narrows_with_more_values():
    rng = np.random.default_rng(0)
    few, many = rng.lognormal(2, 0.3, 12), rng.lognormal(2, 0.3, 400)
    for values in (few, many):
        low, high = median_interval(values)
        assert low <= float(np.median(values)) <= high
    assert np.subtract(*median_interval(many)[::-1]) < np.subtract(*median_interval(few)[::-1])


def test_a_saturated_metric_is_said_to_discriminate_nothing_and_the_haystack_is_offered():
    scores = {"a": [1] * 8, "b": [1] * 8, "c": [1] * 7 + [0]}
    wide = _wide({"a": 5.0, "b": 6.0, "c": 7.0})
    wide["hit_rate@5"] = [np.mean(scores[r]) for r in wide["run_id"]]
    v = verdict(wide, lambda r: pd.DataFrame({"qid": range(8), "hit_rate@5": scores[r]}), "hit_rate@5")
    text = v.sentence()
    assert "found@5 saturates: 2 of 3 configurations reach 0.95 or more" in text
    assert "Read MRR@10 beside it" in text and "background corpus" in text


def test_few_papers_are_said_to_discriminate_little_even_when_the_metric_spreads():
    scores = {"a": [1] * 6 + [0] * 2, "b": [1] * 4 + [0] * 4, "c": [1] * 3 + [0] * 5}
    wide = _wide({"a": 5.0, "b": 6.0, "c": 7.0})
    wide["hit_rate@5"] = [np.mean(scores[r]) for r in wide["run_id"]]
    wide["n_papers"] = 4.0
    v = verdict(wide, lambda r: pd.DataFrame({"qid": range(8), "hit_rate@5": scores[r]}), "hit_rate@5")
    assert "only 4 papers to search among, so found@5 comes easily" in v.sentence()
    wide["n_papers"] = 32.0
    w = verdict(wide, lambda r: pd.DataFrame({"qid": range(8), "hit_rate@5": scores[r]}), "hit_rate@5")
    assert "saturates" not in w.sentence()
