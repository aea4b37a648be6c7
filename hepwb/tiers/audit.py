"""The tiers' DuckDB file: questions asked, hits retrieved, feedback signals and the audit trail.

Every write opens the file for one short transaction (retried while another process holds the lock),
so notebooks, ``hepwb tiers`` jobs and queries can share it. Tables:

* ``queries`` — every recorded tier search (question, its entities, tiers, latency): warming's input;
* ``retrievals`` — the hits of those searches (chunk, document, tier, rank): "retrieved for N questions";
* ``signals`` — out-of-band reinforcement: ``useful``, ``cited``, ``approved`` (a human approval);
* ``audit`` — one row per job (``init``, ``ingest``, ``acquire``, ``warm``, ``evict``, ``promote``,
  ``revert``): who, when, status (``pending`` → ``done`` or ``aborted``), the rows and documents, the
  evidence, and the LT and HOT table versions before and after.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.files.dbfile import connect_waiting, damaged, named_if_damaged
from hepwb.text.ids import text_sha256
from hepwb.text.plaintext import not_text
from hepwb.types import JSONObject

__all__ = ["SIGNAL_KINDS", "AuditLog", "check_actor", "check_note", "new_event_id", "running"]

SIGNAL_KINDS = ("useful", "cited", "approved")


def check_actor(actor: object) -> str:
    """``actor`` when it is a name the audit trail can keep and a terminal can show, else a ConfigError.

    Example:
        >>> check_actor("alice@cern")
        'alice@cern'
        >>> check_actor("ev\x1b]8;;http://x\x07il")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: actor 'ev\\x1b]8;;http://x\\x07il' holds the control character ...
    """
    if not isinstance(actor, str) or not actor.strip():
        msg = f"actor must be a name, got {actor!r}; give who runs the job (e.g. your user name)"
        raise ConfigError(msg)
    problem = not_text(actor) or (
        f"has {len(actor):,} characters (at most {limits.MAX_ACTOR_CHARS})"
        if len(actor) > limits.MAX_ACTOR_CHARS
        else ""
    )
    if problem:
        msg = f"actor {actor[:60]!a} {problem}; give a plain name (e.g. your user name)"
        raise ConfigError(msg)
    return actor


def check_note(note: object) -> str:
    """``note`` when it is text the audit trail can keep (newlines allowed), else a ConfigError."""
    if not isinstance(note, str):
        msg = f"a signal's note must be text, got {type(note).__name__}"
        raise ConfigError(msg)
    problem = not_text(note, control=False) or (
        f"has {len(note):,} characters (at most {limits.MAX_NOTE_CHARS:,})"
        if len(note) > limits.MAX_NOTE_CHARS
        else ""
    )
    if problem:
        msg = f"the note {note[:60]!a} {problem}; write it as plain UTF-8 text"
        raise ConfigError(msg)
    return note


_SCHEMA = """
CREATE TABLE IF NOT EXISTS queries (
    ts_ms BIGINT, question_sha VARCHAR, question VARCHAR, entities VARCHAR[], strict BOOLEAN,
    tiers VARCHAR, k INTEGER, latency_ms DOUBLE);
CREATE TABLE IF NOT EXISTS retrievals (
    ts_ms BIGINT, question_sha VARCHAR, chunk_id VARCHAR, doc_key VARCHAR, tier VARCHAR, rank INTEGER);
CREATE TABLE IF NOT EXISTS signals (
    ts_ms BIGINT, chunk_id VARCHAR, doc_key VARCHAR, kind VARCHAR, actor VARCHAR, note VARCHAR);
CREATE TABLE IF NOT EXISTS audit (
    event_id VARCHAR PRIMARY KEY, ts_ms BIGINT, action VARCHAR, actor VARCHAR, status VARCHAR,
    rows BIGINT, doc_keys VARCHAR[], chunk_ids VARCHAR[], evidence VARCHAR,
    lt_version_before BIGINT, lt_version_after BIGINT, hot_version_before BIGINT, hot_version_after BIGINT,
    details VARCHAR, done_ms BIGINT);
"""


def new_event_id() -> str:
    """A fresh id for one job's audit row (jobs repeat with the same inputs, even in the same millisecond)."""
    import uuid

    return str(uuid.uuid4())


def running(details: JSONObject) -> bool:
    """Whether the process that wrote a pending row is alive on this host (then it is not settled)."""
    import os
    import socket

    pid = int(details.get("pid") or 0)
    if not pid or pid == os.getpid() or details.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class AuditLog:
    """The DuckDB file at ``path`` (created with its tables on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A connection for one transaction, waiting while another process holds the file.

        Read-write even for reads: DuckDB refuses a second configuration of one file in a process.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rebuild = "move it aside (its history is lost) and rebuild the tiers with `hepwb tiers init CORPUS`"
        con = connect_waiting(self.path, what="the tiers' audit file", rebuild=rebuild)
        try:
            con.execute(_SCHEMA)
        except Exception as exc:  # a file cut short fails on its first read, not when it is opened
            con.close()
            if damaged(exc):
                why = str(exc).splitlines()[0][:160]
                msg = f"the tiers' audit file {self.path} is damaged ({why}); {rebuild}"
                raise ConfigError(msg) from None
            raise
        try:
            with named_if_damaged(self.path, "the tiers' audit file", rebuild):  # a corrupt block, read here
                yield con
        finally:
            con.close()

    def frame(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """A pandas frame of ``sql``."""
        with self.connect() as con:
            return con.execute(sql, list(params)).df()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of ``sql``."""
        with self.connect() as con:
            return list(con.execute(sql, list(params)).fetchall())

    # -- signals -------------------------------------------------------------------------------------
    def record_query(
        self,
        ts_ms: int,
        question: str,
        entities: Sequence[str],
        *,
        strict: bool,
        tiers: str,
        k: int,
        latency_ms: float,
        hits: Sequence[tuple[str, str, str, int]],
    ) -> None:
        """One search and its hits ``(chunk_id, doc_key, tier, rank)``."""
        sha = text_sha256(question)[:16]
        with self.connect() as con:
            con.execute("BEGIN")
            con.execute(
                "INSERT INTO queries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [ts_ms, sha, question, list(entities), strict, tiers, k, latency_ms],
            )
            if hits:
                con.executemany(
                    "INSERT INTO retrievals VALUES (?, ?, ?, ?, ?, ?)",
                    [[ts_ms, sha, c, d, t, r] for c, d, t, r in hits],
                )
            con.execute("COMMIT")

    def record_signal(
        self, ts_ms: int, chunk_id: str, doc_key: str, kind: str, actor: str, note: str
    ) -> None:
        """A feedback signal on one chunk."""
        if kind not in SIGNAL_KINDS:
            msg = f"signal kind {kind[:60]!a} unknown; use one of {SIGNAL_KINDS}"
            raise ConfigError(msg)
        check_actor(actor)
        check_note(note)
        with self.connect() as con:
            con.execute(
                "INSERT INTO signals VALUES (?, ?, ?, ?, ?, ?)", [ts_ms, chunk_id, doc_key, kind, actor, note]
            )

    def recent_entities(self, since_ms: int) -> list[str]:
        """The entities of the questions recorded since ``since_ms``, most frequent first."""
        rows = self.rows(
            "SELECT e, count(*) AS n FROM (SELECT unnest(entities) AS e FROM queries WHERE ts_ms >= ?) "
            "GROUP BY e ORDER BY n DESC, e",
            [since_ms],
        )
        return [str(e) for e, _ in rows]

    def reinforcement(self, doc_key: str, since_ms: int) -> tuple[dict[str, int], list[str], int]:
        """Signals by kind, approvers and distinct questions retrieving ``doc_key`` from HOT, since a time."""
        with self.connect() as con:
            kinds = con.execute(
                "SELECT kind, count(*) FROM signals WHERE doc_key = ? AND ts_ms >= ? GROUP BY kind",
                [doc_key, since_ms],
            ).fetchall()
            who = con.execute(
                "SELECT DISTINCT actor FROM signals WHERE doc_key = ? AND kind = 'approved' AND ts_ms >= ? "
                "ORDER BY actor",
                [doc_key, since_ms],
            ).fetchall()
            row = con.execute(
                "SELECT count(DISTINCT question_sha) FROM retrievals "
                "WHERE doc_key = ? AND tier LIKE '%hot%' AND ts_ms >= ?",
                [doc_key, since_ms],
            ).fetchone()
        return {str(k): int(n) for k, n in kinds}, [str(a) for (a,) in who], int(row[0] if row else 0)

    # -- audit ---------------------------------------------------------------------------------------
    def begin(self, event_id: str, ts_ms: int, action: str, actor: str, **fields: Any) -> None:
        """Write a ``pending`` audit row (before the job touches a table)."""
        self._insert(event_id, ts_ms, action, actor, "pending", fields)

    def log(self, event_id: str, ts_ms: int, action: str, actor: str, **fields: Any) -> None:
        """Write a finished (``done``) audit row."""
        self._insert(event_id, ts_ms, action, actor, "done", {**fields, "done_ms": ts_ms})

    def finish(self, event_id: str, status: str, done_ms: int, **fields: Any) -> None:
        """Close a pending audit row as ``done`` or ``aborted``, with the versions after."""
        sets = ", ".join(f"{k} = ?" for k in fields)
        values = [_cell(v) for v in fields.values()]
        with self.connect() as con:
            con.execute(
                f"UPDATE audit SET status = ?, done_ms = ?{', ' + sets if sets else ''} WHERE event_id = ?",
                [status, done_ms, *values, event_id],
            )

    def pending(self, action: str) -> list[JSONObject]:
        """Audit rows of ``action`` left ``pending`` (by a killed job)."""
        return self.events(action=action, status="pending")

    def events(
        self, *, action: str | None = None, status: str | None = None, limit: int = 0
    ) -> list[JSONObject]:
        """Audit rows, newest first, with ``evidence`` and ``details`` decoded."""
        where, params = [], []
        for col, val in (("action", action), ("status", status)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        sql = "SELECT * FROM audit" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY ts_ms DESC, rowid DESC" + (f" LIMIT {int(limit)}" if limit else "")
        with self.connect() as con:
            cur = con.execute(sql, params)
            names = [d[0] for d in cur.description]
            out = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        for ev in out:
            for key in ("evidence", "details"):
                ev[key] = json.loads(ev[key]) if ev.get(key) else None
        return out

    def last_reverts(self) -> dict[str, int]:
        """``{doc_key: when its last promotion was reverted (ms)}``."""
        rows = self.rows(
            "SELECT k, max(ts_ms) FROM (SELECT unnest(doc_keys) AS k, ts_ms FROM audit "
            "WHERE action = 'revert' AND status = 'done') GROUP BY k"
        )
        return {str(k): int(t) for k, t in rows}

    def last_done(self, action: str) -> int | None:
        """When the last finished ``action`` job ended (ms), if any."""
        rows = self.rows("SELECT max(done_ms) FROM audit WHERE action = ? AND status = 'done'", [action])
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    def _insert(
        self, event_id: str, ts_ms: int, action: str, actor: str, status: str, fields: JSONObject
    ) -> None:
        check_actor(actor)
        cols = ["event_id", "ts_ms", "action", "actor", "status", *fields]
        values = [event_id, ts_ms, action, actor, status, *(_cell(v) for v in fields.values())]
        with self.connect() as con:
            con.execute(
                f"INSERT INTO audit ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", values
            )


def _cell(value: Any) -> Any:
    """Dicts as JSON text (the ``evidence`` and ``details`` columns); other values unchanged."""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, dict) else value
