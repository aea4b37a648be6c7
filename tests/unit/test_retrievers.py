"""Every registered retriever over a real LanceDB table of a small HEP corpus."""

from __future__ import annotations

import pytest

from hepwb.chunking.chunksets import build_chunkset
from hepwb.exceptions import ConfigError, RetrieverUnavailableError
from hepwb.index import ChunkStore, get_embedder
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from hepwb.retrieval import RETRIEVERS, citation, get_retriever, hits_frame, hits_html
from tests.llm_server import LLMServer

TEXTS = {
    "H1": "# Charmonium\n\nLHCb measured the $J/\\psi$ production cross section at $\\sqrt{s} = 13$ TeV "
    "in proton-proton collisions.\n\nThe muon trigger selected $\\mu^+\\mu^-$ pairs.",
    "H2": "# Rare decays\n\nWith 140 fb$^{-1}$ of data CMS measured the branching fraction of "
    "$B^0_s \\to \\mu^+\\mu^-$.\n\nBackgrounds from semileptonic decays were suppressed.",
    "H3": "# DVCS\n\nCLAS12 measured the DVCS beam-spin asymmetry with a 10.6 GeV polarized electron beam "
    "at Jefferson Lab.\n\nThe asymmetry constrains generalized parton distributions.",
    "H4": "# Calorimetry\n\nThe electromagnetic calorimeter of ATLAS measures photon energies; "
    "the asymmetry of its response was calibrated with electrons from Z boson decays.",
    "H5": "# Neutrinos\n\nT2K and NOvA study neutrino oscillations; the mixing angle theta23 "
    "and the mass ordering remain open questions.",
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("retr")
    docs = [markdown_document(t, label) for label, t in TEXTS.items()]
    layout = Layout(tmp)
    emb = get_embedder()
    flat = build_chunkset(docs, "hepilot", layout=layout, progress=False, chunk_size=32, chunk_overlap=0.0)
    hier = build_chunkset(
        docs, "hierarchical", layout=layout, progress=False, chunk_size=16, chunk_overlap=0.0, parent_size=64
    )
    store = ChunkStore(tmp / "lancedb", emb)
    return {
        "emb": emb,
        "flat": store.table(flat.chunkset_id, flat.chunks, flat.documents),
        "hier": store.table(hier.chunkset_id, hier.chunks, hier.documents),
        "hier_cs": hier,
        "tmp": tmp,
    }


def test_registry_lists_every_method():
    expected = {"dense", "bm25", "bm25_plain", "hybrid", "hybrid_linear", "entity", "rerank", "multi_query"}
    assert set(RETRIEVERS.names()) >= expected | {"hyde", "parent"}


def test_table_stores_entities_and_hep_terms(setup):
    rows = setup["flat"].to_arrow().to_pylist()
    h1 = next(r for r in rows if r["label"] == "H1" and "LHCb" in r["text"])
    assert {"experiment:lhcb", "particle:jpsi", "energy:13tev"} <= set(h1["entities"])
    assert "jpsi" in h1["search_text"].split() and "13tev" in h1["search_text"].split()
    h2 = [r for r in rows if r["label"] == "H2"]
    assert any("luminosity:140fb-1" in r["entities"] for r in h2), [r["text"] for r in h2]


@pytest.mark.parametrize("name", ["dense", "bm25", "bm25_plain", "hybrid", "hybrid_linear", "entity"])
def test_each_retriever_returns_ranked_explained_hits(setup, name):
    hits = get_retriever(name, setup["flat"], embedder=setup["emb"]).search("J/psi cross section LHCb", k=3)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1)) and hits
    assert all(h.retriever == name and h.why for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].label == "H1"
    for h in hits:
        assert all(0 <= s < e <= len(h.text) for s, e in h.highlights)
        assert citation(h).startswith(f"[{h.rank}] ") and f"chars {h.start}-{h.end}" in citation(h)


@pytest.mark.parametrize("name", RETRIEVERS.names())
def test_every_registered_retriever_searches_or_says_in_one_line_why_it_cannot(setup, name, monkeypatch):
    """A new retriever is tested here by its registration alone (the contributor page's recipe)."""
    monkeypatch.delenv("HEPWB_LLM_URL", raising=False)
    table = setup["hier"] if name == "parent" else setup["flat"]  # parent reads a hierarchical chunk set
    try:
        hits = get_retriever(name, table, embedder=setup["emb"]).search("J/psi cross section LHCb", k=3)
    except (RetrieverUnavailableError, ConfigError) as exc:  # a model, service or fit it lacks, named
        assert str(exc) and "\n" not in str(exc)
        return
    ids = set(table.to_arrow().column("chunk_id").to_pylist())
    assert hits and len(hits) <= 3 and [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(h.chunk_id in ids or h.retriever == "parent" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_hep_terms_make_notation_match(setup):
    """`B_s^0` in a question finds `B^0_s` in LaTeX only through the HEP terms."""
    q = "B_s^0 decays to two muons"
    hep = get_retriever("bm25", setup["flat"]).search(q, k=1)
    assert hep[0].label == "H2"
    assert "$B^0_s" in hep[0].text


def test_hybrid_explains_both_branches(setup):
    hits = get_retriever("hybrid", setup["flat"], embedder=setup["emb"]).search("neutrino mixing angle", k=2)
    assert hits[0].label == "H5"
    assert "cosine" in hits[0].why and "bm25" in hits[0].why


def test_entity_strict_branch_needs_all_entities(setup):
    r = get_retriever("entity", setup["flat"])
    hits = r.search("What asymmetry did CLAS12 measure in DVCS?", k=5)
    assert hits[0].label == "H3" and hits[0].why.startswith("strict: all of")
    assert {"experiment:clas12", "process:dvcs"} <= set(hits[0].matched)
    # the calorimeter chunk mentions "asymmetry" but neither entity: soft branch only, ranked below
    soft = [h for h in hits if h.label == "H4"]
    assert all(h.why.startswith("soft:") and h.rank > 1 for h in soft)
    texts = [hits[0].text[s:e] for s, e in hits[0].highlights]
    assert "CLAS12" in texts and "DVCS" in texts


def test_entity_without_entities_is_plain_bm25(setup):
    a = get_retriever("entity", setup["flat"]).search("open questions remain", k=3)
    b = get_retriever("bm25", setup["flat"]).search("open questions remain", k=3)
    assert [h.chunk_id for h in a] == [h.chunk_id for h in b]
    assert "no entity" in a[0].why


def test_parent_returns_the_parent_span(setup):
    hits = get_retriever("parent", setup["hier"], embedder=setup["emb"], base="bm25").search(
        "muon trigger", k=2
    )
    cs = setup["hier_cs"]
    doc = next(d for d in cs.documents.values() if d.label == hits[0].label)
    assert hits[0].text == doc.markdown[hits[0].start : hits[0].end]
    kids = [c for c in cs.chunks if c.document_id == doc.document_id]
    assert any(
        c.context == (hits[0].start, hits[0].end) and c.end - c.start < hits[0].end - hits[0].start
        for c in kids
    )
    assert hits[0].why.startswith("parent of")
    assert len({(h.document_id, h.start) for h in hits}) == len(hits)


def test_rerank_without_a_cross_encoder_says_how_to_get_one(setup, monkeypatch):
    monkeypatch.setenv("HEPWB_CROSS_ENCODER", str(setup["tmp"] / "no-such-model"))
    with pytest.raises(RetrieverUnavailableError, match="HEPWB_CROSS_ENCODER"):
        get_retriever("rerank", setup["flat"], embedder=setup["emb"])


def test_rerank_orders_by_cross_encoder_score(setup, monkeypatch):
    """A real CrossEncoder (MiniLM body, seeded untrained head, saved locally) reorders the base top-N."""
    import torch
    from sentence_transformers import CrossEncoder

    from hepwb.models.tokenizers import resolve_model_path

    torch.manual_seed(0)
    path = setup["tmp"] / "ce"
    CrossEncoder(resolve_model_path("all-MiniLM-L6-v2"), num_labels=1, device="cpu").save(str(path))
    r = get_retriever("rerank", setup["flat"], embedder=setup["emb"], base="bm25", top_n=6, model=str(path))
    q = "asymmetry"
    base = get_retriever("bm25", setup["flat"]).search(q, 6)
    hits = r.search(q, k=3)
    scores = r.model.predict([(q, h.text) for h in base], show_progress_bar=False)
    expect = [base[i].chunk_id for i in sorted(range(len(base)), key=lambda i: -scores[i])[:3]]
    assert [h.chunk_id for h in hits] == expect
    assert all(h.why.startswith("cross-encoder") for h in hits)


def test_llm_retrievers_unavailable_without_endpoint(setup, monkeypatch):
    monkeypatch.delenv("HEPWB_LLM_URL", raising=False)
    for name in ("multi_query", "hyde"):
        with pytest.raises(RetrieverUnavailableError, match="HEPWB_LLM_URL"):
            get_retriever(name, setup["flat"], embedder=setup["emb"])


def test_multi_query_against_a_local_openai_compatible_server(setup):
    with LLMServer(fail_first=1) as srv:
        r = get_retriever("multi_query", setup["flat"], embedder=setup["emb"], llm_url=srv.url, llm_model="m")
        hits = r.search("BSA of DVCS at CLAS12", k=3)
    assert srv.requests[-1]["model"] == "m" and len(srv.requests) == 2  # one 503, retried
    assert r.generate("BSA of DVCS at CLAS12")[0].startswith("beam-spin asymmetry of deeply virtual")
    assert hits[0].label == "H3" and hits[0].retriever == "multi_query"
    assert "question #" in hits[0].why and "multi_query[1] #" in hits[0].why


def test_hyde_fuses_question_and_passage(setup, monkeypatch):
    with LLMServer() as srv:
        monkeypatch.setenv("HEPWB_LLM_URL", srv.url)
        monkeypatch.setenv("HEPWB_LLM_MODEL", "m")
        r = get_retriever("hyde", setup["flat"], embedder=setup["emb"], base="dense")
        hits = r.search("neutrino oscillation mixing angle", k=2)
        assert "passage" in srv.requests[0]["messages"][-1]["content"]
    assert hits[0].label == "H5" and "hyde[1]" in hits[0].why


def test_bad_parameters_are_config_errors(setup):
    with pytest.raises(ConfigError, match="boost"):
        get_retriever("entity", setup["flat"], boost=0.5)
    with pytest.raises(ConfigError, match="has no option"):
        get_retriever("bm25", setup["flat"], nonsense=1)


def test_hits_render_for_notebooks(setup):
    hits = get_retriever("bm25", setup["flat"]).search("asymmetry", k=2)
    frame = hits_frame(hits)
    assert list(frame["rank"]) == [1, 2] and frame["citation"].str.contains("chars").all()
    assert "<mark>" in hits_html(hits)


def test_xref_puts_the_named_figure_caption_first(tmp_path):
    from hepwb.index import ChunkStore

    body = " ".join(["The beam-spin asymmetry was measured in bins of t and xB with the EXP detector."] * 3)
    texts = {
        "F1": (
            "CLAS",
            body.replace("EXP", "CLAS")
            + "\n\nFIG. 3. The beam-spin asymmetry versus t.\n\nTable 2: Cuts on W.",
        ),
        "F2": (
            "HERMES",
            f"{body.replace('EXP', 'HERMES')} Fig. 3 shows it.\n\nFIG. 3. Missing-mass spectrum.",
        ),
    }
    docs = [
        markdown_document(f"# DVCS at {exp}\n\n{text}", label, meta={"title": f"DVCS at {exp}"})
        for label, (exp, text) in texts.items()
    ]
    cs = build_chunkset(docs, "hepilot", layout=Layout(tmp_path), progress=False, chunk_size=64)
    emb = get_embedder()
    table = ChunkStore(tmp_path / "lancedb", emb).table(cs.chunkset_id, cs.chunks, cs.documents)
    xref = get_retriever("xref", table, embedder=emb, base="bm25")
    hits = xref.search("What does Figure 3 of DVCS at CLAS show?", k=3)
    assert hits[0].text == "FIG. 3. The beam-spin asymmetry versus t." and hits[0].label == "F1"
    assert hits[0].section_path[-1] == "Figure 3" and "caption of Figure 3" in hits[0].why
    assert [h.rank for h in hits] == [1, 2, 3]
    assert xref.search("What does table II of DVCS at CLAS list?", k=2)[0].text == "Table 2: Cuts on W."
    plain = get_retriever("bm25", table)
    assert [h.chunk_id for h in xref.search("asymmetry in bins of t", k=3)] == [
        h.chunk_id for h in plain.search("asymmetry in bins of t", k=3)
    ]


def test_a_searcher_takes_a_retriever_with_its_options_in_one_name(tmp_path):
    """`hepwb search --retrievers 'bm25(fields=context),hybrid'` and Searcher.search say the same thing."""
    from hepwb.cli.base import parse_words
    from hepwb.experiment.search import Searcher

    layout = Layout(tmp_path)
    docs = [markdown_document(t, label) for label, t in TEXTS.items()]
    cs = build_chunkset(docs, "hepilot", layout=layout, progress=False, chunk_size=32, chunk_overlap=0.0)
    table = ChunkStore(layout.lancedb, get_embedder()).table(cs.chunkset_id, cs.chunks, cs.documents)
    s = Searcher.at_table(table.name, layout=layout)
    q = "DVCS beam-spin asymmetry"
    assert parse_words("bm25(fields=context), hybrid(method=rrf, weight=0.5)") == [
        "bm25(fields=context)", "hybrid(method=rrf, weight=0.5)"
    ]  # fmt: skip
    named = [h.chunk_id for h in s.search(q, "bm25(fields=context)", k=3)]
    assert named == [h.chunk_id for h in s.retriever("bm25", fields="context").search(q, k=3)]


def test_context_fields_on_a_corpus_without_headings_say_so_once(tmp_path, caplog):
    import logging

    layout = Layout(tmp_path)
    docs = [markdown_document("Plain text about DVCS and its beam-spin asymmetry, no headings.", "N1")]
    cs = build_chunkset(docs, "hepilot", layout=layout, progress=False, chunk_size=32, chunk_overlap=0.0)
    table = ChunkStore(layout.lancedb, get_embedder()).table(cs.chunkset_id, cs.chunks, cs.documents)
    with caplog.at_level(logging.INFO, logger="hepwb.retrieval"):
        for _ in range(2):
            get_retriever("bm25", table, fields="context").search("DVCS", k=1)
            get_retriever("hybrid", table, embedder=get_embedder()).search("DVCS", k=1)
    notes = [r.getMessage() for r in caplog.records if "no chunk has a section heading" in r.getMessage()]
    assert len(notes) == 1 and table.name in notes[0]


def test_rerank_availability_is_one_whole_sentence(setup, monkeypatch):
    """Offline, the hub's multi-line error never reaches `hepwb retrievers` (it came cut off mid-URL)."""
    import sentence_transformers

    from hepwb.experiment.search import availability
    from hepwb.retrieval.rerank import load_cross_encoder
    from hepwb.viz.search_explorer import availability_lines

    def offline(*_args, **_kwargs):
        raise OSError(
            "We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them "
            "in the cached files.\nCheck your internet connection or see how to run the library in "
            "offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'."
        )

    monkeypatch.setenv("HEPWB_HOME", str(setup["tmp"]))  # no trained hep-reranker there
    monkeypatch.delenv("HEPWB_CROSS_ENCODER", raising=False)
    monkeypatch.setattr(sentence_transformers, "CrossEncoder", offline)
    load_cross_encoder.cache_clear()
    states = availability(setup["flat"], setup["emb"], ["bm25", "rerank"])
    assert states == {
        "bm25": "ok",
        "rerank": "needs a trained cross-encoder: run `hepwb adapt --cross-encoder hep-reranker` "
        "(or set HEPWB_CROSS_ENCODER to a CrossEncoder folder)",
    }
    lines = availability_lines(states).splitlines()
    assert len(lines) == 2 and "https" not in lines[1] and lines[1].endswith("folder)")


LETTER = (
    "# Beam-spin asymmetry in DVCS\n\nA. Airapetian,31 N. Akopov,31 Z. Akopov,31 M. Amarian,26\n\n"
    "(The HERMES Collaboration)\n\nThe beam-spin asymmetry in hard electroproduction of photons has been "
    "measured for the first time. The data have been accumulated by the HERMES experiment at DESY, in which "
    "the HERA 27.6 GeV positron beam scattered off an unpolarized hydrogen gas target.\n\n"
    "The sin phi amplitude of the beam-spin asymmetry is -0.23 with small systematic uncertainties, "
    "in agreement with model calculations of generalized parton distributions."
)
SECTIONED = (
    "# DVCS at HERA\n\n## Abstract\n\nA measurement of the DVCS cross section at HERA is presented.\n\n"
    "## 1 Introduction\n\nThe beam-spin asymmetry of DVCS constrains generalized parton distributions."
)


def test_compare_fills_the_section_of_every_hit(tmp_path):
    """Tutorial 3's table: a letter has no section headings, yet no hit's section is empty."""
    from hepwb.experiment.search import Searcher

    layout = Layout(tmp_path)
    docs = [markdown_document(LETTER, "L1"), markdown_document(SECTIONED, "S1")]
    cs = build_chunkset(docs, "hepilot", layout=layout, progress=False, chunk_size=48, chunk_overlap=0.0)
    emb = get_embedder()
    table = ChunkStore(layout.lancedb, emb).table(cs.chunkset_id, cs.chunks, cs.documents)
    searcher = Searcher(table, emb, cs)
    frame = searcher.compare("beam-spin asymmetry DVCS", ["bm25"], k=10)
    hits = searcher.search("beam-spin asymmetry DVCS", "bm25", k=10)
    sections = {(h.label, h.start): section for h, section in zip(hits, frame["section"], strict=True)}
    assert sections == {
        ("L1", 117): "Abstract",
        ("L1", 216): "Abstract",
        ("L1", 373): "main text (no section headings)",
        ("S1", 0): "Abstract",  # the chunk opens with the title, then "## Abstract"
        ("S1", 92): "1 Introduction",
    }, frame[["label", "section", "snippet"]]
    assert list(hits_frame(hits)["section"]).count("") == 4  # the section label alone: only one has a heading
