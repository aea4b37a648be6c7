"""Catalog rows of a document's figures and cross-references (tables ``figures`` and ``xrefs``).

Example (SQL over the catalog)::

    SELECT d.label, f.label, f.page FROM figures f JOIN documents d USING (document_id)
    SELECT target, count(*) FROM xrefs WHERE kind = 'figure' GROUP BY target
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hepwb.hepilot.writer import document_dir
from hepwb.processing.figures import image_name
from hepwb.types import Document

__all__ = ["record_links"]


def _image(folder: Path, figure_id: str) -> str | None:
    png = folder / "figures" / image_name(figure_id)
    return str(png) if png.is_file() else None


def record_links(con: Any, d: Document, root: Path) -> None:
    """Replace the figure and cross-reference rows of document ``d``."""
    folder = document_dir(root, d)
    con.execute("DELETE FROM figures WHERE document_id = ?", [d.document_id])
    con.execute("DELETE FROM xrefs WHERE document_id = ?", [d.document_id])
    figs = [
        [d.document_id, f["id"], f["kind"], f["number"], f["label"], f["page"], f["caption_start"],
         f["caption_end"], json.dumps(f.get("bbox")), _image(folder, str(f["id"]))]
        for f in d.meta.get("figures", [])
    ]  # fmt: skip
    if figs:
        con.executemany("INSERT INTO figures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", figs)
    mentions = d.meta.get("xrefs", [])
    if mentions:
        import pandas as pd

        frame = pd.DataFrame(
            {
                "document_id": d.document_id,
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
