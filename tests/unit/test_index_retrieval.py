from __future__ import annotations

import numpy as np
import pytest

import hepwb.index.chunk_store as store_module
import hepwb.models.embedder as embedder_module
import hepwb.retrieval.bm25 as bm25_module
from hepwb.chunking.chunksets import build_chunkset
from hepwb.exceptions import ConfigError
from hepwb.index import ChunkStore, get_embedder
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from hepwb.retrieval import get_retriever

TEXTS = {
    "D1": "# Calorimetry\n\nThe electromagnetic calorimeter measures photon energies with lead-glass blocks.",
    "D2": "# Tracking\n\nThe silicon vertex tracker reconstructs charged-particle tracks near the beam pipe.",
    "D3": "# Asymmetry\n\nThe beam-spin asymmetry of deeply virtual Compton scattering is negative.",
}


@pytest.fixture(scope="module")
def store_and_table(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("idx")
    docs = [markdown_document(t, label) for label, t in TEXTS.items()]
    cs = build_chunkset(docs, "hepilot", layout=Layout(tmp), progress=False, chunk_size=64)
    store = ChunkStore(tmp / "lancedb", get_embedder())
    return store, store.table(cs.chunkset_id, cs.chunks, cs.documents), cs


def test_dense_finds_the_semantically_closest_chunk(store_and_table):
    store, table, _ = store_and_table
    hits = get_retriever("dense", table, embedder=store.embedder).search("detector for photon energy", k=3)
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].label == "D1"
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert -1.0 <= hits[-1].score <= 1.0


def test_bm25_finds_the_lexical_match(store_and_table):
    _store, table, _ = store_and_table
    hits = get_retriever("bm25", table).search("Compton scattering asymmetry", k=3)
    assert hits[0].label == "D3" and hits[0].retriever == "bm25"
    assert hits[0].text.startswith("# Asymmetry")


@pytest.mark.parametrize("name", ["bm25", "bm25(fields=context)", "bm25_plain"])
def test_lexical_hits_from_held_rows_equal_hits_read_from_the_table(store_and_table, monkeypatch, name):
    _store, table, _ = store_and_table
    questions = ["Compton scattering asymmetry", "silicon tracker beam pipe", "photon energies", "nothing"]
    held = get_retriever(name, table)
    assert held.held is not None  # a small table: its hit columns are held in memory
    monkeypatch.setattr(bm25_module, "HELD_ROWS", 0)
    read = get_retriever(name, table)
    assert read.held is None
    for q in questions:
        assert held.search(q, k=3) == read.search(q, k=3)


def test_embedding_cache_avoids_recomputation(store_and_table, monkeypatch):
    store, _, cs = store_and_table
    calls = []
    real = store.embedder.embed
    monkeypatch.setattr(store.embedder, "embed", lambda texts, **kw: calls.append(len(texts)) or real(texts))
    vecs = store.embed_cached([c.text for c in cs.chunks], progress=False)
    assert vecs.shape == (len(cs.chunks), 384)
    assert calls == []  # every text was cached when the table was built
    store.embed_cached(["a new text"], progress=False)
    assert calls == [1]


def test_dense_without_embedder_is_a_config_error(store_and_table):
    _, table, _ = store_and_table
    with pytest.raises(ConfigError, match="embedder"):
        get_retriever("dense", table)


def test_a_table_built_slice_by_slice_equals_one_built_at_once(tmp_path, monkeypatch):
    docs = [markdown_document(t * 2, label) for label, t in TEXTS.items()]
    cs = build_chunkset(docs, "recursive", layout=Layout(tmp_path), progress=False, chunk_size=16)
    assert len(cs.chunks) > 6

    def build(db: str, slice_size: int):
        monkeypatch.setattr(store_module, "TABLE_SLICE", slice_size)
        tbl = ChunkStore(tmp_path / db, get_embedder()).table(cs.chunkset_id, cs.chunks, cs.documents)
        return tbl.to_arrow().sort_by("chunk_id")

    whole, sliced = build("whole", 10_000), build("sliced", 3)
    assert sliced.num_rows == whole.num_rows == len(cs.chunks)
    assert sliced.drop_columns(["vector"]).equals(whole.drop_columns(["vector"]))
    a, b = (np.stack(t.column("vector").to_numpy(zero_copy_only=False)) for t in (whole, sliced))
    assert np.allclose(a, b, atol=1e-6)


@pytest.mark.heavy
def test_many_texts_are_embedded_in_blocks_with_the_same_vectors(monkeypatch):
    emb = get_embedder()
    texts = [f"{t} (variant {i})" for i in range(30) for t in TEXTS.values()]
    whole = emb.embed(texts)
    monkeypatch.setattr(embedder_module, "_BLOCK", 1)
    assert emb.block == 16 * emb.batch_size < len(texts)
    blocks = emb.embed(texts)
    assert blocks.shape == whole.shape and float(np.min(np.sum(blocks * whole, axis=1))) > 0.99999
