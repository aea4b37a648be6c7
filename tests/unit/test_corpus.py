from __future__ import annotations

import json

import pytest

from hepwb.acquisition.folder import resolve_corpus
from hepwb.corpus import ingest
from hepwb.exceptions import CorpusNotFoundError
from hepwb.hepilot import ProcessingLog
from hepwb.paths import Layout


def _pdf(path, text):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text, fontsize=11)
    doc.save(str(path))
    doc.close()


def test_missing_corpus_names_the_option(monkeypatch, tmp_path):
    monkeypatch.delenv("HEPWB_CORPUS", raising=False)
    monkeypatch.setenv("HEPWB_SHARED", str(tmp_path / "nowhere"))
    with pytest.raises(CorpusNotFoundError, match="--corpus"):
        resolve_corpus(None)
    with pytest.raises(CorpusNotFoundError, match="does not exist"):
        resolve_corpus(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusNotFoundError, match=r"no \.pdf or \.md"):
        ingest(tmp_path / "empty", layout=Layout(tmp_path / "home"), progress=False)


def test_bad_files_are_logged_and_others_continue(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _pdf(corpus / "A01_good.pdf", "The beam-spin asymmetry was measured at HERMES.")
    (corpus / "B02_fake.pdf").write_bytes(b"this is not a pdf")
    (corpus / "C03_notes.md").write_text("# Notes\n\nMarkdown documents are accepted too.", encoding="utf-8")
    (corpus / "papers.json").write_text(
        json.dumps({"papers": [{"pid": "A01", "pdf": "x/A01_good.pdf", "title": "Good paper"}]})
    )
    log = ProcessingLog()
    docs = ingest(corpus, layout=Layout(tmp_path / "home"), log=log, progress=False)
    assert [d.label for d in docs] == ["A01", "C03"]
    assert docs[0].title == "Good paper"
    (err,) = log.errors
    assert err.error_code == "PROC_NOT_PDF" and "B02_fake.pdf" in err.message
    assert err.recovery_action and err.context["file_path"].endswith("B02_fake.pdf")


def test_second_ingest_reuses_the_cache(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _pdf(corpus / "A01_good.pdf", "Cached conversion.")
    lay = Layout(tmp_path / "home")
    first = ingest(corpus, layout=lay, progress=False)
    log = ProcessingLog()
    second = ingest(corpus, layout=lay, progress=False, log=log)
    assert first[0].meta["processing_timestamp"] == second[0].meta["processing_timestamp"]
    assert first[0].markdown == second[0].markdown and first[0].blocks == second[0].blocks
    assert not log.entries  # nothing converted again


def test_colliding_labels_fall_back_to_the_file_name(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _pdf(corpus / "my_first.pdf", "First paper text.")
    _pdf(corpus / "my_second.pdf", "Second paper text.")
    (corpus / "papers.json").write_text(
        json.dumps({"papers": ["not an object", {"pid": "X", "pdf": "x.pdf"}]})
    )
    log = ProcessingLog()
    docs = ingest(corpus, layout=Layout(tmp_path / "home"), log=log, progress=False)
    assert [d.label for d in docs] == ["my", "my_second"]
    assert any(e.level == "warning" and "already used" in e.message for e in log.entries)


def test_converted_papers_stay_on_disk_until_their_text_is_read(tmp_path, monkeypatch):
    """ingest() holds ids, labels and scalar metadata; text, blocks and the rest are read on use."""
    import pickle

    from hepwb import defaults
    from hepwb.corpus.stored import StoredDocument
    from hepwb.pipeline.chunksets import build_chunkset
    from hepwb.types import Document
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    layout = Layout(tmp_path / "home")
    monkeypatch.setattr(defaults, "RESIDENT_DOCUMENT_BYTES", 0)  # a corpus larger than the budget
    first = ingest(corpus, layout=layout, progress=False)
    again = ingest(corpus, layout=layout, progress=False)
    assert all(isinstance(d, StoredDocument) and not d.loaded for d in first + again)
    assert [d.title for d in again] == [d.meta["title"] for d in first]  # the title needs no read
    assert not again[0].loaded
    assert again[0] == first[0] and again[0].markdown.startswith("#") and again[0].loaded
    plain = pickle.loads(pickle.dumps(again[0]))  # what a Dask worker receives: the whole document
    assert type(plain) is Document and plain == again[0]
    cs = build_chunkset(again, "hepilot", chunk_size=64, layout=layout, progress=False)
    assert cs.chunks and not any(d.loaded for d in again)  # each paper released after chunking
    monkeypatch.setattr(defaults, "RESIDENT_DOCUMENT_BYTES", 256 * 2**20)  # a corpus under the budget
    kept = ingest(corpus, layout=layout, progress=False)
    assert all(d.loaded for d in kept)  # read once, when opened, and kept
    cs = build_chunkset(kept, "hepilot", chunk_size=128, layout=layout, progress=False)
    assert cs.chunks and all(d.loaded for d in kept)
    c = cs.chunks[0]
    assert cs.documents[c.document_id].markdown[c.start : c.end] == c.text
