"""Invariants every registered chunking strategy must keep."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hepwb.chunking import CHUNKERS, get_chunker
from hepwb.processing.markdown import markdown_document
from hepwb.types import Block, Document
from tests.helpers import SAMPLE_MD, assert_chunk_invariants

STRATEGIES = CHUNKERS.names()


def test_all_strategies_are_registered():
    assert set(STRATEGIES) >= {"hepilot", "token", "recursive", "sentence", "section"}


SLOWEST = ("cluster_semantic", 8)
"""Clustering 8-token pieces takes the longest of all (8 s): in make test, not make check."""
SAMPLE_CASES = [
    pytest.param(name, size, overlap, marks=[pytest.mark.heavy] if (name, size) == SLOWEST else [])
    for name in STRATEGIES
    for size, overlap in [(8, 0.0), (16, 0.25), (40, 0.1), (400, 0.1)]
]


@pytest.mark.parametrize(("name", "size", "overlap"), SAMPLE_CASES)
def test_invariants_on_sample(name, size, overlap):
    doc = markdown_document(SAMPLE_MD, "S")
    chunks = get_chunker(name, chunk_size=size, chunk_overlap=overlap, tokenizer="words").chunk(doc)
    assert_chunk_invariants(doc, chunks, size)
    assert chunks[0].overlap_tokens == 0
    assert all(c.overlap_tokens <= round(size * overlap) for c in chunks)


@pytest.mark.parametrize("name", STRATEGIES)
def test_ids_are_deterministic(name):
    doc = markdown_document(SAMPLE_MD, "S")
    a = get_chunker(name, chunk_size=24, tokenizer="words").chunk(doc)
    b = get_chunker(name, chunk_size=24, tokenizer="words").chunk(doc)
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]


@pytest.mark.parametrize("name", STRATEGIES)
def test_nothing_spans_the_bibliography(name):
    text = "Intro text here.\n\n[1] A. Author, Phys. Rev. D 1 (2000) 1.\n\nAppendix text follows."
    blocks = (Block("text", 0, 16, 1), Block("reference", 18, 57, 1), Block("text", 59, len(text), 1))
    doc = Document("d", "R", text, blocks)
    chunks = get_chunker(name, chunk_size=100, chunk_overlap=0.5, tokenizer="words").chunk(doc)
    assert [c.text for c in chunks] == ["Intro text here.", "Appendix text follows."]


def test_token_windows_have_exact_size_and_overlap():
    doc = markdown_document(" ".join(f"w{i}" for i in range(100)), "T")
    chunks = get_chunker("token", chunk_size=20, chunk_overlap=0.25, tokenizer="words").chunk(doc)
    assert [c.token_count for c in chunks[:-1]] == [20] * (len(chunks) - 1)
    assert [c.overlap_tokens for c in chunks[1:]] == [5] * (len(chunks) - 1)
    assert chunks[-1].text.endswith("w99")


def test_section_chunker_starts_every_section():
    doc = markdown_document("# A\n\nOne.\n\n## A.1\n\nTwo.\n\n# B\n\nThree.", "S")
    chunks = get_chunker("section", chunk_size=64, tokenizer="words").chunk(doc)
    assert [c.section_path for c in chunks] == [("A",), ("A", "A.1"), ("B",)]


_word = st.text(alphabet="abcdefgh.,", min_size=1, max_size=8)
_para = st.lists(_word, min_size=1, max_size=40).map(" ".join)
_block = st.one_of(
    _para,
    _para.map(lambda p: f"## {p[:20]}"),
    _para.map(lambda p: f"$$\n{p}\n$$"),
    _para.map(lambda p: f"| a | b |\n|---|---|\n| {p[:30]} | x |"),
    _para.map(lambda p: f"```\n{p}\n```"),
    st.lists(_para, min_size=2, max_size=4).map("\n".join),
)

# the strategies that embed every piece are in `make test`, not in `make check`
EMBEDDING_HEAVY = [
    pytest.param(n, marks=pytest.mark.heavy) if n in ("semantic", "cluster_semantic") else n
    for n in STRATEGIES
]


@pytest.mark.parametrize("name", EMBEDDING_HEAVY)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_block, min_size=1, max_size=10), size=st.integers(8, 60), overlap=st.floats(0, 0.5))
def test_invariants_hold_on_random_markdown(name, blocks, size, overlap):
    doc = markdown_document("\n\n".join(blocks), "H")
    chunks = get_chunker(name, chunk_size=size, chunk_overlap=overlap, tokenizer="words").chunk(doc)
    assert_chunk_invariants(doc, chunks, size)


@pytest.mark.parametrize("tokenizer", ["words", "cl100k", "all-MiniLM-L6-v2"])
def test_every_tokenizer_gives_exact_chunks(tokenizer):
    from hepwb.chunking import get_tokenizer

    doc = markdown_document(SAMPLE_MD, "S")
    chunks = get_chunker("hepilot", chunk_size=32, chunk_overlap=0.1, tokenizer=tokenizer).chunk(doc)
    assert_chunk_invariants(doc, chunks, 32)
    tok = get_tokenizer(tokenizer)
    assert all(tok.count(c.text) == c.token_count for c in chunks)


@pytest.mark.parametrize("name", STRATEGIES)
def test_cl100k_chunks_fit_after_recount(name):
    from hepwb.chunking import get_tokenizer

    doc = markdown_document(SAMPLE_MD * 3, "S")
    chunks = get_chunker(name, chunk_size=24, chunk_overlap=0.2, tokenizer="cl100k").chunk(doc)
    assert_chunk_invariants(doc, chunks, 24)
    tok = get_tokenizer("cl100k")
    assert all(c.token_count == tok.count(c.text) for c in chunks)


def test_sentence_window_context_holds_the_neighbours():
    doc = markdown_document("# T\n\nOne is here. Two is here. Three is here. Four is here.", "S")
    chunks = get_chunker("sentence_window", chunk_size=16, tokenizer="words", window=1).chunk(doc)
    assert [c.text for c in chunks] == [
        "# T\n\nOne is here.",
        "Two is here.",
        "Three is here.",
        "Four is here.",
    ]
    assert doc.markdown[slice(*chunks[2].context)] == "Two is here. Three is here. Four is here."


def test_hierarchical_children_point_at_their_parent():
    from hepwb.chunking.hepilot import HepilotChunker

    doc = markdown_document(SAMPLE_MD * 4, "S")
    kids = get_chunker("hierarchical", chunk_size=16, parent_size=80, tokenizer="words").chunk(doc)
    parents = {(p.start, p.end) for p in HepilotChunker(80, 0.0, "words").chunk(doc)}
    assert all(k.context_start >= 0 for k in kids)
    assert sum(k.context in parents for k in kids) >= 0.8 * len(kids)  # the rest straddle two parents
    with pytest.raises(Exception, match="parent_size"):
        get_chunker("hierarchical", chunk_size=64, parent_size=32)


def test_semantic_chunker_breaks_between_topics():
    physics = " ".join(
        f"The {w} calorimeter measured the photon energy in the detector."
        for w in ("lead", "iron", "crystal", "glass")
    )
    cooking = " ".join(
        f"Bake the {w} bread in a hot oven for forty minutes." for w in ("rye", "wheat", "corn", "oat")
    )
    doc = markdown_document(f"{physics} {cooking}", "M")
    chunks = get_chunker("semantic", chunk_size=400, breakpoint_percentile=80, tokenizer="words").chunk(doc)
    assert_chunk_invariants(doc, chunks, 400)
    assert len(chunks) >= 2
    assert any(c.text.endswith("detector.") for c in chunks)  # a break right where the topic changes


def test_batched_wordpiece_spans_equal_whole_text_spans():
    """A long text's spans (cut into pieces, read by the tokenizers library) are transformers' for it."""
    import numpy as np
    from transformers import AutoTokenizer

    from hepwb.chunking import get_tokenizer
    from hepwb.models.tokenizers import resolve_model_path

    tok = get_tokenizer("all-MiniLM-L6-v2")
    ref = AutoTokenizer.from_pretrained(resolve_model_path("all-MiniLM-L6-v2"))
    ref.model_max_length = 10**9
    text = "\n\n".join([SAMPLE_MD] * 40)  # long enough to be cut into pieces
    enc = ref(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    assert np.array_equal(tok.spans(text), np.asarray(enc["offset_mapping"]).reshape(-1, 2))
    assert tok.count(SAMPLE_MD) == len(ref(SAMPLE_MD, add_special_tokens=False)["input_ids"])


@pytest.mark.parametrize("name", ["hepilot", "recursive", "sentence", "section"])
def test_overlap_is_exactly_as_configured_with_the_model_tokenizer(name):
    doc = markdown_document(
        "# T\n\n" + " ".join(f"Sentence number {i} about asymmetries." for i in range(200)), "O"
    )
    chunks = get_chunker(name, chunk_size=64, chunk_overlap=0.25).chunk(doc)
    assert len(chunks) > 5
    assert [c.overlap_tokens for c in chunks[1:]] == [16] * (len(chunks) - 1)
    assert all(c.token_count <= 64 for c in chunks)


@pytest.mark.parametrize("name", ["hepilot", "recursive", "sentence_window"])
def test_a_caption_floated_after_the_references_keeps_the_section_that_mentions_it(name):
    from hepwb.processing.markdown import markdown_document

    md = (
        "# A ZEUS measurement\n\n## 1 Introduction\n\nWe measure the charm cross section at HERA.\n\n"
        "## 2 Results\n\nAs Figure 5 shows, the cross section rises with the photon virtuality at all "
        "energies that were studied here.\n\n## References\n\n[1] A. Author, Phys. Lett. B 1 (2000) 1.\n\n"
        "Figure 5: ZEUS charm cross section as a function of the photon virtuality.\n\n"
        "Figure 6: A figure that no paragraph mentions.\n"
    )
    doc = markdown_document(md, "Z01")
    chunks = get_chunker(name, chunk_size=64, chunk_overlap=0.0).chunk(doc)
    captions = {c.section_path[-1]: c.section_path for c in chunks if c.chunk_type == "caption"}
    assert captions["Figure 5"] == ("A ZEUS measurement", "2 Results", "Figure 5")
    assert "References" not in captions["Figure 6"]
