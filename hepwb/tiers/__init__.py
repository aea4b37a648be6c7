"""Two-tier memory (the Document-RAG design): a governed long-term store and a TTL-bounded HOT tier.

* :class:`Tiers` — the LT and HOT LanceDB tables of a tier folder, with ingest (``init_lt``,
  ``acquire``), search of both tiers in parallel, warming, TTL eviction, audited promotion and revert;
* :class:`TierConfig` — the tunables (TTL, warming caps, recency window, promotion threshold, job rate
  limits, table names);
* :func:`evaluate_tiers` — one question set scored against LT only, HOT only and LT+HOT.

"""

from __future__ import annotations

from hepwb.tiers.evaluate import evaluate_tiers
from hepwb.tiers.settings import TierConfig
from hepwb.tiers.store import Tiers

__all__ = ["TierConfig", "Tiers", "evaluate_tiers"]


def __dir__() -> list[str]:
    return __all__
