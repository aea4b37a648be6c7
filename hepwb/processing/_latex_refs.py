"""Bibliography handling for :mod:`hepwb.processing.latex`: entries cut out of pandoc's output, CSL-JSON.

``\\bibitem`` entries travel through pandoc between ``HEPWBREFnnnnn`` marker paragraphs (so their
LaTeX is converted with the document's macros) and are moved here to the end of the document; ``.bib``
databases are converted by pandoc (``-f bibtex -t csljson``) and rendered as short text lines.

Example:
    >>> csl_text({"author": [{"family": "Cranmer", "given": "Kyle"}], "title": "pyhf",
    ...           "container-title": "JOSS", "volume": "6", "issued": {"date-parts": [[2021]]}})
    'K. Cranmer, pyhf, JOSS 6 (2021)'
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from hepwb import defaults
from hepwb.processing._latex_source import BibEntry
from hepwb.types import JSONObject

__all__ = ["bib_to_csl", "csl_text", "entry_csl", "split_references"]

_MARK = re.compile(r"^HEPWBREF(\d{5}|END)[ \t]*$", re.M)
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s,;{}\]]+)")
_URL = re.compile(r"https?://[^\s{}\]]+")
_EMPH = re.compile(r"(?<![*\w])\*{1,2}([^*]+?)\*{1,2}(?![*\w])")
_YEAR = re.compile(r"\((?:[^()]*\s)?((?:19|20)\d\d)\)|\b((?:19|20)\d\d)\b")


def split_references(md: str, items: list[BibEntry]) -> tuple[str, list[tuple[BibEntry, str, list[str]]]]:
    """Cut the marked bibliography out of pandoc's markdown.

    Args:
        md: Pandoc output holding ``HEPWBREFnnnnn`` / ``HEPWBREFEND`` marker lines.
        items: The entries whose markers were placed in the LaTeX, by marker number.

    Returns:
        The markdown without bibliography and, per entry that reached the output, the entry, its
        one-line markdown text and its ``\\newblock`` parts.
    """
    by_marker = {e.marker: e for e in items}
    marks = list(_MARK.finditer(md))
    entries: list[tuple[BibEntry, str, list[str]]] = []
    keep: list[str] = []
    pos = 0
    in_list = False
    for j, m in enumerate(marks):
        if not in_list:
            keep.append(md[pos : m.start()])
        in_list = m.group(1) != "END"
        pos = m.end()
        if m.group(1) == "END":
            continue
        nxt = marks[j + 1].start() if j + 1 < len(marks) else len(md)
        raw = md[m.end() : nxt]
        parts = [" ".join(p.split()) for p in raw.split("HEPWBNB")]
        text = " ".join(p for p in parts if p)
        entry = by_marker.get(f"HEPWBREF{m.group(1)}")
        if entry is not None and text:
            entries.append((entry, text, [p for p in parts if p]))
    keep.append(md[pos:] if not in_list else "")
    return "".join(keep), entries


def _names(names: list[JSONObject]) -> list[str]:
    out = []
    for a in names:
        if a.get("literal"):
            out.append(str(a["literal"]))
            continue
        given = " ".join(f"{g[0]}." for g in re.split(r"[\s.]+", str(a.get("given", ""))) if g)
        out.append(" ".join(x for x in (given, str(a.get("family", ""))) if x))
    return out


def csl_text(item: JSONObject) -> str:
    """A one-line, HEP-style rendering of a CSL-JSON item (authors, title, journal volume (year) page)."""
    names = [n for n in _names(item.get("author") or item.get("editor") or []) if n != "others"]
    etal = len(names) > 5 or any(a.get("literal") == "others" for a in item.get("author") or [])
    authors = (names[0] if len(names) > 5 else ", ".join(names)) + (" et al." if etal and names else "")
    year = ""
    parts_ = (item.get("issued") or {}).get("date-parts") or [[]]
    if parts_ and parts_[0]:
        year = f"({parts_[0][0]})"
    venue = " ".join(
        str(x)
        for x in (
            item.get("container-title") or item.get("publisher") or item.get("genre"),
            item.get("volume"),
        )
        if x
    )
    venue = " ".join(x for x in (venue, year, str(item.get("page") or "")) if x)
    link = f"doi:{item['DOI']}" if item.get("DOI") else str(item.get("URL") or "")
    fields = (authors, str(item.get("title") or ""), venue, link)
    return ", ".join(" ".join(f.split()) for f in fields if f and f.strip())


def bib_to_csl(
    paths: list[Path], pandoc: str, warnings: list[str], timeout: float = defaults.BIBTEX_TIMEOUT_S
) -> list[JSONObject]:
    """Convert ``.bib`` files to CSL-JSON items with pandoc (sandboxed, offline); problems become warnings."""
    items: list[JSONObject] = []
    for p in paths:
        try:
            res = subprocess.run(
                [pandoc, "--sandbox", "-f", "bibtex", "-t", "csljson", p.name],
                cwd=p.parent,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
            data = json.loads(res.stdout.decode("utf-8")) if res.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
            warnings.append(f"could not read bibliography {p.name}: {exc}")
            continue
        if data is None:
            err = res.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
            warnings.append(f"could not read bibliography {p.name}: {' '.join(err)}")
            continue
        items.extend(d for d in data if isinstance(d, dict) and d.get("id"))
    return items


def entry_csl(entry: BibEntry, text: str, parts: list[str]) -> JSONObject:
    """CSL-JSON for one ``\\bibitem``: id, type, note (its text) and what simple parsing finds.

    Example:
        >>> e = BibEntry("k", r"A. B, \\emph{Nice title here}, \\url{https://doi.org/10.1000/x} (2020)", "m")
        >>> c = entry_csl(e, "A. B, *Nice title here*, https://doi.org/10.1000/x (2020)", [])
        >>> c["title"], c["DOI"], c["issued"], c["author"]
        ('Nice title here', '10.1000/x', {'date-parts': [[2020]]}, [{'literal': 'A. B'}])
    """
    csl: JSONObject = {"id": entry.key, "type": "article", "note": text}
    author_txt = title = ""
    if len(parts) >= 2:
        author_txt, title = parts[0], parts[1]
    elif (m := _EMPH.search(text)) and len(m.group(1).split()) >= 3:
        author_txt, title = text[: m.start()], m.group(1)
    if title:
        csl["title"] = title.strip().strip(".,").strip("{}")
    names = [n.strip(" .,") for n in re.split(r",|\band\b", author_txt) if n.strip(" .,")]
    if names and len(author_txt) < 300:
        csl["author"] = [{"literal": n} for n in names]
    if m := _DOI.search(entry.tex):
        csl["DOI"] = m.group(1).rstrip(".")
    if m := _URL.search(entry.tex):
        csl["URL"] = m.group(0).rstrip(".")
    years = [int(a or b) for a, b in _YEAR.findall(text)]
    if years:
        csl["issued"] = {"date-parts": [[years[0]]]}
    return csl
