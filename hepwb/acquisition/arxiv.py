"""arXiv discovery: the REST API (Atom) and OAI-PMH (``arXiv`` and ``arXivRaw`` metadata).

* :class:`ArxivAPI` - ``/api/query`` with ``search_query`` and/or ``id_list``, paging
  (``start``/``max_results``), sorting; an ``<entry>`` titled ``Error`` (HTTP 400) becomes a
  :class:`~hepwb.exceptions.ProcessingError`.
* :class:`ArxivOAI` - ``ListRecords`` (set, from/until, following ``resumptionToken``) and
  ``GetRecord``; ``arXivRaw`` gives the version history (``<version>`` dates and sizes). OAI errors
  ``noRecordsMatch`` give no records, others raise.

XML is parsed with ``defusedxml`` (entity expansion, external entities and DTD tricks are refused),
and every record becomes an :class:`ArxivRecord`. A withdrawal notice ("This paper has been
withdrawn", in the comment or abstract) sets ``withdrawn``.

Example:
    >>> split_version("1707.08567v2"), split_version("hep-ex/0601001")
    (('1707.08567', 2), ('hep-ex/0601001', None))
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hepwb import defaults
from hepwb.acquisition.http import PoliteClient
from hepwb.exceptions import ProcessingError
from hepwb.types import JSONObject

__all__ = ["API_URL", "OAI_URL", "ArxivAPI", "ArxivOAI", "ArxivRecord", "parse_xml", "split_version"]

API_URL = "https://export.arxiv.org/api/query"
OAI_URL = "https://oaipmh.arxiv.org/oai"
ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV_NS = "{http://arxiv.org/schemas/atom}"
OS = "{http://a9.com/-/spec/opensearch/1.1/}"
OAI = "{http://www.openarchives.org/OAI/2.0/}"
OAI_ARXIV = "{http://arxiv.org/OAI/arXiv/}"
OAI_RAW = "{http://arxiv.org/OAI/arXivRaw/}"
_WITHDRAWN = re.compile(
    r"\b(this (paper|article|submission) (has been|is) withdrawn|withdrawn by)", re.IGNORECASE
)
_ID = re.compile(
    r"(?:arxiv\.org/abs/|oai:arXiv\.org:)?([a-z\-]+(?:\.[A-Z]{2})?/\d{7}|\d{4}\.\d{4,5})(?:v(\d+))?$"
)


def split_version(arxiv_id: str) -> tuple[str, int | None]:
    """``(id without version, version or None)`` of an arXiv id, abs URL or OAI identifier."""
    m = _ID.search(arxiv_id.strip())
    if not m:
        msg = (
            f"not an arXiv identifier: {arxiv_id!r}; expected e.g. 1707.08567, 1707.08567v2 or hep-ex/0601001"
        )
        raise ProcessingError(msg, code="BAD_ARXIV_ID")
    return m.group(1), int(m.group(2)) if m.group(2) else None


def parse_xml(data: bytes | str, what: str) -> Any:
    """Parse XML safely (defusedxml); malformed or unsafe input raises a :class:`ProcessingError`."""
    import xml.etree.ElementTree as ET

    import defusedxml
    import defusedxml.ElementTree as DET

    try:
        return DET.fromstring(data)
    except defusedxml.DefusedXmlException as exc:
        msg = f"{what}: refused unsafe XML ({type(exc).__name__}: entity or DTD tricks)"
        raise ProcessingError(msg, code="UNSAFE_XML") from exc
    except ET.ParseError as exc:
        msg = f"{what}: malformed XML ({exc})"
        raise ProcessingError(msg, code="MALFORMED_XML") from exc


@dataclass
class ArxivRecord:
    """One arXiv paper as discovered (fields missing from a source stay empty)."""

    arxiv_id: str
    version: int | None = None
    title: str = ""
    authors: list[str] = field(default_factory=list)
    abstract: str = ""
    categories: list[str] = field(default_factory=list)
    primary_category: str = ""
    published: str = ""
    updated: str = ""
    doi: str = ""
    journal_ref: str = ""
    comment: str = ""
    license: str = ""
    versions: list[JSONObject] = field(default_factory=list)
    withdrawn: bool = False

    @property
    def pdf_url(self) -> str:
        """The PDF URL of this version (latest when unknown)."""
        return f"https://arxiv.org/pdf/{self.arxiv_id}" + (f"v{self.version}" if self.version else "")

    @property
    def source_url(self) -> str:
        """The LaTeX source tarball URL."""
        return f"https://arxiv.org/e-print/{self.arxiv_id}" + (f"v{self.version}" if self.version else "")

    def __post_init__(self) -> None:
        self.title = " ".join(self.title.split())
        self.withdrawn = self.withdrawn or bool(_WITHDRAWN.search(f"{self.comment} {self.abstract}"))


def _text(el: Any, tag: str) -> str:
    found = el.find(tag) if el is not None else None
    return " ".join((found.text or "").split()) if found is not None else ""


class ArxivAPI:
    """The arXiv REST API (Atom feed)."""

    def __init__(self, client: PoliteClient, base_url: str = API_URL) -> None:
        self.client = client
        self.base_url = base_url

    def search(
        self,
        query: str = "",
        id_list: list[str] | None = None,
        start: int = 0,
        max_results: int = defaults.ARXIV_PAGE_SIZE,
        sort_by: str = "relevance",
        sort_order: str = "descending",
    ) -> tuple[list[ArxivRecord], int]:
        """One page: ``(records, total results)``."""
        params = {
            "search_query": query,
            "id_list": ",".join(id_list or []),
            "sortBy": sort_by,
            "sortOrder": sort_order,
            "start": start,
            "max_results": max_results,
        }
        resp = self.client.get(self.base_url, params=params, accept_status=(200, 400))
        root = parse_xml(resp.content, f"arXiv API {resp.url}")
        entries = root.findall(f"{ATOM}entry")
        if resp.status_code == 400 or (len(entries) == 1 and _text(entries[0], f"{ATOM}title") == "Error"):
            detail = _text(entries[0], f"{ATOM}summary") if entries else resp.text[:200]
            msg = f"arXiv API rejected the query ({detail}); check the id list / search syntax"
            raise ProcessingError(msg, code="ARXIV_API_ERROR")
        total = int(_text(root, f"{OS}totalResults") or 0)
        return [self._record(e) for e in entries], total

    def iter_search(
        self,
        query: str = "",
        id_list: list[str] | None = None,
        limit: int = defaults.ARXIV_MAX_RECORDS,
        page: int = defaults.ARXIV_PAGE_SIZE,
    ) -> Iterator[ArxivRecord]:
        """All records of a query, page by page, up to ``limit``."""
        start = 0
        while start < limit:
            records, total = self.search(query, id_list, start, min(page, limit - start))
            yield from records
            start += len(records)
            if not records or start >= total:
                return

    @staticmethod
    def _record(e: Any) -> ArxivRecord:
        arxiv_id, version = split_version(_text(e, f"{ATOM}id"))
        doi_el = e.find(f"{ARXIV_NS}doi")
        primary = e.find(f"{ARXIV_NS}primary_category")
        return ArxivRecord(
            arxiv_id=arxiv_id,
            version=version,
            title=_text(e, f"{ATOM}title"),
            authors=[_text(a, f"{ATOM}name") for a in e.findall(f"{ATOM}author")],
            abstract=_text(e, f"{ATOM}summary"),
            categories=[c.get("term", "") for c in e.findall(f"{ATOM}category")],
            primary_category=primary.get("term", "") if primary is not None else "",
            published=_text(e, f"{ATOM}published"),
            updated=_text(e, f"{ATOM}updated"),
            doi=(doi_el.text or "").strip() if doi_el is not None else "",
            journal_ref=_text(e, f"{ARXIV_NS}journal_ref"),
            comment=_text(e, f"{ARXIV_NS}comment"),
        )


class ArxivOAI:
    """arXiv's OAI-PMH interface."""

    def __init__(self, client: PoliteClient, base_url: str = OAI_URL) -> None:
        self.client = client
        self.base_url = base_url

    def _request(self, params: dict[str, str]) -> Any:
        resp = self.client.get(self.base_url, params=params)
        root = parse_xml(resp.content, f"OAI-PMH {resp.url}")
        err = root.find(f"{OAI}error")
        if err is not None:
            code = err.get("code", "unknown")
            if code == "noRecordsMatch":
                return None
            msg = f"OAI-PMH error {code}: {(err.text or '').strip()} (request {params})"
            raise ProcessingError(msg, code=f"OAI_{code}")
        return root

    def list_records(
        self,
        set_spec: str | None = None,
        from_date: str | None = None,
        until: str | None = None,
        prefix: str = "arXiv",
    ) -> Iterator[ArxivRecord]:
        """Every record of a set / date range, following resumption tokens."""
        params = {"verb": "ListRecords", "metadataPrefix": prefix}
        params.update({k: v for k, v in (("set", set_spec), ("from", from_date), ("until", until)) if v})
        while True:
            root = self._request(params)
            if root is None:
                return
            lr = root.find(f"{OAI}ListRecords")
            for rec in lr.findall(f"{OAI}record") if lr is not None else []:
                parsed = self._record(rec)
                if parsed is not None:
                    yield parsed
            token = lr.find(f"{OAI}resumptionToken") if lr is not None else None
            if token is None or not (token.text or "").strip():
                return
            params = {"verb": "ListRecords", "resumptionToken": token.text.strip()}

    def get_record(self, arxiv_id: str, prefix: str = "arXiv") -> ArxivRecord | None:
        """One record (``None`` when arXiv has no such id)."""
        base, _ = split_version(arxiv_id)
        try:
            root = self._request(
                {"verb": "GetRecord", "identifier": f"oai:arXiv.org:{base}", "metadataPrefix": prefix}
            )
        except ProcessingError as exc:
            if exc.code == "OAI_idDoesNotExist":
                return None
            raise
        rec = root.find(f"{OAI}GetRecord/{OAI}record") if root is not None else None
        return self._record(rec) if rec is not None else None

    @staticmethod
    def _record(rec: Any) -> ArxivRecord | None:
        header = rec.find(f"{OAI}header")
        if header is not None and header.get("status") == "deleted":
            return None
        meta = rec.find(f"{OAI}metadata")
        node = meta.find(f"{OAI_ARXIV}arXiv") if meta is not None else None
        ns = OAI_ARXIV
        if node is None and meta is not None:
            node, ns = meta.find(f"{OAI_RAW}arXivRaw"), OAI_RAW
        if node is None:
            return None
        if ns == OAI_ARXIV:
            authors = [
                " ".join(x for x in (_text(a, f"{ns}forenames"), _text(a, f"{ns}keyname")) if x)
                for a in node.findall(f"{ns}authors/{ns}author")
            ]
        else:
            authors = [
                a.strip() for a in re.split(r",\s*|\s+and\s+", _text(node, f"{ns}authors")) if a.strip()
            ]
        versions = [
            {"version": v.get("version", ""), "date": _text(v, f"{ns}date"), "size": _text(v, f"{ns}size")}
            for v in node.findall(f"{ns}version")
        ]
        cats = _text(node, f"{ns}categories").split()
        return ArxivRecord(
            arxiv_id=split_version(_text(node, f"{ns}id"))[0],
            version=len(versions) or None,
            title=_text(node, f"{ns}title"),
            authors=authors,
            abstract=_text(node, f"{ns}abstract"),
            categories=cats,
            primary_category=cats[0] if cats else "",
            published=_text(node, f"{ns}created") or (versions[0]["date"] if versions else ""),
            updated=_text(node, f"{ns}updated"),
            doi=_text(node, f"{ns}doi"),
            journal_ref=_text(node, f"{ns}journal-ref"),
            comment=_text(node, f"{ns}comments"),
            license=_text(node, f"{ns}license"),
            versions=versions,
        )
