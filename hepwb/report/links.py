"""What the report links to and names: glossary terms, its sources in one line each, papers' short titles.

A report travels: it is sent to colleagues who have neither this checkout nor its built docs. Its terms are
therefore defined inside it (the report's key carries each definition, read from ``docs/glossary.md``) and
its term links land there; only when a hosted copy of the documentation is named (``$HEPWB_DOCS_URL`` or
:data:`hepwb.defaults.DOCS_URL`) do they point at that site's glossary instead. Never at a local build. A
glossary term's anchor is the one Sphinx gives it (``term-found-k`` for *found@k*), in the report as on the
site; ``tests/unit/test_report_links.py`` checks that each term is in ``docs/glossary.md``.

Example:
    >>> glossary_anchor("found@k"), glossary_anchor("Chroma's evaluation"), glossary_anchor("95 % interval")
    ('term-found-k', 'term-Chroma-s-evaluation', 'term-95-interval')
    >>> short_title("Measurement of the Beam-Spin Azimuthal Asymmetry Associated with Deeply-Virtual Compton")
    'Measurement of the Beam-Spin Azimuthal Asymmetry…'
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.catalog import Catalog
from hepwb.paths import find_project_root
from hepwb.text.plaintext import escape_html

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DOCS_ENV",
    "HEADER_TERMS",
    "SOURCES",
    "TERMS",
    "about_html",
    "docs_base",
    "docs_url",
    "glossary_anchor",
    "glossary_definitions",
    "insert_titles",
    "paper_titles",
    "short_title",
    "term_link",
]

DOCS_ENV = "HEPWB_DOCS_URL"
"""The environment variable naming a hosted copy of the documentation (its base URL)."""

TERMS = (
    "found@k",
    "recall@k",
    "MRR@k",
    "nDCG@k",
    "relevant chunk",
    "evidence quote",
    "unscored question",
    "chunker",
    "chunk size",
    "overlap",
    "chunk set",
    "retriever",
    "sweep",
    "cell",
    "catalog",
    "verdict",
    "recommended",
    "95 % interval",
    "paired permutation test",
    "Holm",
    "detectable",
    "small sample",
    "HEPilot",
    "Chroma's evaluation",
)
"""The glossary terms the report uses, in the order its first screen lists them."""

HEADER_TERMS = {
    "found@5": "found@k",
    "95 % interval": "95 % interval",
    "p (Holm)": "Holm",
    "detectable": "detectable",
    "verdict": "verdict",
}
"""Column headers of the verdict table and the glossary term each links to."""

SOURCES = {
    "HEPilot": (
        "HEPilot",
        "the HEPilot Data Acquisition and Preparation Specification for RAG, a standard layout for HEP "
        "papers prepared for retrieval (markdown chunks beside JSON metadata) and its chunking algorithm: "
        "every chunk set here is written in it, and the hepilot chunker is that algorithm.",
    ),
    "Chroma": (
        "Chroma's evaluation",
        "Chroma's study Evaluating Chunking Strategies for Retrieval (2024): five non-physics corpora with "
        "472 questions (469 scored by hepwb: 3 quote only table cells that stand in several places), and the "
        "character-level span metrics (span recall, IoU, precision Ω) reported here.",
    ),
}
"""Each source the report names: its glossary term and one line saying what it is."""

_NON_ID = re.compile(r"[^a-zA-Z0-9._]+")


def docs_base() -> str:
    """A hosted documentation's base URL, ending in ``/`` (``$HEPWB_DOCS_URL``, DOCS_URL), or ``""``: none."""
    base = os.environ.get(DOCS_ENV) or defaults.DOCS_URL
    return "" if not base else base if base.endswith("/") else base + "/"


def docs_url(page: str, anchor: str = "") -> str:
    """The URL of a documentation page (``"glossary"``, ``"explanations/choosing"``), at ``anchor``.

    Without a hosted copy a glossary link is the anchor inside the report itself (its key defines the term),
    and another page is ``""`` (the report names it as a file of the hepwb repository instead).

    Example:
        >>> import os
        >>> os.environ.pop(DOCS_ENV, None) and None
        >>> docs_url("glossary", "term-Holm"), docs_url("explanations/choosing")
        ('#term-Holm', '')
    """
    base = docs_base()
    if not base:
        return f"#{anchor}" if page == "glossary" and anchor else ""
    return f"{base}{page}.html" + (f"#{anchor}" if anchor else "")


def glossary_definitions(terms: tuple[str, ...] = TERMS) -> dict[str, str]:
    """Each of ``terms`` with its definition in ``docs/glossary.md`` as plain text (``{}`` without the docs).

    MyST roles are reduced to their text (``{term}`relevant chunk``` → *relevant chunk*).
    """
    where = (Path(__file__).resolve().parents[2], find_project_root())  # hepwb's checkout, then the project's
    path = next((p for p in (w / "docs" / "glossary.md" for w in where) if p.is_file()), None)
    if path is None:
        return {}
    block = re.search(r"```\{glossary\}\n(.*?)\n```", path.read_text(encoding="utf-8"), re.S)
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (block.group(1) if block else "").splitlines():
        if line.strip() and not line[0].isspace():
            current = found.setdefault(line.strip(), [])
        elif current is not None and line.strip():
            current.append(line.strip())
    role = re.compile(r"\{(?:term|doc|ref)\}`([^`<]*?)(?:\s*<[^>]*>)?`")
    return {
        t: role.sub(lambda m: m.group(1), " ".join(found[t])).replace("`", "") for t in terms if t in found
    }


def glossary_anchor(term: str) -> str:
    """The HTML id Sphinx gives a glossary term (``term-`` and the term, other characters as ``-``)."""
    return _NON_ID.sub("-", f"term-{' '.join(term.split())}").rstrip("-")


def term_link(term: str, text: str | None = None) -> str:
    """An HTML link from ``text`` (default the term) to the term's definition in the glossary."""
    href = docs_url("glossary", glossary_anchor(term))
    return f'<a href="{escape_html(href)}" class="hw-term">{escape_html(text or term)}</a>'


def about_html(terms: tuple[str, ...] = TERMS) -> str:
    """The report's key: every term it uses with its definition (or linked to a hosted glossary), its sources.

    Self-contained unless a hosted documentation is named: the definitions travel with the report.
    """
    links = " · ".join(term_link(t) for t in terms)
    sources = "".join(
        f"<li>{term_link(term, name)}: {escape_html(line)}</li>" for name, (term, line) in SOURCES.items()
    )
    choosing = docs_url("explanations/choosing")
    question = "which chunking and retriever should I use, and how sure is that?"
    read = (
        f'<a href="{escape_html(choosing)}">{question}</a>'
        if choosing
        else f"{question} (docs/explanations/choosing.md in the hepwb repository)"
    )
    defined = ""
    if not docs_base():
        items = "".join(
            f'<dt id="{glossary_anchor(t)}">{escape_html(t)}</dt><dd>{escape_html(text)}</dd>'
            for t, text in glossary_definitions(terms).items()
        )
        defined = f'<details><summary>Definitions</summary><dl class="hw-glossary">{items}</dl></details>'
    return (
        f'<div class="hw-about"><p><b>Terms</b> (each links to its definition): {links}.</p>{defined}'
        f"<p><b>Sources</b></p><ul>{sources}</ul><p>How to read this report: {read}</p></div>"
    )


def short_title(title: str, limit: int = defaults.DISPLAY_TITLE_CHARS) -> str:
    """A paper's title cut at a word boundary within ``limit`` characters, with ``…`` when cut."""
    title = " ".join(title.split())
    if len(title) <= limit:
        return title
    cut = title[:limit].rsplit(" ", 1)[0].rstrip(" ,;:-–")
    return cut + "…"


def paper_titles(catalog: Catalog) -> dict[str, str]:
    """Each paper label of the catalog (``P01``) with its short title (empty when the paper has none)."""
    rows = catalog.sql("SELECT label, any_value(title) AS title FROM documents GROUP BY label")
    return {
        str(r["label"]): short_title(r["title"]) if isinstance(r["title"], str) else ""  # NULL: no title
        for r in rows.to_dict("records")
    }


def insert_titles(frame: pd.DataFrame, column: str, titles: dict[str, str]) -> None:
    """Insert a ``title`` text column right after ``column``: each paper label's title, empty when unknown.

    Labels the catalog does not know give an empty title, never a missing value (so the column stays text
    even when no label is known).

    Example:
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"paper": ["P01", "P09"], "mean": [0.5, 0.25]})
        >>> insert_titles(frame, "paper", {"P01": "HERMES DVCS"})
        >>> frame.to_dict("list")
        {'paper': ['P01', 'P09'], 'title': ['HERMES DVCS', ''], 'mean': [0.5, 0.25]}
        >>> empty = pd.DataFrame({"paper": ["P01"]})
        >>> insert_titles(empty, "paper", {})
        >>> empty["title"].tolist()
        ['']
    """
    names = [titles.get(str(label), "") for label in frame[column]]
    frame.insert(list(frame.columns).index(column) + 1, "title", names)
