"""Render the report notebook to a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb.catalog import Catalog
from hepwb.catalog.sweeps import CONFIG_COLUMNS
from hepwb.experiment.notebook import run_notebook
from hepwb.paths import Layout

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["REPORT_NOTEBOOK", "heatmap_axes", "render_report", "to_html"]

REPORT_NOTEBOOK = "30-report.ipynb"


def to_html(notebook: str | Path, html: str | Path, *, hide_code: bool = True) -> Path:
    """Convert an executed notebook to HTML (code cells hidden by default)."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    exporter = HTMLExporter(
        template_file=str(Path(__file__).with_name("templates") / "report.html.j2"),
        exclude_input=hide_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(nb)
    out = Path(html)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".html.tmp")
    tmp.write_text(body, encoding="utf-8")
    tmp.replace(out)
    return out


def render_report(layout: Layout | None = None, **parameters: Any) -> Path:
    """Execute the report notebook with papermill and write ``reports/report.html``.

    The run folders not in the catalog yet are recorded first, here: a damaged one is skipped with one
    logged line naming it (:meth:`~hepwb.catalog.sweeps.SweepCatalogMixin.sync_runs`), on the terminal
    as in the report, whose notebook records the runs again (finding nothing new but that one).
    """
    layout = layout or Layout.default()
    Catalog(layout.catalog).sync_runs(layout.runs)
    executed = layout.reports / REPORT_NOTEBOOK
    run_notebook(REPORT_NOTEBOOK, executed, {"catalog": str(layout.catalog), **parameters}, layout)
    return to_html(executed, layout.reports / "report.html")


def heatmap_axes(wide: pd.DataFrame, x: str | None = None, y: str | None = None) -> tuple[str, str]:
    """The two dimensions of the report's heatmap: ``x``/``y`` when given, else the first varying ones.

    Example:
        >>> import pandas as pd
        >>> heatmap_axes(pd.DataFrame({"chunker": ["a", "a"], "chunk_size": [1, 2], "retriever": ["b", "c"]}))
        ('chunk_size', 'retriever')
    """
    cols = [c for c in CONFIG_COLUMNS if c in wide.columns]
    varying = [c for c in cols if wide[c].astype(str).nunique() > 1]
    fallback = [*varying, "chunk_size", "retriever"]
    x = x or next(c for c in fallback if c != y)
    y = y or next(c for c in fallback if c != x)
    return x, y
