"""Interactive views for notebooks: HTML builders and ipywidgets, testable without a browser."""

from __future__ import annotations

from hepwb.viz.document_view import KIND_COLOURS, DocumentBrowser, page_image_png, page_view_html

__all__ = ["KIND_COLOURS", "DocumentBrowser", "page_image_png", "page_view_html"]


def __dir__() -> list[str]:
    return __all__
