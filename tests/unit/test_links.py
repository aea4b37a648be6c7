"""Figures, equations, references, cross-references and front matter as linked records (issue #18)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

pymupdf = pytest.importorskip("pymupdf")

from hepwb.catalog import Catalog  # noqa: E402
from hepwb.chunking import get_chunker  # noqa: E402
from hepwb.chunking.chunksets import build_chunkset  # noqa: E402
from hepwb.paths import Layout  # noqa: E402
from hepwb.processing import pdf_to_document  # noqa: E402
from hepwb.processing._diacritics import SPACING_ACCENTS  # noqa: E402
from hepwb.processing.frontmatter import author_list_like, document_header  # noqa: E402
from hepwb.processing.links import describe_target, reader_context, write_link_files  # noqa: E402
from hepwb.processing.markdown import markdown_document  # noqa: E402
from tests.helpers import PDF_DIR  # noqa: E402

PROSE = [
    "Deeply virtual Compton scattering is the simplest hard exclusive process that gives",
    "access to generalised parton distributions of the nucleon, and it has been measured",
    "by several experiments over the last twenty years with ever better statistical precision.",
]


def _paper(path: Path) -> Path:
    """A one-page paper: prose, a drawn plot with axis labels, its caption, a mention, a bibliography."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = 80.0
    for line in PROSE:
        page.insert_text((72, y), line, fontsize=10)
        y += 12
    page.draw_rect(pymupdf.Rect(150, 140, 450, 300), color=(0, 0, 0))
    page.insert_text((280, 315), "-t (GeV2)", fontsize=7)
    page.insert_text((130, 220), "0.2", fontsize=7)
    page.insert_text(
        (72, 340), "Figure 1: The beam-spin asymmetry as a function of -t at 27.6 GeV.", fontsize=9
    )
    y = 380.0
    for line in ["As shown in Fig. 1, the asymmetry measured by the experiment [1] rises with -t", *PROSE]:
        page.insert_text((72, y), line, fontsize=10)
        y += 12
    page.insert_text((72, y + 30), "References", fontsize=12)
    page.insert_text((72, y + 50), "[1] A. Airapetian et al., Phys. Rev. Lett. 87 (2001) 182001.", fontsize=9)
    doc.save(path)
    doc.close()
    return path


def test_figure_record_region_crop_and_links(tmp_path):
    doc = pdf_to_document(_paper(tmp_path / "P99_demo.pdf"))
    (fig,) = doc.meta["figures"]
    assert (fig["id"], fig["label"], fig["page"]) == ("figure-1", "Figure 1", 1)
    caption = doc.markdown[fig["caption_start"] : fig["caption_end"]]
    assert caption.startswith("Figure 1: The beam-spin asymmetry")
    _, y0, _, y1 = fig["bbox"]
    assert y1 <= fig["caption_bbox"][1] + 1 and y0 <= 140 and y1 >= 300  # the plot, above its caption
    by_kind = {m["kind"]: m for m in doc.meta["xrefs"]}
    assert by_kind["figure"]["target"] == "figure-1"
    assert doc.markdown[by_kind["figure"]["start"] : by_kind["figure"]["end"]] == "Fig. 1"
    assert by_kind["citation"]["target"] == "ref-1"
    assert "Phys. Rev. Lett." in describe_target(doc, "ref-1")
    mention = by_kind["figure"]["start"]
    assert reader_context(doc, mention, mention + 40).endswith(caption)
    out = tmp_path / "tree"
    write_link_files(out, doc)
    written = json.loads((out / "figures.json").read_text())
    assert written[0]["image"] == "figures/figure_1.png"
    png = out / "figures" / "figure_1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pix = pymupdf.Pixmap(str(png))
    assert pix.width > 300 and pix.height > 150
    xrefs = json.loads((out / "xrefs.json").read_text())
    assert xrefs["summary"]["figure"] == {"mentions": 1, "resolved": 1}
    assert "text" not in json.dumps(written)  # records hold offsets, never content


def test_captions_are_chunks_of_their_own_with_a_citation_naming_the_figure():
    md = "## 2 Results\n\n" + " ".join(PROSE) + "\n\nFigure 3: The asymmetry versus t.\n\n" + " ".join(PROSE)
    doc = markdown_document(md, "S01")
    for name in ("hepilot", "recursive", "sentence", "section", "token"):
        chunks = get_chunker(name, chunk_size=256, chunk_overlap=0.2, tokenizer="words").chunk(doc)
        (cap,) = [c for c in chunks if "Figure 3" in c.text]
        assert cap.text == "Figure 3: The asymmetry versus t.", name
        assert cap.chunk_type == "caption" and cap.section_path == ("2 Results", "Figure 3"), name
        assert cap.overlap_tokens == 0, name


def test_markdown_mentions_of_figures_tables_equations_and_sections():
    md = (
        "## 2 Method\n\nSee Figs. 1-2, table 1, Eqs. (1) and (2) and Sec. 2 [@ji1997; @belitsky].\n\n"
        "$$\nE = mc^2 (1)\n$$\n\nFigure 1: One.\n\nFigure 2: Two.\n\nTable 1: Cuts."
    )
    doc = markdown_document(md, "S02", meta={"references": [{"id": "ji1997"}]})
    got = [(m["kind"], m["number"], m["target"]) for m in doc.meta["xrefs"]]
    assert ("figure", "1", "figure-1") in got and ("figure", "2", "figure-2") in got
    assert ("table", "1", "table-1") in got and ("section", "2", "section-2") in got
    assert ("equation", "1", "equation-1") in got and ("equation", "2", None) in got
    assert ("citation", "ji1997", "ji1997") in got and ("citation", "belitsky", None) in got


def test_front_matter_header():
    meta = {"title": "DVCS", "front_matter": {"collaboration": "HERMES Collaboration"}, "year": 2001}
    assert document_header(meta, "P01") == "P01: DVCS. HERMES Collaboration (2001)."


@pytest.mark.shared
def test_real_papers_figures_citations_front_matter_and_accents():
    p01 = pdf_to_document(next(PDF_DIR.glob("P01_*.pdf")))
    assert [(f["number"], f["page"]) for f in p01.meta["figures"]] == [(1, 3), (2, 4), (3, 4), (4, 5), (5, 5)]
    summary = p01.meta["xref_summary"]
    assert summary["figure"]["resolved"] == summary["figure"]["mentions"] >= 10
    assert summary["citation"]["resolved"] == summary["citation"]["mentions"] >= 20
    assert len(p01.meta["references"]) == 17  # [11]-[17] ran on as text after a page break
    front = p01.meta["front_matter"]
    assert front["collaboration"] == "HERMES Collaboration" and len(front["authors"]) > 100
    a, z = front["abstract"]
    assert p01.markdown[a:z].startswith("The beam-spin asymmetry in hard electroproduction")
    assert "e →+p → e+γ X" not in "".join(p01.block_text(b) for b in p01.blocks if b.kind == "math")
    chunks = get_chunker("hepilot", chunk_size=512, chunk_overlap=0.1).chunk(p01)
    assert not [c.index for c in chunks if author_list_like(c.text)]
    assert any("The beam-spin asymmetry in hard electroproduction" in c.text for c in chunks)
    p12 = pdf_to_document(next(PDF_DIR.glob("P12_*.pdf")))  # REVTeX: no References heading
    assert len(p12.meta["references"]) >= 30
    assert (
        p12.meta["xref_summary"]["citation"]["resolved"] == p12.meta["xref_summary"]["citation"]["mentions"]
    )
    notes = " ".join(r["note"] for r in p12.meta["references"])
    assert "Hořejši" in notes and unicodedata.is_normalized("NFC", notes)
    for doc in (p01, p12):
        assert not any(ch in doc.markdown for ch in SPACING_ACCENTS if ch + "u" in doc.markdown)


@pytest.mark.shared
def test_link_files_and_catalog_rows_of_a_chunk_set(tmp_path):
    doc = pdf_to_document(next(PDF_DIR.glob("P03_*.pdf")))
    cs = build_chunkset([doc], "hepilot", layout=Layout(tmp_path), progress=False, chunk_size=512)
    folder = next((cs.root / "documents").iterdir())
    figures = json.loads((folder / "figures.json").read_text())
    assert {f["label"] for f in figures} >= {"Figure 1", "Figure 2", "Figure 3", "Table 1"}
    assert all((folder / f["image"]).is_file() for f in figures if f["image"])
    assert sum(1 for f in figures if f["image"]) >= 6
    assert json.loads((folder / "front_matter.json").read_text())["blocks"] >= 2
    cat = Catalog(tmp_path / "catalog.duckdb")
    cat.record_chunkset(cs)
    rows = cat.sql("SELECT label, page FROM figures WHERE kind = 'figure' ORDER BY number")
    assert rows["label"].tolist()[:2] == ["Figure 1", "Figure 2"] and rows["page"].tolist()[:2] == [3, 3]
    resolved = cat.sql("SELECT count(*) AS n FROM xrefs WHERE kind = 'figure' AND target IS NOT NULL")
    assert int(resolved["n"][0]) >= 10
    caption_chunks = [c for c in cs.chunks if c.chunk_type == "caption"]
    assert len(caption_chunks) >= 6 and all(
        c.section_path[-1].startswith(("Figure", "Table")) for c in caption_chunks
    )
