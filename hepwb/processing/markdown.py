"""Split CommonMark text into blocks with exact offsets.

Display math (``$$ … $$`` and LaTeX math environments), fenced code and GFM tables become atomic
blocks; headings keep their level; everything else is a paragraph separated by blank lines.

Example:
    >>> text = "# Intro\\n\\nSome text.\\n\\n$$\\na = b\\n$$\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |"
    >>> [(b.kind, text[b.start:b.end][:7]) for b in parse_blocks(text)]
    [('heading', '# Intro'), ('text', 'Some te'), ('math', '$$\\na = '), ('table', '| a | b')]
"""

from __future__ import annotations

import re

from hepwb.processing.links import annotate
from hepwb.text.ids import content_uuid, text_sha256
from hepwb.types import Block, BlockKind, Document

__all__ = ["markdown_document", "parse_blocks"]

_HEADING = re.compile(r"^(#{1,6})\s+\S")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_MATH_ENV = re.compile(r"^\s*\\begin\{(equation|align|gather|multline|eqnarray|displaymath)(\*?)\}")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CAPTION = re.compile(r"^(\*\*)?(Figure|Fig\.|Table)\s+[A-Z]?\d+[a-z]?\*{0,2}\s*[.:|]", re.IGNORECASE)
_LIST = re.compile(r"^\s*([-*+]|\d+[.)])\s+")


def _line_spans(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        spans.append((pos, pos + len(body)))
        pos += len(line)
    return spans


def parse_blocks(text: str, page: int = 1) -> list[Block]:
    """Return the blocks of ``text`` in order; ``text[b.start:b.end]`` is each block's exact text.

    Args:
        text: CommonMark markdown.
        page: Page number given to every block (markdown has no pages).
    """
    spans = _line_spans(text)
    lines = [text[a:b] for a, b in spans]
    blocks: list[Block] = []
    i, n = 0, len(lines)

    def add(kind: BlockKind, first: int, last: int, level: int = 0) -> None:
        start, end = spans[first][0], spans[last][1]
        # trim trailing blank characters so the span ends on content
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            blocks.append(Block(kind=kind, start=start, end=end, page=page, level=level, page_end=page))

    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if m := _FENCE.match(line):
            fence = m.group(1)
            j = i + 1
            while j < n and not lines[j].strip().startswith(fence):
                j += 1
            add("code", i, min(j, n - 1))
            i = j + 1
            continue
        stripped = line.strip()
        if stripped.startswith("$$"):
            j = i
            if not (len(stripped) > 2 and stripped.endswith("$$") and len(stripped) >= 4):
                j = i + 1
                while j < n and "$$" not in lines[j]:
                    j += 1
            add("math", i, min(j, n - 1))
            i = j + 1
            continue
        if m := _MATH_ENV.match(line):
            end_pat = "\\end{" + m.group(1) + m.group(2) + "}"
            j = i
            while j < n and end_pat not in lines[j]:
                j += 1
            add("math", i, min(j, n - 1))
            i = j + 1
            continue
        if m := _HEADING.match(line):
            add("heading", i, i, level=len(m.group(1)))
            i += 1
            continue
        if stripped.startswith("|") and i + 1 < n and _TABLE_SEP.match(lines[i + 1]):
            j = i + 2
            while j < n and lines[j].strip().startswith("|"):
                j += 1
            add("table", i, j - 1)
            i = j
            continue
        j = i
        while j + 1 < n and lines[j + 1].strip() and not _starts_special(lines, j + 1):
            j += 1
        kind: BlockKind = "caption" if _CAPTION.match(stripped) else "list" if _LIST.match(line) else "text"
        add(kind, i, j)
        i = j + 1
    return blocks


def _starts_special(lines: list[str], k: int) -> bool:
    line = lines[k]
    s = line.strip()
    if _FENCE.match(line) or s.startswith("$$") or _MATH_ENV.match(line) or _HEADING.match(line):
        return True
    return s.startswith("|") and k + 1 < len(lines) and bool(_TABLE_SEP.match(lines[k + 1]))


def markdown_document(text: str, label: str, *, meta: dict[str, object] | None = None) -> Document:
    """Build a :class:`Document` from markdown text (ID derived from the text's hash).

    Without a ``title`` in ``meta`` the first level-1 heading is the title.

    Example:
        >>> doc = markdown_document("# T\\n\\nBody.", "S01")
        >>> [b.kind for b in doc.blocks], doc.label, doc.title
        (['heading', 'text'], 'S01', 'T')
    """
    blocks = tuple(parse_blocks(text))
    info = dict(meta or {})
    if not info.get("title"):
        h1 = next((b for b in blocks if b.kind == "heading" and b.level == 1), None)
        if h1 is not None and text[h1.start : h1.end].lstrip("#").strip():
            info["title"] = text[h1.start : h1.end].lstrip("#").strip()
    doc = Document(
        document_id=content_uuid("document", text_sha256(text)),
        label=label,
        markdown=text,
        blocks=blocks,
        meta=info,
    )
    return annotate(doc)
