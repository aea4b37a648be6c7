"""Relevance of a retrieved chunk to an evidence quote."""

from __future__ import annotations

from hepwb.evaluation import Evidence, Question, build_keyindexes, coverage, is_relevant, locate_all
from hepwb.types import Block, Document, Hit


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
