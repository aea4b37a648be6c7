"""Promotion HOT → LT, only when earned, as an explicit, idempotent, audited and reversible job.

A HOT document earns promotion by reinforcement recorded out of band since it entered HOT — a chunk
marked ``useful`` or ``cited``, a human ``approved`` signal — or by being retrieved from HOT for
``promote_min_questions`` distinct questions; and only if its content differs from LT's (else there is
nothing to promote: re-running the job is a no-op). A promotion:

1. writes a ``pending`` audit row (actor, evidence, documents, rows, LT version before);
2. replaces the documents' rows in LT in **one** LanceDB commit (``doc_version`` + 1, ``origin =
   promoted``, ``promotion_id`` = the audit event) — a reader sees all of them or none;
3. closes the audit row ``done`` with LT's version after.

A job killed before step 2 leaves LT unchanged and its row ``pending``; killed after it, LT is fully
promoted. The next run settles pending rows by looking for their ``promotion_id`` in LT (``aborted`` or
``done``) before doing anything else. HOT is never changed (its rows expire by TTL), so a chunk never
vanishes from both tiers mid-promotion. :func:`revert` writes back the documents' rows of LT's version
before the promotion (Lance keeps every version; ``LanceTable.checkout(v)`` reads one,
``LanceTable.restore(v)`` rolls the whole table back).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hepwb.exceptions import ConfigError
from hepwb.tiers import journal
from hepwb.tiers.audit import new_event_id
from hepwb.tiers.core import TierStore
from hepwb.tiers.tables import quoted, strings, tier_rows, upsert_documents
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["PromoteReport", "candidates", "mark", "promote", "revert", "why"]


@dataclass(frozen=True)
class PromoteReport:
    """What a promotion (or a revert) did."""

    event_id: str = ""
    documents: tuple[str, ...] = ()
    rows: int = 0
    lt_version_before: int = 0
    lt_version_after: int = 0
    recovered: tuple[str, ...] = ()
    dry_run: bool = False
    skipped: str = ""


def _lookup(tiers: TierStore, chunk_id: str) -> str:
    for tier in ("hot", "lt"):
        if tiers.has(tier):
            rows = (
                tiers.table(tier)
                .search()
                .where(f"chunk_id = {quoted([chunk_id])}")
                .select(["doc_key"])
                .limit(1)
            )
            found = rows.to_list()
            if found:
                return str(found[0]["doc_key"])
    msg = f"chunk {chunk_id!r} is in neither tier of {tiers.root}; take the id from a hit (Hit.chunk_id)"
    raise ConfigError(msg)


def mark(tiers: TierStore, chunk_id: str, kind: str, *, actor: str, note: str = "") -> None:
    """Record signal ``kind`` on ``chunk_id`` (it must be in one of the tiers)."""
    tiers.audit.record_signal(tiers.now_ms(), chunk_id, _lookup(tiers, chunk_id), kind, actor, note)


def candidates(tiers: TierStore) -> pd.DataFrame:
    """HOT documents that earned promotion and differ from LT, with the evidence; one row each."""
    import pandas as pd

    cols = [
        "doc_key",
        "label",
        "rows",
        "entered_hot_ms",
        "approved",
        "useful",
        "cited",
        "questions",
        "evidence",
    ]
    if not tiers.has("hot"):
        return pd.DataFrame(columns=cols)
    fields = ["doc_key", "doc_sha", "doc_chunks", "label", "hot_promoted_at", "origin"]
    hot = tiers.table("hot").search().select(fields).limit(None).to_pandas()
    hot = hot[hot["origin"] == "acquired"]  # warmed rows are LT's own; they are never promoted back
    lt = tiers.documents("lt")
    docs = hot.groupby("doc_key").agg(
        label=("label", "first"),
        doc_sha=("doc_sha", "first"),
        versions=("doc_sha", "nunique"),
        expected=("doc_chunks", "max"),
        rows=("label", "size"),
        entered_hot_ms=("hot_promoted_at", "min"),
    )
    # only whole documents of one version, that differ from LT's (a partly evicted one is not promoted)
    whole = (docs["versions"] == 1) & (docs["rows"] == docs["expected"])
    differs = docs.index.map(lambda k: lt.get(k, (0, ""))[1]) != docs["doc_sha"]
    docs = docs[whole & differs]
    reverted = tiers.audit.last_reverts()
    out = []
    need = tiers.config.promote_min_questions
    for key, d in docs.iterrows():
        # evidence counts from when the paper entered HOT, or from its last revert: a reverted promotion
        # needs new evidence
        since = max(int(d["entered_hot_ms"]), reverted.get(str(key), 0) + 1)
        sig, who, nq = tiers.audit.reinforcement(str(key), since)
        reasons = []
        if who:
            reasons.append(f"approved by {', '.join(who)}")
        reasons += [f"{sig[k]}× {k}" for k in ("useful", "cited") if sig.get(k)]
        if nq >= need:
            reasons.append(f"retrieved from HOT for {nq} distinct questions (>= {need})")
        if reasons:
            out.append(
                {
                    "doc_key": key,
                    "label": d["label"],
                    "rows": int(d["rows"]),
                    "entered_hot_ms": since,
                    "approved": sig.get("approved", 0),
                    "useful": sig.get("useful", 0),
                    "cited": sig.get("cited", 0),
                    "questions": int(nq),
                    "evidence": "; ".join(reasons),
                }
            )
    return pd.DataFrame(out, columns=cols)


def promote(tiers: TierStore, *, actor: str = "hepwb", dry_run: bool = False) -> PromoteReport:
    """Promote every earned HOT document (whole documents, ``job_max_rows`` rows per run) into LT."""
    import pyarrow.compute as pc

    why_not = "" if dry_run else tiers.rate_limited("promote")
    if why_not:
        return PromoteReport(skipped=why_not)
    recovered = () if dry_run else journal.settle(tiers)
    cands = candidates(tiers)
    if cands.empty:
        return PromoteReport(recovered=recovered, skipped="nothing earned promotion (or it is already in LT)")
    take: list[str] = []
    total = 0
    for key, n in zip(cands["doc_key"], cands["rows"], strict=True):
        if take and total + n > tiers.config.job_max_rows:
            break
        take.append(str(key))
        total += int(n)
    now = tiers.now_ms()
    eid = new_event_id()
    hot = tiers.table("hot").to_arrow()
    mask = pc.and_(pc.is_in(hot["doc_key"], value_set=strings(take)), pc.equal(hot["origin"], "acquired"))
    rows = hot.filter(mask)
    lt_docs = tiers.documents("lt")
    versions = {k: lt_docs.get(k, (0, ""))[0] + 1 for k in take}
    rows = tier_rows(
        rows, origin="promoted", now_ms=now, hot_promoted_at=None, doc_versions=versions, promotion_id=eid
    )
    rows = rows.sort_by([("doc_key", "ascending"), ("chunk_index", "ascending")])
    before = tiers.version("lt")
    if dry_run:
        return PromoteReport(eid, tuple(take), rows.num_rows, before, before, dry_run=True)
    evidence = {str(r["doc_key"]): r["evidence"] for r in cands.to_dict("records") if r["doc_key"] in take}
    journal.begin(
        tiers,
        "promote",
        actor,
        now,
        journal.check("lt", f"promotion_id = {quoted([eid])}", present=True),
        event_id=eid,
        rows=rows.num_rows,
        doc_keys=take,
        chunk_ids=rows["chunk_id"].to_pylist(),
        evidence=evidence,
        lt_version_before=before,
        details={"versions": versions},
    )
    lt, created = tiers.create_or_open("lt", rows)
    if not created:
        upsert_documents(lt, rows, take)
    after = journal.finish(tiers, eid, "lt")
    tiers.reindex("lt")
    return PromoteReport(eid, tuple(take), rows.num_rows, before, after, recovered)


def revert(tiers: TierStore, event_id: str, *, actor: str = "hepwb") -> PromoteReport:
    """Put back LT's rows of the documents of promotion ``event_id`` as they were before it (one commit)."""
    import pyarrow.compute as pc

    journal.settle(tiers)
    found = [e for e in tiers.audit.events(action="promote") if e["event_id"] == event_id]
    if not found or found[0]["status"] != "done":
        msg = f"no finished promotion {event_id!r} in {tiers.audit.path}; see `hepwb tiers history`"
        raise ConfigError(msg)
    done = [
        e
        for e in tiers.audit.events(action="revert", status="done")
        if (e["details"] or {}).get("reverts") == event_id
    ]
    if done:
        return PromoteReport(done[0]["event_id"], skipped=f"promotion {event_id} was already reverted")
    ev = found[0]
    keys = list(ev["doc_keys"])
    lt = tiers.table("lt")
    mine = lt.count_rows(f"doc_key IN ({quoted(keys)}) AND promotion_id = {quoted([event_id])}")
    if mine != lt.count_rows(f"doc_key IN ({quoted(keys)})"):
        msg = f"the documents of promotion {event_id} changed in LT since; revert the later changes first"
        raise ConfigError(msg)
    before = int(ev["lt_version_before"] or 0)
    old = tiers.db().open_table(tiers.config.lt_table)
    now = tiers.now_ms()
    version_now = lt.version
    if before:
        old.checkout(before)
        snap = old.to_arrow()
        rows = snap.filter(pc.is_in(snap["doc_key"], value_set=strings(keys)))
    promoted = f"doc_key IN ({quoted(keys)}) AND promotion_id = {quoted([event_id])}"
    eid = journal.begin(
        tiers,
        "revert",
        actor,
        now,
        journal.check("lt", promoted, present=False),
        rows=mine,
        doc_keys=keys,
        lt_version_before=version_now,
        details={"reverts": event_id, "restored_from_version": before},
    )
    if before and rows.num_rows:  # one commit either way
        upsert_documents(lt, rows, keys)
    else:
        lt.delete(f"doc_key IN ({quoted(keys)})")
    after = journal.finish(tiers, eid, "lt")
    tiers.reindex("lt")
    return PromoteReport(eid, tuple(keys), mine, version_now, after)


def why(tiers: TierStore, chunk_id: str) -> JSONObject:
    """Why ``chunk_id`` is in LT and since when: its row's stamps and the audit event that wrote them."""
    rows = tiers.table("lt").search().where(f"chunk_id = {quoted([chunk_id])}").limit(1).to_list()
    if not rows:
        return {"chunk_id": chunk_id, "in_lt": False, "reason": "not in LT"}
    r = rows[0]
    since = datetime.fromtimestamp(r["ingested_at_ms"] / 1000, UTC).isoformat(timespec="seconds")
    out = {
        "chunk_id": chunk_id,
        "in_lt": True,
        "doc_key": r["doc_key"],
        "doc_version": r["doc_version"],
        "origin": r["origin"],
        "in_lt_since": since,
        "promotion_id": r["promotion_id"],
    }
    if r["promotion_id"]:
        ev = next(e for e in tiers.audit.events(action="promote") if e["event_id"] == r["promotion_id"])
        entered = datetime.fromtimestamp(r["hot_promoted_at"] / 1000, UTC).isoformat(timespec="seconds")
        out["reason"] = (
            f"promoted from HOT by {ev['actor']} at {since} (in HOT since {entered}); evidence: "
            f"{ev['evidence'].get(r['doc_key'], '')}; LT version {ev['lt_version_before']} → "
            f"{ev['lt_version_after']}"
        )
        out["event"] = ev
    else:
        evs = [
            e
            for e in tiers.audit.events()
            if e["action"] in ("init", "ingest") and r["doc_key"] in (e["doc_keys"] or [])
        ]
        ev = evs[0] if evs else {}
        out["reason"] = (
            f"curated: ingested by {ev.get('actor', '?')} at {since} ({ev.get('action', '?')}, "
            f"LT version {ev.get('lt_version_after', '?')})"
        )
        out["event"] = ev
    return out
