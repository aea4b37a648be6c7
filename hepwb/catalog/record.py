"""Writing to the catalog: chunk sets (with their documents and chunks), runs and failed cells.

:class:`RecordCatalogMixin` holds the methods of :class:`~hepwb.catalog.base.Catalog` that load what the
run path wrote (a :class:`~hepwb.chunking.chunksets.ChunkSet`, a run folder's
:class:`~hepwb.runs.record.RunRecord` and tables, a failed cell's ``error.json``) into its tables.
Re-recording replaces the earlier rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hepwb.catalog.links import record_links, record_links_from_folder
from hepwb.chunking.chunksets import CHUNKSET_REBUILD, ChunkSet, document_record
from hepwb.evaluation import load_questions
from hepwb.experiment.keys import cell_name
from hepwb.files.io import read_json_object
from hepwb.runs.folder import HITS_COLUMNS, read_hits, read_per_question
from hepwb.runs.record import CellFailure, RunRecord
from hepwb.types import JSONObject

__all__ = ["RecordCatalogMixin"]

_DOCUMENT_COLUMNS = (
    "document_id", "label", "title", "arxiv", "pages", "source_file", "file_hash", "n_chars", "collaboration",
)  # fmt: skip


class RecordCatalogMixin:
    """Methods of :class:`~hepwb.catalog.base.Catalog` that record chunk sets, runs and failed cells."""

    def _connect(self) -> Any:
        raise NotImplementedError  # provided by Catalog

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
        """Load one finished run folder (its :class:`RunRecord` and tables); returns its run id.

        Raises:
            DamagedRunError: Its ``hits.parquet`` or ``per_question.parquet`` is damaged
                (:mod:`hepwb.runs.folder`): nothing of the run is recorded; the message names the
                file and the command that rebuilds the run.
        """
        run_dir = Path(run_dir)
        m = RunRecord.load(run_dir)
        cfg = m.config
        per_q = read_per_question(run_dir)  # both checked before anything is written
        hits = read_hits(run_dir)
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")  # a failure leaves the previous rows of this run intact
            self._delete_folder_runs(con, run_dir, m.run_id)
            con.execute(
                "INSERT INTO runs (run_id, chunkset_id, retriever, k, chunk_size, chunk_overlap, "
                "embedding_model, n_questions, created, run_dir, config, environment, sweep_id, "
                "questions_sha256, cell_name, cell_key, config_hash, status, stage_keys, timings, worker, "
                "processing_errors, unscored, substitutions) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ok', ?, ?, ?, ?, ?, ?)",
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
                    json.dumps(m.inputs.substitutions),
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
            h = hits[list(HITS_COLUMNS)].copy()
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
        """Insert or replace one ``documents`` row (a :func:`~hepwb.chunking.chunksets.document_record`).

        Keyed by paper and label: a paper under another label (a renamed copy) is a row of its own.
        """
        con.execute(
            "DELETE FROM documents WHERE document_id = ? AND label = ?", [rec["document_id"], rec["label"]]
        )
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
                RecordCatalogMixin._insert_document(con, rec)
                record_links_from_folder(con, str(rec["document_id"]), folder)
        con.execute("DELETE FROM chunks WHERE chunkset_id = ?", [chunkset_id])
        con.execute(
            'INSERT INTO chunks SELECT ?, chunk_id, document_id, "index", "start", "end", token_count, '
            "overlap_tokens, oversized, chunk_type FROM read_parquet(?)",
            [chunkset_id, str(root / "chunks.parquet")],
        )
