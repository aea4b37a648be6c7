"""Document processing: PDF and LaTeX sources (and markdown) into :class:`~hepwb.types.Document` records."""

from __future__ import annotations

from hepwb.processing.latex import find_main_tex, latex_to_document
from hepwb.processing.markdown import markdown_document, parse_blocks
from hepwb.processing.pdf import pdf_to_document

__all__ = ["find_main_tex", "latex_to_document", "markdown_document", "parse_blocks", "pdf_to_document"]


def __dir__() -> list[str]:
    return __all__
