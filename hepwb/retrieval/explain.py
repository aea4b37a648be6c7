"""Why a hit matched, and how to show it: highlighted snippets and citations.

Example:
    >>> from hepwb.types import Hit
    >>> text = "We measure the J/ψ production cross section at 13 TeV."
    >>> spans = highlight_spans(text, query_words("J/psi cross sections"))
    >>> [text[s:e] for s, e in spans]
    ['J/ψ', 'cross section']
    >>> hit = Hit("c1", "d1", "P07", 120, 175, 1, 7.5, text, "bm25", (3,), ("2 Results",),
    ...           "Charmonium at the LHC", "2101.00001", highlights=tuple(spans))
    >>> citation(hit)
    '[1] P07 · Charmonium at the LHC, arXiv:2101.00001, p. 3, § 2 Results, chars 120-175 (bm25 7.500)'
    >>> snippet(hit, width=40)
    '…the **J/ψ** production **cross section**…'
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.models.analyzer import normalize
from hepwb.text.plaintext import escape_html, plain, sequence_around
from hepwb.types import Document, Hit

if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "citation",
    "explain_match",
    "highlight_spans",
    "hits_frame",
    "hits_html",
    "query_words",
    "section_label",
    "section_of",
    "snippet",
]

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "more",
        "most",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "out",
        "over",
        "own",
        "same",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "value",
        "values",
        "obtain",
        "obtained",
        "find",
        "found",
        "measure",
        "measured",
        "use",
        "used",
        "using",
        "give",
    ]
)
"""Words never highlighted or counted as a match."""


def query_words(query: str) -> list[str]:
    """Normalised content words (and multi-word phrases of entity aliases) of ``query``.

    Example:
        >>> query_words("What is the B_s^0 lifetime at LHCb?")
        ['bs0', 'lifetime', 'lhcb']
    """
    norm, _ = normalize(query)
    return list(
        dict.fromkeys(
            w for w in norm.replace(".", " ").split() if w not in STOP_WORDS and (len(w) > 1 or w.isalpha())
        )
    )


def _stem(word: str) -> str:
    """A crude stem for highlighting: plural/verb endings removed (``asymmetries`` → ``asymmetr``)."""
    for suffix in ("ies", "es", "s", "ed", "ing", "y"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def highlight_spans(text: str, words: Iterable[str]) -> list[tuple[int, int]]:
    """Spans of ``text`` holding any of ``words`` (normalised words or phrases), merged, in order."""
    return explain_match(text, words)[0]


def explain_match(text: str, words: Iterable[str]) -> tuple[list[tuple[int, int]], list[str]]:
    """Highlight spans of ``words`` in ``text``, and which of ``words`` occur.

    Example:
        >>> explain_match("Beam-spin asymmetries of DVCS", ["asymmetry", "dvcs", "clas12"])
        ([(10, 21), (25, 29)], ['asymmetry', 'dvcs'])
    """
    norm, src = normalize(text)
    stems = {w: _stem(w) for w in words if w}
    alts = tuple(sorted(set(stems.values()), key=len, reverse=True))
    if not alts or not norm:
        return [], []
    rx = _pattern(alts)
    spans: list[tuple[int, int]] = []
    seen: set[str] = set()
    for m in rx.finditer(norm):
        s, e = src[m.start()], src[m.end() - 1] + 1
        gap = text[spans[-1][1] : s] if spans else "x"
        if len(gap) <= 2 and not any(c.isalnum() for c in gap):  # "J/ψ", "cross section": one span
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
        seen.add(" ".join(m.group().split()))
    matched = [w for w, st in stems.items() if any(x.startswith(st) for x in seen)]
    return spans, matched


@lru_cache(maxsize=256)
def _pattern(alts: tuple[str, ...]) -> re.Pattern[str]:
    """The highlighting regex of a query's word stems (compiled once per query, not once per hit)."""
    return re.compile(
        r"(?<![a-z0-9])(?:" + "|".join(re.escape(a).replace(r"\ ", " +") for a in alts) + r")[a-z]*"
    )


def snippet(
    hit: Hit, width: int = defaults.DISPLAY_SNIPPET_CHARS, mark: tuple[str, str] = ("**", "**")
) -> str:
    """About ``width`` characters of the hit around its first highlights, highlights marked.

    Control sequences and characters of the corpus text are removed (:func:`hepwb.text.plaintext.plain`): a
    snippet is safe to print on a terminal.
    """
    text = hit.text
    spans = list(hit.highlights)
    centre = spans[0][0] if spans else 0
    lo = max(0, centre - width // 4)
    hi = min(len(text), lo + width)
    # whole words at the edges
    while lo > 0 and text[lo - 1].isalnum() and lo < centre:
        lo += 1
    while hi < len(text) and text[hi - 1].isalnum() and hi > centre:
        hi -= 1
    lo = (sequence_around(text, lo) or (lo, lo))[0]  # an edge inside an escape sequence: before it
    hi = (sequence_around(text, hi) or (hi, hi))[1]
    out, pos = [], lo
    for s, e in spans:
        if s < lo or e > hi:
            continue
        out += [plain(text[pos:s]), mark[0], plain(text[s:e]), mark[1]]
        pos = e
    out.append(plain(text[pos:hi]))
    body = " ".join("".join(out).split())
    return ("…" if lo > 0 else "") + body + ("…" if hi < len(text) else "")


def section_label(section_path: Sequence[str], title: str = "") -> str:
    """The section of a chunk without the paper's title (which the citation already names).

    Example:
        >>> section_label(("A DVCS measurement", "3 Analysis", "3.1 Cuts"), "A DVCS measurement")
        '3 Analysis > 3.1 Cuts'
        >>> section_label(("A DVCS measurement",), "A DVCS measurement")
        ''
        >>> section_label(("A DVCS measurement at HERA H1", "3 Cuts"), "A DVCS measurement at HERA")
        '3 Cuts'
    """
    parts = list(section_path)
    first, name = " ".join(parts[0].split()).lower() if parts else "", " ".join(title.split()).lower()
    if first and name and (first.startswith(name) or name.startswith(first)):  # a title with a subtitle
        parts = parts[1:]
    return " > ".join(parts)


def section_of(hit: Hit, doc: Document | None = None) -> str:
    """The section to show for ``hit``: :func:`section_label`, else where in ``doc`` the chunk lies.

    A chunk whose section path holds only the paper's title (a letter without section headings, the
    opening before the first section) gets, from its document: the first heading inside the chunk,
    else ``Abstract`` where it overlaps the abstract of the front matter, else ``References`` or
    ``main text (no section headings)``. Without ``doc`` the section label alone (maybe ``""``).

    Example:
        >>> from hepwb.processing.markdown import markdown_document
        >>> doc = markdown_document("# A letter\\n\\nWe measured the asymmetry.", "L1")
        >>> hit = Hit("c1", doc.document_id, "L1", 12, 38, 1, 1.0,
        ...           section_path=("A letter",), title="A letter")
        >>> section_label(hit.section_path, hit.title), section_of(hit, doc)
        ('', 'main text (no section headings)')
    """
    label = section_label(hit.section_path, hit.title)
    if label or doc is None:
        return label
    lo = max(bisect.bisect_right([b.start for b in doc.blocks], hit.start) - 1, 0)
    inside = [b for b in doc.blocks[lo:] if b.start < hit.end and b.end > hit.start]
    for b in inside:
        heading = doc.block_text(b).lstrip("#").strip() if b.kind == "heading" else ""
        if section_label((heading,), hit.title):  # a heading that is not the title
            return heading
    abstract = (doc.meta.get("front_matter") or {}).get("abstract")
    if abstract and abstract[0] < hit.end and hit.start < abstract[1]:
        return "Abstract"
    if inside and all(b.kind in ("reference", "heading") for b in inside):
        return "References"
    return "main text (no section headings)"


def citation(hit: Hit) -> str:
    """One-line citation: paper label and title, arXiv id, page(s), section, character offsets and score.

    Control sequences and characters of the corpus text are removed (:func:`hepwb.text.plaintext.plain`).
    """
    name = (
        f"{hit.label} · {hit.title}"
        if hit.title and hit.label and hit.title != hit.label
        else hit.title or hit.label
    )
    parts = [f"[{hit.rank}] {name}"]
    if hit.arxiv:
        parts.append(f"arXiv:{hit.arxiv}")
    if hit.pages:
        first, last = min(hit.pages), max(hit.pages)
        parts.append(f"p. {first}" if first == last else f"pp. {first}-{last}")
    section = section_label(hit.section_path, hit.title)
    if section:
        parts.append(f"§ {section.split(' > ')[-1]}")
    parts.append(f"chars {hit.start}-{hit.end}")
    return " ".join(plain(", ".join(parts) + f" ({hit.retriever} {hit.score:.3f})").split())


def hits_frame(hits: Sequence[Hit], documents: Mapping[str, Document] | None = None) -> pd.DataFrame:
    """A table of hits: rank, label, pages, section, score, why, citation and snippet.

    With ``documents`` (by document id) a chunk without a section heading of its own gets where it
    lies in its paper as its section (:func:`section_of`).
    """
    import pandas as pd

    docs = documents or {}
    return pd.DataFrame(
        [
            {
                "rank": h.rank,
                "label": plain(h.label),
                "pages": ",".join(map(str, h.pages)),
                "section": plain(section_of(h, docs.get(h.document_id))),
                "score": round(h.score, 4),
                "why": plain(h.why),
                "citation": citation(h),
                "snippet": snippet(h, 200, ("[", "]")),
            }
            for h in hits
        ],
        columns=["rank", "label", "pages", "section", "score", "why", "citation", "snippet"],
    )


def hits_html(hits: Sequence[Hit], width: int = defaults.DISPLAY_HITS_SNIPPET_CHARS) -> str:
    """HTML list of hits with highlighted snippets (``<mark>``), for notebooks."""
    items = []
    for h in hits:
        snip = escape_html(snippet(h, width, ("\ue000", "\ue001")))
        snip = snip.replace("\ue000", "<mark>").replace("\ue001", "</mark>")
        items.append(
            f"<li><div style='font-size:90%;color:#555'>{escape_html(citation(h))}</div>"
            f"<div style='font-size:85%;color:#777'>{escape_html(h.why)}</div><div>{snip}</div></li>"
        )
    return "<ol style='padding-left:1.2em'>" + "".join(items) + "</ol>"
