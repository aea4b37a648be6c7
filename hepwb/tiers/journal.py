"""Audited table changes that survive a kill: a ``pending`` audit row before the commit, settled after.

Every tier job that changes rows (``init``/``ingest``, ``acquire``, ``warm``, ``evict``, ``promote``,
``revert``) makes its change in **one** LanceDB commit, and brackets it:

1. :func:`begin` writes the audit row ``pending``, with a *check*: the tier, a filter and whether rows
   matching it are present or absent once the commit has happened (e.g. ``hot_promoted_at = <now> AND
   chunk_id IN (…)`` present for a warm, ``hot_promoted_at < <cutoff> AND chunk_id IN (…)`` absent for an
   eviction), and the process that owns it;
2. the job commits;
3. :func:`finish` closes the row ``done`` with the table's version after.

A job killed between 1 and 3 leaves its row ``pending``. Every job first calls :func:`settle`, which
closes each pending row whose process is gone: ``done`` when its check holds (the commit happened: the
rows it names are accounted for) and ``aborted`` when it does not (nothing changed). So no row is
added or removed without an audit row that says so.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Protocol

from hepwb.tiers.audit import AuditLog, new_event_id, running
from hepwb.tiers.tables import quoted
from hepwb.types import JSONObject

__all__ = ["Check", "begin", "check", "finish", "new_event_id", "settle"]

Check = JSONObject
"""``{"tier": "lt"|"hot", "where": SQL filter, "present": bool}`` (:func:`check`)."""


class _Tiers(Protocol):
    """What the journal needs of a :class:`~hepwb.tiers.core.TierStore`."""

    audit: AuditLog

    def has(self, tier: str) -> bool: ...

    def table(self, tier: str) -> Any: ...

    def version(self, tier: str) -> int: ...

    def now_ms(self) -> int: ...


def check(tier: str, where: str, *, present: bool) -> Check:
    """The condition that tells whether a job's commit happened.

    >>> check("hot", "chunk_id IN ('a')", present=False)
    {'tier': 'hot', 'where': "chunk_id IN ('a')", 'present': False}
    """
    return {"tier": tier, "where": where, "present": present}


def begin(tiers: _Tiers, action: str, actor: str, ts_ms: int, done_when: Check, **fields: Any) -> str:
    """Write the ``pending`` audit row of a job about to commit; returns its event id.

    ``fields`` are the audit columns (rows, doc_keys, chunk_ids, evidence, versions before); ``details``
    among them is kept, with the owner process and ``done_when`` added.
    """
    eid = str(fields.pop("event_id", "") or new_event_id())
    details = {**(fields.pop("details", None) or {}), "pid": os.getpid(), "host": socket.gethostname()}
    tiers.audit.begin(eid, ts_ms, action, actor, details={**details, "check": done_when}, **fields)
    return eid


def finish(tiers: _Tiers, event_id: str, tier: str) -> int:
    """Close ``event_id`` ``done`` with ``tier``'s version now; returns that version."""
    after = tiers.version(tier)
    tiers.audit.finish(event_id, "done", tiers.now_ms(), **{f"{tier}_version_after": after})
    return after


def settle(tiers: _Tiers) -> tuple[str, ...]:
    """Close the pending rows of jobs that were killed (see the module docstring); their event ids."""
    settled = []
    for ev in tiers.audit.events(status="pending"):
        details = ev.get("details") or {}
        if running(details):
            continue  # that job is alive and closes its own row
        cond = details.get("check") or _legacy_check(ev)
        if cond is None:
            tiers.audit.finish(ev["event_id"], "aborted", tiers.now_ms())
        elif _holds(tiers, cond):
            tier = str(cond["tier"])
            version = _first_version_with(tiers, cond) if cond["present"] else tiers.version(tier)
            tiers.audit.finish(ev["event_id"], "done", tiers.now_ms(), **{f"{tier}_version_after": version})
        else:
            tiers.audit.finish(ev["event_id"], "aborted", tiers.now_ms())
        settled.append(str(ev["event_id"]))
    return tuple(settled)


def _holds(tiers: _Tiers, cond: Check) -> bool:
    tier = str(cond["tier"])
    n = tiers.table(tier).count_rows(str(cond["where"])) if tiers.has(tier) else 0
    return bool(n) == bool(cond["present"])


def _first_version_with(tiers: _Tiers, cond: Check) -> int:
    """The first version of the check's table holding its rows (the commit of the job)."""
    tbl = tiers.table(str(cond["tier"]))
    now = int(tbl.version)
    for v in sorted(int(x["version"]) for x in tbl.list_versions()):
        tbl.checkout(v)  # a table object of its own (TierStore.table opens one per call)
        if tbl.count_rows(str(cond["where"])):
            return v
    return now


def _legacy_check(ev: JSONObject) -> Check | None:
    """The check of a pending row written before checks were recorded (evictions and promotions)."""
    if ev["action"] == "promote":
        return check("lt", f"promotion_id = {quoted([str(ev['event_id'])])}", present=True)
    if ev["action"] == "evict" and ev.get("chunk_ids"):
        cutoff = int((ev.get("evidence") or {}).get("cutoff_ms", 0))
        where = f"hot_promoted_at < {cutoff} AND chunk_id IN ({quoted(list(ev['chunk_ids']))})"
        return check("hot", where, present=False)
    return None
