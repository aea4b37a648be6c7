"""Catalog rows of a document's figures and cross-references (tables ``figures`` and ``xrefs``).

Example (SQL over the catalog)::

    SELECT d.label, f.label, f.page FROM figures f JOIN documents d USING (document_id)
    SELECT target, count(*) FROM xrefs WHERE kind = 'figure' GROUP BY target
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hepwb.files.parsers import read_json_file
from hepwb.hepilot.writer import document_dir
from hepwb.processing.figures import image_name
from hepwb.types import Document, JSONObject

__all__ = ["record_links", "record_links_from_folder"]

_FIX = "delete the chunk set's folder and run the sweep again (it is rebuilt)"


def _image(folder: Path, figure_id: str) -> str | None:
    png = folder / "figures" / image_name(figure_id)
    return str(png) if png.is_file() else None


def record_links(con: Any, d: Document, root: Path) -> None:
    """Replace the figure and cross-reference rows of document ``d`` (its records in memory)."""
    figures, mentions = d.meta.get("figures", []), d.meta.get("xrefs", [])
    _insert_links(con, d.document_id, document_dir(root, d), figures, mentions)


def record_links_from_folder(con: Any, document_id: str, folder: Path) -> None:
    """Replace the rows of ``document_id`` from its chunk-set folder's ``figures.json`` and ``xrefs.json``.

    What a sweep's run folders give the catalog: the documents themselves stay in the workers' caches.
    A folder without these files (written by an older hepwb) records no figures or cross-references.
    """
    fig_file, xref_file = folder / "figures.json", folder / "xrefs.json"
    figures = read_json_file(fig_file, "figure records", fix=_FIX) if fig_file.is_file() else []
    xrefs = read_json_file(xref_file, "cross-reference records", fix=_FIX) if xref_file.is_file() else {}
    mentions = xrefs.get("mentions", []) if isinstance(xrefs, dict) else []
    _insert_links(con, document_id, folder, figures if isinstance(figures, list) else [], mentions)


def _insert_links(
    con: Any, document_id: str, folder: Path, figures: list[JSONObject], mentions: list[JSONObject]
) -> None:
    con.execute("DELETE FROM figures WHERE document_id = ?", [document_id])
    con.execute("DELETE FROM xrefs WHERE document_id = ?", [document_id])
    figs = [
        [document_id, f["id"], f["kind"], f["number"], f["label"], f["page"], f["caption_start"],
         f["caption_end"], json.dumps(f.get("bbox")), _image(folder, str(f["id"]))]
        for f in figures
    ]  # fmt: skip
    if figs:
        con.executemany("INSERT INTO figures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", figs)
    if mentions:
        import pandas as pd

        frame = pd.DataFrame(
            {
                "document_id": document_id,
                "kind": [m["kind"] for m in mentions],
                "number": [str(m["number"]) for m in mentions],
                "start": [m["start"] for m in mentions],
                "end": [m["end"] for m in mentions],
                "page": [m.get("page") for m in mentions],
                "target": [m["target"] for m in mentions],
            }
        )
        con.register("xref_frame", frame)
        con.execute("INSERT INTO xrefs SELECT * FROM xref_frame")
        con.unregister("xref_frame")
