"""The tier tables' rows: a chunk table's columns plus the design's governance fields.

Both tiers share one schema, so rows move between them unchanged but for their stamps:

* ``doc_key`` — the document as re-ingest knows it (arXiv id without version, else the label);
  ``doc_version`` — monotonic per ``doc_key`` in LT (re-ingest replaces the rows in place);
  ``doc_chunks`` — how many chunks the whole document has (a partly evicted one is never promoted);
  ``doc_sha`` — hash of the document's chunks (ids, texts, entities): equal hashes mean nothing to
  promote or re-ingest (a paper indexed without entities while NER was down differs);
* ``ingested_at_ms`` — when the row entered LT (or HOT, for HOT rows);
* ``entities`` (keyword list, exact AND filters) and ``entity_text`` (the same entities as BM25 text);
* ``origin`` — ``curated`` (LT's initial corpus), ``acquired`` or ``warmed`` (HOT), ``promoted`` (LT);
* ``hot_promoted_at`` — when the row entered HOT (the TTL clock; kept on promoted rows as provenance);
* ``promotion_id`` — the audited promotion that wrote the row into LT (``""`` otherwise).

Example:
    >>> entity_text(["experiment:lhcb", "particle:jpsi"])
    'experiment_lhcb particle_jpsi'
    >>> doc_key_of("2101.01234v2", "P01"), doc_key_of("", "P01")
    ('arxiv:2101.01234', 'label:P01')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from hepwb.text.ids import short_hash

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["GOVERNANCE", "doc_key_of", "entity_text", "quoted", "strings", "tier_rows", "upsert_documents"]

GOVERNANCE = (
    "doc_key",
    "doc_version",
    "doc_sha",
    "doc_chunks",
    "ingested_at_ms",
    "entity_text",
    "origin",
    "hot_promoted_at",
    "promotion_id",
)
"""The columns the tiers add to a chunk table's."""


def entity_text(entities: Iterable[str]) -> str:
    """The entities as one whitespace-separated text for BM25 (``kind:name`` → ``kind_name``)."""
    return " ".join(e.replace(":", "_") for e in entities)


def doc_key_of(arxiv: str, label: str) -> str:
    """The document key: the arXiv id without its version, else the label."""
    if arxiv:
        return "arxiv:" + re.sub(r"v\d+$", "", arxiv.strip())
    return f"label:{label}"


def quoted(values: Iterable[str]) -> str:
    """A SQL list literal: ``'a', 'b'`` (quotes doubled)."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def strings(values: list[str]) -> pa.Array:
    """An Arrow string array (the value set of ``pyarrow.compute.is_in`` filters)."""
    import pyarrow as pa

    return pa.array(values, pa.string())


def tier_rows(
    chunks: pa.Table,
    *,
    origin: str,
    now_ms: int,
    hot_promoted_at: int | None = 0,
    doc_versions: dict[str, int] | None = None,
    promotion_id: str = "",
) -> pa.Table:
    """The rows of chunk table ``chunks`` with the governance columns set.

    A row already carrying governance columns keeps ``doc_key`` and ``doc_sha`` and gets the others
    anew. ``doc_versions`` gives the version of each ``doc_key`` (default 1); ``hot_promoted_at=None``
    keeps the rows' own stamps (a promoted row remembers when it entered HOT).
    """
    import pyarrow as pa

    base = chunks.drop_columns([c for c in GOVERNANCE if c in chunks.column_names])
    cols = base.to_pydict()
    n = base.num_rows
    keys = (
        chunks["doc_key"].to_pylist()
        if "doc_key" in chunks.column_names
        else [doc_key_of(a, lab) for a, lab in zip(cols["arxiv"], cols["label"], strict=True)]
    )
    if "doc_sha" in chunks.column_names:
        shas = chunks["doc_sha"].to_pylist()
    else:
        per_doc: dict[str, list[tuple[str, str, list[str]]]] = {}
        for key, cid, text, ents in zip(keys, cols["chunk_id"], cols["text"], cols["entities"], strict=True):
            per_doc.setdefault(key, []).append((cid, text, list(ents or ())))
        doc_sha = {k: short_hash(sorted(v), 16) for k, v in per_doc.items()}
        shas = [doc_sha[k] for k in keys]
    if "doc_chunks" in chunks.column_names:
        counts = chunks["doc_chunks"].to_pylist()
    else:
        per_key: dict[str, int] = {}
        for key in keys:
            per_key[key] = per_key.get(key, 0) + 1
        counts = [per_key[k] for k in keys]
    versions = doc_versions or {}
    extra = {
        "doc_key": pa.array(keys, pa.string()),
        "doc_version": pa.array([versions.get(k, 1) for k in keys], pa.int64()),
        "doc_sha": pa.array(shas, pa.string()),
        "doc_chunks": pa.array(counts, pa.int64()),
        "ingested_at_ms": pa.array([now_ms] * n, pa.int64()),
        "entity_text": pa.array([entity_text(e or ()) for e in cols["entities"]], pa.string()),
        "origin": pa.array([origin] * n, pa.string()),
        "hot_promoted_at": (
            chunks["hot_promoted_at"].cast(pa.int64())
            if hot_promoted_at is None
            else pa.array([hot_promoted_at] * n, pa.int64())
        ),
        "promotion_id": pa.array([promotion_id] * n, pa.string()),
    }
    for name, arr in extra.items():
        base = base.append_column(name, arr)
    return base


def upsert_documents(tbl: Any, rows: pa.Table, doc_keys: Iterable[str]) -> None:
    """Replace the rows of ``doc_keys`` in ``tbl`` by ``rows`` in one commit (one new table version).

    Rows of those documents that ``rows`` lacks are deleted, matching ones updated, new ones inserted —
    a reader sees the old document or the new one, never a mixture.
    """
    keys = sorted(set(doc_keys))
    if not keys:
        return
    (
        tbl.merge_insert("chunk_id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(f"doc_key IN ({quoted(keys)})")
        .execute(rows)
    )
