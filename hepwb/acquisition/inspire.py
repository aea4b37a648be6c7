"""INSPIRE-HEP discovery: literature search with INSPIRE's query language, and record metadata.

``InspireAPI.search("t dvcs and cn hermes")`` pages through ``/api/literature`` (``q``, ``size``,
``page``, ``sort``) and returns :class:`InspireRecord` s with what a physicist filters on:
collaborations, experiments, texkeys, citation counts, arXiv eprints, DOIs, references, licence.
Records come either wrapped (``{"metadata": {...}, "id": ...}``) or flat (metadata at top level);
both are read.

Example:
    >>> rec = parse_inspire({"control_number": 7, "titles": [{"title": "A  DVCS study"}],
    ...     "collaborations": [{"value": "HERMES"}], "arxiv_eprints": [{"value": "0707.0222"}]})
    >>> rec.title, rec.collaborations, rec.arxiv_id
    ('A DVCS study', ['HERMES'], '0707.0222')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hepwb import defaults
from hepwb.acquisition.http import PoliteClient
from hepwb.exceptions import ProcessingError
from hepwb.types import JSONObject

__all__ = ["INSPIRE_URL", "InspireAPI", "InspireRecord", "parse_inspire"]

INSPIRE_URL = "https://inspirehep.net/api"


@dataclass
class InspireRecord:
    """The INSPIRE metadata hepwb keeps for a literature record."""

    recid: int
    title: str = ""
    authors: list[str] = field(default_factory=list)
    collaborations: list[str] = field(default_factory=list)
    experiments: list[str] = field(default_factory=list)
    texkeys: list[str] = field(default_factory=list)
    citation_count: int = 0
    arxiv_id: str = ""
    arxiv_categories: list[str] = field(default_factory=list)
    dois: list[str] = field(default_factory=list)
    license: str = ""
    n_references: int = 0
    references: list[JSONObject] = field(default_factory=list)
    date: str = ""


def parse_inspire(data: JSONObject) -> InspireRecord:
    """Read a literature record (wrapped or flat)."""
    meta = data.get("metadata", data)
    if not isinstance(meta, dict) or "control_number" not in meta:
        msg = "INSPIRE record without control_number: not a literature record"
        raise ProcessingError(msg, code="INSPIRE_BAD_RECORD")
    eprints = meta.get("arxiv_eprints") or [{}]
    refs = meta.get("references") or []
    return InspireRecord(
        recid=int(meta["control_number"]),
        title=" ".join(str((meta.get("titles") or [{}])[0].get("title", "")).split()),
        authors=[a.get("full_name", "") for a in meta.get("authors") or []],
        collaborations=[c.get("value", "") for c in meta.get("collaborations") or []],
        experiments=[
            e.get("legacy_name") or e.get("name") or "" for e in meta.get("accelerator_experiments") or []
        ],
        texkeys=list(meta.get("texkeys") or []),
        citation_count=int(meta.get("citation_count") or 0),
        arxiv_id=str(eprints[0].get("value", "")),
        arxiv_categories=list(eprints[0].get("categories") or []),
        dois=[d.get("value", "") for d in meta.get("dois") or []],
        license=str((meta.get("license") or [{}])[0].get("license", "")),
        n_references=len(refs),
        references=[r.get("reference", {}) for r in refs if isinstance(r, dict)],
        date=str(meta.get("preprint_date") or meta.get("earliest_date") or ""),
    )


class InspireAPI:
    """The INSPIRE-HEP REST API (no key needed; polite pacing through the client)."""

    def __init__(self, client: PoliteClient, base_url: str = INSPIRE_URL) -> None:
        self.client = client
        self.base_url = base_url.rstrip("/")

    def _json(self, url: str, params: JSONObject | None = None) -> Any:
        resp = self.client.get(url, params=params)
        try:
            return resp.json()
        except ValueError as exc:
            msg = f"INSPIRE {resp.url}: malformed JSON ({exc})"
            raise ProcessingError(msg, code="MALFORMED_JSON") from exc

    def search(
        self,
        q: str,
        limit: int = defaults.INSPIRE_MAX_RECORDS,
        page_size: int = defaults.INSPIRE_PAGE_SIZE,
        sort: str = "mostrecent",
    ) -> Iterator[InspireRecord]:
        """Records matching ``q`` (INSPIRE syntax, e.g. ``t dvcs and cn hermes``), up to ``limit``."""
        page, got = 1, 0
        while got < limit:
            size = min(page_size, limit - got)
            data = self._json(
                f"{self.base_url}/literature", {"q": q, "size": size, "page": page, "sort": sort}
            )
            hits = (data.get("hits") or {}).get("hits") or [] if isinstance(data, dict) else []
            for h in hits:
                yield parse_inspire(h)
            got += len(hits)
            total = int((data.get("hits") or {}).get("total") or 0) if isinstance(data, dict) else 0
            if not hits or got >= total:
                return
            page += 1

    def record(self, recid: int) -> InspireRecord:
        """One literature record by its INSPIRE id."""
        return parse_inspire(self._json(f"{self.base_url}/literature/{int(recid)}"))
