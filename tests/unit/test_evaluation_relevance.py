"""Relevance of a retrieved chunk to an evidence quote."""

from __future__ import annotations

import dataclasses
import json

import pytest

from hepwb.evaluation import (
    Evidence,
    Located,
    Question,
    build_keyindexes,
    coverage,
    evaluate,
    is_relevant,
    locate_all,
)
from hepwb.types import Block, Chunk, Document, Hit


def test_a_repeated_quote_counts_wherever_it_is():
    sentence = "The beam-spin asymmetry is large and negative in every kinematic bin we measured."
    text = f"Abstract. {sentence}\n\nBody text that is unrelated to the claim.\n\nConclusion. {sentence}"
    doc = Document("d-rep", "R01", text, (Block("text", 0, len(text), 1),))
    q = Question("R01-1", "q", "a", (Evidence("R01-1#e0", "R01", 1, sentence),))
    (loc,), _ = locate_all([q], [doc])
    idx = build_keyindexes([doc])["d-rep"]
    second = text.rindex("Conclusion")
    hit = Hit("c2", "d-rep", "R01", second, len(text), 1, 1.0)
    assert coverage(loc, hit.start, hit.end, idx) == 0.0  # not the located (first) occurrence ...
    assert is_relevant(loc, hit, idx)  # ... but it holds the quote verbatim
    other = Hit("c3", "d-other", "R01", second, len(text), 1, 1.0)
    assert not is_relevant(loc, other, idx)


SENTENCE = (
    "The beam-spin asymmetry of deeply virtual Compton scattering off the proton is large and negative in "
    "every kinematic bin we measured, in agreement with models of generalised parton distributions."
)


LONG = (
    "We report the first measurement of the beam-charge asymmetry in hard exclusive electroproduction of "
    "real photons off the proton, using the polarised positron and electron beams of the storage ring "
    "incident on an unpolarised hydrogen gas target; the asymmetry shows a sizeable cosine modulation "
    "whose amplitude rises with the momentum transfer, as predicted by dispersive calculations that "
    "include the real part of the Compton form factor, while the sine term stays compatible with zero."
)
"""A passage of 30 pieces and more, no phrase of it twice: a changed word and a typo leave 90 % of them."""


def _twice(sentence: str = SENTENCE) -> tuple[Document, tuple[int, int], tuple[int, int]]:
    """A paper holding ``sentence`` in its abstract (page 1) and its conclusion (page 3); both spans."""
    parts = [
        f"Abstract. {sentence}",
        "Body text on the apparatus, unrelated to the claim.",
        f"Conclusion. {sentence}",
    ]
    text = "\n\n".join(parts)
    starts = [text.index(p) for p in parts]
    blocks = tuple(
        Block("text", s, s + len(p), i + 1) for i, (s, p) in enumerate(zip(starts, parts, strict=True))
    )
    first, second = text.index(sentence), text.rindex(sentence)
    return (
        Document("d-rep", "R01", text, blocks),
        (first, first + len(sentence)),
        (second, second + len(sentence)),
    )


@pytest.mark.parametrize(
    ("quote", "method"),
    [(SENTENCE, "strict"), (SENTENCE.replace("Compton", "Compten"), "tolerant")],
    ids=["verbatim", "one typo"],
)
def test_a_quote_standing_twice_is_located_at_both_copies_and_each_counts(quote, method):
    doc, first, second = _twice()
    idx = build_keyindexes([doc])["d-rep"]
    q = Question("R01-1", "q", "a", (Evidence("R01-1#e0", "R01", 1, quote),))
    (loc,), _ = locate_all([q], [doc])
    assert loc.method == method and (loc.start, loc.end) == (first[0], first[1] - 1)  # the "." has no key
    ((key_start, key_end),) = loc.copies
    assert idx.span(key_start, key_end) == (second[0], second[1] - 1)  # the conclusion's copy, listed
    conclusion = Hit("c2", "d-rep", "R01", second[0] - len("Conclusion. "), len(doc.markdown), 1, 1.0)
    assert coverage(loc, conclusion.start, conclusion.end, idx) == 0.0 and is_relevant(loc, conclusion, idx)
    body = Hit("c1", "d-rep", "R01", doc.blocks[1].start, doc.blocks[1].end, 1, 1.0)
    assert not is_relevant(loc, body, idx)
    # retrieved at rank 1, the chunk holding the second copy is a hit, not a miss
    ev = evaluate([q], [loc], {"R01-1": [conclusion, body]}, ks=(1,), keyindexes={"d-rep": idx})
    assert ev.per_evidence["rank"].tolist() == [1] and ev.summary["hit_rate@1"] == 1.0


@pytest.mark.parametrize(
    ("quote", "method"),
    [(LONG, "strict"), (LONG.replace("Compton", "Compten", 1), "tolerant")],
    ids=["verbatim", "one typo"],
)
def test_a_sibling_sentence_differing_in_a_word_is_no_copy(quote, method):
    """The conclusion says "deuteron" where the abstract says "proton": another claim, not a copy.

    It holds 90 % of the quote's pieces (a typo'd quote would be located there if the abstract lacked the
    sentence), but fewer than the abstract does: neither a verbatim nor a tolerant quote counts it.
    """
    doc, first, _ = _twice(LONG)
    sibling = doc.markdown[: doc.markdown.rindex(LONG)] + LONG.replace("proton", "deuteron", 1)
    paper = Document("d-sib", "R01", sibling, doc.blocks)
    (loc,), _ = locate_all([Question("R", "q", "a", (Evidence("R#e0", "R01", 1, quote),))], [paper])
    assert (loc.method, loc.start, loc.copies) == (method, first[0], ())
    alone = Document("d-alone", "R01", sibling[sibling.index("Body") :], ())  # the sibling alone: found there
    (there,), _ = locate_all([Question("R", "q", "a", (Evidence("R#e0", "R01", None, quote),))], [alone])
    assert there.method == "tolerant" and there.copies == ()


def test_located_copies_survive_the_json_of_the_evidence_cache():
    doc, _, _ = _twice()
    q = Question("R01-1", "q", "a", (Evidence("R01-1#e0", "R01", 1, SENTENCE.replace("Compton", "Compten")),))
    (loc,), _ = locate_all([q], [doc])
    again = Located(**json.loads(json.dumps(dataclasses.asdict(loc))))
    assert again == loc and isinstance(again.copies[0], tuple) and hash(again) == hash(loc)


@pytest.mark.parametrize(
    "quote", [SENTENCE, SENTENCE.replace("Compton", "Compten")], ids=["verbatim", "one typo"]
)
def test_the_chunk_qrels_list_the_chunk_of_every_copy(quote):
    from hepwb.interop.judgements import chunk_qrels

    doc, _, _ = _twice()
    chunks = [
        Chunk(f"c{i}", "d-rep", i, b.start, b.end, doc.markdown[b.start : b.end], 9)
        for i, b in enumerate(doc.blocks)
    ]
    q = Question("R01-1", "q", "a", (Evidence("R01-1#e0", "R01", 1, quote),))
    located, _ = locate_all([q], [doc])
    assert chunk_qrels(located, chunks, build_keyindexes([doc]), 0.5) == {"R01-1": {"c0": 1, "c2": 1}}
