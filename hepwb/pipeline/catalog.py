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
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb import limits
from hepwb.dbfile import connect_waiting
from hepwb.evaluation import load_questions
from hepwb.exceptions import ConfigError
from hepwb.index.lance import connect, table_names
from hepwb.io import read_json_object
from hepwb.pipeline.catalog_links import record_links, record_links_from_folder
from hepwb.pipeline.catalog_sweeps import SweepCatalogMixin
from hepwb.pipeline.chunksets import CHUNKSET_REBUILD, ChunkSet, document_record
from hepwb.pipeline.keys import cell_name
from hepwb.pipeline.record import CellFailure, RunRecord
from hepwb.pipeline.sql_fetch import More, fetch_bounded
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["Catalog", "connect_catalog", "lance_views"]

_log = logging.getLogger("hepwb.catalog")

_DOCUMENT_COLUMNS = (
    "document_id", "label", "title", "arxiv", "pages", "source_file", "file_hash", "n_chars", "collaboration",
)  # fmt: skip


def connect_catalog(
    path: str | Path, *, read_only: bool = False, sandbox: bool = False, memory_mb: int = limits.SQL_MEMORY_MB
) -> Any:
    """Open the catalog, waiting while another process holds it (:func:`hepwb.dbfile.connect_waiting`)."""
    rebuild = f"delete it and run `hepwb report`: the catalog is rebuilt from the run folders ({path})"
    return connect_waiting(
        path,
        read_only=read_only,
        sandbox=sandbox,
        what="the catalog",
        rebuild=rebuild,
        log=_log,
        memory_mb=memory_mb,
    )


def lance_views(db_path: str | Path) -> JSONObject:
    """``{view name: Lance dataset}`` of every chunk table in the LanceDB folder ``db_path``."""
    import re

    if not Path(db_path).is_dir():
        return {}
    db = connect(db_path)
    return {
        "lance_" + re.sub(r"[^a-z0-9]+", "_", name.lower()): db.open_table(name).to_lance()
        for name in sorted(table_names(db))
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
ALTER TABLE runs ADD COLUMN IF NOT EXISTS cell_name VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS cell_key VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS config_hash VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS status VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS error VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS stage_keys JSON;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS timings JSON;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS worker VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS processing_errors JSON;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS unscored JSON;
CREATE TABLE IF NOT EXISTS sweep_cells (
    sweep_id VARCHAR, cell_name VARCHAR, run_id VARCHAR, status VARCHAR, reused BOOLEAN, updated VARCHAR);
ALTER TABLE documents ADD COLUMN IF NOT EXISTS collaboration VARCHAR;
CREATE TABLE IF NOT EXISTS figures (
    document_id VARCHAR, figure_id VARCHAR, kind VARCHAR, number INTEGER, label VARCHAR, page INTEGER,
    caption_start BIGINT, caption_end BIGINT, bbox JSON, image VARCHAR);
CREATE TABLE IF NOT EXISTS xrefs (
    document_id VARCHAR, kind VARCHAR, number VARCHAR, "start" BIGINT, "end" BIGINT, page INTEGER,
    target VARCHAR);
CREATE TABLE IF NOT EXISTS stage_runs (
    sweep_id VARCHAR, stage VARCHAR, key VARCHAR, wall_s DOUBLE, worker VARCHAR, computed BOOLEAN,
    detail JSON, updated VARCHAR);
"""


class Catalog(SweepCatalogMixin):
    """A DuckDB file holding everything hepwb measured (single writer; open, write, close)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute(_SCHEMA)

    def _connect(
        self, *, read_only: bool = False, sandbox: bool = False, memory_mb: int = limits.SQL_MEMORY_MB
    ) -> Any:
        """A connection, waiting (with a log line) while another process holds the file.

        ``sandbox``: no file access outside the catalog, no extensions, and ``memory_mb`` MiB of memory and
        :data:`~hepwb.limits.SQL_THREADS` threads at most, locked (user-typed SQL).
        """
        return connect_catalog(self.path, read_only=read_only, sandbox=sandbox, memory_mb=memory_mb)

    def sql(
        self,
        query: str,
        params: list[Any] | None = None,
        *,
        lancedb: str | Path | None = None,
        write: bool = False,
    ) -> pd.DataFrame:
        """Run ``query`` and return a pandas DataFrame (``lancedb``: see the module docstring).

        The connection is read-only unless ``write``, and never reads or writes other files or loads
        extensions (``read_text``, ``COPY … TO``, ``ATTACH``, ``INSTALL`` are refused).
        """
        with self._connect(read_only=not write, sandbox=True) as con:
            if lancedb is not None:
                for view, dataset in lance_views(lancedb).items():
                    con.register(view, dataset)
            frame: pd.DataFrame = con.execute(query, params or []).df()
            return frame

    def sql_bounded(
        self,
        query: str,
        *,
        lancedb: str | Path | None = None,
        write: bool = False,
        timeout_s: float = limits.SQL_TIMEOUT_S,
        max_rows: int = limits.SQL_MAX_ROWS,
        memory_mb: int = limits.SQL_MEMORY_MB,
    ) -> tuple[pd.DataFrame, More]:
        """:meth:`sql` for people typing queries: at most ``max_rows`` rows, stopped after ``timeout_s``.

        The row cap is applied to the query (``LIMIT``), so a huge result is never built; a statement
        still running after ``timeout_s`` is interrupted and the catalog released. DuckDB may use
        ``memory_mb`` MiB and :data:`~hepwb.limits.SQL_THREADS` threads; both are locked, so ``SET
        memory_limit`` inside the query is refused. What is fetched is bounded too
        (:func:`~hepwb.pipeline.sql_fetch.fetch_bounded`): long cells are cut in DuckDB, and rows stop at
        :data:`~hepwb.limits.SQL_MAX_RESULT_BYTES`.

        Returns:
            The rows, and why there are more (``"rows"``: past ``max_rows``; ``"bytes"``: past the byte
            cap; ``""``: none).

        Raises:
            ConfigError: The statement ran longer than ``timeout_s``, needed more than ``memory_mb`` MiB,
                tried to change a locked setting, or has more than :data:`~hepwb.limits.SQL_MAX_COLUMNS`
                columns.
        """
        import threading

        import duckdb
        import pandas as pd

        with self._connect(read_only=not write, sandbox=True, memory_mb=memory_mb) as con:
            if lancedb is not None:
                for view, dataset in lance_views(lancedb).items():
                    con.register(view, dataset)
            timer = threading.Timer(timeout_s, con.interrupt)
            timer.start()
            try:
                rel = con.sql(query)
                more: More = ""
                frame, more = (pd.DataFrame(), more) if rel is None else fetch_bounded(rel, max_rows)
            except duckdb.InterruptException:
                msg = f"the query ran over {timeout_s:g} s and was stopped; narrow it or raise --timeout-s"
                raise ConfigError(msg) from None
            except duckdb.OutOfMemoryException:
                msg = (
                    f"the query needed more than the {memory_mb:,} MiB of memory hepwb sql allows and was "
                    "stopped; narrow it (fewer rows, smaller aggregates) or raise --memory-mb"
                )
                raise ConfigError(msg) from None
            except duckdb.InvalidInputException as exc:
                if "configuration has been locked" not in str(exc):
                    raise
                refused = str(exc).splitlines()[0].replace('""', '"')
                msg = (
                    f"{refused}: hepwb sql fixes memory ({memory_mb:,} MiB) and threads "
                    f"({limits.SQL_THREADS}) for the whole statement; use --memory-mb for more memory"
                )
                raise ConfigError(msg) from None
            finally:
                timer.cancel()
        return frame, more

    def pl(self, query: str, params: list[Any] | None = None, *, lancedb: str | Path | None = None) -> Any:
        """Run ``query`` (read-only, as :meth:`sql`) and return a polars DataFrame (through Arrow).

        Polars is the quicker tool for your own group-bys and joins over the catalog's per-question rows
        and hits; :meth:`sql` returns pandas for the libraries that need it (plots, styled tables).
        """
        import polars as pl

        with self._connect(read_only=True, sandbox=True) as con:
            if lancedb is not None:
                for view, dataset in lance_views(lancedb).items():
                    con.register(view, dataset)
            return pl.from_arrow(con.sql(query, params=params or None).to_arrow_table())

    def record_chunkset(self, cs: ChunkSet) -> None:
        """Insert or replace a chunk set, its documents and its chunks."""
        import pandas as pd

        p = cs.chunker
        with self._connect() as con:
            for d in cs.documents.values():
                self._insert_document(con, document_record(d, cs.root))
                record_links(con, d, cs.root)
                d.release()  # one stored paper in memory at a time
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
        """Load one finished run folder (its :class:`RunRecord` and tables); returns its run id."""
        import pandas as pd

        run_dir = Path(run_dir)
        m = RunRecord.load(run_dir)
        cfg = m.config
        per_q = pd.read_parquet(run_dir / "per_question.parquet")
        hits = pd.read_parquet(run_dir / "hits.parquet")
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")  # a failure leaves the previous rows of this run intact
            self._delete_folder_runs(con, run_dir, m.run_id)
            con.execute(
                "INSERT INTO runs (run_id, chunkset_id, retriever, k, chunk_size, chunk_overlap, "
                "embedding_model, n_questions, created, run_dir, config, environment, sweep_id, "
                "questions_sha256, cell_name, cell_key, config_hash, status, stage_keys, timings, worker, "
                "processing_errors, unscored) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ok', ?, ?, ?, ?, ?)",
                [
                    m.run_id,
                    m.chunkset_id,
                    cfg.get("retriever"),
                    cfg.get("k"),
                    cfg.get("chunk_size"),
                    cfg.get("chunk_overlap"),
                    cfg.get("embedding_model"),
                    m.summary.get("n_questions"),
                    m.created,
                    str(run_dir),
                    json.dumps(cfg),
                    json.dumps(m.environment),
                    m.sweep_id,
                    m.inputs.questions_sha256,
                    cell_name(cfg),
                    m.cell_key,
                    m.config_hash,
                    json.dumps(m.stage_keys),
                    json.dumps(m.timings_s),
                    m.worker,
                    json.dumps(m.processing_errors),
                    json.dumps(m.inputs.unscored),
                ],
            )
            self._record_queries(con, m.inputs.questions_sha256, m.inputs.questions_file)
            con.executemany(
                "INSERT INTO metrics VALUES (?, ?, ?)",
                [[m.run_id, k, float(v)] for k, v in {**m.summary, **m.costs}.items()],
            )
            ci_rows = [[m.run_id, k, lo, hi] for k, (lo, hi) in m.summary_ci95.items()]
            if ci_rows:
                con.executemany("INSERT INTO metric_ci VALUES (?, ?, ?, ?)", ci_rows)
            rows = [[m.run_id, r["qid"], r.to_json()] for _, r in per_q.iterrows()]
            if rows:
                con.executemany("INSERT INTO question_results VALUES (?, ?, ?)", rows)
            self._record_chunkset_files(con, Path(m.chunkset_root), m.chunkset_id)
            h = hits[["qid", "rank", "chunk_id", "label", "score", "relevant"]].copy()
            h.insert(0, "run_id", m.run_id)
            con.register("h", h)
            con.execute("INSERT INTO hits SELECT * FROM h")
            con.unregister("h")
            con.execute("COMMIT")
        return m.run_id

    def record_failure(self, run_dir: str | Path) -> str:
        """Record the failed cell whose ``error.json`` is in ``run_dir`` (replacing its folder's old rows)."""
        run_dir = Path(run_dir)
        f = CellFailure.load(run_dir)
        cfg = f.config
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            self._delete_folder_runs(con, run_dir, f.run_id)
            con.execute(
                "INSERT INTO runs (run_id, retriever, k, chunk_size, chunk_overlap, embedding_model, "
                "created, run_dir, config, sweep_id, cell_name, cell_key, status, error, worker) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'failed', ?, ?)",
                [
                    f.run_id,
                    cfg.get("retriever"),
                    cfg.get("k"),
                    cfg.get("chunk_size"),
                    cfg.get("chunk_overlap"),
                    cfg.get("embedding_model"),
                    f.created,
                    str(run_dir),
                    json.dumps(cfg),
                    f.sweep_id,
                    cell_name(cfg),
                    f.cell_key,
                    f"{f.stage}: {f.error_type}: {f.error}"[:4000],
                    f.worker,
                ],
            )
            con.execute("COMMIT")
        return f.run_id

    @staticmethod
    def _delete_folder_runs(con: Any, run_dir: Path, run_id: str) -> None:
        """A run folder holds one run: rows of an earlier run written to the same folder are stale."""
        stale = [
            r[0] for r in con.execute("SELECT run_id FROM runs WHERE run_dir = ?", [str(run_dir)]).fetchall()
        ]
        for table in ("runs", "metrics", "metric_ci", "question_results", "hits"):
            for rid in {run_id, *stale}:
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [rid])

    @staticmethod
    def _record_queries(con: Any, sha: str, questions_file: str) -> None:
        """Insert the run's question set into ``queries`` (once per question-file hash)."""
        path = Path(questions_file)
        if not sha or not questions_file or not path.is_file():
            return
        if con.execute("SELECT count(*) FROM queries WHERE questions_sha256 = ?", [sha]).fetchall()[0][0]:
            return
        con.executemany(
            "INSERT INTO queries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    sha,
                    q.qid,
                    q.question,
                    q.answer,
                    q.kind,
                    q.style,
                    sorted({e.doc for e in q.evidence}),
                    len(q.evidence),
                ]
                for q in load_questions(path)
            ],
        )

    @staticmethod
    def _insert_document(con: Any, rec: JSONObject) -> None:
        """Insert or replace one ``documents`` row (a :func:`~hepwb.pipeline.chunksets.document_record`)."""
        con.execute("DELETE FROM documents WHERE document_id = ?", [rec["document_id"]])
        con.execute(
            f"INSERT INTO documents ({', '.join(_DOCUMENT_COLUMNS)}) VALUES ({', '.join('?' * 9)})",
            [rec.get(k) for k in _DOCUMENT_COLUMNS],
        )

    @staticmethod
    def _record_chunkset_files(con: Any, root: Path, chunkset_id: str) -> None:
        """Insert a chunk set from its folder (``chunkset.json`` + ``chunks.parquet``) unless present."""
        if not (root / "chunkset.json").is_file() or not (root / "chunks.parquet").is_file():
            return
        if con.execute("SELECT count(*) FROM chunksets WHERE chunkset_id = ?", [chunkset_id]).fetchall()[0][
            0
        ]:
            return
        man = read_json_object(root / "chunkset.json", "chunk set manifest", fix=CHUNKSET_REBUILD)
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
        inside = root.resolve()
        for rec in man.get("documents") or []:  # absent in chunk sets written before hepwb recorded them
            if not isinstance(rec, dict) or not isinstance(rec.get("folder"), str):
                continue
            folder = (root / rec["folder"]).resolve()
            if folder.is_relative_to(inside) and folder != inside:  # only its own documents/ folders
                Catalog._insert_document(con, rec)
                record_links_from_folder(con, str(rec["document_id"]), folder)
        con.execute("DELETE FROM chunks WHERE chunkset_id = ?", [chunkset_id])
        con.execute(
            'INSERT INTO chunks SELECT ?, chunk_id, document_id, "index", "start", "end", token_count, '
            "overlap_tokens, oversized, chunk_type FROM read_parquet(?)",
            [chunkset_id, str(root / "chunks.parquet")],
        )
