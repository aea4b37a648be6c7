"""Searching both tiers at once: read-only, in parallel, every hit labelled with its tier and reasons.

Each tier is searched by the entity-filtered lexical retriever
(:class:`~hepwb.retrieval.entity.EntityRetriever`: a strict branch holding every question entity and a
soft BM25 branch), on the table version that is latest when the query starts — a concurrent eviction or
promotion is seen entirely or not at all. The two ranked lists are merged by score, as a search over two
Elasticsearch indices is (``merge="rrf"``: LanceDB's reciprocal-rank fusion of the ranks instead); a
chunk found in both (a warmed one) is one hit labelled ``lt+hot``. With ``strict`` only chunks holding all
the question's entities are returned.
Recorded searches feed warming and promotion.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.exceptions import ConfigError
from hepwb.limits import FETCH, K
from hepwb.retrieval.entity import EntityRetriever
from hepwb.retrieval.explain import snippet
from hepwb.tiers.core import TierStore
from hepwb.tiers.tables import doc_key_of
from hepwb.types import Hit

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["search", "tier_hits_frame"]


def search(
    tiers: TierStore,
    question: str,
    k: int = defaults.SEARCH_K,
    *,
    which: Sequence[str] = ("lt", "hot"),
    strict: bool = False,
    record: bool = True,
    fetch: int = defaults.FETCH,
    merge: str = "score",
) -> list[Hit]:
    """The top ``k`` chunks of the tiers ``which`` for ``question``.

    Args:
        tiers: The tiers.
        question: The question.
        k: Hits returned.
        which: Tiers to search (``lt``, ``hot`` or both); a tier without a table is skipped.
        strict: Only chunks holding every entity of the question (none when it has no entity).
        record: Record the question and its hits (warming's and promotion's evidence).
        fetch: Candidates taken from each branch of each tier before its top ``k`` are kept.
        merge: ``score`` — by each tier's score, as a search over two Elasticsearch indices merges
            them (per-tier BM25 statistics, the strict branch's boost kept); ``rrf`` — LanceDB's
            reciprocal-rank fusion (ranks only).
    """
    K.check(k)  # a public entry point (Tiers.search, hepwb tiers search): raw values, checked once here
    FETCH.check(fetch)
    if merge not in ("score", "rrf"):
        msg = f"merge must be 'score' or 'rrf', got {merge!r}"
        raise ConfigError(msg)
    bad = [t for t in which if t not in ("lt", "hot")]
    if bad or not which:
        msg = f"which must name tiers 'lt' and/or 'hot', got {list(which)}"
        raise ConfigError(msg)
    start = time.perf_counter()
    ents = tiers.ner.batch([question])[0]
    tables = tiers.open_tables(which)  # the versions this query reads
    present = list(tables)
    if not present:
        msg = f"none of the tiers {list(which)} has a table in {tiers.root}; run hepwb tiers init first"
        raise ConfigError(msg)

    def one(tier: str) -> list[Hit]:
        r = EntityRetriever(tables[tier], ner=tiers.ner, fetch=fetch)
        return r.rank(question, k, entities=ents, strict=strict)  # the top k overall are in the tiers' top k

    if len(present) == 1:
        ranked = [replace(h, tier=present[0]) for h in one(present[0])[:k]]
    else:
        with ThreadPoolExecutor(max_workers=len(present)) as pool:
            lists = dict(zip(present, pool.map(one, present), strict=True))
        ranked = _merge(lists, k, merge)
    latency_ms = (time.perf_counter() - start) * 1000
    if record:
        tiers.audit.record_query(
            tiers.now_ms(),
            question,
            ents,
            strict=strict,
            tiers=",".join(present),
            k=k,
            latency_ms=latency_ms,
            hits=[(h.chunk_id, doc_key_of(h.arxiv, h.label), h.tier, h.rank) for h in ranked],
        )
    return ranked


def _merge(lists: dict[str, list[Hit]], k: int, how: str) -> list[Hit]:
    """One list; a chunk found in several tiers is one hit naming them all (``lt+hot``)."""
    best: dict[str, Hit] = {}
    where: dict[str, list[str]] = {}
    for tier, hits in lists.items():
        for h in hits:
            where.setdefault(h.chunk_id, []).append(f"{tier} #{h.rank}")
            if h.chunk_id not in best or h.score > best[h.chunk_id].score:
                best[h.chunk_id] = replace(h, tier=tier)
    if how == "rrf":
        order = _rrf(lists)
    else:
        order = [(h, h.score) for h in sorted(best.values(), key=lambda h: (-h.score, h.chunk_id))]
    out = []
    for rank, (h, score) in enumerate(order[:k], start=1):
        tiers_ = "+".join(t for t in lists if any(w.startswith(t + " ") for w in where[h.chunk_id]))
        out.append(
            replace(
                best[h.chunk_id],
                rank=rank,
                score=score,
                tier=tiers_,
                why=f"{best[h.chunk_id].why} [{', '.join(where[h.chunk_id])}]",
            )
        )
    return out


def _rrf(lists: dict[str, list[Hit]]) -> list[tuple[Hit, float]]:
    """The hits ordered by LanceDB's reciprocal-rank fusion of the tiers' lists, with the fused score."""
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    ids: dict[str, int] = {}
    first: dict[str, Hit] = {}
    for hits in lists.values():
        for h in hits:
            ids.setdefault(h.chunk_id, len(ids))
            first.setdefault(h.chunk_id, h)
    tables = [
        pa.table(
            {
                "_rowid": pa.array([ids[h.chunk_id] for h in hits], pa.uint64()),
                "chunk_id": pa.array([h.chunk_id for h in hits], pa.string()),
            }
        )
        for hits in lists.values()
    ]
    fused = RRFReranker().rerank_multivector(tables, deduplicate=True)
    scores = fused["_relevance_score"].to_pylist()
    return [(first[c], float(s)) for c, s in zip(fused["chunk_id"].to_pylist(), scores, strict=True)]


def tier_hits_frame(hits: Sequence[Hit]) -> pd.DataFrame:
    """A table of tier hits: rank, tier, label, pages, matched entities, why and a snippet."""
    import pandas as pd

    cols = ["rank", "tier", "label", "pages", "matched", "why", "chunk_id", "snippet"]
    return pd.DataFrame(
        [
            {
                "rank": h.rank,
                "tier": h.tier,
                "label": h.label,
                "pages": ",".join(map(str, h.pages)),
                "matched": ", ".join(h.matched),
                "why": h.why,
                "chunk_id": h.chunk_id,
                "snippet": snippet(h, 160, ("[", "]")),
            }
            for h in hits
        ],
        columns=cols,
    )
