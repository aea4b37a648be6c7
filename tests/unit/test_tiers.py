"""Two-tier memory on real LanceDB tables and a real DuckDB audit file, three short markdown papers.

LT holds A01 (HERMES DVCS) and B02 (jets); C03 (reactor neutrinos) arrives in HOT. The clock is
injected, so TTLs are tested without sleeping.
"""

from __future__ import annotations

import pytest

from hepwb.exceptions import ConfigError
from hepwb.paths import Layout
from hepwb.tiers import TierConfig, Tiers, evaluate_tiers
from tests.helpers import tiny_corpus

T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiers")
    corpus, questions = tiny_corpus(root)
    return root, corpus, questions


@pytest.fixture
def tiers(material, tmp_path):
    """LT = A01, B02; HOT = C03; a fresh tier folder per test (conversions and embeddings cached)."""
    root, corpus, _ = material
    clock = Clock()
    t = Tiers(tmp_path / "tiers", TierConfig(ttl_s=3600), clock=clock, layout=Layout(root / "home"))
    t.init_lt(corpus, only=["A01", "B02"], chunk_size=64)
    clock.t += 60
    t.acquire(corpus, only=["C03"])
    return t, clock, corpus


def test_tiers_hold_their_documents_with_governance_fields(tiers):
    t, _, corpus = tiers
    st = t.status()
    assert st["lt"]["documents"] == 2 and st["hot"]["documents"] == 1 and st["hot"]["expired"] == 0
    lt = t.table("lt").to_arrow().to_pylist()
    assert {r["origin"] for r in lt} == {"curated"} and {r["doc_version"] for r in lt} == {1}
    assert {r["ingested_at_ms"] for r in lt} == {int(T0 * 1000)} and {r["hot_promoted_at"] for r in lt} == {0}
    herm = next(r for r in lt if "experiment:hermes" in r["entities"])
    assert "experiment_hermes" in herm["entity_text"].split()
    hot = t.table("hot").to_arrow().to_pylist()
    assert {r["origin"] for r in hot} == {"acquired"} and {r["hot_promoted_at"] for r in hot} == {
        int((T0 + 60) * 1000)
    }
    assert t.meta["ner_model"].startswith("hepwb-hep-dictionary@")
    # unchanged papers are not written again; the chunking is fixed per tier folder
    again = t.init_lt(corpus, only=["A01", "B02"], chunk_size=64)
    assert (
        again.documents == 0 and again.unchanged == 2 and t.status()["lt"]["version"] == st["lt"]["version"]
    )
    with pytest.raises(ConfigError, match="use"):
        t.init_lt(corpus, only=["A01"], chunk_size=128)


def test_search_labels_each_hit_with_its_tier_and_reasons(tiers):
    t, _, _ = tiers
    hits = t.search("How are cosmic muons tagged by the water veto?", 3)
    assert hits[0].label == "C03" and hits[0].tier == "hot" and "hot #1" in hits[0].why
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    herm = t.search("HERMES beam-spin asymmetry", 3)
    assert herm[0].label == "A01" and herm[0].tier == "lt" and "experiment:hermes" in herm[0].matched
    assert herm[0].why.startswith("strict: all of") and herm[0].highlights
    both = t.search("Which detector uncertainty is measured?", 10)
    only_lt = t.search("Which detector uncertainty is measured?", 10, which=["lt"])
    assert {h.tier for h in both} == {"lt", "hot"} and "C03" in {h.label for h in both}
    assert {h.tier for h in only_lt} == {"lt"} and "C03" not in {h.label for h in only_lt}
    # strictness at query time: only chunks holding every entity of the question
    strict = t.search("HERMES asymmetry", 10, strict=True)
    assert strict and all({"experiment:hermes", "observable:asymmetry"} <= set(h.matched) for h in strict)
    assert t.search("what about the weather", 5, strict=True) == []
    assert t.search("HERMES asymmetry", 3, merge="rrf")[0].label == "A01"
    with pytest.raises(ConfigError, match="which"):
        t.search("x", which=["cold"])


def test_warming_copies_lt_chunks_of_recent_questions_entities_capped(material, tmp_path):
    root, corpus, _ = material
    clock = Clock()
    cfg = TierConfig(ttl_s=3600, warm_max_docs=1, recency_s=600)
    t = Tiers(tmp_path / "w", cfg, clock=clock, layout=Layout(root / "home"))
    t.init_lt(corpus, chunk_size=64)  # all three papers in LT
    assert t.warm().skipped.startswith("no entity")  # nothing asked yet
    t.search("HERMES beam-spin asymmetry", 3)
    clock.t += 30
    rep = t.warm()
    assert rep.entities[:1] == ("experiment:hermes",) or "experiment:hermes" in rep.entities
    assert len(rep.documents) == 1 and rep.rows > 0  # capped at one document
    hot = t.table("hot").to_arrow().to_pylist()
    assert {r["origin"] for r in hot} == {"warmed"} and {r["label"] for r in hot} == {"A01"}
    assert {r["hot_promoted_at"] for r in hot} == {int((T0 + 30) * 1000)}
    assert all(set(r["entities"]) & set(rep.entities) for r in hot)  # OR filter over the entities
    hits = t.search("HERMES beam-spin asymmetry", 3, record=False)
    assert hits[0].tier == "lt+hot"
    clock.t += 100
    again = t.warm()
    assert again.rows == 0 and again.renewed == len(hot)  # re-warming renews the stamps
    assert t.status()["hot"]["rows"] == len(hot)
    clock.t += 700  # the question left the recency window
    assert t.warm().skipped.startswith("no entity")
    assert t.warm(["jets at 13 TeV"]).documents == ("label:B02",)


def test_eviction_by_ttl_never_touches_lt_and_is_rate_limited(material, tmp_path):
    root, corpus, _ = material
    clock = Clock()
    cfg = TierConfig(ttl_s=100, job_max_rows=1, job_min_interval_s=50)
    t = Tiers(tmp_path / "e", cfg, clock=clock, layout=Layout(root / "home"))
    t.init_lt(corpus, only=["A01", "B02"], chunk_size=64)
    t.acquire(corpus, only=["C03"])
    lt_rows, hot_rows = t.status()["lt"]["rows"], t.status()["hot"]["rows"]
    assert hot_rows >= 2
    clock.t += 99
    assert t.evict().rows == 0
    clock.t += 2
    dry = t.evict(dry_run=True)
    assert dry.dry_run and dry.rows == 1 and dry.left_expired == hot_rows - 1
    assert t.status()["hot"]["rows"] == hot_rows
    rep = t.evict(actor="cron")
    assert rep.rows == 1 and rep.documents == {"label:C03": 1} and rep.left_expired == hot_rows - 1
    assert t.evict().skipped.startswith("rate limit")
    clock.t += 60
    while t.status()["hot"]["rows"]:
        t.evict()
        clock.t += 60
    assert t.status()["lt"]["rows"] == lt_rows
    ev = t.audit.events(action="evict")
    assert sum(e["rows"] for e in ev) == hot_rows and ev[-1]["actor"] == "cron"
    assert all(e["hot_version_after"] > e["hot_version_before"] for e in ev)


def test_promotion_only_when_earned_audited_idempotent_and_reversible(tiers):
    t, clock, _ = tiers
    lt_before = t.status()["lt"]
    assert t.candidates().empty and t.promote().skipped.startswith("nothing earned")
    hit = t.search("How are cosmic muons tagged?", 1)[0]
    assert hit.tier == "hot"
    clock.t += 10
    t.approve(hit.chunk_id, actor="alice", note="the veto description we cite")
    cands = t.candidates()
    assert list(cands["label"]) == ["C03"] and "approved by alice" in cands["evidence"][0]
    assert t.promote(dry_run=True).rows == cands["rows"][0] and t.status()["lt"] == lt_before
    clock.t += 10
    rep = t.promote(actor="alice")
    assert rep.documents == ("label:C03",) and rep.lt_version_after > rep.lt_version_before
    lt = t.table("lt").to_arrow().to_pylist()
    promoted = [r for r in lt if r["label"] == "C03"]
    assert len(promoted) == rep.rows and {r["promotion_id"] for r in promoted} == {rep.event_id}
    assert {r["origin"] for r in promoted} == {"promoted"} and {r["doc_version"] for r in promoted} == {1}
    assert {r["hot_promoted_at"] for r in promoted} == {int((T0 + 60) * 1000)}  # when it entered HOT
    # the audit trail answers "why is this chunk in LT and since when"
    why = t.why(hit.chunk_id)
    assert why["origin"] == "promoted" and why["event"]["actor"] == "alice"
    assert "approved by alice" in why["reason"] and why["in_lt_since"].startswith("2027-01-15T08:01:20")
    assert t.why(lt[0]["chunk_id"])["reason"].startswith(("curated", "promoted"))
    # idempotent: nothing left to promote; HOT untouched (its rows expire by TTL)
    assert t.promote().skipped and len(t.audit.events(action="promote")) == 1
    assert t.status()["hot"]["rows"] == len(promoted)
    # reversible: LT's rows as they were before the promotion, audited, once
    v = t.version("lt")  # the promotion's commit, then an index update
    rev = t.revert(rep.event_id, actor="bob")
    assert t.status()["lt"]["rows"] == lt_before["rows"] and rev.lt_version_before == v > rep.lt_version_after
    assert t.revert(rep.event_id).skipped.startswith("promotion") and t.why(hit.chunk_id)["in_lt"] is False
    assert [e["action"] for e in t.audit.events(limit=2)] == ["revert", "promote"]


def test_promotion_by_distinct_questions_and_reingest_replaces_in_place(material, tmp_path):
    root, corpus, _ = material
    clock = Clock()
    t = Tiers(tmp_path / "q", TierConfig(promote_min_questions=2), clock=clock, layout=Layout(root / "home"))
    t.init_lt(corpus, only=["A01", "B02"], chunk_size=64)
    t.acquire(corpus, only=["C03"])
    t.search("How are cosmic muons tagged?", 2)
    t.search("How are cosmic muons tagged?", 2)  # the same question twice counts once
    assert t.candidates().empty
    t.search("What does the far detector contain?", 2)
    cands = t.candidates()
    assert cands["questions"][0] == 2 and "2 distinct questions" in cands["evidence"][0]
    assert t.promote().rows > 0
    # a new version of a curated paper replaces its rows in place, doc_version + 1
    new = tmp_path / "v2"
    new.mkdir()
    (new / "A01_dvcs.md").write_text((corpus / "A01_dvcs.md").read_text() + "\nA new erratum paragraph.\n")
    rep = t.init_lt(new)
    assert rep.versions == {"label:A01": 2}
    a01 = [r for r in t.table("lt").to_arrow().to_pylist() if r["doc_key"] == "label:A01"]
    assert {r["doc_version"] for r in a01} == {2} and any("erratum" in r["text"] for r in a01)
    assert t.status()["lt"]["documents"] == 3


def test_evaluation_per_tier(tiers, material):
    t, _, _ = tiers
    _, _, questions = material
    frame = evaluate_tiers(t, questions, k=3).set_index("mode")
    # all 8 questions are scored: q7's short quote is unique in its paper
    assert list(frame.index) == ["lt", "hot", "lt+hot"] and set(frame["questions"]) == {8}
    # the neutrino questions are only answerable from HOT; LT+HOT answers both kinds
    assert frame.loc["lt+hot", "recall@3"] > frame.loc["lt", "recall@3"]
    assert frame.loc["lt+hot", "recall@3"] > frame.loc["hot", "recall@3"]
    assert t.status()["questions_recorded"] == 0  # evaluation searches are not evidence


def test_jobs_repeated_in_the_same_millisecond_are_each_audited(tiers):
    t, _, _ = tiers  # the clock does not move
    t.search("HERMES beam-spin asymmetry", 3)
    first, second = t.warm(), t.warm()
    assert first.rows > 0 and second.renewed == first.rows
    assert len(t.audit.events(action="warm")) == 2


def test_table_names_must_differ():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="must differ"):
        TierConfig(lt_table="x", hot_table="x")


def test_only_whole_acquired_papers_are_promoted_and_a_revert_needs_new_evidence(tiers):
    t, clock, _ = tiers
    hit = t.search("How are cosmic muons tagged?", 1)[0]
    n = t.table("hot").count_rows("doc_key = 'label:C03'")
    # a partly evicted paper is not promoted, whatever its evidence
    t.table("hot").delete(f"chunk_id = '{hit.chunk_id}'")
    clock.t += 1
    t.approve(next(iter(t.table("hot").to_arrow()["chunk_id"].to_pylist())), actor="alice")
    assert t.candidates().empty
    t.acquire(t.meta["sources"][1]["corpus"], only=["C03"])  # whole again
    assert t.table("hot").count_rows("doc_key = 'label:C03'") == n
    clock.t += 1
    t.approve(hit.chunk_id, actor="alice")
    rep = t.promote(actor="alice")
    assert rep.rows == n
    clock.t += 1
    t.revert(rep.event_id, actor="bob")
    assert t.candidates().empty and t.promote().skipped  # the old approval does not re-promote it
    clock.t += 1
    t.approve(hit.chunk_id, actor="carol")  # new evidence does
    assert list(t.candidates()["evidence"]) == ["approved by carol"]


def test_warmed_rows_are_never_promoted_back(tiers):
    t, clock, corpus = tiers
    t.search("HERMES beam-spin asymmetry", 3)
    t.warm()
    warmed = t.table("hot").search().where("origin = 'warmed'").limit(1).to_list()[0]
    clock.t += 1
    t.approve(warmed["chunk_id"], actor="alice")
    new = corpus.parent / "v2"
    new.mkdir(exist_ok=True)
    (new / "A01_dvcs.md").write_text((corpus / "A01_dvcs.md").read_text() + "\nAn erratum.\n")
    t.init_lt(new)  # LT's A01 changes: the warmed copy in HOT is now stale, and must not overwrite it
    assert t.candidates().empty
