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

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb import limits
from hepwb.catalog.record import RecordCatalogMixin
from hepwb.catalog.sql_fetch import More, fetch_bounded
from hepwb.catalog.sweeps import SweepCatalogMixin
from hepwb.exceptions import ConfigError
from hepwb.files.dbfile import connect_waiting, named_if_damaged
from hepwb.index.chunk_store import ChunkStore
from hepwb.index.lance import connect, table_names
from hepwb.index.parts import table_parts_present
from hepwb.models.embedder import get_embedder
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["Catalog", "connect_catalog", "lance_views"]

_log = logging.getLogger("hepwb.catalog")


def _rebuild(path: str | Path) -> str:
    """What to do with a damaged catalog at ``path``: the run folders hold everything it holds."""
    return f"delete it and run `hepwb report`: the catalog is rebuilt from the run folders ({path})"


def connect_catalog(
    path: str | Path, *, read_only: bool = False, sandbox: bool = False, memory_mb: int = limits.SQL_MEMORY_MB
) -> Any:
    """Open the catalog, waiting while another process holds it (:func:`.dbfile.connect_waiting`)."""
    return connect_waiting(
        path,
        read_only=read_only,
        sandbox=sandbox,
        what="the catalog",
        rebuild=_rebuild(path),
        log=_log,
        memory_mb=memory_mb,
    )


SQL_PARTS = frozenset({"entities", "search_text"})
"""The parts of a chunk table a SQL view shows, added the first time it is shown (the vectors appear once a
dense run has embedded the chunks: embedding is never started by a query)."""


def lance_views(db_path: str | Path) -> JSONObject:
    """``{view name: Lance dataset}`` of every chunk table in the LanceDB folder ``db_path``.

    A chunk table built for a lexical run has its entities and HEP terms added (:data:`SQL_PARTS`) before it
    is shown, so a query over them works whatever runs built the table.
    """
    import re

    if not Path(db_path).is_dir():
        return {}
    db = connect(db_path)
    views = {}
    for name in sorted(table_names(db)):
        if name.startswith("embcache__"):
            continue
        marked = (Path(db_path) / "_complete" / f"{name}.json").is_file()  # a chunk table hepwb built
        if marked and SQL_PARTS - table_parts_present(db_path, name):
            _log.info("adding the entities and HEP terms of %s for SQL (once)", name)
            ChunkStore(db_path, get_embedder(), progress=False).with_parts(name, SQL_PARTS)
        views["lance_" + re.sub(r"[^a-z0-9]+", "_", name.lower())] = db.open_table(name).to_lance()
    return views


_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    document_id VARCHAR, label VARCHAR, title VARCHAR, arxiv VARCHAR, pages INTEGER,
    source_file VARCHAR, file_hash VARCHAR, n_chars BIGINT, PRIMARY KEY (document_id, label));
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
ALTER TABLE runs ADD COLUMN IF NOT EXISTS substitutions JSON;
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


def _documents_by_label(con: Any) -> None:
    """Key an older catalog's ``documents`` rows by paper and label, not paper alone (in place, once).

    The same paper can stand under two labels (a user's copy of a shipped paper, renamed): each label keeps
    its own row, so each corpus's report names its own papers.
    """
    keys = con.execute(
        "SELECT constraint_column_names FROM duckdb_constraints() "
        "WHERE table_name = 'documents' AND constraint_type = 'PRIMARY KEY'"
    ).fetchall()
    if not keys or list(keys[0][0]) != ["document_id"]:
        return
    con.execute("ALTER TABLE documents RENAME TO documents_by_id")
    con.execute(_SCHEMA.split(";")[0])  # the documents table as it is now
    con.execute("ALTER TABLE documents ADD COLUMN IF NOT EXISTS collaboration VARCHAR")
    columns = [r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE documents_by_id)").fetchall()]
    listed = ", ".join(f'"{c}"' for c in columns)
    con.execute(f"INSERT INTO documents ({listed}) SELECT {listed} FROM documents_by_id")
    con.execute("DROP TABLE documents_by_id")


class Catalog(RecordCatalogMixin, SweepCatalogMixin):
    """A DuckDB file holding everything hepwb measured (single writer; open, write, close)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            _documents_by_label(con)
            con.execute(_SCHEMA)

    @contextmanager
    def _connect(
        self, *, read_only: bool = False, sandbox: bool = False, memory_mb: int = limits.SQL_MEMORY_MB
    ) -> Iterator[Any]:
        """A connection for one ``with`` block, waiting (with a log line) while another process holds it.

        Closed when the block ends; DuckDB's word that a block of the file is corrupt, raised inside it, is
        one line naming the catalog and how to rebuild it (:func:`hepwb.files.dbfile.named_if_damaged`).

        ``sandbox``: no file access outside the catalog, no extensions, and ``memory_mb`` MiB of memory and
        :data:`~hepwb.limits.SQL_THREADS` threads at most, locked (user-typed SQL).
        """
        with (
            connect_catalog(self.path, read_only=read_only, sandbox=sandbox, memory_mb=memory_mb) as con,
            named_if_damaged(self.path, "the catalog", _rebuild(self.path)),
        ):
            yield con

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
        (:func:`~hepwb.catalog.sql_fetch.fetch_bounded`): long cells are cut in DuckDB, and rows stop at
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
