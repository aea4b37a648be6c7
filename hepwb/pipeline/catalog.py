"""The DuckDB catalog of documents, chunk sets, chunks, runs, queries, per-question results, hits, metrics.

Each evaluation run folder (``metrics.json``, ``per_question.parquet``, ``hits.parquet``) is loaded
with :meth:`Catalog.record_run`; re-recording a run replaces its rows. Query with SQL::

    Catalog("reports/catalog.duckdb").sql("SELECT * FROM metrics WHERE metric = 'recall@5'")

With ``lancedb=`` (a LanceDB folder) every chunk table there is also readable, through Arrow, as a
view ``lance_<table name with non-alphanumerics as _>`` - text, vector, entities and all - so
catalog rows join with indexed chunks::

    cat.sql("SELECT r.retriever, h.rank, l.entities FROM hits h JOIN runs r USING (run_id) "
            "JOIN lance_hepilot_cs512_ov0_1_e0273f5d__all_minilm_l6_v2 l USING (chunk_id)", lancedb=path)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb.io import read_json

if TYPE_CHECKING:
    import pandas as pd

    from hepwb.pipeline.chunksets import ChunkSet

__all__ = ["Catalog", "lance_views"]


def lance_views(db_path: str | Path) -> dict[str, Any]:
    """``{view name: Lance dataset}`` of every chunk table in the LanceDB folder ``db_path``."""
    import re

    from hepwb.index.store import _tables, connect

    if not Path(db_path).is_dir():
        return {}
    db = connect(db_path)
    return {
        "lance_" + re.sub(r"[^a-z0-9]+", "_", name.lower()): db.open_table(name).to_lance()
        for name in sorted(_tables(db))
        if not name.startswith("embcache__")
    }


_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    document_id VARCHAR PRIMARY KEY, label VARCHAR, title VARCHAR, arxiv VARCHAR, pages INTEGER,
    source_file VARCHAR, file_hash VARCHAR, n_chars BIGINT);
CREATE TABLE IF NOT EXISTS chunksets (
    chunkset_id VARCHAR PRIMARY KEY, chunker VARCHAR, chunk_size INTEGER, chunk_overlap DOUBLE,
    tokenizer VARCHAR, params JSON, n_chunks INTEGER, hepilot_compliant BOOLEAN, root VARCHAR);
CREATE TABLE IF NOT EXISTS chunks (
    chunkset_id VARCHAR, chunk_id VARCHAR, document_id VARCHAR, chunk_index INTEGER, "start" BIGINT,
    "end" BIGINT, token_count INTEGER, overlap_tokens INTEGER, oversized BOOLEAN, chunk_type VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, chunkset_id VARCHAR, retriever VARCHAR, k INTEGER, chunk_size INTEGER,
    chunk_overlap DOUBLE, embedding_model VARCHAR, n_questions INTEGER, created VARCHAR, run_dir VARCHAR,
    config JSON, environment JSON);
ALTER TABLE runs ADD COLUMN IF NOT EXISTS sweep_id VARCHAR;
CREATE TABLE IF NOT EXISTS sweeps (sweep_id VARCHAR PRIMARY KEY, updated VARCHAR, params JSON);
CREATE TABLE IF NOT EXISTS metrics (run_id VARCHAR, metric VARCHAR, value DOUBLE);
CREATE TABLE IF NOT EXISTS metric_ci (run_id VARCHAR, metric VARCHAR, ci_low DOUBLE, ci_high DOUBLE);
CREATE TABLE IF NOT EXISTS question_results (run_id VARCHAR, qid VARCHAR, data JSON);
CREATE TABLE IF NOT EXISTS queries (
    questions_sha256 VARCHAR, qid VARCHAR, question VARCHAR, answer VARCHAR, kind VARCHAR, style VARCHAR,
    docs VARCHAR[], n_evidence INTEGER);
ALTER TABLE runs ADD COLUMN IF NOT EXISTS questions_sha256 VARCHAR;
CREATE TABLE IF NOT EXISTS hits (
    run_id VARCHAR, qid VARCHAR, "rank" INTEGER, chunk_id VARCHAR, label VARCHAR, score DOUBLE,
    relevant BOOLEAN);
"""


class Catalog:
    """A DuckDB file holding everything hepwb measured (single writer; open, write, close)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute(_SCHEMA)

    def _connect(self) -> Any:
        import duckdb

        return duckdb.connect(str(self.path))

    def sql(
        self, query: str, params: list[Any] | None = None, *, lancedb: str | Path | None = None
    ) -> pd.DataFrame:
        """Run ``query`` and return a pandas DataFrame (``lancedb``: see the module docstring)."""
        with self._connect() as con:
            if lancedb is not None:
                for view, dataset in lance_views(lancedb).items():
                    con.register(view, dataset)
            return con.execute(query, params or []).df()

    def record_chunkset(self, cs: ChunkSet) -> None:
        """Insert or replace a chunk set, its documents and its chunks."""
        import pandas as pd

        p = cs.chunker
        with self._connect() as con:
            for d in cs.documents.values():
                con.execute("DELETE FROM documents WHERE document_id = ?", [d.document_id])
                con.execute(
                    "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        d.document_id,
                        d.label,
                        d.title,
                        str(d.meta.get("arxiv") or ""),
                        d.meta.get("pages"),
                        str(d.meta.get("source_file", "")),
                        str(d.meta.get("file_hash", "")),
                        len(d.markdown),
                    ],
                )
            con.execute("DELETE FROM chunksets WHERE chunkset_id = ?", [cs.chunkset_id])
            con.execute(
                "INSERT INTO chunksets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    cs.chunkset_id,
                    p.get("name"),
                    p.get("chunk_size"),
                    p.get("chunk_overlap"),
                    p.get("tokenizer"),
                    json.dumps(p),
                    len(cs.chunks),
                    cs.hepilot_compliant,
                    str(cs.root),
                ],
            )
            con.execute("DELETE FROM chunks WHERE chunkset_id = ?", [cs.chunkset_id])
            frame = pd.DataFrame(
                {
                    "chunkset_id": cs.chunkset_id,
                    "chunk_id": [c.chunk_id for c in cs.chunks],
                    "document_id": [c.document_id for c in cs.chunks],
                    "chunk_index": [c.index for c in cs.chunks],
                    "start": [c.start for c in cs.chunks],
                    "end": [c.end for c in cs.chunks],
                    "token_count": [c.token_count for c in cs.chunks],
                    "overlap_tokens": [c.overlap_tokens for c in cs.chunks],
                    "oversized": [c.oversized for c in cs.chunks],
                    "chunk_type": [c.chunk_type for c in cs.chunks],
                }
            )
            con.register("frame", frame)
            con.execute("INSERT INTO chunks SELECT * FROM frame")
            con.unregister("frame")

    def record_run(self, run_dir: str | Path) -> str:
        """Load one run folder's results; returns its run id."""
        import pandas as pd

        run_dir = Path(run_dir)
        m = read_json(run_dir / "metrics.json")
        cfg = m["config"]
        run_id = m["run_id"]
        per_q = pd.read_parquet(run_dir / "per_question.parquet")
        hits = pd.read_parquet(run_dir / "hits.parquet")
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")  # a failure leaves the previous rows of this run intact
            # a run folder holds one run: rows of an earlier run written to the same folder are stale
            stale = [
                r[0]
                for r in con.execute("SELECT run_id FROM runs WHERE run_dir = ?", [str(run_dir)]).fetchall()
            ]
            for table in ("runs", "metrics", "metric_ci", "question_results", "hits"):
                for rid in {run_id, *stale}:
                    con.execute(f"DELETE FROM {table} WHERE run_id = ?", [rid])
            sweep = (
                read_json(run_dir / "sweep.json")["sweep_id"] if (run_dir / "sweep.json").is_file() else None
            )
            con.execute(
                "INSERT INTO runs (run_id, chunkset_id, retriever, k, chunk_size, chunk_overlap, "
                "embedding_model, n_questions, created, run_dir, config, environment, sweep_id, "
                "questions_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    run_id,
                    m["chunkset_id"],
                    cfg["retriever"],
                    cfg["k"],
                    cfg["chunk_size"],
                    cfg["chunk_overlap"],
                    cfg["embedding_model"],
                    m["summary"].get("n_questions"),
                    m["created"],
                    str(run_dir),
                    json.dumps(cfg),
                    json.dumps(m.get("environment", {})),
                    sweep,
                    m.get("inputs", {}).get("questions_sha256"),
                ],
            )
            self._record_queries(con, m.get("inputs", {}))
            con.executemany(
                "INSERT INTO metrics VALUES (?, ?, ?)",
                [[run_id, k, float(v)] for k, v in m["summary"].items() if isinstance(v, int | float)],
            )
            ci_rows = [[run_id, k, lo, hi] for k, (lo, hi) in m.get("summary_ci95", {}).items()]
            if ci_rows:
                con.executemany("INSERT INTO metric_ci VALUES (?, ?, ?, ?)", ci_rows)
            rows = [[run_id, r["qid"], r.to_json()] for _, r in per_q.iterrows()]
            if rows:
                con.executemany("INSERT INTO question_results VALUES (?, ?, ?)", rows)
            self._record_chunkset_files(con, Path(m.get("chunkset_root", "")), m["chunkset_id"])
            h = hits[["qid", "rank", "chunk_id", "label", "score", "relevant"]].copy()
            h.insert(0, "run_id", run_id)
            con.register("h", h)
            con.execute("INSERT INTO hits SELECT * FROM h")
            con.unregister("h")
            con.execute("COMMIT")
        return str(run_id)

    @staticmethod
    def _record_queries(con: Any, inputs: dict[str, Any]) -> None:
        """Insert the run's question set into ``queries`` (once per question-file hash)."""
        from hepwb.evaluation import load_questions

        sha, path = inputs.get("questions_sha256"), Path(str(inputs.get("questions_file", "")))
        if not sha or not path.is_file():
            return
        if con.execute("SELECT count(*) FROM queries WHERE questions_sha256 = ?", [sha]).fetchall()[0][0]:
            return
        con.executemany(
            "INSERT INTO queries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [sha, q.qid, q.question, q.answer, q.kind, q.style, sorted({e.doc for e in q.evidence}),
                 len(q.evidence)]
                for q in load_questions(path)
            ],
        )  # fmt: skip

    @staticmethod
    def _record_chunkset_files(con: Any, root: Path, chunkset_id: str) -> None:
        """Insert a chunk set from its folder (``chunkset.json`` + ``chunks.parquet``) unless present."""
        if not (root / "chunkset.json").is_file() or not (root / "chunks.parquet").is_file():
            return
        if con.execute("SELECT count(*) FROM chunksets WHERE chunkset_id = ?", [chunkset_id]).fetchall()[0][
            0
        ]:
            return
        man = read_json(root / "chunkset.json")
        p = man["chunker"]
        con.execute(
            "INSERT INTO chunksets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                chunkset_id,
                p.get("name"),
                p.get("chunk_size"),
                p.get("chunk_overlap"),
                p.get("tokenizer"),
                json.dumps(p),
                man.get("n_chunks"),
                man.get("hepilot_compliant"),
                str(root),
            ],
        )
        con.execute("DELETE FROM chunks WHERE chunkset_id = ?", [chunkset_id])
        con.execute(
            'INSERT INTO chunks SELECT ?, chunk_id, document_id, "index", "start", "end", token_count, '
            "overlap_tokens, oversized, chunk_type FROM read_parquet(?)",
            [chunkset_id, str(root / "chunks.parquet")],
        )

    def record_sweep(self, sweep_id: str, params: dict[str, Any]) -> None:
        """Insert or refresh a sweep (its ``updated`` time decides which sweep is the latest)."""
        from hepwb.hepilot.log import utc_now

        with self._connect() as con:
            con.execute("DELETE FROM sweeps WHERE sweep_id = ?", [sweep_id])
            con.execute("INSERT INTO sweeps VALUES (?, ?, ?)", [sweep_id, utc_now(), json.dumps(params)])

    def _run_filter(self, sweep: str | None) -> tuple[str, list[Any]]:
        """SQL condition on ``r`` (runs) selecting one sweep: an id, ``"latest"`` or ``None``/``"all"``."""
        if sweep in (None, "all"):
            return "TRUE", []
        if sweep == "latest":
            latest = self.sql("SELECT sweep_id FROM sweeps ORDER BY updated DESC LIMIT 1")
            if latest.empty:
                return "TRUE", []
            sweep = str(latest.iloc[0, 0])
        return "r.sweep_id = ?", [sweep]

    def metrics_wide(self, sweep: str | None = "all") -> pd.DataFrame:
        """One row per run (of ``sweep``: an id, ``"latest"`` or ``"all"``): configuration plus metrics."""
        cond, params = self._run_filter(sweep)
        df = self.sql(
            "SELECT r.run_id, json_extract_string(r.config, '$.chunker') AS chunker, r.retriever, "
            "r.chunk_size, r.chunk_overlap, r.k, m.metric, m.value "
            f"FROM runs r JOIN metrics m USING (run_id) WHERE {cond}",
            params,
        )
        if df.empty:
            return df
        wide = df.pivot_table(
            index=["run_id", "chunker", "retriever", "chunk_size", "chunk_overlap", "k"],
            columns="metric",
            values="value",
        ).reset_index()
        wide.columns.name = None
        for col in [c for c in wide.columns if str(c).startswith("n_")]:
            wide[col] = wide[col].round().astype("Int64")
        return wide.sort_values(["chunker", "retriever", "chunk_size"]).reset_index(drop=True)

    def per_question(self, run_id: str) -> pd.DataFrame:
        """The per-question metrics of run ``run_id`` (for :func:`hepwb.evaluation.stats.compare_runs`)."""
        import pandas as pd

        df = self.sql("SELECT data FROM question_results WHERE run_id = ? ORDER BY qid", [run_id])
        if df.empty:
            msg = f"no per-question results for run {run_id!r}; record it with Catalog.record_run(run_dir)"
            raise KeyError(msg)
        return pd.DataFrame([json.loads(d) for d in df["data"]])

    def sync_runs(self, runs_dir: str | Path) -> list[str]:
        """Record every run folder under ``runs_dir`` that holds a ``metrics.json``; returns their ids."""
        found = sorted(Path(runs_dir).glob("*/metrics.json")) if Path(runs_dir).is_dir() else []
        return [self.record_run(p.parent) for p in found]

    def breakdown(
        self, metric: str = "recall@5", by: str = "kind", sweep: str | None = "all"
    ) -> pd.DataFrame:
        """Mean of a per-question ``metric`` grouped by a question field (``kind``, ``style``) per run."""
        cond, params = self._run_filter(sweep)
        df = self.sql(
            "SELECT r.retriever, r.chunk_size, json_extract_string(q.data, '$.' || ?) AS grp, "
            "TRY_CAST(json_extract(q.data, '$.\"' || ? || '\"') AS DOUBLE) AS v "
            f"FROM question_results q JOIN runs r USING (run_id) WHERE {cond}",
            [by, metric, *params],
        )
        if df.empty:
            return df
        out = df.groupby(["grp", "retriever", "chunk_size"])["v"].mean().unstack(["retriever", "chunk_size"])
        out.index.name = by
        return out.round(3)
