"""The HOT tier's two jobs: warming from LT by the entities of recent questions, and eviction by TTL.

Warming selects LT chunks holding *any* entity of the questions asked within the recency window (an OR
filter on the keyword list), ranks them by BM25 of those entities over the entity text, and copies the
best ``warm_max_docs`` documents' matching chunks (``warm_max_rows`` at most) into HOT, stamped
``hot_promoted_at = now`` (a chunk warmed again has its stamp renewed). Eviction deletes the HOT rows
whose stamp is older than the TTL, oldest first, ``job_max_rows`` at most per run, in one commit. Both
are audited through :mod:`hepwb.tiers.journal` (a pending row before the commit); neither writes LT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hepwb.tiers import journal
from hepwb.tiers.core import TierStore
from hepwb.tiers.tables import entity_text, quoted, strings, tier_rows

__all__ = ["EvictReport", "WarmReport", "evict", "warm"]


@dataclass(frozen=True)
class WarmReport:
    """What a warming call copied."""

    entities: tuple[str, ...]
    documents: tuple[str, ...] = ()
    rows: int = 0
    renewed: int = 0
    skipped: str = ""


@dataclass(frozen=True)
class EvictReport:
    """What an eviction removed (or would remove, with ``dry_run``)."""

    cutoff_ms: int
    rows: int
    documents: dict[str, int] = field(default_factory=dict)
    left_expired: int = 0
    dry_run: bool = False
    skipped: str = ""


def warm(tiers: TierStore, questions: Sequence[str] | None = None, *, actor: str = "hepwb") -> WarmReport:
    """Copy the LT chunks matching the entities of ``questions`` (default: the recent ones) into HOT."""
    import pyarrow.compute as pc

    journal.settle(tiers)
    now = tiers.now_ms()
    if questions is None:
        since = now - int(tiers.config.recency_s * 1000)
        ents = tiers.audit.recent_entities(since)
    else:
        ents = sorted({e for row in tiers.ner.batch(list(questions)) for e in row})
    if not ents:
        return WarmReport((), skipped="no entity in the recent questions; nothing to warm")
    lt = tiers.table("lt")
    cfg = tiers.config
    found = (
        lt.search(entity_text(ents), query_type="fts", fts_columns="entity_text")
        .where(f"array_has_any(entities, [{quoted(ents)}])", prefilter=True)
        .limit(max(cfg.warm_max_rows * 4, 100))
        .with_row_id(True)
        .to_arrow()
    )
    docs: list[str] = []
    for key in found["doc_key"].to_pylist():  # documents in the order of their best chunk
        if key not in docs and len(docs) < cfg.warm_max_docs:
            docs.append(key)
    found = found.filter(pc.is_in(found["doc_key"], value_set=strings(docs))).slice(0, cfg.warm_max_rows)
    ids = found["chunk_id"].to_pylist()
    if not ids:
        return WarmReport(tuple(ents), skipped="no LT chunk holds these entities")
    rows = lt.search().where(f"chunk_id IN ({quoted(ids)})").limit(len(ids)).to_arrow()
    rows = tier_rows(rows, origin="warmed", now_ms=now, hot_promoted_at=now)
    already = set()
    if tiers.has("hot"):
        already = set(
            tiers.table("hot")
            .search()
            .where(f"chunk_id IN ({quoted(ids)})")
            .select(["chunk_id"])
            .limit(len(ids))
            .to_arrow()["chunk_id"]
            .to_pylist()
        )
    stamped = f"hot_promoted_at = {now} AND chunk_id IN ({quoted(ids)})"
    eid = journal.begin(
        tiers,
        "warm",
        actor,
        now,
        journal.check("hot", stamped, present=True),
        rows=rows.num_rows,
        doc_keys=sorted(docs),
        chunk_ids=ids,
        hot_version_before=tiers.version("hot"),
        evidence={"entities": ents, "renewed": len(already)},
    )
    hot, created = tiers.create_or_open("hot", rows)
    if not created:  # one commit
        hot.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all().execute(rows)
    journal.finish(tiers, eid, "hot")
    if not created:
        tiers.reindex("hot")
    return WarmReport(tuple(ents), tuple(docs), rows.num_rows - len(already), len(already))


def evict(tiers: TierStore, *, actor: str = "hepwb", dry_run: bool = False) -> EvictReport:
    """Delete the HOT rows stamped before ``now - ttl`` (oldest first, ``job_max_rows`` per run).

    The audit row is written ``pending`` before the delete and closed after it, so a job killed anywhere
    leaves a row the next run settles (:func:`~hepwb.tiers.journal.settle`): every removed row is
    accounted for.
    """
    from collections import Counter

    if not dry_run:
        journal.settle(tiers)
    now = tiers.now_ms()
    cutoff = now - int(tiers.config.ttl_s * 1000)
    if not tiers.has("hot"):
        return EvictReport(cutoff, 0, skipped="no HOT table")
    why = "" if dry_run else tiers.rate_limited("evict")
    if why:
        return EvictReport(cutoff, 0, skipped=why)
    hot = tiers.table("hot")
    expired = (
        hot.search().where(f"hot_promoted_at < {cutoff}").select(["chunk_id", "doc_key", "hot_promoted_at"])
    )
    old = (
        expired.limit(None).to_arrow().sort_by([("hot_promoted_at", "ascending"), ("chunk_id", "ascending")])
    )
    take = old.slice(0, tiers.config.job_max_rows)
    ids = take["chunk_id"].to_pylist()
    docs = dict(sorted(Counter(take["doc_key"].to_pylist()).items()))
    if dry_run or not ids:
        return EvictReport(cutoff, len(ids), docs, old.num_rows - len(ids), dry_run)
    before = hot.version
    where = f"hot_promoted_at < {cutoff}"  # a row re-warmed meanwhile is not expired any more
    if len(ids) < old.num_rows:
        where += f" AND chunk_id IN ({quoted(ids)})"
    gone = f"hot_promoted_at < {cutoff} AND chunk_id IN ({quoted(ids)})"
    eid = journal.begin(
        tiers,
        "evict",
        actor,
        now,
        journal.check("hot", gone, present=False),
        rows=len(ids),
        doc_keys=sorted(docs),
        chunk_ids=ids,
        hot_version_before=before,
        evidence={"cutoff_ms": cutoff, "ttl_s": tiers.config.ttl_s},
    )
    hot.delete(where)  # one commit: a reader sees all these rows or none
    journal.finish(tiers, eid, "hot")
    tiers.reindex("hot")
    return EvictReport(cutoff, len(ids), docs, old.num_rows - len(ids))
