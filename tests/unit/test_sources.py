"""Choice between a paper's LaTeX source and its PDF."""

from __future__ import annotations

import json

import pytest

from hepwb.acquisition.folder import load_sidecar
from hepwb.corpus.sources import MIN_AGREEMENT, convert, text_agreement
from hepwb.experiment import ingest
from hepwb.paths import Layout
from tests.helpers import PDF_DIR

pytestmark = pytest.mark.shared


def _meta(path):
    return load_sidecar(PDF_DIR)[path.name]


def test_matching_source_is_preferred():
    path = next(PDF_DIR.glob("P23_*.pdf"))
    doc = convert(path, _meta(path))
    assert doc.meta["processor"].startswith("pandoc/")
    assert doc.meta["latex_agreement"] >= MIN_AGREEMENT
    assert any(b.kind == "heading" for b in doc.blocks)


def test_a_different_version_of_the_source_falls_back_to_the_pdf():
    path = next(PDF_DIR.glob("P25_*.pdf"))
    doc = convert(path, _meta(path))
    assert doc.meta["processor"].startswith("hepwb-pdf/")
    assert any("probably another version" in w for w in doc.meta["conversion_warnings"])
    assert text_agreement(doc.markdown, path) > 0.95  # the PDF's own conversion agrees with itself


def test_pdf_only_switch(tmp_path):
    (doc,) = ingest(PDF_DIR, only=["P23"], prefer_latex=False, layout=Layout(tmp_path), progress=False)
    assert doc.meta["processor"].startswith("hepwb-pdf/")
    cached = sorted(p.name for p in (tmp_path / "data" / "interim" / "documents").iterdir())
    assert len(cached) == 1 and cached[0].endswith("-pdf")
    (tex,) = ingest(PDF_DIR, only=["P23"], layout=Layout(tmp_path), progress=False)
    assert tex.meta["processor"].startswith("pandoc/") and tex.document_id != doc.document_id
    assert json.loads(json.dumps(tex.meta))  # metadata stays JSON-serialisable for the cache
