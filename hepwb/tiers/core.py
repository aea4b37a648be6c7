"""The storage core of the two memory tiers: a governed long-term (LT) and a TTL-bounded HOT LanceDB table.

A tier folder (``data/processed/tiers/<name>/``) holds ``lancedb/`` (the ``lt`` and ``hot`` tables),
``audit.duckdb`` (:mod:`hepwb.tiers.audit`) and ``tiers.json`` (:mod:`hepwb.tiers.state`: the chunking,
embedding model, NER model and sources). Papers are converted, chunked and embedded as everywhere in
hepwb (cached); their rows then enter a tier with the governance columns of :mod:`hepwb.tiers.tables`.

:class:`TierStore` owns the tables, the audit log, ingest and status; the jobs (:mod:`~hepwb.tiers.jobs`),
promotion (:mod:`~hepwb.tiers.promote`) and query (:mod:`~hepwb.tiers.query`) use its public API, and
:class:`~hepwb.tiers.store.Tiers` puts them behind one façade.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from hepwb import defaults, limits
from hepwb.chunking.chunksets import build_chunkset
from hepwb.corpus import ingest
from hepwb.exceptions import ConfigError, CorpusNotFoundError
from hepwb.files.io import write_json
from hepwb.index import ChunkStore, get_embedder
from hepwb.index.chunk_store import build_indexes
from hepwb.index.lance import connect, table_names
from hepwb.models.embedder import Embedder
from hepwb.ner.source import EntitySource, ner_source
from hepwb.paths import Layout
from hepwb.text.names import under
from hepwb.tiers import journal
from hepwb.tiers.audit import AuditLog, check_actor
from hepwb.tiers.settings import TierConfig
from hepwb.tiers.state import STATE_FILE, ingest_settings, read_state, remember_source, update_state
from hepwb.tiers.tables import quoted, strings, tier_rows, upsert_documents
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


__all__ = ["LT_KEEP_VERSIONS_DAYS", "IngestReport", "TierStore"]

LT_KEEP_VERSIONS_DAYS = 3650
"""LT table versions are kept this long (promotions stay reversible); HOT keeps LanceDB's default."""


@dataclass(frozen=True)
class IngestReport:
    """What an ingest into a tier did."""

    tier: str
    documents: int
    rows: int
    unchanged: int = 0
    versions: dict[str, int] = field(default_factory=dict)


class TierStore:
    """The LT and HOT tables of one tier folder, their audit log, ingest and status.

    Args:
        root: The tier folder.
        config: Tunables (:class:`~hepwb.tiers.settings.TierConfig`).
        clock: Seconds since the epoch (injectable: tests move time instead of sleeping).
        ner: Entity source at ingest and query time (default: the service at ``$HEPWB_NER_URL``, else
            in process).
        layout: Where converted papers, chunk sets and embeddings are cached.
    """

    def __init__(
        self,
        root: str | Path,
        config: TierConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        ner: EntitySource | None = None,
        layout: Layout | None = None,
    ) -> None:
        self.root = Path(root)
        self.config = config or TierConfig()
        self.clock = clock
        self.ner = ner if ner is not None else ner_source()
        self.layout = layout or Layout.default()
        self.audit: AuditLog = AuditLog(self.root / "audit.duckdb")
        self._embedder: Embedder | None = None

    @staticmethod
    def folder(name: str = "default", layout: Layout | None = None) -> Path:
        """Where tier ``name`` of this project lives (``data/processed/tiers/<name>``; nothing is created)."""
        return under((layout or Layout.default()).data / "processed" / "tiers", name, "tier")

    @classmethod
    def open(cls, name: str = "default", *, layout: Layout | None = None, **kwargs: Any) -> Self:
        """The tier folder ``name`` of this project (``data/processed/tiers/<name>``)."""
        layout = layout or Layout.default()
        return cls(cls.folder(name, layout), layout=layout, **kwargs)

    # -- state ---------------------------------------------------------------------------------------
    def now_ms(self) -> int:
        """The clock, in milliseconds."""
        return int(self.clock() * 1000)

    @property
    def meta(self) -> JSONObject:
        """``tiers.json``: chunking, embedding model, NER model and sources (empty before ``init_lt``)."""
        return read_state(self.root / STATE_FILE)

    def db(self) -> Any:
        """The LanceDB database of the tiers."""
        return connect(self.root / "lancedb")

    def table(self, tier: str) -> Any:
        """The latest version of tier ``lt`` or ``hot`` (raises when it does not exist yet)."""
        name = self._name(tier)
        db = self.db()
        if name not in table_names(db):
            hint = "hepwb tiers init (Tiers.init_lt)" if tier == "lt" else "hepwb tiers acquire or warm"
            msg = f"tier {tier!r} has no table {name!r} in {self.root} yet; create it with {hint}"
            raise CorpusNotFoundError(msg)
        return db.open_table(name)

    def open_tables(self, tiers: Sequence[str]) -> JSONObject:
        """The latest versions of those of ``tiers`` that exist, opened through one connection."""
        db = self.db()
        names = table_names(db)
        return {t: db.open_table(self._name(t)) for t in tiers if self._name(t) in names}

    def has(self, tier: str) -> bool:
        """Whether tier ``tier`` has a table."""
        return self._name(tier) in table_names(self.db())

    def version(self, tier: str) -> int:
        """The latest version of tier ``tier``'s table (0 when it does not exist)."""
        return int(self.table(tier).version) if self.has(tier) else 0

    def _name(self, tier: str) -> str:
        if tier not in ("lt", "hot"):
            msg = f"tier must be 'lt' or 'hot', got {tier!r}"
            raise ConfigError(msg)
        return self.config.lt_table if tier == "lt" else self.config.hot_table

    @property
    def embedder(self) -> Embedder:
        """The embedding model of the tiers (recorded at ``init_lt``)."""
        if self._embedder is None:
            self._embedder = get_embedder(str(self.meta.get("embedding_model") or defaults.EMBEDDING_MODEL))
        return self._embedder

    # -- ingest --------------------------------------------------------------------------------------
    def init_lt(
        self,
        corpus: str | Path | None = None,
        *,
        only: list[str] | None = None,
        max_docs: int | None = None,
        chunker: str | None = None,
        chunk_size: int | None = None,
        chunk_overlap: float | None = None,
        embedding_model: str | None = None,
        actor: str = "hepwb",
        progress: bool = False,
    ) -> IngestReport:
        """Ingest the curated corpus into LT; later calls replace changed papers (``doc_version`` + 1).

        The chunking (default hepilot, 512 tokens, 10 % overlap) and the embedding model are fixed at the
        first call: both tiers share them, and later calls use them unless told otherwise (an error).
        """
        check_actor(actor)  # before any work: the audit trail must be able to keep it
        meta = self.meta
        wanted, model = ingest_settings(
            meta,
            self.root,
            chunker=chunker,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            embedding_model=embedding_model,
        )
        first = not meta
        if first:
            meta = {"chunking": wanted, "embedding_model": model, "sources": []}
            self._embedder = None
        rows, ner_model = self._rows(corpus, meta, only=only, max_docs=max_docs, progress=progress)
        if first:  # written once the papers are ready: a failed first init fixes nothing
            write_json(self.root / STATE_FILE, {**meta, "ner_model": ner_model})
        report = self._ingest_lt(rows, actor=actor, action="init" if not self.has("lt") else "ingest")
        remember_source(self.root / STATE_FILE, corpus, only, max_docs)
        return report

    def acquire(
        self,
        corpus: str | Path,
        *,
        only: list[str] | None = None,
        max_docs: int | None = None,
        actor: str = "hepwb",
        progress: bool = False,
    ) -> IngestReport:
        """Put the papers of folder ``corpus`` (e.g. ``hepwb acquire``'s ``pdf/``) into HOT, stamped now."""
        check_actor(actor)
        if not self.meta:
            msg = f"no tiers in {self.root} yet: create LT first (hepwb tiers init / Tiers.init_lt)"
            raise ConfigError(msg)
        now = self.now_ms()
        rows = tier_rows(
            self._rows(corpus, self.meta, only=only, max_docs=max_docs, progress=progress)[0],
            origin="acquired",
            now_ms=now,
            hot_promoted_at=now,
        )
        keys = sorted(set(rows["doc_key"].to_pylist()))
        journal.settle(self)
        stamped = f"origin = 'acquired' AND ingested_at_ms = {now} AND doc_key IN ({quoted(keys)})"
        eid = journal.begin(
            self,
            "acquire",
            actor,
            now,
            journal.check("hot", stamped, present=True),
            rows=rows.num_rows,
            doc_keys=keys,
            hot_version_before=self.version("hot"),
            details={"corpus": str(corpus)},
        )
        hot, created = self.create_or_open("hot", rows)
        if not created:
            upsert_documents(hot, rows, keys)  # one commit
        journal.finish(self, eid, "hot")
        if not created:
            self.reindex("hot")
        remember_source(self.root / STATE_FILE, corpus, only, max_docs)
        return IngestReport("hot", len(keys), rows.num_rows)

    def _rows(
        self,
        corpus: str | Path | None,
        meta: JSONObject,
        *,
        only: list[str] | None,
        max_docs: int | None,
        progress: bool,
    ) -> tuple[pa.Table, str]:
        """Rows of ``corpus`` (converted, chunked, embedded per ``meta``) and the NER model used."""
        chunking = dict(meta["chunking"])
        embedder = get_embedder(str(meta["embedding_model"]))
        docs = ingest(
            corpus, layout=self.layout, only=only, max_docs=max_docs, progress=progress, require=True
        )
        cs = build_chunkset(docs, chunking.pop("name"), layout=self.layout, progress=progress, **chunking)
        store = ChunkStore(self.layout.lancedb, embedder, progress=progress, ner=self.ner)
        table = store.table(cs.chunkset_id, cs.chunks, cs.documents).to_arrow()
        ner_model = store.ner_model(cs.chunkset_id) or ""
        update_state(self.root / STATE_FILE, ner_model=ner_model)
        return table.sort_by([("document_id", "ascending"), ("chunk_index", "ascending")]), ner_model

    def _ingest_lt(self, chunk_rows: pa.Table, *, actor: str, action: str) -> IngestReport:
        """Upsert changed documents into LT (one commit), audited."""
        import pyarrow.compute as pc

        now = self.now_ms()
        rows = tier_rows(chunk_rows, origin="curated", now_ms=now)
        shas = _doc_shas(rows)
        current = self.documents("lt")
        changed = sorted(k for k, sha in shas.items() if current.get(k, (0, ""))[1] != sha)
        versions = {k: current.get(k, (0, ""))[0] + 1 for k in changed}
        rows = rows.filter(pc.is_in(rows["doc_key"], value_set=strings(changed)))
        rows = tier_rows(rows, origin="curated", now_ms=now, doc_versions=versions)
        journal.settle(self)
        fields = {"rows": rows.num_rows, "doc_keys": changed, "lt_version_before": self.version("lt")}
        if not changed:  # nothing to write: a finished row says so
            self.audit.log(
                journal.new_event_id(), now, action, actor, **fields, lt_version_after=self.version("lt")
            )
        else:
            stamped = f"ingested_at_ms = {now} AND doc_key IN ({quoted(changed)})"
            done_when = journal.check("lt", stamped, present=True)
            eid = journal.begin(self, action, actor, now, done_when, **fields, details={"versions": versions})
            lt, created = self.create_or_open("lt", rows)
            if not created:
                upsert_documents(lt, rows, changed)  # one commit
            journal.finish(self, eid, "lt")
            if not created:
                self.reindex("lt")
        unchanged = len(shas) - len(changed)
        return IngestReport("lt", len(changed), rows.num_rows, unchanged, versions)

    def create_or_open(self, tier: str, rows: pa.Table) -> tuple[Any, bool]:
        """(the tier's table, whether it was created from ``rows`` just now, with its indexes).

        When it already exists (perhaps created by another process a moment ago) the caller writes ``rows``.
        """
        try:
            tbl = self.db().create_table(self._name(tier), rows, exist_ok=False)
        except (ValueError, OSError) as exc:
            if "exist" not in str(exc).lower():
                raise
            return self.table(tier), False
        build_indexes(tbl)
        _entity_index(tbl)
        return tbl, True

    def reindex(self, tier: str) -> None:
        """Bring the full-text indexes up to date after a write (LT keeps its old versions: revertible)."""
        from datetime import timedelta

        keep = timedelta(days=LT_KEEP_VERSIONS_DAYS) if tier == "lt" else None
        self.table(tier).optimize(cleanup_older_than=keep)

    def documents(self, tier: str) -> dict[str, tuple[int, str]]:
        """``{doc_key: (doc_version, doc_sha)}`` of tier ``tier``."""
        if not self.has(tier):
            return {}
        t = self.table(tier).search().select(["doc_key", "doc_version", "doc_sha"]).limit(None).to_arrow()
        return {k: (int(v), s) for k, v, s in zip(*(t[c].to_pylist() for c in t.column_names), strict=True)}

    def rate_limited(self, action: str) -> str:
        """Why job ``action`` may not run now (``""`` when it may): the config's ``job_min_interval_s``."""
        gap = self.config.job_min_interval_s
        last = self.audit.last_done(action) if gap else None
        if last is None:
            return ""
        waited = (self.now_ms() - last) / 1000
        if waited >= gap:
            return ""
        return f"rate limit: the last {action} ended {waited:.0f} s ago; job_min_interval_s is {gap:g} s"

    def history(self, *, limit: int = defaults.HISTORY_LIMIT) -> pd.DataFrame:
        """The audit trail, newest first: ``limit`` events (:data:`~hepwb.limits.TIER_HISTORY_LIMIT`)."""
        import pandas as pd

        limits.TIER_HISTORY_LIMIT.check(limit)
        events = self.audit.events(limit=limit)
        cols = [
            "ts_ms",
            "action",
            "actor",
            "status",
            "rows",
            "doc_keys",
            "lt_version_before",
            "lt_version_after",
            "hot_version_before",
            "hot_version_after",
            "event_id",
        ]
        frame = pd.DataFrame(events, columns=[*cols, "evidence", "details"])
        frame.insert(0, "when", pd.to_datetime(frame["ts_ms"], unit="ms", utc=True))
        return frame.drop(columns=["ts_ms"])

    def status(self) -> JSONObject:
        """Rows, documents and versions per tier; HOT rows past the TTL; signals and audit counts."""
        now = self.now_ms()
        out: JSONObject = {"root": str(self.root), "config": self.config.model_dump(), "meta": self.meta}
        for tier in ("lt", "hot"):
            if not self.has(tier):
                out[tier] = {"rows": 0, "documents": 0, "version": 0}
                continue
            t = self.table(tier)
            out[tier] = {"rows": t.count_rows(), "documents": len(self.documents(tier)), "version": t.version}
        if self.has("hot"):
            cutoff = now - int(self.config.ttl_s * 1000)
            out["hot"]["expired"] = self.table("hot").count_rows(f"hot_promoted_at < {cutoff}")
        counts = self.audit.rows("SELECT action, status, count(*) FROM audit GROUP BY ALL ORDER BY ALL")
        out["audit"] = {f"{a} ({s})": int(n) for a, s, n in counts}
        out["questions_recorded"] = int(self.audit.rows("SELECT count(*) FROM queries")[0][0])
        return out


def _entity_index(tbl: Any) -> None:
    from lancedb.index import FTS

    tbl.create_index(
        "entity_text",
        config=FTS(with_position=False, base_tokenizer="whitespace", max_token_length=64, lower_case=True),
        replace=True,
    )


def _doc_shas(rows: pa.Table) -> dict[str, str]:
    return dict(zip(rows["doc_key"].to_pylist(), rows["doc_sha"].to_pylist(), strict=True))
