"""Bibliography ids for ``bench.bench_refextract``: arXiv ids and DOIs, and the truth from LaTeX sources.

* :func:`text_ids`: the arXiv ids (new ``YYMM.NNNNN`` and old ``hep-ph/NNNNNNN`` forms) and DOIs written in a
  text, normalised (:func:`norm_arxiv`, :func:`norm_doi`);
* :func:`truth_for`: the bibliography a LaTeX project prints (``\\bibitem``s of a ``.bbl`` or the ``.tex``
  files, else the cited entries of its ``.bib``, else the count of cited keys) with its ids;
* each tool's entries and ids (:func:`hepwb_ids`, :func:`refx_ids`, :func:`refx_entries`) and their recall.

Example:
    >>> sorted(text_ids("see arXiv:2101.01234v2 and doi:10.1103/PhysRevD.1.2."))
    [{'2101.01234'}, {'10.1103/physrevd.1.2'}]
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# --- identifiers ---------------------------------------------------------------------------------

_DOI_RE = re.compile(r"10\.\d{4,9}/[^\s\"<>,;{}\\]+")
_NEW_ARXIV_RE = re.compile(r"(?<![\d.])(\d{2})(\d{2})\.(\d{4,5})(?:v\d+)?(?![\d])")
_OLD_ARXIV_RE = re.compile(
    r"\b((?:hep-(?:ph|th|ex|lat)|astro-ph|nucl-(?:th|ex)|gr-qc|physics|math-ph|quant-ph|cond-mat)"
    r"(?:\.[A-Za-z]{2})?/\d{7})",
    re.I,
)


def norm_doi(doi: str) -> str:
    d = doi.strip().lower().replace("\\_", "_")
    d = re.sub(r"^(?:doi:\s*|https?://(?:dx\.)?doi\.org/)", "", d)
    while d and (d[-1] in ".,;]}'" or (d[-1] == ")" and d.count("(") < d.count(")"))):
        d = d[:-1]
    return d


def norm_arxiv(ident: str) -> str:
    a = re.sub(r"^arxiv:\s*", "", ident.strip(), flags=re.I)
    return re.sub(r"v\d+$", "", a).lower()


def text_ids(text: str) -> tuple[set[str], set[str]]:
    """arXiv ids and DOIs written anywhere in ``text`` (DOIs removed before arXiv matching)."""
    text = text.replace("\\_", "_")
    dois = {norm_doi(m.group(0)) for m in _DOI_RE.finditer(text)}
    rest = _DOI_RE.sub(" ", text)
    arx = {m.group(1).lower() for m in _OLD_ARXIV_RE.finditer(rest)}
    for m in _NEW_ARXIV_RE.finditer(rest):
        if 1 <= int(m.group(2)) <= 12 and int(m.group(1)) >= 7:  # YYMM.NNNNN exists from 0704
            arx.add(f"{m.group(1)}{m.group(2)}.{m.group(3)}")
    return arx, {d for d in dois if d}


# --- truth from LaTeX sources ----------------------------------------------------------------------


def strip_comments(tex: str) -> str:
    tex = re.sub(r"\\begin\{comment\}.*?\\end\{comment\}", " ", tex, flags=re.S)
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in tex.splitlines())


def bibitems(tex: str) -> list[str]:
    items: list[str] = []
    for part in tex.split("\\end{thebibliography}"):
        pieces = re.split(r"\\bibitem\b", part)
        items.extend(pieces[1:])
    return items


_CITE_RE = re.compile(r"\\(?:no)?cite[a-zA-Z]*\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^}]*)\}")
_BIB_START_RE = re.compile(r"^\s*@(\w+)\s*[{(]\s*([^,\s]+)\s*,", re.M)


def truth_for(folder: Path) -> dict[str, Any]:
    """The bibliography the LaTeX source prints: count, source kind, arXiv ids and DOIs."""
    texs = {
        p: strip_comments(p.read_text(encoding="utf-8", errors="replace"))
        for p in sorted(folder.rglob("*.tex"))
    }
    for bbl in sorted(folder.rglob("*.bbl")):
        items = bibitems(strip_comments(bbl.read_text(encoding="utf-8", errors="replace")))
        if items:
            return _truth(items, f"{bbl.name} \\bibitem")
    items = [i for t in texs.values() for i in bibitems(t)]
    if items:
        return _truth(items, ".tex \\bibitem")
    cited: list[str] = []
    for t in texs.values():
        for m in _CITE_RE.finditer(t):
            cited.extend(k.strip() for k in m.group(1).split(",") if k.strip())
    keys = list(dict.fromkeys(cited))
    bibs = sorted(folder.rglob("*.bib"))
    if bibs:
        entries: dict[str, str] = {}
        for bib in bibs:
            text = bib.read_text(encoding="utf-8", errors="replace")
            starts = list(_BIB_START_RE.finditer(text))
            for i, m in enumerate(starts):
                if m.group(1).lower() in ("string", "comment", "preamble"):
                    continue
                end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
                entries[m.group(2)] = text[m.start() : end]
        chosen = list(entries) if "*" in keys else [k for k in keys if k in entries]
        out = _truth([entries[k] for k in chosen], ".bib entries cited")
        out["cited_keys_missing_from_bib"] = len([k for k in keys if k not in entries and k != "*"])
        return out
    return {"count": len(keys), "source": "cited keys (.bib not in corpus)", "arxiv": None, "doi": None}


def _truth(items: list[str], source: str) -> dict[str, Any]:
    arx: set[str] = set()
    dois: set[str] = set()
    for it in items:
        a, d = text_ids(it)
        arx |= a
        dois |= d
    return {"count": len(items), "source": source, "arxiv": sorted(arx), "doi": sorted(dois)}


# --- per-tool summaries ----------------------------------------------------------------------------


def hepwb_ids(refs: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Ids in the structured CSL fields (``number``, ``URL``, ``DOI``), not in the raw ``note``."""
    arx: set[str] = set()
    dois: set[str] = set()
    for r in refs:  # the PDF parser puts arXiv:ID in number, the LaTeX path an arxiv.org URL in URL
        a, d = text_ids(f"{r.get('number', '')} {r.get('URL', '')}")
        arx |= a
        dois |= d
        if r.get("DOI"):
            dois.add(norm_doi(str(r["DOI"])))
    return arx, {d for d in dois if d}


def refx_ids(refs: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    arx: set[str] = set()
    dois: set[str] = set()
    for r in refs:
        for v in [*r.get("arxiv_eprint", []), *r.get("reportnumber", [])]:
            arx |= text_ids(str(v))[0]
        for v in r.get("url", []):  # link targets read from the PDF's annotations
            a, d = text_ids(str(v))
            arx |= a
            dois |= d
        dois |= {norm_doi(str(v)) for v in r.get("doi", [])}
    return arx, {d for d in dois if d}


def refx_entries(refs: list[dict[str, Any]]) -> int:
    """Distinct bibliography entries: refextract emits one record per citation it splits off."""
    return len({(tuple(r.get("linemarker", [])), tuple(r.get("raw_ref", []))) for r in refs})


def recall(found: set[str], truth: list[str] | None) -> float | None:
    if not truth:
        return None
    return round(len(found & set(truth)) / len(truth), 3)
