"""Whole-chunk dense reading, weighted fusion, query-side lexical help: real LanceDB tables, real model."""

from __future__ import annotations

import itertools

import pytest

from hepwb.chunking.chunksets import build_chunkset
from hepwb.exceptions import ConfigError, RetrieverUnavailableError
from hepwb.index import ChunkStore, get_embedder
from hepwb.index.lexicon import acronyms_of, expand_acronyms
from hepwb.index.windows import window_size, windows_of
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from hepwb.retrieval import get_retriever

FILLER = (
    "The detector was operated with stable conditions throughout the data-taking period, and the "
    "calibration constants were updated every run using standard procedures described elsewhere. "
    "Events were reconstructed with the same software release for data and simulation, and the "
    "simulated samples were reweighted to match the observed distribution of primary vertices. "
)
NEEDLE = "The muon lifetime was measured as 2.1969811 microseconds in the stopped-muon target."


def _long_doc(label: str, needle: bool) -> str:
    body = "\n\n".join(FILLER * 2 for _ in range(4))
    return f"# Run conditions {label}\n\n{body}" + (f"\n\n{NEEDLE}" if needle else "")


@pytest.fixture(scope="module")
def long_store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("windows")
    docs = [markdown_document(_long_doc(label, label == "L3"), label) for label in ("L1", "L2", "L3", "L4")]
    emb = get_embedder()
    cs = build_chunkset(
        docs, "hepilot", layout=Layout(tmp), progress=False, chunk_size=1024, chunk_overlap=0.0
    )
    store = ChunkStore(tmp / "lancedb", emb)
    table = store.table(cs.chunkset_id, cs.chunks, cs.documents)
    return {"store": store, "table": table, "cs": cs, "emb": emb}


def test_windows_cover_the_chunk_within_the_model_window():
    text = " ".join(f"word{i}" for i in range(700))
    size = window_size("all-MiniLM-L6-v2")
    assert size == 254
    spans = windows_of(text, "all-MiniLM-L6-v2", size=size)
    assert spans[0][0] == 0 and spans[-1][1] == len(text) and len(spans) > 2
    assert all(a < b for a, b in spans) and all(b1 > a2 for (_, b1), (a2, _) in itertools.pairwise(spans))
    assert windows_of("short text", "all-MiniLM-L6-v2", size=size) == [(0, 10)]


def test_windowed_reads_need_their_tables(long_store):
    retr = get_retriever("dense", long_store["table"], embedder=long_store["emb"], read="max")
    with pytest.raises(RetrieverUnavailableError, match="ChunkStore"):
        retr.search("muon lifetime", k=2)


@pytest.mark.parametrize("options", [{"read": "sideways"}, {"read": "max", "top_m": 0}])
def test_bad_read_options_name_the_fix(long_store, options):
    with pytest.raises(ConfigError, match=r"read = |top_m is a small whole number .* got 0"):
        get_retriever("dense", long_store["table"], embedder=long_store["emb"], **options)


def test_max_read_finds_text_beyond_the_model_window(long_store):
    """The needle sits after 254 word pieces: only the windows see it."""
    store, table, cs = long_store["store"], long_store["table"], long_store["cs"]
    (needle_chunk,) = [c for c in cs.chunks if NEEDLE in c.text]
    assert needle_chunk.token_count > 300 and needle_chunk.text.index(NEEDLE) > 1000
    store.windows(cs.chunkset_id, cs.chunks)
    wins = store.db.open_table(f"{table.name}__windows").to_arrow().to_pylist()
    assert {w["chunk_id"] for w in wins} == {c.chunk_id for c in cs.chunks}
    doc = cs.documents[needle_chunk.document_id].markdown
    own = [w for w in wins if w["chunk_id"] == needle_chunk.chunk_id]
    assert len(own) >= 2 and any(NEEDLE in doc[w["start"] : w["end"]] for w in own)
    query = "How long does a muon live when stopped in a target?"
    emb = long_store["emb"]
    first = get_retriever("dense", table, embedder=emb).search(query, k=4)
    best = get_retriever("dense", table, embedder=emb, read="max").search(query, k=4)
    assert best[0].chunk_id == needle_chunk.chunk_id and "window" in best[0].why
    score_first = next(h.score for h in first if h.chunk_id == needle_chunk.chunk_id)
    assert best[0].score > score_first + 0.1
    top2 = get_retriever("dense", table, embedder=emb, read="max", top_m=2).search(query, k=4)
    assert top2[0].chunk_id == needle_chunk.chunk_id and top2[0].score < best[0].score
    mean = get_retriever("dense", table, embedder=emb, read="mean").search(query, k=4)
    assert {h.chunk_id for h in mean} <= {c.chunk_id for c in cs.chunks} and len(mean) == 4


def test_hybrid_weight_zero_and_one_are_its_branches(long_store):
    table, emb = long_store["table"], long_store["emb"]
    q = "calibration constants muon lifetime"
    lexical = [h.chunk_id for h in get_retriever("bm25", table).search(q, k=4)]
    dense = [h.chunk_id for h in get_retriever("dense", table, embedder=emb).search(q, k=4)]
    rrf = {"method": "rrf", "fields": "text"}  # weighted reciprocal rank: its end points are its branches
    only_lex = get_retriever("hybrid", table, embedder=emb, weight=0.0, **rrf).search(q, k=4)
    only_dense = get_retriever("hybrid", table, embedder=emb, weight=1.0, **rrf).search(q, k=4)
    assert [h.chunk_id for h in only_lex][: len(lexical)] == lexical
    assert [h.chunk_id for h in only_dense][: len(dense)] == dense
    with pytest.raises(ConfigError, match="weight"):
        get_retriever("hybrid", table, embedder=emb, weight=1.5)


def test_acronyms_learned_from_the_corpus_expand_bm25_queries(tmp_path):
    text = (
        "# DVCS at HERMES\n\nDeeply virtual Compton scattering (DVCS) was measured at HERMES with a "
        "positron beam.\n\n## Asymmetry\n\nThe DVCS amplitude interferes with the Bethe-Heitler process.\n\n"
        "## Detector\n\nThe recoil detector surrounded the target cell of the experiment."
    )
    assert acronyms_of([text]) == {"dvcs": "deeply virtual compton scattering"}
    doc = markdown_document(text, "D1")
    cs = build_chunkset(
        [doc], "hepilot", layout=Layout(tmp_path), progress=False, chunk_size=24, chunk_overlap=0.0
    )
    table = ChunkStore(tmp_path / "lancedb", get_embedder()).table(cs.chunkset_id, cs.chunks, cs.documents)
    q = "interference of deeply virtual Compton scattering amplitudes"
    assert expand_acronyms(q, {"dvcs": "deeply virtual compton scattering"}).endswith(" dvcs")
    plain = get_retriever("bm25", table).search(q, k=5)
    expanded = get_retriever("bm25", table, acronyms=True).search(q, k=5)
    target = next(c.chunk_id for c in cs.chunks if "Bethe-Heitler" in c.text)
    rank = {h.chunk_id: h.rank for h in expanded}
    assert rank[target] <= {h.chunk_id: h.rank for h in plain}.get(target, 99)
    prf = get_retriever("bm25", table, prf=True, prf_docs=2, prf_terms=5).search(q, k=5)
    assert prf and all(h.retriever == "bm25" for h in prf)
    with pytest.raises(ConfigError, match="prf_weight"):
        get_retriever("bm25", table, prf=True, prf_weight=2.0)
