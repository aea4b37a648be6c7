from __future__ import annotations

import itertools
import json

import pytest

from hepwb.chunking.chunksets import build_chunkset
from hepwb.hepilot import chunk_output_record, validate_record, validate_tree
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from hepwb.text.ids import config_hash
from tests.helpers import SAMPLE_MD, SCHEMAS

pytestmark = pytest.mark.shared


def _docs():
    return [
        markdown_document(
            SAMPLE_MD,
            "S1",
            meta={
                "title": "DVCS at HERMES",
                "arxiv": "hep-ex/0106068",
                "authors": "HERMES Collaboration: A. Airapetian, N. Akopov",
            },
        ),
        markdown_document(SAMPLE_MD.replace("CLAS12", "CLAS"), "S2", meta={"title": "Second"}),
    ]


def test_research_chunkset_tree_is_schema_valid(tmp_path):
    cs = build_chunkset(
        _docs(),
        "hepilot",
        layout=Layout(tmp_path),
        progress=False,
        chunk_size=32,
        chunk_overlap=0.1,
        tokenizer="words",
    )
    assert not validate_tree(cs.root, SCHEMAS)
    assert not (cs.root / "adapter_config.json").exists()
    manifest = json.loads((cs.root / "chunkset.json").read_text())
    assert manifest["hepilot_compliant"] is False and "from 512 to 4096" in manifest["compliance_note"]
    docs_dir = cs.root / "documents"
    names = sorted(p.name for p in docs_dir.iterdir())
    assert names[0].startswith("arxiv_") and names[1].startswith("other_")
    first = docs_dir / names[0]
    assert json.loads((first / "references.json").read_text()) == []
    for f in ("full_document.md", "document_metadata.json", "processing_metadata.json", "blocks.json"):
        assert (first / f).is_file()
    full = (first / "full_document.md").read_text(encoding="utf-8")
    blocks = json.loads((first / "blocks.json").read_text())
    assert [b["kind"] for b in blocks][:3] == ["heading", "heading", "text"]
    assert full[blocks[0]["start"] : blocks[0]["end"]] == "# Deeply virtual Compton scattering"
    assert (first / "chunks" / "chunk_0001.md").is_file()
    assert (first / "chunks" / "chunk_0001_metadata.json").is_file()
    meta = json.loads((first / "document_metadata.json").read_text())
    assert meta["original_url"] == "https://arxiv.org/abs/hep-ex/0106068"
    assert meta["collaboration"] == "HERMES Collaboration"
    # content only in .md, never in JSON
    for p in cs.root.rglob("*_metadata.json"):
        assert "content" not in json.loads(p.read_text())
    catalog = json.loads((cs.root / "catalog.json").read_text())
    assert catalog["total_documents"] == 2 and catalog["total_chunks"] == len(cs.chunks)


def test_compliant_chunkset_writes_valid_adapter_config(tmp_path):
    cs = build_chunkset(
        _docs(),
        "hepilot",
        layout=Layout(tmp_path),
        progress=False,
        chunk_size=512,
        chunk_overlap=0.1,
        tokenizer="words",
    )
    assert cs.hepilot_compliant
    assert not validate_tree(cs.root, SCHEMAS)
    cfg = json.loads((cs.root / "adapter_config.json").read_text())["adapter_config"]
    assert cfg["config_hash"] == config_hash(cfg)
    assert cfg["processing_config"] == {
        "chunk_size": 512,
        "chunk_overlap": 0.1,
        "preserve_tables": True,
        "preserve_equations": True,
    }


def test_chunk_output_records_validate(tmp_path):
    cs = build_chunkset(
        _docs(),
        "hepilot",
        layout=Layout(tmp_path),
        progress=False,
        chunk_size=24,
        chunk_overlap=0.25,
        tokenizer="words",
    )
    chunks = cs.by_document()[_docs()[0].document_id]
    for i, c in enumerate(chunks):
        nxt = i + 1 < len(chunks) and chunks[i + 1].overlap_tokens > 0
        rec = chunk_output_record(c, len(chunks), nxt).dump()
        assert not validate_record(rec, "chunk_output", SCHEMAS)
        assert rec["has_overlap_previous"] == (i > 0 and c.overlap_tokens > 0)
    feats = [chunk_output_record(c, len(chunks), False).content_features for c in chunks]
    assert sum(f.table_count for f in feats) == 1
    assert sum(f.equation_count for f in feats) >= 1


def test_rebuild_is_cached_and_byte_identical(tmp_path):
    lay = Layout(tmp_path)
    a = build_chunkset(_docs(), "hepilot", layout=lay, progress=False, chunk_size=32, tokenizer="words")
    md = {p: p.read_bytes() for p in a.root.rglob("*.md")}
    b = build_chunkset(_docs(), "hepilot", layout=lay, progress=False, chunk_size=32, tokenizer="words")
    assert a.chunkset_id == b.chunkset_id and [c.chunk_id for c in a.chunks] == [c.chunk_id for c in b.chunks]
    assert md == {p: p.read_bytes() for p in b.root.rglob("*.md")}


def test_invalid_record_reports_the_field():
    errs = validate_record({"document_id": "not-a-uuid"}, "document_metadata", SCHEMAS)
    assert any("required" in e for e in errs)


def test_changed_markdown_under_same_document_id_rebuilds_the_chunkset(tmp_path):
    from hepwb.types import Document

    lay = Layout(tmp_path)
    (a,) = _docs()[:1]
    first = build_chunkset([a], "hepilot", layout=lay, progress=False, chunk_size=32, tokenizer="words")
    edited = Document(
        a.document_id, a.label, a.markdown.replace("CLAS12", "CLAS12 (edited)"), a.blocks, a.meta
    )
    second = build_chunkset([edited], "hepilot", layout=lay, progress=False, chunk_size=32, tokenizer="words")
    assert first.chunkset_id != second.chunkset_id
    assert any("(edited)" in c.text for c in second.chunks)
    assert {c.chunk_id for c in first.chunks} != {c.chunk_id for c in second.chunks}


def test_overlap_token_count_covers_both_neighbours(tmp_path):
    cs = build_chunkset(
        _docs()[:1],
        "hepilot",
        layout=Layout(tmp_path),
        progress=False,
        chunk_size=24,
        chunk_overlap=0.25,
        tokenizer="words",
    )
    chunks = cs.chunks
    assert len(chunks) > 2
    folder = next((cs.root / "documents").iterdir()) / "chunks"
    for i, c in enumerate(chunks):
        meta = json.loads((folder / f"chunk_{i + 1:04d}_metadata.json").read_text())["overlap_info"]
        nxt = chunks[i + 1].overlap_tokens if i + 1 < len(chunks) else 0
        assert meta["has_next_overlap"] == (nxt > 0)
        assert meta["overlap_token_count"] == max(c.overlap_tokens, nxt)
    assert (
        json.loads((folder / "chunk_0001_metadata.json").read_text())["overlap_info"]["overlap_token_count"]
        > 0
    )


def test_compliant_mode_refuses_research_sizes(tmp_path):
    from hepwb.exceptions import ConfigError

    with pytest.raises(ConfigError, match="from 512 to 4096"):
        build_chunkset(
            _docs(),
            "hepilot",
            layout=Layout(tmp_path),
            progress=False,
            chunk_size=256,
            tokenizer="words",
            require_compliant=True,
        )
    ok = build_chunkset(
        _docs(),
        "hepilot",
        layout=Layout(tmp_path),
        progress=False,
        chunk_size=512,
        tokenizer="words",
        require_compliant=True,
    )
    assert ok.hepilot_compliant


def test_chunks_parquet_records_neighbours_and_truncation(tmp_path):
    import pyarrow.parquet as pq

    cs = build_chunkset(_docs(), "hepilot", layout=Layout(tmp_path), progress=False, chunk_size=48)
    rows = pq.read_table(cs.root / "chunks.parquet").to_pylist()
    by_doc: dict[str, list[dict]] = {}
    for r in rows:
        by_doc.setdefault(r["document_id"], []).append(r)
    for doc_rows in by_doc.values():
        assert doc_rows[0]["prev_chunk_id"] is None and doc_rows[-1]["next_chunk_id"] is None
        for a, b in itertools.pairwise(doc_rows):
            assert a["next_chunk_id"] == b["chunk_id"] and b["prev_chunk_id"] == a["chunk_id"]
    assert all(r["truncated_by_embedder"] == (r["token_count"] > 256) for r in rows)


@pytest.mark.parametrize(
    "chunker", ["token", "recursive", "sentence", "section", "sentence_window", "hierarchical"]
)
def test_every_strategy_writes_a_valid_hepilot_tree(tmp_path, chunker):
    cs = build_chunkset(
        _docs(), chunker, layout=Layout(tmp_path), progress=False, chunk_size=24, tokenizer="words"
    )
    assert cs.chunks and not validate_tree(cs.root, SCHEMAS)
    manifest = json.loads((cs.root / "chunkset.json").read_text())
    assert manifest["chunker"]["name"] == chunker and manifest["chunker"]["tokenizer"] == "words"


def _tree_files(root):
    """Every file of a chunk set tree; the bytes of its chunk files (the others hold timestamps)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes() if p.parent.name == "chunks" else None
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_chunkset_written_in_the_background_is_the_same_tree(tmp_path):
    now = build_chunkset(_docs(), "hepilot", layout=Layout(tmp_path / "a"), progress=False, chunk_size=32)
    later = build_chunkset(
        _docs(), "hepilot", layout=Layout(tmp_path / "b"), progress=False, chunk_size=32, background=True
    )
    assert later.chunks == now.chunks and later.chunkset_id == now.chunkset_id
    asked_again = build_chunkset(
        _docs(), "hepilot", layout=Layout(tmp_path / "b"), progress=False, chunk_size=32, background=True
    )
    assert asked_again.chunks == now.chunks  # while being written: the same chunk set, not a second build
    later.wait()
    asked_again.wait()
    assert _tree_files(later.root) == _tree_files(now.root)
    manifest = json.loads((later.root / "chunkset.json").read_text())
    assert manifest["n_chunks"] == len(now.chunks) and len(manifest["documents"]) == 2
    assert not list(later.root.parent.glob(".*part-*"))  # the private build folder was published whole


def test_a_failed_background_write_is_raised_on_wait_and_publishes_nothing(tmp_path):
    layout = Layout(tmp_path)
    layout.chunksets.parent.mkdir(parents=True)
    (layout.chunksets.parent / "document-files").write_text("a file where a folder must be")
    cs = build_chunkset(_docs(), "hepilot", layout=layout, progress=False, chunk_size=32, background=True)
    with pytest.raises(OSError):
        cs.wait()
    assert not cs.root.exists() and not list(layout.chunksets.glob(".*part-*"))
    # nothing half-written is reused: asked again (the fault gone), it is built and published
    (layout.chunksets.parent / "document-files").unlink()
    again = build_chunkset(_docs(), "hepilot", layout=layout, progress=False, chunk_size=32)
    assert (again.root / "chunkset.json").is_file()


def test_a_papers_files_published_by_another_process_meanwhile_are_kept(tmp_path, monkeypatch):
    import hepwb.chunking.chunksets as chunksets

    real = chunksets.write_link_files
    theirs = []

    def another_process_publishes_first(part, doc, **kw):
        real(part, doc, **kw)
        folder = part.parent / part.name.split(".")[1]  # .<key>.part-<pid> -> <key>
        folder.mkdir()
        (folder / ".complete").touch()
        (folder / "in-use-by-them").touch()  # the other process is linking these files now
        theirs.append(folder)

    monkeypatch.setattr(chunksets, "write_link_files", another_process_publishes_first)
    doc = _docs()[0]
    got = chunksets.document_files(tmp_path, doc)
    assert got == theirs[0] and (got / "in-use-by-them").is_file()  # not removed under them
    assert not list(tmp_path.glob("document-files/.*part-*"))  # ours discarded


def test_a_chunk_set_another_process_publishes_first_is_kept_not_an_error(tmp_path, monkeypatch):
    """Two sweeps building one chunk set: the other process renames its folder into place between this
    one's look and its rename (the rename then fails with "Directory not empty")."""
    from pathlib import Path

    import hepwb.chunking.chunksets as chunksets

    final, built = tmp_path / "cs", tmp_path / ".cs.part-1"
    built.mkdir()
    (built / "chunks.parquet").write_text("mine")
    real_replace = Path.replace

    def published_meanwhile(self, target):
        if self == built and not final.exists():
            final.mkdir()
            (final / "chunks.parquet").write_text("theirs")
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", published_meanwhile)
    looks = iter([None, "fp"])  # the first look finds nothing; after the failed rename, their finished set
    monkeypatch.setattr(chunksets, "finished_fingerprint", lambda _root: next(looks))
    chunksets._publish(built, final, "fp")
    assert (final / "chunks.parquet").read_text() == "theirs" and not built.exists()
