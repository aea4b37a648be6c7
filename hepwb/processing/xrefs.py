"""Cross-references in running text: figure, table, equation, section and citation mentions.

:func:`find_mentions` detects mentions with their offsets in ``full_document.md``
(``Fig. 3(b)``, ``Figs. 2 and 4``, ``Table II``, ``Eq. (3)``, ``Eqs. (4)-(6)``, ``Sec. 2.1``,
``[12]``, ``[3, 5-7]``, ``[@key; @other]``); :func:`link_mentions` gives each mention the id
of its target: a figure/table record (``figure-3``), a numbered display equation
(``equation-3``), a numbered heading (``section-2.1``) or a bibliography entry of
``references.json`` (its CSL ``id``). Mentions inside display math, tables, code, headings and
the bibliography are not searched; a caption's own label is not a mention.

Example:
    >>> text = "As Fig. 3(b) and Eq. (2) show [4, 6-7]."
    >>> [(m["kind"], m["number"], text[m["start"]:m["end"]]) for m in find_text_mentions(text, 0)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('figure', '3', 'Fig. 3(b)'), ('equation', '2', 'Eq. (2)'), ('citation', '4', '[4, 6-7]'),
     ('citation', '6', '[4, 6-7]'), ('citation', '7', '[4, 6-7]')]
"""

from __future__ import annotations

import itertools
import re

from hepwb.processing.figures import caption_label, roman
from hepwb.types import Document, JSONObject

__all__ = ["equation_records", "find_mentions", "find_text_mentions", "link_mentions", "section_records"]

_NUM = r"(?:\d{1,3}|[IVX]{1,5})[a-z]?(?:\s?\([a-z](?:[,-][a-z])*\))?"
_LIST = rf"{_NUM}(?:\s*(?:,|and|&|[-–—]|to)\s*{_NUM})*"
_FIG_RE = re.compile(rf"\b(?:[Ff]igs?\.|[Ff]igures?|FIGS?\.|FIGURES?)\s?~?({_LIST})")
_TAB_RE = re.compile(rf"\b(?:[Tt]abs?\.|[Tt]ables?|TABLES?)\s?~?({_LIST})")
_EQN = r"\(\s*[A-Z]?\d{1,3}(?:\.\d{1,3})?[a-z]?\s*\)"
_EQ_RE = re.compile(
    rf"\b(?:[Ee]qs?\.|[Ee]quations?|EQS?\.)\s?~?({_EQN}(?:\s*(?:,|and|&|[-–—]|to)\s*{_EQN})*)"
)
_SEC_RE = re.compile(
    r"(?:\b(?:[Ss]ects?\.|[Ss]ecs?\.|[Ss]ections?)|§)\s?~?((?:\d{1,2}(?:\.\d{1,2}){0,3})|[IVX]{1,5}(?:\.[A-Z])?)\b"
)
_CITE_RE = re.compile(r"\[(\d{1,4}(?:\s*[,–-]\s*\d{1,4})*)\]")
_KEY_CITE_RE = re.compile(r"\[(@[^\[\]\s;,]+(?:\s*[;,]\s*@[^\[\]\s;,]+)*)\]")
_ITEM_RE = re.compile(r"\d{1,3}|[IVX]{1,5}")
_EQ_ITEM_RE = re.compile(r"\(\s*([A-Z]?\d{1,3}(?:\.\d{1,3})?[a-z]?)\s*\)")
_EQNUM_END_RE = re.compile(r"\(\s*([A-Z]?\d{1,3}(?:\.\d{1,3})?)\s*\)\s*(?:\$\$)?\s*$")
_TAG_RE = re.compile(r"\\tag\{([^{}]+)\}")
_HEADING_NUM_RE = re.compile(
    r"^#+\s+(?:Appendix\s+)?((?:\d{1,2}(?:\.\d{1,2}){0,3})|[IVX]{1,5}|[A-H](?:\.\d{1,2})*)\.?\s"
)
_SKIP = frozenset({"math", "table", "code", "heading", "reference", "figure_text"})
_MAX_RANGE = 30


def _expand(numbers: list[str], separators: list[str]) -> list[str]:
    """Expand ``3-5`` ranges of a mention list into ``3, 4, 5``."""
    out: list[str] = []
    for i, n in enumerate(numbers):
        sep = separators[i - 1] if i else ""
        if sep in ("-", "–", "—", "to") and out and out[-1].isdigit() and n.isdigit():
            lo, hi = int(out[-1]), int(n)
            if 0 < hi - lo <= _MAX_RANGE:
                out.extend(str(k) for k in range(lo + 1, hi + 1))
                continue
        out.append(n)
    return out


def _numbers(items: str, pattern: re.Pattern[str]) -> list[str]:
    found = list(pattern.finditer(items))
    nums = [m.group(1) if m.groups() else m.group(0) for m in found]
    seps = [items[a.end() : b.start()].strip() for a, b in itertools.pairwise(found)]
    out = []
    for n in _expand(nums, seps):
        r = roman(n)
        out.append(str(r) if r and not n.isdigit() else n)
    return out


def find_text_mentions(text: str, offset: int) -> list[JSONObject]:
    """Mentions in one block's ``text``; offsets are shifted by ``offset``."""
    out: list[JSONObject] = []
    for kind, pattern in (("figure", _FIG_RE), ("table", _TAB_RE)):
        for m in pattern.finditer(text):
            items = re.sub(r"\([a-z](?:[,-][a-z])*\)", "", m.group(1))
            for n in _numbers(items, _ITEM_RE):
                out.append({"kind": kind, "number": n, "start": offset + m.start(), "end": offset + m.end()})
    for m in _EQ_RE.finditer(text):
        for n in _numbers(m.group(1), _EQ_ITEM_RE):
            out.append(
                {"kind": "equation", "number": n, "start": offset + m.start(), "end": offset + m.end()}
            )
    for m in _SEC_RE.finditer(text):
        number = m.group(1)
        r = roman(number.split(".")[0])
        out.append({"kind": "section", "number": str(r) if r else number, "start": offset + m.start(),
                    "end": offset + m.end()})  # fmt: skip
    for m in _CITE_RE.finditer(text):
        if re.search(r"(?<!\d)0(?!\d)", m.group(1)):
            continue  # [0, 1] is an interval, not a citation
        for n in _numbers(m.group(1), re.compile(r"\d{1,4}")):
            out.append(
                {"kind": "citation", "number": n, "start": offset + m.start(), "end": offset + m.end()}
            )
    for m in _KEY_CITE_RE.finditer(text):
        for k in re.findall(r"@([^\s;,\]]+)", m.group(1)):
            out.append(
                {"kind": "citation", "number": k, "start": offset + m.start(), "end": offset + m.end()}
            )
    out.sort(key=lambda x: (x["start"], x["kind"] != "figure"))
    return out


def find_mentions(doc: Document) -> list[JSONObject]:
    """All mentions of ``doc`` in reading order (text, list and caption blocks)."""
    out: list[JSONObject] = []
    for b in doc.blocks:
        if b.kind in _SKIP:
            continue
        text = doc.block_text(b)
        found = find_text_mentions(text, b.start)
        if b.kind == "caption" and (own := caption_label(text)) is not None:
            # the caption's own label ("Figure 3:") names the figure, it does not mention it
            found = [m for m in found if not (m["start"] < b.start + 12 and m["kind"] == own[0])]
        for m in found:
            m["page"] = b.page
        out.extend(found)
    return out


def equation_records(doc: Document) -> list[JSONObject]:
    """Numbered display equations: ``(N)`` at the end of a PDF equation, ``\\tag{N}`` in LaTeX.

    Example:
        >>> from hepwb.processing.markdown import markdown_document
        >>> doc = markdown_document("Text.\\n\\n$$\\nE = mc^2 (3)\\n$$", "S01")
        >>> [(r["id"], r["format"]) for r in equation_records(doc)]
        [('equation-3', 'unicode')]
    """
    out: list[JSONObject] = []
    seen: set[str] = set()
    latex = doc.meta.get("source_format") == "latex"
    for b in doc.blocks:
        if b.kind != "math":
            continue
        text = doc.block_text(b)
        m = _TAG_RE.search(text) if latex else _EQNUM_END_RE.search(text.strip())
        if m is None or m.group(1) in seen:
            continue
        seen.add(m.group(1))
        out.append({"id": f"equation-{m.group(1)}", "number": m.group(1), "page": b.page, "start": b.start,
                    "end": b.end, "format": "latex" if latex else "unicode"})  # fmt: skip
    return out


def section_records(doc: Document) -> list[JSONObject]:
    """Numbered headings (``## 2.1 Data``, ``## III. RESULTS``, ``### A. Cuts``)."""
    out: list[JSONObject] = []
    for b in doc.blocks:
        if b.kind != "heading":
            continue
        if m := _HEADING_NUM_RE.match(doc.block_text(b)):
            n = m.group(1)
            r = roman(n)
            number = str(r) if r and n.isalpha() and len(n) > 0 and n not in "ABCDEFGH" else n
            out.append({"id": f"section-{number}", "number": number, "page": b.page, "start": b.start})
    return out


def link_mentions(
    mentions: list[JSONObject],
    figures: list[JSONObject],
    equations: list[JSONObject],
    sections: list[JSONObject],
    references: list[JSONObject],
) -> list[JSONObject]:
    """Set each mention's ``target`` (a record id, or None when nothing of that number exists)."""
    ids = {str(r["id"]) for r in [*figures, *equations, *sections]}
    by_label: dict[str, str] = {}
    for i, ref in enumerate(references, 1):
        rid = str(ref.get("id", f"ref-{i}"))
        by_label.setdefault(str(ref.get("citation-label") or ref.get("citation-number") or i), rid)
        by_label.setdefault(rid, rid)
    for m in mentions:
        kind, number = str(m["kind"]), str(m["number"])
        if kind == "citation":
            m["target"] = by_label.get(number)
        else:
            cand = f"{kind}-{number}"
            m["target"] = cand if cand in ids else None
    return mentions
