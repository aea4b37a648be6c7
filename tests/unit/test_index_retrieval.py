from __future__ import annotations

import pytest

from hepwb.exceptions import ConfigError
from hepwb.index import ChunkStore, get_embedder
from hepwb.paths import Layout
from hepwb.pipeline.chunksets import build_chunkset
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
