"""Document processing: converting source files (PDF) into :class:`~hepwb.types.Document` records."""

from __future__ import annotations

from hepwb.processing.pdf import pdf_to_document

__all__ = ["pdf_to_document"]
