"""The sweep's verdict says whether its best configuration beats plain bm25, with the test."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hepwb.report.verdict import verdict


def _verdict(scores: dict[str, list[int]]) -> str:
    wide = pd.DataFrame({
        "run_id": list(scores), "chunker": "hepilot", "chunk_size": 512, "chunk_overlap": 0.1,
        "retriever": ["bm25", "bm25(fields=context)", "hybrid"],
        "hit_rate@5": [float(np.mean(v)) for v in scores.values()],
        "query_p50_ms": [3.0, 3.0, 9.0], "index_mib": [1.0, 1.0, 1.0],
    })  # fmt: skip
    return verdict(
        wide, lambda r: pd.DataFrame({"qid": range(100), "hit_rate@5": scores[r]}), "hit_rate@5"
    ).sentence()


def test_a_clear_gain_over_bm25_is_said_with_its_adjusted_p():
    bm25 = [1] * 50 + [0] * 50
    text = _verdict({"plain": bm25, "context": [1] * 70 + [0] * 30, "hybrid": [1] * 60 + [0] * 40})
    assert "Against the best plain bm25 (hepilot · 512 tokens · overlap 0.1 · bm25, found@5 0.500)" in text
    assert "gains +0.200 and beats it (Holm-adjusted p = " in text


def test_a_gain_within_noise_is_not_called_a_win():
    bm25 = [1, 0] * 50
    text = _verdict({"plain": bm25, "context": [1, 0] * 49 + [1, 1], "hybrid": bm25})
    assert "gains +0.010 and cannot be told apart from it" in text


def test_when_plain_bm25_is_best_the_verdict_says_so():
    assert "No configuration does better than plain bm25 here." in _verdict(
        {"plain": [1] * 80 + [0] * 20, "context": [1] * 70 + [0] * 30, "hybrid": [1] * 10 + [0] * 90}
    )
