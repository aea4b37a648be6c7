"""Which converter a corpus file gets: LaTeX source when one is available, else the PDF (or markdown).

A LaTeX source is found through the sidecar metadata: an entry's ``"tex"`` names a folder under
``tex/`` beside ``papers.json`` (the layout of ``../shared/corpus/papers``). When its conversion
fails, the PDF is used and the failure is recorded as a conversion warning.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hepwb.exceptions import ProcessingError
from hepwb.types import Document

__all__ = ["convert", "label_of", "latex_folder", "source_key"]


def label_of(path: Path) -> str:
    """A file's label: its name up to the first ``_`` (``P01_hep-ex_0106068.pdf`` → ``P01``)."""
    return path.stem.split("_", 1)[0]


def latex_folder(meta: dict[str, Any]) -> Path | None:
    """The LaTeX source folder recorded for a paper (``meta["tex_dir"]``), if it exists."""
    tex = meta.get("tex_dir")
    return Path(tex) if tex and Path(tex).is_dir() else None


def _tree_sha256(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        h.update(f.relative_to(folder).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def source_key(path: Path, meta: dict[str, Any], prefer_latex: bool) -> str:
    """Cache-key part naming the converter input: ``pdf``/``md``, or ``tex-<hash of the LaTeX tree>``."""
    tex = latex_folder(meta) if prefer_latex and path.suffix.lower() == ".pdf" else None
    return f"tex{_tree_sha256(tex)[:10]}" if tex else path.suffix.lower().lstrip(".")


def convert(path: Path, meta: dict[str, Any], *, prefer_latex: bool = True) -> Document:
    """Convert one corpus file (see the module docstring for the choice of converter)."""
    from hepwb.processing import pdf_to_document
    from hepwb.processing.markdown import markdown_document

    label = str(meta.get("pid") or label_of(path))
    if path.suffix.lower() == ".md":
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            msg = f"{path} is not UTF-8 text ({exc}); re-save it as UTF-8"
            raise ProcessingError(msg, code="PROC_BAD_ENCODING", path=str(path)) from None
        return markdown_document(text, label, meta={"source_file": str(path), **meta})
    tex = latex_folder(meta) if prefer_latex else None
    if tex is not None:
        from hepwb.processing.latex import latex_to_document

        try:
            return latex_to_document(tex, label=label, meta=meta, pdf=path)
        except ProcessingError as exc:
            doc = pdf_to_document(path, label=label, meta=meta)
            warnings = [
                *doc.meta.get("conversion_warnings", []),
                f"LaTeX source not used ({exc.code}: {exc})",
            ]
            return Document(
                doc.document_id,
                doc.label,
                doc.markdown,
                doc.blocks,
                {**doc.meta, "conversion_warnings": warnings},
            )
    return pdf_to_document(path, label=label, meta=meta)
