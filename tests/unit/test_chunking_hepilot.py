from __future__ import annotations

import itertools
import json

import pytest

from hepwb.chunking import get_chunker
from hepwb.chunking.hepilot import HepilotChunker
from hepwb.chunking.sentences import sentence_spans
from hepwb.exceptions import ConfigError
from hepwb.processing.markdown import markdown_document
from tests.helpers import SAMPLE_MD, assert_chunk_invariants


@pytest.mark.parametrize("size", [16, 24, 40, 80, 400])
@pytest.mark.parametrize("overlap", [0.0, 0.1, 0.25])
def test_invariants_on_sample(size, overlap):
    doc = markdown_document(SAMPLE_MD, "S")
    chunks = HepilotChunker(chunk_size=size, chunk_overlap=overlap, tokenizer="words").chunk(doc)
    assert_chunk_invariants(doc, chunks, size)
    assert chunks[0].overlap_tokens == 0
    for c in chunks[1:]:
        assert c.overlap_tokens <= round(size * overlap)


def test_atomic_block_larger_than_budget_is_flagged_not_split():
    doc = markdown_document(SAMPLE_MD, "S")
    chunks = HepilotChunker(chunk_size=12, chunk_overlap=0.0, tokenizer="words").chunk(doc)
    big = [c for c in chunks if c.oversized]
    assert big and all(c.text.startswith(("$$", "|", "```")) for c in big)
    assert_chunk_invariants(doc, chunks, 12)


def test_overlap_is_taken_from_previous_chunk():
    doc = markdown_document("# T\n\n" + " ".join(f"w{i}." for i in range(300)), "S")
    chunks = HepilotChunker(chunk_size=50, chunk_overlap=0.2, tokenizer="words").chunk(doc)
    for prev, cur in itertools.pairwise(chunks):
        assert cur.overlap_tokens == 10
        assert prev.start <= cur.start < prev.end  # overlap region lies inside the previous chunk
        assert cur.token_count <= 50


def test_sections_start_new_chunks_when_full_enough():
    body = " ".join(["Sentence number one is here."] * 6)  # 30 words
    doc = markdown_document(f"# A\n\n{body}\n\n# B\n\n{body}", "S")
    merged = HepilotChunker(chunk_size=100, chunk_overlap=0.0, tokenizer="words").chunk(doc)
    assert [c.section_path for c in merged] == [("A",)]  # small sections share a chunk (32 < 0.5 * 100)
    split = HepilotChunker(chunk_size=100, chunk_overlap=0.0, tokenizer="words", min_section_fill=0.3).chunk(
        doc
    )
    assert [c.section_path for c in split] == [("A",), ("B",)]
    assert split[1].text.startswith("# B")


def test_ids_are_deterministic_and_config_dependent():
    doc = markdown_document(SAMPLE_MD, "S")
    a = HepilotChunker(chunk_size=40, tokenizer="words").chunk(doc)
    b = HepilotChunker(chunk_size=40, tokenizer="words").chunk(doc)
    c = HepilotChunker(chunk_size=41, tokenizer="words").chunk(doc)
    assert [x.chunk_id for x in a] == [x.chunk_id for x in b]
    assert a[0].chunk_id != c[0].chunk_id


def test_model_tokenizer_counts_word_pieces():
    doc = markdown_document(SAMPLE_MD, "S")
    chunks = HepilotChunker(chunk_size=64, chunk_overlap=0.1).chunk(doc)
    assert_chunk_invariants(doc, chunks, 64)
    from hepwb.chunking import get_tokenizer

    tok = get_tokenizer("all-MiniLM-L6-v2")
    assert all(c.token_count == tok.count(c.text) for c in chunks)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"chunk_size": 0}, "chunk_size"),
        ({"chunk_overlap": 1.0}, "fraction"),
        ({"min_section_fill": 2}, "min_section"),
    ],
)
def test_bad_parameters_name_the_fix(params, match):
    with pytest.raises(ConfigError, match=match):
        HepilotChunker(**params)


def test_registry_rejects_unknown_parameters():
    with pytest.raises(ConfigError, match=r"chunker 'hepilot' has no option\(s\) \['chunksize'\]"):
        get_chunker("hepilot", chunksize=3)
    with pytest.raises(ConfigError, match="choose one of"):
        get_chunker("nope")


def test_sentence_spans_respect_abbreviations():
    text = "See Fig. 2 and Eq. 3 in Ref. 4. The value is 1.5 GeV. Done."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "See Fig. 2 and Eq. 3 in Ref. 4.",
        "The value is 1.5 GeV.",
        "Done.",
    ]


def test_a_word_longer_than_the_budget_is_cut_between_tokens():
    url = "https://example.org/" + "/".join(f"segment{i}" for i in range(80))
    doc = markdown_document(f"# Links\n\nSee {url} for the data.", "U")
    chunks = HepilotChunker(chunk_size=32, chunk_overlap=0.0).chunk(doc)
    assert_chunk_invariants(doc, chunks, 32)
    assert all(c.token_count <= 32 for c in chunks)
    assert "".join(c.text for c in chunks if c.section_path == ("Links",)).replace(" ", "").endswith("data.")


def test_kept_sentence_splits_are_reused_and_a_damaged_file_is_made_again(tmp_path, monkeypatch):
    from hepwb.chunking import sentences

    text = "The first sentence of a paper nobody split before. Its second one."
    kept = tmp_path / "paper.json"
    with sentences.remembered(kept, ["A paragraph of the paper. Split on the way."]):
        made = sentence_spans(text)
    body = json.loads(kept.read_text())
    assert len(body["texts"]) == 2  # the split text and the paper's other paragraph
    sentences._KNOWN.clear()  # as a fresh process
    sentences._LOADED.clear()

    def no_nltk():
        raise AssertionError("split again although the split was kept")

    monkeypatch.setattr(sentences, "_tokenizer", no_nltk)
    with sentences.remembered(kept):
        assert sentence_spans(text) == made
    sentences._KNOWN.clear()  # as a fresh process
    sentences._LOADED.clear()
    monkeypatch.undo()
    kept.write_text("{not json")
    with sentences.remembered(kept):
        assert sentence_spans(text) == made
    assert len(json.loads(kept.read_text())["texts"]) == 1
