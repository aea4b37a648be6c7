"""Which converter a corpus file gets: its LaTeX source when that is the source of the PDF, else the PDF.

A LaTeX source is found through the sidecar metadata: an entry's ``"tex"`` names a folder under
``tex/`` beside ``papers.json`` (the layout of ``../shared/corpus/papers``). It is used only when its
text agrees with the PDF: at least ``MIN_AGREEMENT`` of the PDF's prose (24-character pieces of its
``check_quotes`` key) must occur in the converted source. A draft source that differs from the
published PDF would otherwise lose text the PDF has (and that evidence quotes cite). When the source
disagrees or fails to convert, the PDF is used and the reason is recorded as a conversion warning.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from hepwb import limits
from hepwb.acquisition.folder import label_of
from hepwb.exceptions import ConfigError, ProcessingError
from hepwb.files.readers import FileTooLargeError, ReadError, read_bytes
from hepwb.limits import MAX_TEXT_FILE_BYTES
from hepwb.processing import pdf_to_document
from hepwb.processing.equations import math_records, math_summary
from hepwb.processing.latex import latex_to_document
from hepwb.processing.markdown import markdown_document
from hepwb.text.plaintext import plain
from hepwb.text.textkey import key
from hepwb.types import Document, JSONObject

__all__ = [
    "MIN_AGREEMENT",
    "convert",
    "latex_folder",
    "source_key",
    "substitution_line",
    "substitutions",
    "text_agreement",
    "text_too_large",
]

MIN_AGREEMENT = 0.9
_PIECE = 24


def latex_folder(meta: JSONObject) -> Path | None:
    """The LaTeX source folder recorded for a paper (``meta["tex_dir"]``), if it exists."""
    tex = meta.get("tex_dir")
    return Path(tex) if tex and Path(tex).is_dir() else None


def _tree_sha256(folder: Path) -> str:
    """The SHA-256 of a LaTeX source folder (its regular files' names and bytes), within bounds.

    At most :data:`~hepwb.limits.MAX_TEX_FILES` files and :data:`~hepwb.limits.MAX_TEX_BYTES` bytes are
    read: a folder beyond them is no paper's source (a :class:`ConfigError` names it).
    """
    h = hashlib.sha256()
    files, size = [], 0
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            files.append(p)
            size += p.stat().st_size
        if len(files) > limits.MAX_TEX_FILES or size > limits.MAX_TEX_BYTES:
            msg = (
                f"LaTeX source folder {plain(str(folder))} holds more than {limits.MAX_TEX_FILES:,} files or "
                f"{limits.MAX_TEX_BYTES:,} bytes: not a paper's source; point 'tex' in papers.json at it"
            )
            raise ConfigError(msg)
    for f in sorted(files):
        h.update(f.relative_to(folder).as_posix().encode())
        try:
            with f.open("rb") as fh:  # a block at a time: a source folder may hold large figures
                while block := fh.read(1 << 20):
                    h.update(block)
        except OSError as exc:
            msg = (
                f"LaTeX source file {plain(str(f))} cannot be read ({exc.strerror or exc}); fix or remove it"
            )
            raise ConfigError(msg) from None
    return h.hexdigest()


def text_too_large(path: Path) -> str | None:
    """Why the corpus text file ``path`` (a ``.md`` paper) is too large to read, or ``None``.

    Text is read whole, so a ``.md`` file over :data:`~hepwb.limits.MAX_TEXT_FILE_BYTES` is skipped before
    it is hashed or read (a PDF is read a page at a time and has no such cap).

    Raises:
        OSError: ``path`` cannot be examined.
    """
    size = path.stat().st_size
    if path.suffix.lower() != ".md" or size <= MAX_TEXT_FILE_BYTES:
        return None
    return (
        f"{path} has {size:,} bytes ({size / 1e6:,.0f} MB), more than the {MAX_TEXT_FILE_BYTES:,} a "
        "markdown paper may have (limits.MAX_TEXT_FILE_BYTES): is it the right file? Split it or remove it "
        "from the corpus"
    )


def source_key(path: Path, meta: JSONObject, prefer_latex: bool) -> str:
    """Cache-key part naming the converter input: ``pdf``/``md``, or ``tex-<hash of the LaTeX tree>``."""
    tex = latex_folder(meta) if prefer_latex and path.suffix.lower() == ".pdf" else None
    return f"tex{_tree_sha256(tex)[:10]}" if tex else path.suffix.lower().lstrip(".")


def text_agreement(markdown: str, pdf: Path) -> float:
    """Share of the PDF's prose (24-char key pieces of sentences of >= 60 key chars) found in ``markdown``."""
    import re

    import pymupdf

    with pymupdf.open(str(pdf)) as d:
        text = " ".join(page.get_text() for page in d)
    sentences = [key(s) for s in re.split(r"(?<=[.!?])\s+", text.replace("\n", " "))]
    pieces = [s[i : i + _PIECE] for s in sentences if len(s) >= 60 for i in range(0, len(s) - _PIECE, _PIECE)]
    if not pieces:
        return 0.0
    target = key(markdown)
    return sum(p in target for p in pieces) / len(pieces)


def substitutions(doc: Document) -> list[str]:
    """What ``doc`` was converted from instead of the source its metadata names (changing what is measured).

    Today: its PDF instead of its LaTeX source (the source failed, or it is another version of the paper).

    Example:
        >>> d = Document("d", "P07", "", [], {"conversion_warnings": [
        ...     "LaTeX source /t/P07 not used: it agrees with the PDF on 69% of the prose (< 80%), so it is "
        ...     "probably another version of the paper", "3 figures without caption"]})
        >>> substitutions(d)
        ['P07: converted from its PDF: LaTeX source /t/P07 not used: it agrees with the PDF on 69% of the \
prose (< 80%), so it is probably another version of the paper']
    """
    return [
        f"{doc.label}: converted from its PDF: {w}"
        for w in doc.meta.get("conversion_warnings", [])
        if isinstance(w, str) and w.startswith("LaTeX source ") and " not used" in w
    ]


def substitution_line(docs: Iterable[Document]) -> str | None:
    """One line naming every paper converted from another source than named (``None``: there is none).

    Example:
        >>> w = "LaTeX source /t/P24 not used: it agrees with the PDF on 79% of the prose (< 90%), so …"
        >>> print(substitution_line([Document("d", "P24", "", [], {"conversion_warnings": [w]})]))
        1 paper(s) converted from their PDF, not the LaTeX source papers.json names (it failed, or agrees \
with the PDF on too little of the prose: another version), so the PDF's text is what is measured: P24 (79%)
    """
    found = []
    for d in docs:
        for w in substitutions(d):
            share = re.search(r"agrees with the PDF on (\d+%)", w)
            found.append(f"{d.label} ({share.group(1) if share else 'failed'})")
    if not found:
        return None
    return (
        f"{len(found)} paper(s) converted from their PDF, not the LaTeX source papers.json names (it failed, "
        "or agrees with the PDF on too little of the prose: another version), so the PDF's text is what is "
        f"measured: {', '.join(found)}"
    )


def _with_warning(doc: Document, warning: str) -> Document:
    warnings = [*doc.meta.get("conversion_warnings", []), warning]
    return Document(
        doc.document_id, doc.label, doc.markdown, doc.blocks, {**doc.meta, "conversion_warnings": warnings}
    )


def _with_source_math(doc: Document, source: Document) -> Document:
    """``doc`` with its display equations matched to the LaTeX of ``source`` (another version of it)."""
    math = math_records(doc, source)
    meta = {**doc.meta, "math": math, "math_summary": math_summary(math)}
    return Document(doc.document_id, doc.label, doc.markdown, doc.blocks, meta)


def convert(path: Path, meta: JSONObject, *, prefer_latex: bool = True) -> Document:
    """Convert one corpus file (see the module docstring for the choice of converter)."""
    label = str(meta.get("pid") or label_of(path))
    if path.suffix.lower() == ".md":
        fix = "split it or remove it from the corpus"
        try:  # the bounded reader: a regular file, at most MAX_TEXT_FILE_BYTES even if it grows meanwhile
            data = read_bytes(path, "markdown paper", max_bytes=MAX_TEXT_FILE_BYTES, fix=fix)
        except ReadError as exc:
            code = "PROC_TOO_LARGE" if isinstance(exc, FileTooLargeError) else "PROC_IO"
            raise ProcessingError(str(exc), code=code, path=str(path)) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"{path} is not UTF-8 text ({exc}); re-save it as UTF-8"
            raise ProcessingError(msg, code="PROC_BAD_ENCODING", path=str(path)) from None
        return markdown_document(text, label, meta={"source_file": str(path), **meta})
    tex = latex_folder(meta) if prefer_latex else None
    if tex is None:
        return pdf_to_document(path, label=label, meta=meta)

    try:
        doc = latex_to_document(tex, label=label, meta=meta, pdf=path)
    except ProcessingError as exc:
        return _with_warning(
            pdf_to_document(path, label=label, meta=meta), f"LaTeX source {tex} not used ({exc.code}: {exc})"
        )
    agreement = text_agreement(doc.markdown, path)
    if agreement < MIN_AGREEMENT:
        return _with_warning(
            _with_source_math(pdf_to_document(path, label=label, meta=meta), doc),
            f"LaTeX source {tex} not used: it agrees with the PDF on {agreement:.0%} of the prose "
            f"(< {MIN_AGREEMENT:.0%}), so it is probably another version of the paper",
        )
    meta_used = {**doc.meta, "latex_agreement": round(agreement, 4)}
    return Document(doc.document_id, doc.label, doc.markdown, doc.blocks, meta_used)
