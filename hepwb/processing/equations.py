"""Display equations of a PDF conversion matched to the LaTeX of the paper's source.

A PDF gives display math as Unicode text (``σ = A + B (1)``); the LaTeX source has it exactly.
When a paper's LaTeX source is at hand but is not used for the conversion (it converts, but it is
another version of the text), each display-math block of the PDF conversion is matched to the
source's display equation with the most similar key (LaTeX commands removed, then the evidence
key: only ``[a-z0-9]``); a match at :data:`MIN_SIMILARITY` or better gives the block its LaTeX.
The markdown is unchanged (offsets and evidence stay as they are); the LaTeX is recorded in
``meta["math"]`` beside every block's offsets, number and form.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> pdf = markdown_document("Text.\\n\\n$$\\nσ = A + B + C² (1)\\n$$", "P01")
    >>> tex = markdown_document("Text.\\n\\n$$\\n\\\\sigma = A + B + C^2\\n$$", "P01")
    >>> [(m["number"], m["form"], m["latex"]) for m in math_records(pdf, tex)]
    [('1', 'latex', '\\\\sigma = A + B + C^2')]
"""

from __future__ import annotations

import difflib
import re

from hepwb.text.textkey import key
from hepwb.types import Document, JSONObject

__all__ = ["MIN_SIMILARITY", "latex_key", "math_records", "math_summary"]

MIN_SIMILARITY = 0.8
"""Key similarity (difflib ratio) a PDF equation needs with a source equation to take its LaTeX."""

_CMD = re.compile(r"\\(?:begin|end|label|tag|ref|eqref|nonumber|notag)\b\*?(?:\{[^{}]*\})?|\\[A-Za-z]+|\\.")
_NUMBER = re.compile(r"\(\s*([A-Z]?\d{1,3}(?:\.\d{1,3})?[a-z]?)\s*\)\s*$")
_MIN_KEY = 4


def latex_key(tex: str) -> str:
    r"""The evidence key of LaTeX math with its commands removed (``\frac{a}{b}`` -> ``ab``).

    Example:
        >>> latex_key(r"\begin{equation} \mathcal{L} = \frac{1}{2}\partial_\mu \label{eq:l} \end{equation}")
        'l12'
    """
    return key(_CMD.sub(" ", tex))


def _body(text: str) -> str:
    return text.strip().removeprefix("$$").removesuffix("$$").strip()


def math_records(doc: Document, source: Document | None = None) -> list[JSONObject]:
    """One record per display-math block: offsets, page, number, ``form`` and the LaTeX when known.

    ``form`` is ``latex`` when the block is LaTeX (a LaTeX conversion) or was matched to the
    source's LaTeX, else ``unicode``.
    """
    latex_doc = doc.meta.get("source_format") == "latex"
    candidates: list[tuple[str, str]] = []
    if source is not None:
        for b in source.blocks:
            if b.kind == "math":
                tex = _body(source.block_text(b))
                candidates.append((latex_key(tex), tex))
    out: list[JSONObject] = []
    used: set[int] = set()
    for b in doc.blocks:
        if b.kind != "math":
            continue
        body = _body(doc.block_text(b))
        m = _NUMBER.search(body)
        number = m.group(1) if m and not latex_doc else None
        rec: JSONObject = {
            "start": b.start,
            "end": b.end,
            "page": b.page,
            "number": number,
            "form": "latex" if latex_doc else "unicode",
            "latex": body if latex_doc else None,
        }
        if not latex_doc and candidates:
            k = key(_NUMBER.sub("", body))
            best, score = -1, 0.0
            if len(k) >= _MIN_KEY:
                for i, (ck, _) in enumerate(candidates):
                    if i in used or not ck:
                        continue
                    sm = difflib.SequenceMatcher(None, k, ck, autojunk=False)
                    if sm.real_quick_ratio() < MIN_SIMILARITY or sm.quick_ratio() < MIN_SIMILARITY:
                        continue
                    r = sm.ratio()
                    if r > score:
                        best, score = i, r
            if best >= 0 and score >= MIN_SIMILARITY:
                used.add(best)
                rec.update(form="latex", latex=candidates[best][1], similarity=round(score, 3))
        out.append(rec)
    return out


def math_summary(records: list[JSONObject]) -> JSONObject:
    """Counts of display equations by form, and of numbered ones.

    Example:
        >>> math_summary([{"form": "latex", "number": "1"}, {"form": "unicode", "number": None}])
        {'blocks': 2, 'latex': 1, 'unicode': 1, 'numbered': 1}
    """
    return {
        "blocks": len(records),
        "latex": sum(1 for r in records if r["form"] == "latex"),
        "unicode": sum(1 for r in records if r["form"] == "unicode"),
        "numbered": sum(1 for r in records if r.get("number")),
    }
