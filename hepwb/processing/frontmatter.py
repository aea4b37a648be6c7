"""Front matter: author and affiliation lists, contact lines, dates and keywords of a paper's first pages.

A collaboration paper opens with pages of names and institutes; chunked as body text they
become chunks that match every query about the experiment and answer none. :func:`mark_front_matter`
turns those blocks into ``front`` blocks (kept in ``full_document.md``, never chunked) and records
what they hold in ``meta["front_matter"]``: title, authors, collaboration, affiliations,
keywords and the abstract's offsets. The abstract stays an ordinary, searchable ``text`` block.

The front region runs from the start of the document to the first section heading (level 2 or
deeper, not *Abstract*), or, in a letter without headings, to the first prose paragraph after
the abstract. Inside it a block is front matter when it is an author list (names and initials,
almost no lowercase words), affiliations (institution words, few lowercase words), a
collaboration line, a contact line (e-mail, corresponding author), a date or submission line,
or a keywords/PACS line.

Example:
    >>> from hepwb.processing.markdown import parse_blocks
    >>> md = ("# A measurement\\n\\nA. Airapetian,31 N. Akopov,31 Z. Akopov,31 M. Amarian,26\\n\\n"
    ...       "(The HERMES Collaboration)\\n\\n1Department of Physics, University of Alberta, Edmonton\\n\\n"
    ...       "The beam-spin asymmetry in hard electroproduction of photons has been measured for the "
    ...       "first time. The data have been accumulated by the HERMES experiment at DESY, in which the "
    ...       "HERA 27.6 GeV positron beam scattered off an unpolarized hydrogen gas target.")
    >>> blocks, front = mark_front_matter(md, parse_blocks(md))
    >>> [b.kind for b in blocks]
    ['heading', 'front', 'front', 'front', 'text']
    >>> front["collaboration"], front["authors"][:2], front["abstract"] is not None
    ('HERMES Collaboration', ['A. Airapetian', 'N. Akopov'], True)
"""

from __future__ import annotations

import re

from hepwb.types import Block, JSONObject

__all__ = ["author_list_like", "document_header", "mark_front_matter"]

_LOWER_OK = frozenset(
    {"and", "van", "von", "der", "den", "de", "di", "da", "del", "dos", "la", "le", "du", "et", "al"}
)
_INSTITUTION = re.compile(
    r"\b(?:Univ|Universit|Institut|Institute|Laborator|Department|Dept\.|Dipartimento|INFN|Physics|College|Cent(?:er|re)"
    r"|Academy|Faculty|School|Sezione|National|Research|Fakultät|Istituto|CERN|DESY|Fermilab|Lab)\w*",
)
_COLLAB = re.compile(r"^\(?(?:the\s+)?([A-Z][\w-]*(?:\s[A-Z][\w-]*)?)\s+collaboration\)?\.?$", re.I)
_CONTACT = re.compile(r"e-?mail|@\w|corresponding author|electronic address", re.I)
_DATED = re.compile(
    r"^(?:\(?dated|received|accepted|submitted|preprint|to be submitted|published|version|draft|issn|desy\s\d"
    r"|cern-|arxiv:)",
    re.I,
)
_KEYWORDS = re.compile(r"^(?:key\s?words?|pacs(?:\snumbers)?|index terms)\s*[:.]?\s*", re.I)
_ABSTRACT = re.compile(r"^(?:#+\s*)?abstract\b\s*[.:—-]?\s*", re.I)
_NAME = re.compile(
    r"(?:[A-Z][a-z]?\.\s?-?){1,3}\s?[A-Z][\w'’-]+(?:\s(?:van|von|de|der|da|di|dos|del|la|le)\s[A-Z]?[\w'’-]+)*"
)
_MAX_SCAN = 60


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-zÀ-ɏ]+", text)


def _lower_share(text: str) -> float:
    words = _words(text)
    if not words:
        return 0.0
    lower = sum(1 for w in words if w.islower() and len(w) >= 3 and w not in _LOWER_OK)
    return lower / len(words)


def author_list_like(text: str) -> str:
    """``"authors"``, ``"affiliations"`` or ``""``: what a paragraph of names or institutes is.

    Example:
        >>> author_list_like("A. Aktas10, V. Andreev26, T. Anthonis4, S. Aplin10, A. Asmone34")
        'authors'
        >>> author_list_like("1 I. Physikalisches Institut der RWTH, Aachen 2 University of Bristol")
        'affiliations'
        >>> author_list_like("The beam-spin asymmetry in hard electroproduction of photons was measured.")
        ''
    """
    if len(_words(text)) < 4:
        return ""
    low = _lower_share(text)
    names = len(_NAME.findall(text))
    institutes = len(_INSTITUTION.findall(text))
    if institutes >= 2 and low < 0.3 and institutes >= names / 3:
        return "affiliations"
    if names >= 3 and low < 0.12 and text.count(",") >= 2:
        return "authors"
    return ""


def _kind_of(text: str) -> str:
    flat = " ".join(text.split())
    if _COLLAB.match(flat):
        return "collaboration"
    if _KEYWORDS.match(flat):
        return "keywords"
    if _CONTACT.search(flat) and (len(flat) < 400 or _lower_share(flat) < 0.25):
        return "contact"
    if _DATED.match(flat) and len(flat) < 160:
        return "dates"
    return author_list_like(flat)


def _is_prose(text: str) -> bool:
    return len(text) >= 200 and _lower_share(text) >= 0.35


def mark_front_matter(markdown: str, blocks: list[Block]) -> tuple[list[Block], JSONObject]:
    """Blocks with the front matter re-kinded ``front``, and what the front matter holds."""
    front: JSONObject = {"title": None, "authors": [], "collaboration": None, "affiliations": [],
                         "keywords": [], "abstract": None, "blocks": 0}  # fmt: skip
    out = list(blocks)
    after_abstract = False
    for i, b in enumerate(out[:_MAX_SCAN]):
        text = markdown[b.start : b.end]
        if b.kind == "heading":
            title = text.lstrip("#").strip()
            if b.level == 1 and front["title"] is None:
                front["title"] = title
            elif _ABSTRACT.match(title):
                after_abstract = True
                continue
            elif b.level >= 2 and not _KEYWORDS.match(title):
                break
            continue
        if b.kind not in ("text", "list"):
            continue
        kind = _kind_of(text)
        if not kind:
            if front["abstract"] is None and (after_abstract or _ABSTRACT.match(text) or _is_prose(text)):
                front["abstract"] = [b.start, b.end]
                after_abstract = False
                continue
            letter = not any(h.kind == "heading" and h.level >= 2 for h in out[i:_MAX_SCAN])
            if front["abstract"] is not None and _is_prose(text) and not _ABSTRACT.match(text) and letter:
                break  # a letter without sections: the body has begun
            continue
        out[i] = Block("front", b.start, b.end, b.page, 0, b.page_end)
        front["blocks"] += 1
        flat = " ".join(text.split())
        if kind == "collaboration" and (m := _COLLAB.match(flat)):
            front["collaboration"] = f"{m.group(1)} Collaboration"
        elif kind == "authors":
            front["authors"].extend(
                n.strip() for n in _NAME.findall(flat) if n.strip() not in front["authors"]
            )
        elif kind == "affiliations":
            front["affiliations"].append([b.start, b.end])
        elif kind == "keywords":
            body = _KEYWORDS.sub("", flat)
            front["keywords"].extend(k.strip(" .") for k in re.split(r"[,;]", body) if k.strip(" ."))
    return out, front


def document_header(meta: JSONObject, label: str = "") -> str:
    """A one-line header a reader can prepend to a retrieved chunk: label, title, authors, year, arXiv id.

    Example:
        >>> document_header({"title": "DVCS at HERA", "authors": "H1 Collaboration", "year": 2005,
        ...                  "arxiv": "hep-ex/0505061"}, "P02")
        'P02: DVCS at HERA. H1 Collaboration (2005). arXiv:hep-ex/0505061'
    """
    fm = meta.get("front_matter") or {}
    title = str(meta.get("title") or fm.get("title") or label)
    authors = meta.get("authors") or fm.get("collaboration") or ", ".join((fm.get("authors") or [])[:3])
    if isinstance(authors, list):
        authors = ", ".join(str(a) for a in authors[:3]) + (" et al." if len(authors) > 3 else "")
    year = meta.get("year") or str(meta.get("published") or "")[:4]
    parts = [f"{label}: {title}." if label else f"{title}."]
    if authors:
        parts.append(f"{authors}" + (f" ({year})." if year else "."))
    if meta.get("arxiv"):
        parts.append(f"arXiv:{meta['arxiv']}")
    return " ".join(parts)
