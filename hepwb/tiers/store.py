"""Two memory tiers over LanceDB: a governed long-term (LT) table and a TTL-bounded HOT table.

A tier folder (``data/processed/tiers/<name>/``) holds ``lancedb/`` (the ``lt`` and ``hot`` tables),
``audit.duckdb`` (:mod:`hepwb.tiers.audit`) and ``tiers.json`` (the chunking, embedding model, NER
model and sources). Papers are converted, chunked and embedded as everywhere in hepwb (cached); their
rows then enter a tier with the governance columns of :mod:`hepwb.tiers.tables`.

:class:`Tiers` is the façade: the storage core (:class:`~hepwb.tiers.core.TierStore`) plus the jobs,
promotion and query, each in its own module that depends on the core only.

Example (in a notebook)::

    t = Tiers.open("session", config=TierConfig(ttl_s=3600))
    t.init_lt(corpus, only=["P01", "P02"])   # the curated long-term corpus
    t.acquire(todays_folder)                  # new papers into HOT
    t.search("beam-spin asymmetry in DVCS at CLAS12")   # both tiers, each hit labelled
    t.warm(); t.evict(); t.promote(actor="me"); t.history()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.tiers.audit import check_actor
from hepwb.tiers.core import IngestReport, TierStore
from hepwb.tiers.jobs import EvictReport, WarmReport, evict, warm
from hepwb.tiers.promote import PromoteReport, candidates, mark, promote, revert, why
from hepwb.tiers.query import search
from hepwb.types import Hit, JSONObject

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["IngestReport", "Tiers"]


class Tiers(TierStore):
    """The LT and HOT tables of one tier folder, their audit log and the jobs that move rows.

    See :class:`~hepwb.tiers.core.TierStore` for the arguments, ingest and status.
    """

    def search(self, question: str, k: int = defaults.SEARCH_K, **kwargs: Any) -> list[Hit]:
        """Both tiers in parallel (see :func:`hepwb.tiers.query.search`)."""
        return search(self, question, k, **kwargs)

    def warm(self, questions: Sequence[str] | None = None, *, actor: str = "hepwb") -> WarmReport:
        """Copy LT chunks matching recent questions' entities into HOT (:func:`hepwb.tiers.jobs.warm`)."""
        check_actor(actor)
        return warm(self, questions, actor=actor)

    def evict(self, *, actor: str = "hepwb", dry_run: bool = False) -> EvictReport:
        """Delete HOT rows older than the TTL (:func:`hepwb.tiers.jobs.evict`)."""
        check_actor(actor)
        return evict(self, actor=actor, dry_run=dry_run)

    def mark(self, chunk_id: str, kind: str = "useful", *, actor: str = "hepwb", note: str = "") -> None:
        """Record a signal (``useful``, ``cited`` or ``approved``) for a HOT or LT chunk."""
        check_actor(actor)
        mark(self, chunk_id, kind, actor=actor, note=note)

    def approve(self, chunk_id: str, *, actor: str, note: str = "") -> None:
        """A human approval of ``chunk_id``'s document for promotion."""
        self.mark(chunk_id, "approved", actor=actor, note=note)

    def candidates(self) -> pd.DataFrame:
        """HOT documents that earned promotion, with the evidence (:func:`hepwb.tiers.promote.candidates`)."""
        return candidates(self)

    def promote(self, *, actor: str = "hepwb", dry_run: bool = False) -> PromoteReport:
        """Promote the earned HOT documents into LT, audited (:func:`hepwb.tiers.promote.promote`)."""
        check_actor(actor)
        return promote(self, actor=actor, dry_run=dry_run)

    def revert(self, event_id: str, *, actor: str = "hepwb") -> PromoteReport:
        """Undo a promotion from LT's version before it (:func:`hepwb.tiers.promote.revert`)."""
        check_actor(actor)
        return revert(self, event_id, actor=actor)

    def why(self, chunk_id: str) -> JSONObject:
        """Why ``chunk_id`` is in LT and since when (:func:`hepwb.tiers.promote.why`)."""
        return why(self, chunk_id)
