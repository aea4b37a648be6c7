"""Side-by-side retriever comparison for notebooks: static HTML and an ipywidgets explorer."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from hepwb.exceptions import DependencyError, RetrieverUnavailableError
from hepwb.retrieval.explain import hits_html
from hepwb.types import JSONObject

if TYPE_CHECKING:
    from hepwb.pipeline.search import Searcher
    from hepwb.types import Hit

__all__ = ["SearchExplorer", "side_by_side_html"]


def side_by_side_html(results: Mapping[str, Sequence[Hit] | str], width: int = 300) -> str:
    """One column per retriever: its hits with highlighted snippets (a string: why it did not run)."""
    cols = []
    for name, hits in results.items():
        body = (
            f"<p style='color:#a60'>{html.escape(hits)}</p>"
            if isinstance(hits, str)
            else hits_html(hits, width)
        )
        cols.append(
            f"<div class='hw-column' data-retriever='{html.escape(name)}' "
            "style='flex:1;min-width:260px;border-left:3px solid #ccd;padding:0 .6em'>"
            f"<h4 style='margin:.2em 0'>{html.escape(name)}</h4>{body}</div>"
        )
    return "<div style='display:flex;gap:.5em;align-items:flex-start'>" + "".join(cols) + "</div>"


def run_all(searcher: Searcher, question: str, retrievers: Sequence[str], k: int) -> JSONObject:
    """``{retriever: hits or the reason it is unavailable}``."""
    out: JSONObject = {}
    for name in retrievers:
        try:
            out[name] = searcher.search(question, name, k)
        except (RetrieverUnavailableError, DependencyError) as exc:
            out[name] = f"unavailable: {exc}"
    return out


class SearchExplorer:
    """A question box, retriever picker and k slider, showing the retrievers side by side."""

    def __init__(
        self,
        searcher: Searcher,
        question: str = "",
        retrievers: Sequence[str] = ("bm25", "hybrid"),
        k: int = 5,
    ):
        import ipywidgets as w

        from hepwb.retrieval import RETRIEVERS

        self.searcher = searcher
        self.question = w.Text(value=question, description="question", layout=w.Layout(width="90%"))
        self.retrievers = w.SelectMultiple(
            options=RETRIEVERS.names(), value=tuple(retrievers), description="retrievers"
        )
        self.k = w.IntSlider(value=k, min=1, max=20, description="k")
        self.button = w.Button(description="search", button_style="primary")
        self.out = w.HTML()
        self.button.on_click(self._search)
        self.widget = w.VBox(
            [self.question, w.HBox([self.retrievers, w.VBox([self.k, self.button])]), self.out]
        )
        self._search()

    def _search(self, *_: object) -> None:
        if self.question.value.strip():
            res = run_all(self.searcher, self.question.value, list(self.retrievers.value), self.k.value)
            self.out.value = side_by_side_html(res)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
