"""Bibliography entries to CSL-JSON items (heuristic, never raises).

Recognised pieces: the entry number (``[12]``, ``12.``), authors written ``A. B. Family`` or
``Family, A.`` (a collaboration becomes a ``literal`` author), a quoted or comma-delimited title,
a journal reference ``Journal Vol (Year) Page`` or ``Journal Vol, Page (Year)``, the year, a DOI
and an arXiv identifier. Every item keeps the raw entry in ``note``.

Example:
    >>> item = parse_references(["[1] X. Ji, Phys. Rev. Lett. 78 (1997) 610, hep-ph/9603249."])[0]
    >>> item["id"], item["type"], item["author"], item["container-title"], item["volume"], item["page"]
    ('ref-1', 'article-journal', [{'family': 'Ji', 'given': 'X.'}], 'Phys. Rev. Lett.', '78', '610')
    >>> item["issued"], item["number"]
    ({'date-parts': [[1997]]}, 'arXiv:hep-ph/9603249')
"""

from __future__ import annotations

import re

from hepwb.types import JSONObject

__all__ = ["ENTRY_RE", "arxiv_id", "parse_references"]

ENTRY_RE = re.compile(r"^\s*(?:\[(\d{1,4})\]|(\d{1,4})\.(?=\s)|\((\d{1,4})\))\s*")
_DOI_RE = re.compile(r"\b(?:doi:\s*|https?://(?:dx\.)?doi\.org/)?(10\.\d{4,9}/[^\s\"<>,;]+)", re.I)
_ARXIV_RE = re.compile(
    r"(?:arXiv:\s*|arxiv\.org/abs/)?\b(\d{4}\.\d{4,5}(?:v\d+)?|"
    r"(?:hep-?(?:ph|th|ex|lat)|astro-?ph|nucl-?(?:th|ex)|gr-?qc|math-?ph|cond-?mat|quant-?ph|physics|math)"
    r"(?:\.[A-Z]{2})?/\d{7})",
    re.I,
)
_OLD_ARCHIVES = {
    a.replace("-", ""): a
    for a in ("hep-ph", "hep-th", "hep-ex", "hep-lat", "astro-ph", "nucl-th", "nucl-ex", "gr-qc", "math-ph",
              "cond-mat", "quant-ph")
}  # fmt: skip


def arxiv_id(text: str) -> str:
    """An arXiv identifier as arXiv writes it, with the hyphen PDF extraction may have lost restored.

    Example:
        >>> arxiv_id("hepph/9603249"), arxiv_id("hep-lat/0409003"), arxiv_id("physics/0009047")
        ('hep-ph/9603249', 'hep-lat/0409003', 'physics/0009047')
    """
    archive, sep, number = text.partition("/")
    if not sep:
        return text
    base, dot, sub = archive.partition(".")
    return f"{_OLD_ARCHIVES.get(base.lower(), base)}{dot}{sub}/{number}"


_JOURNAL_RE = re.compile(
    r"(?P<j>(?:[A-Z][A-Za-z]{0,14}\.?\s+){1,6}?(?:[A-Z]\s+)?)(?P<v>[A-Z]?\d{1,4})\s*"
    r"(?:\((?P<y>(?:19|20)\d{2})\)\s*)?,?\s*(?:no\.\s*\d+\s*,?\s*)?(?:p{1,2}\.\s*)?(?P<p>[A-Z]?\d{1,7}(?:[-–]\d+)?)"
    r"(?:\s*\((?P<y2>(?:19|20)\d{2})\))?"
)
_YEAR_RE = re.compile(r"\((?:[A-Za-z]+\.?\s+)?((?:19|20)\d{2})\)|\b((?:19|20)\d{2})\b")
_QUOTED_RE = re.compile(r"[“\"]([^”\"]{8,300})[”\"]")
_INITIALS = r"(?:[A-Z][a-z]?\.\s?-?\s?){1,4}"
_NAME_FIRST_RE = re.compile(
    rf"^({_INITIALS})\s*([A-Z][^\s,.()]*(?:[\s-](?:de|van|der|von|[A-Z])[^\s,.()]*)*)$"
)
_NAME_LAST_RE = re.compile(rf"^([A-Z][^\s,.()]+),?\s+({_INITIALS})$")
_COLLAB_RE = re.compile(r"^(?:the\s+)?[\w\s-]{1,40}\bcollaborations?\b", re.I)


def _authors(prefix: str) -> tuple[list[dict[str, str]], int]:
    """Authors at the start of ``prefix`` and the length of the author part."""
    out: list[dict[str, str]] = []
    pos = 0
    parts = re.split(r"(,\s*(?:and\s+)?|\s+and\s+|\s*&\s*)", prefix)
    for k in range(0, len(parts), 2):
        tok = parts[k].strip()
        if tok.lower().startswith("et al"):
            pos += len(parts[k])
            break
        etal = re.search(r"\s+et\s+al\.?$", tok)
        if etal and (m := _NAME_FIRST_RE.match(tok[: etal.start()])):
            out.append({"family": m.group(2), "given": m.group(1).strip()})
            pos += len(parts[k])
            break
        if m := _NAME_FIRST_RE.match(tok):
            out.append({"family": m.group(2), "given": m.group(1).strip()})
        elif m := _NAME_LAST_RE.match(tok):
            out.append({"family": m.group(1), "given": m.group(2).strip()})
        elif _COLLAB_RE.match(tok) and len(tok) <= 60:
            out.append({"literal": tok})
        else:
            break
        pos += len(parts[k]) + (len(parts[k + 1]) if k + 1 < len(parts) else 0)
    return out, pos


def _one(raw: str, index: int) -> JSONObject:
    text = " ".join(raw.split())
    m = ENTRY_RE.match(text)
    body = text[m.end() :] if m else text
    item: JSONObject = {"id": f"ref-{index}", "type": "article", "note": text}
    if m:
        item["citation-label"] = next(g for g in m.groups() if g)
    rest = body
    if doi := _DOI_RE.search(rest):
        item["DOI"] = doi.group(1).rstrip(".)]")
        rest = rest[: doi.start()] + rest[doi.end() :]
    if arx := _ARXIV_RE.search(rest):
        ident = arxiv_id(arx.group(1))
        item["number"] = f"arXiv:{ident}"
        item["URL"] = f"https://arxiv.org/abs/{ident}"
        rest = rest[: arx.start()] + rest[arx.end() :]
    authors, end = _authors(body)
    if authors:
        item["author"] = authors
    jm = _JOURNAL_RE.search(rest, end if end <= len(rest) else 0)
    if jm and len(jm.group("j").strip()) >= 3 and not jm.group("j").strip().isupper():
        item["type"] = "article-journal"
        item["container-title"] = jm.group("j").strip()
        item["volume"] = jm.group("v")
        item["page"] = jm.group("p")
        year = jm.group("y") or jm.group("y2")
        if year:
            item["issued"] = {"date-parts": [[int(year)]]}
    if "issued" not in item:
        years = [int(a or b) for a, b in _YEAR_RE.findall(rest)]
        if years:
            item["issued"] = {"date-parts": [[years[-1]]]}
    if q := _QUOTED_RE.search(body):
        item["title"] = q.group(1).strip(" ,.")
    elif authors:
        tail = body[end:].lstrip(" ,.:")
        cuts = [
            x.start() for x in (_JOURNAL_RE.search(tail), _ARXIV_RE.search(tail), _YEAR_RE.search(tail)) if x
        ]
        cand = tail[: min([*cuts, len(tail)])].strip(" ,.;:")
        if len(cand.split()) >= 3 and not cand.lower().startswith(("in ", "phys", "nucl")):
            item["title"] = cand
    return item


def parse_references(entries: list[str]) -> list[JSONObject]:
    """Turn raw bibliography entries into CSL-JSON items (``id`` ``ref-1``, ``ref-2`` ...).

    Args:
        entries: One string per bibliography entry, numbering included or not.

    Returns:
        One CSL-JSON dictionary per entry, in order; fields that cannot be recognised are left
        out, ``note`` always holds the raw entry text.
    """
    out: list[JSONObject] = []
    for i, raw in enumerate(entries, start=1):
        try:
            out.append(_one(str(raw), i))
        except Exception:  # heuristics must never lose the entry
            out.append({"id": f"ref-{i}", "type": "article", "note": " ".join(str(raw).split())})
    return out
