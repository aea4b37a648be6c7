"""Interactive views for notebooks: HTML builders and ipywidgets, testable without a browser."""

from __future__ import annotations

from hepwb.viz.chunk_explorer import ChunkExplorer
from hepwb.viz.chunk_view import CHUNK_COLOURS, OVERLAP_STYLE, chunks_html, token_histogram
from hepwb.viz.document_view import (
    KIND_COLOURS,
    DocumentBrowser,
    figures_html,
    page_image_png,
    page_view_html,
)
from hepwb.viz.search_explorer import SearchExplorer, side_by_side_html
from hepwb.viz.size_explorer import SizeExplorer, explore
from hepwb.viz.tier_approval import ApprovalWidget

__all__ = [
    "CHUNK_COLOURS",
    "KIND_COLOURS",
    "OVERLAP_STYLE",
    "ApprovalWidget",
    "ChunkExplorer",
    "DocumentBrowser",
    "SearchExplorer",
    "SizeExplorer",
    "chunks_html",
    "explore",
    "figures_html",
    "page_image_png",
    "page_view_html",
    "side_by_side_html",
    "token_histogram",
]


def __dir__() -> list[str]:
    return __all__
