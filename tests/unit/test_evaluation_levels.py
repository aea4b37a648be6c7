"""Chunk/document/span levels, Chroma span metrics, confidence intervals and ragas, cross-checked."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hepwb.evaluation import Evidence, Question, build_keyindexes, evaluate, locate_all
from hepwb.evaluation.levels import relevant_chunks
from hepwb.evaluation.ragas_eval import offline_scores, ragas_samples
from hepwb.evaluation.spans import precision_omega, span_scores, union
from hepwb.evaluation.stats import bootstrap_ci, compare_runs, paired_test
from hepwb.exceptions import ConfigError
from hepwb.types import Block, Chunk, Document, Hit

PARTS = [
    "The HERMES experiment measured the beam-spin asymmetry of deeply virtual Compton scattering.",
    "Its amplitude was found to be minus 0.23 with a statistical uncertainty of 0.04 in the first run.",
    "The trigger required a scattered positron and a photon in the electromagnetic calorimeter.",
    "Backgrounds from semi-inclusive pion production were subtracted using a Monte Carlo estimate.",
    "Future measurements at the electron ion collider will extend the kinematic range considerably.",
]


@pytest.fixture(scope="module")
def case():
    md, blocks, spans = "", [], []
    for i, p in enumerate(PARTS):
        if md:
            md += "\n\n"
        spans.append((len(md), len(md) + len(p)))
        blocks.append(Block("text", len(md), len(md) + len(p), i + 1))
        md += p
    doc = Document("d1", "P01", md, tuple(blocks))
    other = Document("d2", "P02", "Unrelated text about neutrino oscillations and mixing angles.", ())
    chunks = [Chunk(f"c{i}", "d1", i, s, e, md[s:e], 10, pages=(i + 1,)) for i, (s, e) in enumerate(spans)]
    chunks.append(Chunk("x0", "d2", 0, 0, len(other.markdown), other.markdown, 8))
    qs = [
        Question("Q1", "What BSA amplitude?", "minus 0.23", (Evidence("Q1#e0", "P01", 2, PARTS[1][:60]),)),
        Question(
            "Q2",
            "Which trigger and background?",
            "a positron and a photon",
            (Evidence("Q2#e0", "P01", 3, PARTS[2]), Evidence("Q2#e1", "P01", 4, PARTS[3])),
        ),
    ]
    located, unlocated = locate_all(qs, [doc, other])
    assert not unlocated
    by = {c.chunk_id: c for c in chunks}

    def hits(*ids):
        return [Hit(i, by[i].document_id, "P01" if i != "x0" else "P02", by[i].start, by[i].end, r, 1 / r,
                    by[i].text) for r, i in enumerate(ids, start=1)]  # fmt: skip

    results = {"Q1": hits("c0", "c1", "x0", "c4", "c3"), "Q2": hits("c2", "x0", "c0", "c1", "c4")}
    return {
        "docs": {"d1": doc, "d2": other},
        "chunks": chunks,
        "qs": qs,
        "located": located,
        "results": results,
    }


def test_levels_by_hand(case):
    keyidx = build_keyindexes(case["docs"].values())
    ev = evaluate(
        case["qs"], case["located"], case["results"], ks=(1, 5), keyindexes=keyidx, chunks=case["chunks"]
    )
    pq = ev.per_question.set_index("qid")
    # Q1: the only relevant chunk c1 is at rank 2
    assert pq.loc["Q1", "chunk_recall@1"] == 0 and pq.loc["Q1", "chunk_recall@5"] == 1
    assert pq.loc["Q1", "chunk_precision@5"] == pytest.approx(1 / 5)
    assert pq.loc["Q1", "chunk_mrr@5"] == pytest.approx(1 / 2)
    # Q2: relevant c2 (rank 1) and c3 (not retrieved)
    assert pq.loc["Q2", "chunk_recall@5"] == pytest.approx(1 / 2)
    assert pq.loc["Q2", "chunk_ndcg@5"] == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert pq.loc["Q2", "doc_mrr@5"] == 1.0 and pq.loc["Q1", "doc_precision@1"] == 1.0
    assert pq.loc["Q2", "doc_precision@5"] == pytest.approx(1 / 5)  # trec_eval P@k: relevant retrieved / k
    # span: Q1's quote is the first 60 characters of c1
    l1 = len(PARTS[1][:60].rstrip())
    got = sum(c.end - c.start for c in case["chunks"] if c.chunk_id in ("c0", "c1", "x0", "c4", "c3"))
    assert pq.loc["Q1", "span_recall@5"] == pytest.approx(1.0)
    assert pq.loc["Q1", "span_precision@5"] == pytest.approx(l1 / got, rel=0.02)
    assert pq.loc["Q1", "precision_omega"] == pytest.approx(l1 / len(PARTS[1]), rel=0.02)
    assert pq.loc["Q2", "precision_omega"] == pytest.approx(1.0, rel=0.02)  # quotes end before the "."
    assert {"chunk_recall@5", "span_iou@5", "precision_omega"} <= set(ev.summary)
    assert list(pq["paper"]) == ["P01", "P01"]


def test_ragas_id_metrics_equal_the_chunk_rank_metrics(case):
    keyidx = build_keyindexes(case["docs"].values())
    ev = evaluate(
        case["qs"], case["located"], case["results"], ks=(5,), keyindexes=keyidx, chunks=case["chunks"]
    )
    rel = relevant_chunks(case["located"], case["chunks"], keyidx)
    samples = ragas_samples(case["qs"], case["results"], case["located"], rel, case["docs"], k=5)
    scores = offline_scores(samples)
    pq = ev.per_question.set_index("qid")
    for qid in ("Q1", "Q2"):
        assert scores.loc[qid, "id_context_recall"] == pytest.approx(pq.loc[qid, "chunk_recall@5"])
        assert scores.loc[qid, "id_context_precision"] == pytest.approx(pq.loc[qid, "chunk_precision@5"])
    assert scores.loc["Q1", "answer_in_context"] == 1.0  # "minus 0.23" is in c1
    assert 0 < scores.loc["Q2", "nonllm_context_recall"] <= 1


# ---------------------------------------------------------------- Chroma span metrics


def chroma_reference(excerpts, retrieved, others=0):
    """Chroma's formulas written out directly, character sets instead of ranges (an independent check)."""
    ex = set().union(*(range(s, e) for s, e in excerpts))
    rt = set().union(*(range(s, e) for s, e in retrieved)) if retrieved else set()
    inter = ex & rt
    got = sum(e - s for s, e in retrieved) + others
    return len(inter) / len(ex), (len(inter) / got if got else 0.0), len(inter) / (got + len(ex - rt))


spans = st.lists(
    st.tuples(st.integers(0, 300), st.integers(1, 60)).map(lambda t: (t[0], t[0] + t[1])), max_size=6
)


@settings(max_examples=200, deadline=None)
@given(excerpts=spans.filter(bool), retrieved=spans, others=st.integers(0, 100))
def test_span_scores_match_the_definitions(excerpts, retrieved, others):
    s = span_scores(excerpts, retrieved, others)
    r, p, iou = chroma_reference(excerpts, retrieved, others)
    assert (
        s["recall"] == pytest.approx(r)
        and s["precision"] == pytest.approx(p)
        and s["iou"] == pytest.approx(iou)
    )


def test_span_details():
    # two overlapping retrieved chunks count their shared characters twice in the denominator
    assert span_scores([(0, 10)], [(0, 10), (5, 15)])["precision"] == pytest.approx(10 / 20)
    # a chunk that only touches an excerpt is not part of the ideal retrieval
    assert precision_omega([(10, 20)], [(0, 10), (10, 20), (20, 30)]) == 1.0
    assert union([(0, 2), (2, 3), (5, 6)]) == [(0, 3), (5, 6)]
    with pytest.raises(ValueError, match="excerpt"):
        span_scores([], [(0, 1)])


# ---------------------------------------------------------------- statistics


def test_bootstrap_ci_brackets_the_mean_and_narrows_with_n():
    rng = np.random.default_rng(1)
    small, large = rng.binomial(1, 0.7, 40), rng.binomial(1, 0.7, 4000)
    a, b = bootstrap_ci(small), bootstrap_ci(large)
    assert a.low < a.mean < a.high and b.low < b.mean < b.high
    assert (b.high - b.low) < (a.high - a.low) / 5
    # the normal approximation of a proportion, as a sanity check
    se = math.sqrt(b.mean * (1 - b.mean) / 4000)
    assert b.high - b.low == pytest.approx(2 * 1.96 * se, rel=0.1)
    assert bootstrap_ci([0.5, float("nan"), 0.5]).n == 2


def test_paired_test_separates_real_from_noise():
    rng = np.random.default_rng(2)
    base = rng.binomial(1, 0.6, 120).astype(float)
    better = np.where(rng.random(120) < 0.3, 1.0, base)  # flips ~30 % of questions to found
    noisy = np.where(rng.random(120) < 0.05, 1 - base, base)
    assert paired_test(better, base).significant and paired_test(better, base).diff.mean > 0
    assert not paired_test(noisy, base).significant
    assert paired_test(base, base).p_value == 1.0
    with pytest.raises(ConfigError, match="same questions"):
        paired_test([1, 0], [1])


def test_compare_runs_table():
    import pandas as pd

    a = pd.DataFrame({"qid": list("abcdef"), "hit_rate@5": [1, 1, 1, 1, 1, 1]})
    b = pd.DataFrame({"qid": list("fedcba"), "hit_rate@5": [0, 0, 0, 0, 0, 1]})
    out = compare_runs({"A": a, "B": b}, baseline="A")
    assert out.loc[0, "run"] == "B" and out.loc[0, "diff"] == pytest.approx(-5 / 6)
    assert out.loc[0, "worse"] == 5 and out.loc[0, "better"] == 0


def test_ragas_llm_metrics_against_a_local_openai_compatible_server(case):
    from hepwb.evaluation.ragas_eval import LLM_METRICS, llm_scores
    from hepwb.runtime.llm import LLMEndpoint
    from tests.llm_server import LLMServer

    keyidx = build_keyindexes(case["docs"].values())
    rel = relevant_chunks(case["located"], case["chunks"], keyidx)
    samples = ragas_samples(case["qs"], case["results"], case["located"], rel, case["docs"], k=3)
    with LLMServer() as srv:
        scores = llm_scores(samples, LLMEndpoint(srv.url, "judge", attempts=1))
    assert list(scores.index) == ["Q1", "Q2"]
    for m in LLM_METRICS:
        assert scores[m].between(0, 1).all(), m
    assert scores["response"].str.len().gt(0).all()
    # one answer per question, then JSON-mode judgements that carried ragas' output schema
    json_mode = [r for r in srv.requests if r.get("response_format", {}).get("type") == "json_object"]
    assert len(srv.requests) - len(json_mode) == 2 and json_mode
    assert all(r["model"] == "judge" for r in srv.requests)


def test_ragas_testset_generator_runs_against_the_local_server():
    """Wiring only: ragas' generator talks to the endpoint offline (its questions need a real LLM)."""
    from hepwb.evaluation.testset import ragas_questions
    from hepwb.processing.markdown import markdown_document
    from hepwb.runtime.llm import LLMEndpoint
    from tests.helpers import SAMPLE_MD
    from tests.llm_server import LLMServer

    docs = [
        markdown_document(SAMPLE_MD * 12, "S01"),
        markdown_document(SAMPLE_MD.replace("positron", "muon") * 12, "S02"),
    ]
    with LLMServer() as srv:
        qs = ragas_questions(docs, LLMEndpoint(srv.url, "gen", attempts=1), size=2)
    assert isinstance(qs, list) and all(q.evidence for q in qs)
    assert len(srv.requests) >= 4 and all(r["model"] == "gen" for r in srv.requests)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["Alpha beta gamma.", "Delta epsilon.", "Zeta eta theta iota.", "Kappa."]),
             min_size=3, max_size=30),
    st.integers(8, 24),
    st.sampled_from([0.0, 0.25]),
    st.floats(0.05, 1.0),
)  # fmt: skip
def test_relevant_chunks_agree_with_the_rule_chunk_by_chunk(sentences, size, overlap, min_coverage):
    """The vectorised search gives exactly the chunks is_relevant accepts, repeated quotes included."""
    from hepwb.chunking import get_chunker
    from hepwb.evaluation.matching import is_relevant, locate
    from hepwb.processing.markdown import markdown_document
    from hepwb.types import Hit

    doc = markdown_document("# T\n\n" + " ".join(sentences), "P01")
    chunks = get_chunker("hepilot", chunk_size=size, chunk_overlap=overlap, tokenizer="words").chunk(doc)
    idx = build_keyindexes([doc])
    located = [
        loc for i, quote in enumerate(dict.fromkeys(sentences))
        if (loc := locate(Evidence(f"q{i}#e0", "P01", None, quote), {"P01": idx[doc.document_id]}))
    ]  # fmt: skip
    brute: dict[str, set[str]] = {}
    for loc in located:
        for c in chunks:
            hit = Hit(c.chunk_id, c.document_id, "P01", c.start, c.end, 0, 0.0)
            if is_relevant(loc, hit, idx[doc.document_id], min_coverage):
                brute.setdefault(loc.qid, set()).add(c.chunk_id)
    assert relevant_chunks(located, chunks, idx, min_coverage) == brute


def test_ragas_scores_a_question_that_retrieved_nothing_as_nan():
    pytest.importorskip("ragas")
    from hepwb.evaluation.ragas_eval import OFFLINE_METRICS, offline_scores

    quote = "An average value of -0.23"
    base = {
        "user_input": "q",
        "reference_context_ids": ["c1"],
        "reference_contexts": [quote],
        "reference": "",
    }
    samples = {
        "Q1": {**base, "retrieved_contexts": [], "retrieved_context_ids": []},
        "Q2": {**base, "retrieved_contexts": [quote], "retrieved_context_ids": ["c1"]},
    }
    df = offline_scores(samples)
    assert all(math.isnan(df.loc["Q1", m]) for m in OFFLINE_METRICS)
    assert df.loc["Q2", "id_context_recall"] == 1.0
