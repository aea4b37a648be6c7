"""Side-by-side retriever comparison for notebooks: static HTML and an ipywidgets explorer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hepwb import defaults, limits
from hepwb.exceptions import DependencyError, RetrieverUnavailableError
from hepwb.experiment.search import Searcher
from hepwb.retrieval import RETRIEVERS
from hepwb.retrieval.explain import hits_html
from hepwb.runtime.deps import extra
from hepwb.text.plaintext import escape_html
from hepwb.types import Hit, JSONObject

__all__ = ["SearchExplorer", "availability_lines", "side_by_side_html"]


def side_by_side_html(
    results: Mapping[str, Sequence[Hit] | str],
    width: int = defaults.DISPLAY_COLUMN_SNIPPET_CHARS,
    per_row: int = defaults.DISPLAY_COLUMNS,
) -> str:
    """One column per retriever: its hits with highlighted snippets (a string: why it did not run).

    At most ``per_row`` columns side by side (each an equal share of the notebook's width, its text
    wrapping); more retrievers continue on the next row.

    Example:
        >>> html_ = side_by_side_html({"bm25": [], "dense": [], "hybrid": [], "entity": "unavailable"})
        >>> html_.count("class='hw-column'"), "repeat(3, minmax(0, 1fr))" in html_
        (4, True)
    """
    cols = []
    for name, hits in results.items():
        body = (
            f"<p style='color:#a60'>{escape_html(hits)}</p>"
            if isinstance(hits, str)
            else hits_html(hits, width)
        )
        cols.append(
            f"<div class='hw-column' data-retriever='{escape_html(name)}' "
            "style='min-width:0;overflow-wrap:anywhere;border-left:3px solid #ccd;padding:0 .6em'>"
            f"<h4 style='margin:.2em 0'>{escape_html(name)}</h4>{body}</div>"
        )
    n = max(1, min(per_row, len(cols)))
    grid = f"display:grid;grid-template-columns:repeat({n}, minmax(0, 1fr));gap:.8em .5em;align-items:start"
    return f"<div class='hw-columns' style='{grid}'>" + "".join(cols) + "</div>"


def availability_lines(states: Mapping[str, str]) -> str:
    """Which retrievers can run here, one readable line each (the whole reason, never cut).

    Example:
        >>> print(availability_lines({"bm25": "ok", "rerank": "no cross-encoder model: install one"}))
        bm25      ok
        rerank    cannot run here: no cross-encoder model: install one
    """
    width = max((len(n) for n in states), default=0) + 4
    return "\n".join(
        f"{name:<{width}}{'ok' if state == 'ok' else 'cannot run here: ' + state}"
        for name, state in states.items()
    )


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
        retrievers: Sequence[str] = defaults.EXPLORER_RETRIEVERS,
        k: int = defaults.SEARCH_K,
    ):
        with extra("lab", "the explorers"):
            import ipywidgets as w

        self.searcher = searcher
        self.question = w.Text(value=question, description="question", layout=w.Layout(width="90%"))
        names = RETRIEVERS.names()
        self.retrievers = w.SelectMultiple(  # every name visible, the chosen ones selected
            options=names, value=tuple(retrievers), description="retrievers", rows=len(names)
        )
        k_min, k_max, k_step = limits.K.slider_range(limits.K.check(k))
        self.k = w.IntSlider(value=k, min=k_min, max=k_max, step=k_step, description="k")
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
