"""The DuckDB catalog: a run folder holds one run, re-recording replaces, stale rows go."""

from __future__ import annotations

import json

import pandas as pd

from hepwb.catalog import Catalog


def write_run(folder, run_id, value):
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {
        "retriever": "bm25",
        "k": 5,
        "chunk_size": 256,
        "chunk_overlap": 0.1,
        "embedding_model": "m",
        "chunker": "x",
    }
    (folder / "metrics.json").write_text(json.dumps({
        "run_id": run_id, "chunkset_id": "cs", "config": cfg, "created": "2026-01-01T00:00:00Z",
        "summary": {"hit_rate@5": value, "n_questions": 2}, "summary_ci95": {"hit_rate@5": [0.1, 0.9]},
    }))  # fmt: skip
    pd.DataFrame({"qid": ["a", "b"], "hit_rate@5": [value, value]}).to_parquet(
        folder / "per_question.parquet"
    )
    pd.DataFrame(
        {"qid": ["a"], "rank": [1], "chunk_id": ["c"], "label": ["P"], "score": [1.0], "relevant": [True]}
    ).to_parquet(folder / "hits.parquet")


def test_rerun_in_the_same_folder_replaces_the_old_run(tmp_path):
    cat = Catalog(tmp_path / "c.duckdb")
    write_run(tmp_path / "runs" / "cell1", "old-run", 0.5)
    cat.record_run(tmp_path / "runs" / "cell1")
    write_run(tmp_path / "runs" / "cell1", "new-run", 0.75)  # same sweep cell, new code -> new run id
    cat.record_run(tmp_path / "runs" / "cell1")
    assert list(cat.sql("SELECT run_id FROM runs")["run_id"]) == ["new-run"]
    for table in ("metrics", "metric_ci", "question_results", "hits"):
        assert set(cat.sql(f"SELECT run_id FROM {table}")["run_id"]) == {"new-run"}, table
    assert cat.per_question("new-run")["hit_rate@5"].tolist() == [0.75, 0.75]
    assert cat.sql("SELECT ci_low, ci_high FROM metric_ci").values.tolist() == [[0.1, 0.9]]
