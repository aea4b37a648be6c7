"""The DuckDB catalog: a run folder holds one run, re-recording replaces, stale rows go."""

from __future__ import annotations

import json

import pandas as pd

from hepwb.catalog import Catalog
from hepwb.report.links import paper_titles


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


def _document(document_id, label, title):
    return {"document_id": document_id, "label": label, "title": title, "n_chars": 10}


def test_one_paper_under_two_labels_keeps_a_row_and_title_per_label(tmp_path):
    cat = Catalog(tmp_path / "catalog.duckdb")
    with cat._connect() as con:
        Catalog._insert_document(con, _document("d1", "P03", "Shipped title"))
        Catalog._insert_document(con, _document("d1", "mine", "Same paper, my label"))
        Catalog._insert_document(con, _document("d1", "mine", "Same paper, my label"))  # recorded again
    assert paper_titles(cat) == {"P03": "Shipped title", "mine": "Same paper, my label"}


def test_an_older_catalog_keyed_by_paper_alone_is_rekeyed_in_place(tmp_path):
    import duckdb

    path = tmp_path / "catalog.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE documents (document_id VARCHAR PRIMARY KEY, label VARCHAR, title VARCHAR, "
            "arxiv VARCHAR, pages INTEGER, source_file VARCHAR, file_hash VARCHAR, n_chars BIGINT, "
            "collaboration VARCHAR)"
        )
        con.execute("INSERT INTO documents (document_id, label, title) VALUES ('d1', 'P03', 'Shipped')")
    cat = Catalog(path)
    with cat._connect() as con:
        Catalog._insert_document(con, _document("d1", "mine", "Mine"))
    assert paper_titles(cat) == {"P03": "Shipped", "mine": "Mine"}
    Catalog(path)  # opened again: nothing to do


def test_papers_read_from_another_source_reach_the_catalog_once_each(tmp_path):
    cat = Catalog(tmp_path / "c.duckdb")
    line = "P07: converted from its PDF: LaTeX source /t/P07 not used: it agrees with the PDF on 69%"
    for cell in ("cell1", "cell2"):
        write_run(tmp_path / "runs" / cell, f"run-{cell}", 0.5)
        record = json.loads((tmp_path / "runs" / cell / "metrics.json").read_text())
        record["inputs"] = {"substitutions": [line]}
        (tmp_path / "runs" / cell / "metrics.json").write_text(json.dumps(record))
        cat.record_run(tmp_path / "runs" / cell)
    swapped = cat.substitutions(None)
    assert swapped.to_dict("records") == [{"paper": "P07", "what": line.removeprefix("P07: ")}]
