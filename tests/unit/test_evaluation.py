"""Tests of hepwb.evaluation: question loading, quote location, coverage and rank metrics."""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hepwb.evaluation import (
    Evidence,
    KeyIndex,
    Located,
    Question,
    Unlocated,
    build_keyindexes,
    coverage,
    evaluate,
    evaluate_by,
    is_relevant,
    key,
    load_questions,
    locate,
    locate_all,
    locate_evidence,
    unlocated_reason,
)
from hepwb.evaluation.matching import SHORT_KEY_CHARS
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.types import Block, Document, Hit

SHARED = Path(os.environ.get("HEPWB_SHARED", Path(__file__).resolve().parents[2].parent / "shared"))


def ref_key(s: str) -> str:
    """The key function of shared/eval/check_quotes.py, verbatim."""
    s = unicodedata.normalize("NFKC", s).lower()
    return re.sub(r"[^a-z0-9]", "", s)


def make_doc(
    parts: list[str], label: str = "P01", doc_id: str = "d1"
) -> tuple[Document, list[tuple[int, int]]]:
    """Join ``parts`` with blank lines, one text block per part on pages 1, 2, ...; return spans."""
    md, spans, blocks = "", [], []
    for i, part in enumerate(parts):
        if md:
            md += "\n\n"
        spans.append((len(md), len(md) + len(part)))
        blocks.append(Block("text", len(md), len(md) + len(part), i + 1))
        md += part
    return Document(doc_id, label, md, tuple(blocks)), spans


# ---------------------------------------------------------------- key and KeyIndex

TRICKY = [
    "Eﬃciency ﬁt ﬂow",  # ligatures
    "Λ_c → pK⁻π⁺ with χ²/ndf = 1.2",  # Greek, super- and subscripts
    "A = −0.23 ± 0.04 (stat) ∓ 0.03",  # minus and plus-minus signs
    "cross-\nsection, well‐known – non‑trivial",  # hyphens and dashes
    "Ⅻ ½ ℃ ㎒ ＡＢＣ１２",  # compatibility characters
    "café naïve e\u0301 A\u030a",  # precomposed and combining accents
    "İstanbul STRASSE Straße KELVIN",  # case mapping oddities
    "\u0301leading mark",
]


def fold(text: str) -> str:
    """Accents removed (NFKD, combining marks dropped): the one place our key departs from check_quotes."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


@pytest.mark.parametrize("text", TRICKY)
def test_key_matches_check_quotes(text: str) -> None:
    assert key(text) == ref_key(fold(text))
    assert KeyIndex.build(Document("d", "P", text, ())).key == ref_key(fold(text))
    if fold(text) == unicodedata.normalize("NFKC", text):  # no accented letter: exactly check_quotes' key
        assert key(text) == ref_key(text)


def test_key_folds_accents_so_repaired_names_match_raw_extraction() -> None:
    assert key("Müller") == key("M¨uller") == ref_key("M¨uller") == "muller"
    assert key("Čerenkov") == key("ˇCerenkov") == ref_key("ˇCerenkov") == "cerenkov"


def test_key_examples() -> None:
    assert key("Eﬃciency") == "efficiency"
    assert key("−0.23 ± 0.04") == "023004"
    assert key("π⁰ → γγ") == "0"
    assert key("cross-\nsection") == "crosssection"
    assert key("café") == "cafe"  # the accent is folded (check_quotes would drop the é)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ9 -.é\u0301\u0308ﬁπ⁰²ßİ−±Åǅ\u0345ᾳ")), max_size=40))
def test_keyindex_round_trip(text: str) -> None:
    idx = KeyIndex.build(Document("d", "P", text, ()))
    assert idx.key == ref_key(fold(text))
    assert len(idx.starts) == len(idx.ends) == len(idx.key)
    assert list(idx.starts) == sorted(idx.starts)
    for i, ch in enumerate(idx.key):
        assert ch in ref_key(fold(text[idx.starts[i] : idx.ends[i]]))
    if idx.key:
        start, end = idx.span(0, len(idx.key))
        assert ref_key(fold(text[start:end])) == idx.key


def test_keyindex_span_and_key_range() -> None:
    text = "Ef-ﬁcient ± α beam"
    idx = KeyIndex.build(Document("d", "P", text, ()))
    assert idx.key == "efficientbeam"
    ks = idx.key.index("beam")
    assert idx.span(ks, ks + 4) == (text.index("beam"), len(text))
    assert idx.key_range(*idx.span(ks, ks + 4)) == (ks, ks + 4)
    with pytest.raises(ConfigError):
        idx.span(3, 3)


# ---------------------------------------------------------------- locate

QA = "The beam-spin asymmetry amounts to −0.23 ± 0.04 (stat) in the exclusive region."
QB = "Scintillator hodoscopes provided the first-level trigger for all positron events recorded."
QC = "Systematic uncertainties are dominated by the luminosity and acceptance corrections."
FILL = [
    "Introductory remarks about the apparatus that are unrelated to the quoted sentences here.",
    "Further unrelated filler prose concerning calibration of calorimeters and tracking chambers.",
    "A closing paragraph mentioning outlook and acknowledgements for funding agencies only.",
]


@pytest.fixture
def doc_spans() -> tuple[Document, list[tuple[int, int]]]:
    # pages: 1 FILL0, 2 QA, 3 FILL1, 4 QB, 5 QC, 6 FILL2
    return make_doc([FILL[0], QA, FILL[1], QB, QC, FILL[2]])


def test_locate_strict(doc_spans: tuple[Document, list[tuple[int, int]]]) -> None:
    doc, _ = doc_spans
    ev = Evidence("Q1#e0", "P01", 2, "beam spin asymmetry amounts to -0.23 +- 0.04 (stat)")
    loc = locate(ev, {"P01": doc})
    assert loc is not None
    assert (loc.method, loc.page, loc.page_ok, loc.qid, loc.label) == ("strict", 2, True, "Q1", "P01")
    assert doc.markdown[loc.start : loc.end] == "beam-spin asymmetry amounts to −0.23 ± 0.04 (stat"
    assert key(doc.markdown[loc.start : loc.end]) == key(ev.quote)
    assert loc.key_end - loc.key_start == len(key(ev.quote))
    wrong_page = locate(Evidence("Q1#e0", "P01", 5, ev.quote), {"P01": doc})
    assert wrong_page is not None and wrong_page.page == 2 and not wrong_page.page_ok


def test_locate_prefers_occurrence_on_evidence_page() -> None:
    doc, spans = make_doc([QB, FILL[0], QB])
    first = locate(Evidence("Q#e0", "P01", 1, QB), {"P01": doc})
    third = locate(Evidence("Q#e0", "P01", 3, QB), {"P01": doc})
    other = locate(Evidence("Q#e0", "P01", 2, QB), {"P01": doc})
    assert first is not None and (first.start, first.page) == (spans[0][0], 1)
    assert third is not None and (third.start, third.page, third.page_ok) == (spans[2][0], 3, True)
    assert other is not None and (other.start, other.page_ok) == (spans[0][0], False)


def test_locate_tolerant() -> None:
    # a converter re-rendered a symbol as LaTeX: one 16-char piece of the quote's key is broken
    quote = (
        "The measured asymmetry parameter for the exclusive sample with a single detected photon "
        "and positron agrees with theoretical expectations from generalised parton distributions."
    )
    rendered = quote.replace("single detected", "$\\mathrm{single}$ detected")
    doc, spans = make_doc([FILL[0], rendered, FILL[1]])
    ev = Evidence("Q#e0", "P01", 2, quote)
    assert key(quote) not in key(doc.markdown)
    loc = locate(ev, {"P01": doc})
    assert loc is not None and loc.method == "tolerant" and loc.page_ok
    assert (loc.start, loc.end) == (spans[1][0], spans[1][1] - 1)  # the final "." has no key character


def _tolerant_every_anchor(qk: str, idx: KeyIndex, page: int | None) -> list[tuple[int, int]]:
    """The oracle: the tolerant rule followed from every anchor (as hepwb did before it skipped any), then
    the best place and every other place apart from it with as many pieces."""
    from hepwb.evaluation.matching import _page_info

    pieces = [qk[i : i + 16] for i in range(0, len(qk), 16)]
    n = len(pieces)
    need = next(f for f in range(n + 1) if f / n >= 0.9)
    window, text = 2 * len(qk) + 256, idx.key
    ranked = []
    for a in range(n - need + 1):
        pos, count = text.find(pieces[a]), 0
        while pos >= 0 and count < 200:
            limit = min(pos + window, len(text))
            found, cur = 1, pos + len(pieces[a])
            end = cur
            for p in pieces[a + 1 :]:
                j = text.find(p, cur, limit)
                if j >= 0:
                    found, cur, end = found + 1, j + len(p), j + len(p)
            if found >= need:
                page_ok = _page_info(idx, int(idx.starts[pos]), page)[1]
                ranked.append(((found, page_ok, pos - end, -pos, -a), pos, end))
            pos, count = text.find(pieces[a], pos + 1), count + 1
    ranked.sort(reverse=True)
    places: list[tuple[int, int]] = []
    for rank, start, end in ranked:
        if rank[0] == ranked[0][0][0] and all(end <= s or e <= start for s, e in places):
            places.append((start, end))
    return places


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab", min_size=160, max_size=400),
    st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["", "a", "b", "ab"]), st.integers(0, 3)),
             max_size=6),
    st.lists(st.integers(0, 400), max_size=5),
    st.integers(0, 3),
    st.integers(0, 2),
)  # fmt: skip
def test_tolerant_matching_locates_where_following_every_anchor_does(quote, edits, cuts, copies, page):
    """Anchors that cannot change the result are skipped: the same places are found, the best first."""
    from hepwb.evaluation.matching import _tolerant

    def edit(text: str, changes: list[tuple[int, str, int]]) -> str:
        for at, insert, drop in changes:
            i = at % (len(text) + 1)
            text = text[:i] + insert + text[i + drop :]
        return text

    paper = "ba" * 50 + "".join(edit(quote, edits[i:]) + "b" * (30 + 7 * i) for i in range(copies))
    for cut in cuts:  # pages: a block break every so often
        paper = paper[:cut] + " " + paper[cut:]
    blocks = tuple(Block("text", i, min(i + 97, len(paper)), 1 + i // 97) for i in range(0, len(paper), 97))
    idx = KeyIndex.build(Document("d", "P", paper, blocks))
    qk = key(edit(quote, edits[:2]))
    assert _tolerant(qk, idx, page or None) == _tolerant_every_anchor(qk, idx, page or None)


def test_a_quote_longer_than_max_quote_chars_is_refused_in_one_line() -> None:
    from hepwb.limits import MAX_QUOTE_CHARS

    doc, _ = make_doc([FILL[0], QA])
    quote = (QA + " ") * (MAX_QUOTE_CHARS // len(QA) + 1)
    assert len(quote) > MAX_QUOTE_CHARS
    with pytest.raises(ConfigError) as refused:
        locate_evidence(Evidence("P01-07#e0", "P01", 2, quote), {"P01": doc})
    line = str(refused.value)
    assert "\n" not in line and line.startswith("question 'P01-07', evidence P01-07#e0 (P01)")
    assert f"the quote has {len(quote)} characters; at most {MAX_QUOTE_CHARS} are matched" in line
    assert "quote the sentence or paragraph that holds the answer" in line
    q = Question("P01-07", "?", "", (Evidence("P01-07#e0", "P01", 2, quote),))
    with pytest.raises(ConfigError, match=r"question 'P01-07'.*at most"):
        locate_all([q], [doc])
    at_cap = locate_evidence(Evidence("P01-07#e0", "P01", 2, quote[:MAX_QUOTE_CHARS]), {"P01": doc})
    assert isinstance(at_cap, Unlocated) and at_cap.status == "not_found"  # matched as any quote


def test_a_question_file_with_a_quote_longer_than_max_quote_chars_is_refused_when_read(
    tmp_path: Path,
) -> None:
    from hepwb.evaluation.questions import question_schema
    from hepwb.limits import MAX_QUOTE_CHARS

    path = tmp_path / "qa.jsonl"
    ok = {"qid": "Q1", "question": "?", "evidence": [{"doc": "P01", "quote": "q" * MAX_QUOTE_CHARS}]}
    long = {"qid": "Q2", "question": "?", "evidence": [{"doc": "P01", "quote": "q" * (MAX_QUOTE_CHARS + 1)}]}
    path.write_text(json.dumps(ok) + "\n" + json.dumps(long) + "\n")
    with pytest.raises(ConfigError) as refused:
        load_questions(path)
    assert str(refused.value) == (
        f"{path} line 2, evidence[0]: the quote of question 'Q2' has {MAX_QUOTE_CHARS + 1} characters; "
        f"at most {MAX_QUOTE_CHARS} are matched (quote the sentence or paragraph that holds the answer, "
        "not a whole section)"
    )
    assert (
        question_schema()["properties"]["evidence"]["items"]["properties"]["quote"]["maxLength"]
        == MAX_QUOTE_CHARS
    )


def _words(n: int, seed: int) -> str:
    """``n`` characters of made-up words of six letters (a vocabulary of 5,000), different for every ``seed``.

    Few letters make each search of the text slower, as a paper repeating its own phrases does.
    """
    import random

    rng = random.Random(seed)
    vocabulary = ["".join(rng.choices("abcdef", k=rng.randint(2, 9))) for _ in range(5000)]
    return " ".join(rng.choices(vocabulary, k=n // 4 + 1))[:n]


@pytest.mark.parametrize("present", [True, False], ids=["quoted with a typo", "not in the paper"])
def test_a_long_quote_whose_opening_repeats_in_a_large_paper_is_matched_in_well_under_a_second(present):
    import time

    from hepwb.limits import MAX_QUOTE_CHARS

    quote = _words(MAX_QUOTE_CHARS, 1)
    opening, filler = quote[:600], _words(1_000_000, 2)
    parts = [filler[i * 1000 : i * 1000 + 400] + " " + opening + " " for i in range(1000)]  # 1,000 times
    if present:  # the whole quote once, early, and quoted with one letter changed
        parts.insert(3, f" {quote} ")
    paper = "".join(parts)
    doc = Document("d", "P01", paper, (Block("text", 0, len(paper), 1),))
    idx = KeyIndex.build(doc)
    typo = quote[:2000] + "Q" + quote[2001:]
    started = time.perf_counter()
    found = locate_evidence(Evidence("Q#e0", "P01", 1, typo), {"P01": idx})
    took = time.perf_counter() - started
    assert took < 1.0, f"{took:.1f} s"  # following every anchor took 10 s
    if present:
        assert isinstance(found, Located) and found.method == "tolerant" and found.copies == ()
        assert paper[found.start : found.end] == quote.strip()
    else:
        assert isinstance(found, Unlocated) and found.status == "not_found"


def test_locate_none(doc_spans: tuple[Document, list[tuple[int, int]]]) -> None:
    doc, _ = doc_spans
    docs = {"P01": doc}
    absent = Evidence("Q#e1", "P01", 2, "This sentence does not occur anywhere in the document at all.")
    no_doc = Evidence("Q#e2", "P99", 2, QA)
    no_text = Evidence("Q#e4", "P01", 2, "± → …")
    for ev in (absent, no_doc, no_text):
        assert locate(ev, docs) is None
    assert "not in P01's converted text" in unlocated_reason(absent, docs)
    assert "P99" in unlocated_reason(no_doc, docs)
    assert "no letter or digit" in unlocated_reason(no_text, docs)
    assert unlocated_reason(Evidence("Q#e3", "P01", 2, QA), docs) == ""


def test_a_short_quote_is_located_only_where_it_is_unambiguous() -> None:
    short = "The fitted amplitude is"  # 20 key characters: below SHORT_KEY_CHARS
    assert len(key(short)) < SHORT_KEY_CHARS
    doc, spans = make_doc([FILL[0], f"{short} 0.42 for the proton.", FILL[1]])
    loc = locate_evidence(Evidence("Q#e0", "P01", 2, short), {"P01": doc})
    assert isinstance(loc, Located) and loc.method == "unique" and loc.page_ok
    assert doc.markdown[loc.start : loc.end] == short
    # no page named: still unique in the document
    assert isinstance(locate_evidence(Evidence("Q#e0", "P01", None, short), {"P01": doc}), Located)
    # twice, on pages 1 and 3: unique on the page the evidence names, ambiguous without a page
    twice, spans = make_doc([f"{short} 0.42.", FILL[0], f"{short} 0.51."])
    on_page = locate_evidence(Evidence("Q#e0", "P01", 3, short), {"P01": twice})
    assert isinstance(on_page, Located) and on_page.start == spans[2][0]
    for page in (None, 2):  # no page, or a page holding neither copy
        amb = locate_evidence(Evidence("Q#e0", "P01", page, short), {"P01": twice})
        assert isinstance(amb, Unlocated) and amb.status == "ambiguous" and amb.pages == (1, 3)
        assert "matches in 2 places (pages 1, 3)" in amb.reason and amb.row()["matched_pages"] == [1, 3]
    # the located copy alone is relevant: the other copy's chunk is not
    hit_other = Hit("c", twice.document_id, "P01", spans[0][0], spans[0][1], 1, 1.0)
    hit_this = Hit("c", twice.document_id, "P01", spans[2][0], spans[2][1], 1, 1.0)
    idx = KeyIndex.build(twice)
    assert is_relevant(on_page, hit_this, idx) and not is_relevant(on_page, hit_other, idx)


def test_locate_all_splits_and_rejects_duplicate_labels(
    doc_spans: tuple[Document, list[tuple[int, int]]],
) -> None:
    doc, _ = doc_spans
    q = Question("Q", "?", "", (Evidence("Q#e0", "P01", 2, QA), Evidence("Q#e1", "P02", 1, QB)))
    located, unlocated = locate_all([q], [doc])
    assert [loc.eid for loc in located] == ["Q#e0"] and [e.eid for e in unlocated] == ["Q#e1"]
    twin = Document("d2", "P01", doc.markdown, doc.blocks)
    with pytest.raises(ConfigError, match="labelled 'P01'"):
        locate_all([q], [doc, twin])


# ---------------------------------------------------------------- coverage


def test_coverage_inside_straddling_outside(doc_spans: tuple[Document, list[tuple[int, int]]]) -> None:
    doc, spans = doc_spans
    idx = build_keyindexes([doc])["d1"]
    loc = locate(Evidence("Q#e0", "P01", 4, QB), {"P01": doc})
    assert loc is not None
    s, e = spans[3]
    assert coverage(loc, s, e, idx) == 1.0
    assert coverage(loc, s - 50, e + 50, idx) == 1.0
    assert coverage(loc, *spans[0], idx) == 0.0
    assert coverage(loc, *spans[4], idx) == 0.0
    mid = s + QB.index("first-level")
    left, right = coverage(loc, 0, mid, idx), coverage(loc, mid, len(doc.markdown), idx)
    assert left + right == pytest.approx(1.0)
    assert left == pytest.approx(len(key(QB[: QB.index("first-level")])) / len(key(QB)))


# ---------------------------------------------------------------- evaluate


def hit(doc: Document, span: tuple[int, int], rank: int, cid: str, doc_id: str | None = None) -> Hit:
    return Hit(cid, doc_id or doc.document_id, doc.label, span[0], span[1], rank, 1.0 / rank)


@pytest.fixture
def example(doc_spans: tuple[Document, list[tuple[int, int]]]) -> dict:
    doc, sp = doc_spans
    qs = [
        Question("Q1", "asymmetry?", "", (Evidence("Q1#e0", "P01", 2, QA),), "numeric", "lexical"),
        Question(
            "Q2",
            "trigger?",
            "",
            (Evidence("Q2#e0", "P01", 4, QB), Evidence("Q2#e1", "P01", 5, QC)),
            "setup",
            "paraphrase",
        ),
        Question("Q3", "elsewhere?", "", (Evidence("Q3#e0", "P07", 1, QA),), "numeric", "paraphrase"),
    ]
    cut = sp[3][0] + int(0.6 * len(QB))  # splits QB about 60/40
    results = {
        "Q1": [
            hit(doc, sp[1], 1, "other", doc_id="elsewhere"),  # same span, other document: not relevant
            hit(doc, sp[0], 2, "c0"),
            hit(doc, (sp[1][0] - 10, sp[1][1]), 3, "c1"),  # holds QA: first relevant, rank 3
            hit(doc, (sp[0][0], sp[1][1]), 4, "c01"),  # overlapping chunk also holding QA: not counted twice
        ],
        "Q2": [
            hit(doc, (sp[2][0], cut), 1, "c2"),  # about 60 % of QB
            hit(doc, (cut, sp[3][1]), 2, "c3"),  # the other 40 %
            hit(doc, sp[5], 3, "c5"),
            hit(doc, sp[4], 4, "c4"),  # QC
        ],
        "Q3": [],
    }
    located, unlocated = locate_all(qs, [doc])
    return {"qs": qs, "located": located, "unlocated": unlocated, "results": results, "docs": [doc]}


def test_evaluate_hand_computed(example: dict) -> None:
    assert [e.eid for e in example["unlocated"]] == ["Q3#e0"]
    ev = evaluate(
        example["qs"], example["located"], example["results"], keyindexes=build_keyindexes(example["docs"])
    )
    pq = ev.per_question.set_index("qid")
    # Q1: single evidence first relevant at rank 3
    q1 = pq.loc["Q1"]
    assert (q1["recall@1"], q1["recall@3"], q1["hit_rate@3"]) == (0.0, 1.0, 1.0)
    assert q1["mrr@10"] == pytest.approx(1 / 3)
    assert q1["mrr@1"] == 0.0
    assert q1["ndcg@10"] == pytest.approx(1 / math.log2(4))  # the duplicate at rank 4 adds nothing
    assert q1["first_relevant_rank"] == 3
    # Q2: QB found at rank 1 (60 % coverage), QC at rank 4
    q2 = pq.loc["Q2"]
    assert (q2["recall@1"], q2["recall@3"], q2["recall@5"], q2["hit_rate@1"]) == (0.5, 0.5, 1.0, 1.0)
    assert q2["mrr@3"] == pytest.approx(0.5)
    assert q2["mrr@10"] == pytest.approx((1 + 1 / 4) / 2)
    assert q2["ndcg@10"] == pytest.approx((1 + 1 / math.log2(5)) / 2)
    assert (q2["n_evidence"], q2["n_located"], q2["first_relevant_rank"]) == (2, 2, 1)
    # Q3 is unlocatable: excluded from the means, counted in the summary
    assert pq.loc["Q3", "n_located"] == 0 and math.isnan(pq.loc["Q3", "recall@5"])
    s = ev.summary
    assert s["recall@5"] == pytest.approx((1.0 + 1.0) / 2)
    assert s["recall@1"] == pytest.approx((0.0 + 0.5) / 2)
    assert s["hit_rate@1"] == pytest.approx(0.5)
    assert s["mrr@10"] == pytest.approx((1 / 3 + 0.625) / 2)
    assert s["ndcg@10"] == pytest.approx((1 / math.log2(4) + (1 + 1 / math.log2(5)) / 2) / 2)
    assert (s["n_questions"], s["n_questions_unlocatable"], s["n_evidence"], s["n_evidence_located"]) == (
        3,
        1,
        4,
        3,
    )
    assert list(ev.per_evidence["rank"]) == [3, 1, 4]


def test_evaluate_strict_containment(example: dict) -> None:
    idx = build_keyindexes(example["docs"])
    ev = evaluate(example["qs"], example["located"], example["results"], (10,), 1.0, keyindexes=idx)
    q2 = ev.per_question.set_index("qid").loc["Q2"]
    assert q2["recall@10"] == 0.5  # neither half of QB holds the whole quote
    assert q2["mrr@10"] == pytest.approx(0.125)
    assert list(ev.summary)[:4] == ["recall@10", "hit_rate@10", "mrr@10", "ndcg@10"]


def test_evaluate_by(example: dict) -> None:
    idx = build_keyindexes(example["docs"])
    ev = evaluate(example["qs"], example["located"], example["results"], ks=(1, 5), keyindexes=idx)
    by_style = evaluate_by(ev.per_question, "style")
    assert list(by_style.index) == ["lexical", "paraphrase"]
    assert list(by_style["n_questions"]) == [1, 1]  # Q3 (unlocatable) left out
    assert by_style.loc["paraphrase", "recall@1"] == 0.5
    with pytest.raises(ConfigError, match="no column"):
        evaluate_by(ev.per_question, "colour")


def test_evaluate_errors(example: dict) -> None:
    args = (example["qs"], example["located"])
    idx = build_keyindexes(example["docs"])
    with pytest.raises(ConfigError, match="results lack"):
        evaluate(*args, {"Q1": []}, keyindexes=idx)
    with pytest.raises(ConfigError, match="ks="):
        evaluate(*args, example["results"], ks=(0,), keyindexes=idx)
    with pytest.raises(ConfigError, match="min_coverage"):
        evaluate(*args, example["results"], min_coverage=0.0, keyindexes=idx)
    with pytest.raises(ConfigError, match="build_keyindexes"):
        evaluate(*args, example["results"], keyindexes={})
    other, _ = make_doc([QA])  # same document_id "d1", different text
    with pytest.raises(ConfigError, match="two different documents share"):
        build_keyindexes([*example["docs"], other])


def test_evaluate_nothing_located() -> None:
    q = Question("Q", "?", "", (Evidence("Q#e0", "P01", 1, QA),))
    ev = evaluate([q], [], {}, ks=(5,), keyindexes={})
    assert ev.summary["n_questions_unlocatable"] == 1 and math.isnan(ev.summary["recall@5"])
    assert ev.per_evidence.empty


# ---------------------------------------------------------------- load_questions


def test_load_questions_jsonl_and_csv(tmp_path: Path) -> None:
    rec = {
        "qid": "A-1",
        "question": "q?",
        "answer": "a",
        "kind": "numeric",
        "style": "lexical",
        "evidence": [
            {"doc": "P01", "page": 3, "quote": "x" * 30},
            {"doc": "P02", "page": 1, "quote": "y" * 30},
        ],
    }
    jl = tmp_path / "qa.jsonl"
    jl.write_text(json.dumps(rec) + "\n\n", encoding="utf-8")
    (q,) = load_questions(jl)
    assert [e.eid for e in q.evidence] == ["A-1#e0", "A-1#e1"] and q.evidence[1].qid == "A-1"
    cs = tmp_path / "qa.csv"
    cs.write_text(
        "qid,question,answer,doc,page,quote\nA-1,q?,a,P01,3,"
        + "x" * 30
        + "\nA-1,q?,a,P02,1,"
        + "y" * 30
        + "\nB-2,r?,b,P03,7,"
        + "z" * 30
        + "\n",
        encoding="utf-8",
    )
    qs = load_questions(cs)
    assert [x.qid for x in qs] == ["A-1", "B-2"]
    assert qs[0].evidence == q.evidence and qs[1].evidence[0].page == 7


@pytest.mark.parametrize(
    ("line", "match"),
    [
        (
            '{"qid": "A", "question": "q", "evidence": [{"doc": "P01", "page": 1}]}',
            "line 2, evidence.0.: .*'quote'",
        ),
        ('{"question": "q", "evidence": []}', "line 2: required field 'qid'"),
        ('{"qid": "A", "question": "q", "evidence": []}', "line 2: field 'evidence'"),
        (
            '{"qid": "A", "question": "q", "evidence": [{"doc": "P01", "page": 0, "quote": "x"}]}',
            "line 2.*'page' is 0.*leave it out when the document has no pages",
        ),
        ('{"qid": "A", "question": "q",', "line 2: invalid JSON"),
        (
            '{"qid": "Z", "question": "q", "evidence": [{"doc": "P01", "page": 1, "quote": "x"}]}',
            "duplicate qid 'Z'",
        ),
    ],
)
def test_load_questions_errors(tmp_path: Path, line: str, match: str) -> None:
    path = tmp_path / "bad.jsonl"
    good = '{"qid": "Z", "question": "q", "evidence": [{"doc": "P01", "page": 1, "quote": "x"}]}'
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=match) as info:
        load_questions(path)
    assert str(path) in str(info.value) and isinstance(info.value, HepwbError)


def test_load_questions_missing_file_and_csv_columns(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_questions(tmp_path / "nope.jsonl")
    bad = tmp_path / "qa.csv"
    bad.write_text("qid,question,answer,doc\n", encoding="utf-8")  # answer is optional, quote is not
    with pytest.raises(ConfigError, match=r"lacks column\(s\) \['quote'\]"):
        load_questions(bad)


# ---------------------------------------------------------------- real question set


@pytest.mark.heavy
@pytest.mark.shared
def test_hepqa_dev_quotes_locatable_in_pdf_text() -> None:
    qa = SHARED / "eval" / "hepqa-dev.jsonl"
    pdf_dir = SHARED / "corpus" / "papers" / "pdf"
    if not qa.is_file() or not pdf_dir.is_dir():
        pytest.skip(f"shared test material not found at {SHARED} (set HEPWB_SHARED to the shared/ folder)")
    pymupdf = pytest.importorskip("pymupdf")
    questions = load_questions(qa)
    assert len(questions) == 124
    labels = sorted({e.doc for q in questions for e in q.evidence})
    docs = []
    for label in labels:
        (pdf,) = pdf_dir.glob(f"{label}_*.pdf")
        with pymupdf.open(pdf) as d:
            texts = [page.get_text() for page in d]
        md = "\n\n".join(texts)
        blocks, pos = [], 0
        for i, t in enumerate(texts):
            blocks.append(Block("text", pos, pos + len(t), i + 1))
            pos += len(t) + 2
        docs.append(Document(f"doc-{label}", label, md, tuple(blocks)))
    indexes = build_keyindexes(docs)
    assert all(indexes[d.document_id].key == ref_key(fold(d.markdown)) for d in docs)
    located, unlocated = locate_all(questions, docs)
    assert unlocated == []
    assert len(located) == sum(len(q.evidence) for q in questions)
    assert all(loc.method == "strict" and loc.page_ok for loc in located)


def test_markdown_corpus_with_questions_without_pages(tmp_path: Path) -> None:
    """Markdown has no pages: evidence without `page` is located anywhere and evaluated end to end."""
    import json

    from hepwb.experiment import ExperimentConfig, run_experiment
    from hepwb.paths import Layout
    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(tmp_path)
    records = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines()]
    for r in records:
        for ev in r["evidence"]:
            del ev["page"]
    pageless = tmp_path / "pageless.jsonl"
    pageless.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    assert all(e.page is None for q in load_questions(pageless) for e in q.evidence)
    cfg = ExperimentConfig.from_params(
        corpus=str(corpus),
        questions=str(pageless),
        chunk_size=48,
        retriever="bm25",
        run_dir=str(tmp_path / "run"),
    )
    res = run_experiment(cfg, layout=Layout(tmp_path), progress=False)
    paged = run_experiment(
        cfg.replace(questions=str(questions), run_dir=str(tmp_path / "paged")),
        layout=Layout(tmp_path),
        progress=False,
    )
    assert res.summary["n_evidence"] == len(records)
    assert res.summary["n_evidence_located"] == paged.summary["n_evidence_located"] >= len(records) - 1
    assert res.summary["recall@10"] == paged.summary["recall@10"] > 0.5
