"""All 32 shared papers: conversion, HEPilot output validity and chunk invariants."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hepwb.chunking.prepare import prepare
from hepwb.hepilot import validate_tree
from hepwb.paths import Layout
from tests.helpers import PDF_DIR, SCHEMAS, assert_chunk_invariants

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepare(
        str(PDF_DIR), chunk_sizes=[512], layout=Layout(tmp_path_factory.mktemp("full")), progress=False
    )


def test_every_paper_converts(prepared):
    assert len(prepared.documents) == 32
    assert not prepared.log.errors
    for doc in prepared.documents:
        for b in doc.blocks:
            assert doc.markdown[b.start : b.end].strip()
            assert 1 <= b.page <= doc.meta["pages"]


def test_hepilot_tree_is_schema_valid(prepared):
    (cs,) = prepared.chunksets
    assert not validate_tree(cs.root, SCHEMAS)
    catalog = json.loads((cs.root / "catalog.json").read_text())
    assert catalog["total_documents"] == 32 and catalog["total_chunks"] == len(cs.chunks)
    assert (
        json.loads((cs.root / "adapter_config.json").read_text())["adapter_config"]["processing_config"][
            "chunk_size"
        ]
        == 512
    )


def test_chunk_invariants_on_every_paper(prepared):
    (cs,) = prepared.chunksets
    by_doc = cs.by_document()
    for doc in prepared.documents:
        assert_chunk_invariants(doc, by_doc[doc.document_id], 512)


@pytest.mark.parametrize(
    "name", ["token", "recursive", "sentence", "section", "sentence_window", "hierarchical"]
)
def test_every_strategy_keeps_the_invariants_on_every_paper(prepared, name):
    from hepwb.chunking import get_chunker

    chunker = get_chunker(name, chunk_size=256, chunk_overlap=0.1)
    for doc in prepared.documents:
        assert_chunk_invariants(doc, chunker.chunk(doc), 256)


@pytest.mark.slow
def test_semantic_strategy_keeps_the_invariants_on_every_paper(prepared):
    from hepwb.chunking import get_chunker

    chunker = get_chunker("semantic", chunk_size=256)
    for doc in prepared.documents:
        assert_chunk_invariants(doc, chunker.chunk(doc), 256)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # the fixture's repr is large
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(
        ["hepilot", "token", "recursive", "sentence", "section", "sentence_window", "hierarchical"]
    ),
    paper=st.integers(0, 31),
    size=st.integers(32, 1024),
    overlap=st.floats(0.0, 0.5),
)
def test_random_configurations_on_real_papers(prepared, name, paper, size, overlap):
    from hepwb.chunking import get_chunker

    params = {"chunk_size": size, "chunk_overlap": overlap}
    if name == "hierarchical":
        params["parent_size"] = size * 4
    doc = prepared.documents[paper]
    chunks = get_chunker(name, **params).chunk(doc)
    assert_chunk_invariants(doc, chunks, size)


def test_batched_tokenizer_spans_match_on_every_paper(prepared):
    """hepwb's tokenizer (the tokenizers library on tokenizer.json, long texts batched at paragraphs) gives
    the token spans and counts of transformers' tokenizer for the same model, on every paper."""
    import numpy as np
    from transformers import AutoTokenizer

    from hepwb.chunking import get_tokenizer
    from hepwb.models.tokenizers import resolve_model_path

    tok = get_tokenizer("all-MiniLM-L6-v2")
    ref = AutoTokenizer.from_pretrained(resolve_model_path("all-MiniLM-L6-v2"))
    ref.model_max_length = 10**9
    for doc in prepared.documents:
        enc = ref(doc.markdown, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        assert np.array_equal(tok.spans(doc.markdown), np.asarray(enc["offset_mapping"]).reshape(-1, 2)), (
            doc.label
        )
        first = doc.markdown.split("\n\n")[:50]
        assert [tok.count(p) for p in first] == [
            len(ref(p, add_special_tokens=False)["input_ids"]) for p in first
        ]
