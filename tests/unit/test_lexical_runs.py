"""A run does only the work its configuration reads: lexical runs never embed, finished runs are read back."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import bootstrap

from hepwb.evaluation.stats import SEED, bootstrap_ci
from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.experiment.curve import curve_configs, size_curve
from hepwb.experiment.stages import load_inputs
from hepwb.index.chunk_store import has_vectors
from hepwb.index.lance import connect, table_names
from hepwb.models import embedder as embedder_module
from hepwb.paths import Layout
from hepwb.sweep import SweepSpec, run_sweep
from tests.helpers import tiny_corpus


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("lexical")
    corpus, questions = tiny_corpus(root)
    return root, {"corpus": str(corpus), "questions": str(questions)}


@pytest.fixture
def no_model(monkeypatch):
    """Loading a sentence-transformers model fails the test (a lexical run must never do it)."""

    def refuse(self):
        raise AssertionError(f"the embedding model {self.model!r} was loaded by a lexical run")

    monkeypatch.setattr(embedder_module.Embedder, "st", property(refuse))


def _table(layout: Layout, result):
    db = connect(layout.lancedb)
    (name,) = [n for n in table_names(db) if n.startswith(result.chunkset_id + "__")]
    return db, name


@pytest.mark.parametrize(
    "retriever", ["bm25", "bm25(fields=context)", "bm25_plain", "entity", "xref(base=bm25)"]
)
def test_a_lexical_run_never_loads_the_embedding_model(tiny, no_model, retriever):
    root, base = tiny
    layout = Layout(root / "home-lexical")
    cfg = ExperimentConfig.from_params(**base, chunk_size=48, retriever=retriever)
    res = run_experiment(cfg, layout=layout, progress=False)
    assert 0 <= res.summary["hit_rate@5"] <= 1 and res.summary["share_chunks_truncated"] == 0
    assert res.record.environment["embedder"] is None  # recorded as not used
    db, name = _table(layout, res)
    assert "vector" not in db.open_table(name).schema.names and not has_vectors(layout.lancedb, name)


def test_vectors_are_added_to_the_same_table_and_its_text_index_is_kept(tiny):
    root, base = tiny
    layout = Layout(root / "home-both")
    lexical = ExperimentConfig.from_params(**base, chunk_size=40, retriever="bm25")
    first = run_experiment(lexical, layout=layout, progress=False)
    db, name = _table(layout, first)
    before = {i.name: i.index_uuid for i in db.open_table(name).list_indices()}
    dense = run_experiment(lexical.replace(retriever="dense"), layout=layout, progress=False)
    table = db.open_table(name)
    assert dense.chunkset_id == first.chunkset_id and "vector" in table.schema.names
    assert has_vectors(layout.lancedb, name) and table.count_rows() == first.summary["n_chunks"]
    assert {i.name: i.index_uuid for i in table.list_indices()} == before  # full-text indexes not rebuilt
    assert dense.record.environment["embedder"]["model"] == "all-MiniLM-L6-v2"
    again = run_experiment(lexical, layout=layout, progress=False, reuse=False)  # BM25 answers the same
    assert again.per_question["hit_rate@5"].tolist() == first.per_question["hit_rate@5"].tolist()
    assert again.hits["chunk_id"].tolist() == first.hits["chunk_id"].tolist()


def test_a_finished_run_is_read_back_and_never_rewritten(tiny, no_model):
    root, base = tiny
    layout = Layout(root / "home-reuse")
    cfg = ExperimentConfig.from_params(**base, chunk_size=56, retriever="bm25")
    first = run_experiment(cfg, layout=layout, progress=False)
    stamp = (first.run_dir / "metrics.json").stat().st_mtime_ns
    again = run_experiment(cfg, layout=layout, progress=False)
    assert again.reused and not first.reused and again.record == first.record
    assert (again.run_dir / "metrics.json").stat().st_mtime_ns == stamp
    assert again.per_question.equals(first.per_question)
    fresh = run_experiment(cfg, layout=layout, progress=False, reuse=False)
    assert not fresh.reused and fresh.summary == first.summary


@pytest.mark.heavy
def test_a_curve_computes_lexical_points_first_each_with_its_interval(tiny, no_model):
    root, base = tiny
    layout = Layout(root / "home-curve")
    configs = curve_configs([96, 32, 64], ["hepilot"], ["bm25", "bm25_plain"], **base)
    assert [(c.retriever_spec, c.chunk_size) for c in configs][:3] == [
        ("bm25", 32),
        ("bm25", 64),
        ("bm25", 96),
    ]
    inputs = load_inputs(configs[0], layout, progress=False)
    points = list(size_curve(configs, metric="mrr@10", layout=layout, inputs=inputs))
    assert len(points) == 6 and not any(p.dense or p.reused for p in points)
    assert all(p.low <= p.value <= p.high and p.n == 8 for p in points)
    again = list(size_curve(configs, metric="mrr@10", layout=layout, inputs=inputs))
    assert all(p.reused for p in again) and [p.value for p in again] == [p.value for p in points]


@pytest.mark.heavy
def test_a_curve_computed_by_two_processes_equals_one_computed_by_one(tiny, no_model):
    root, base = tiny
    configs = curve_configs([24, 40, 56, 72, 88], ["hepilot"], ["bm25"], **base)
    serial, parallel = (
        list(size_curve(configs, metric="mrr@10", layout=Layout(root / f"home-w{n}"), workers=n))
        for n in (1, 2)
    )
    assert sorted((p.chunk_size, p.value, p.low, p.high) for p in parallel) == [
        (p.chunk_size, p.value, p.low, p.high) for p in serial
    ]
    assert not any(p.reused for p in parallel) and {p.run_dir.parent for p in parallel} == {
        Layout(root / "home-w2").runs
    }


def test_a_lexical_sweep_embeds_nothing(tiny, no_model):
    root, base = tiny
    spec = SweepSpec.from_dict(
        {"name": "lexical", **base, "grid": {"chunk_size": [32, 64], "retriever": ["bm25", "entity"]}}
    )
    res = run_sweep(spec, layout=Layout(root / "home-sweep"), executor="serial", progress=False)
    assert not res.failed and len(res.computed) == 4
    assert res.embedded == res.unique_texts == 0


@pytest.mark.heavy
def test_bootstrap_intervals_are_scipys():
    """The shared-resample bootstrap draws scipy's resamples: the same interval for the same seed."""
    rng = np.random.default_rng(7)
    for n in (2, 11, 124, 469, 2500):  # 2500: drawn in blocks, not cached
        values = rng.random(n)
        ours = bootstrap_ci(values)
        ref = bootstrap(
            (values,), np.mean, confidence_level=0.95, n_resamples=10_000, method="percentile",
            rng=np.random.default_rng(SEED),
        ).confidence_interval  # fmt: skip
        assert ours.low == pytest.approx(ref.low, abs=1e-12) and ours.high == pytest.approx(
            ref.high, abs=1e-12
        )


def test_exporting_a_lexical_table_to_ragmd_adds_its_vectors_first(tiny):
    from hepwb.ragmd import loads
    from hepwb.ragmd.tables import export_table

    root, base = tiny
    layout = Layout(root / "home-export")
    res = run_experiment(ExperimentConfig.from_params(**base, chunk_size=64, retriever="bm25"), layout=layout)
    out = export_table(layout.lancedb, res.chunkset_id, "all-MiniLM-L6-v2", root / "lexical.ragmd")
    rf = loads(out.read_text(encoding="utf-8"))
    assert rf.embedding_dim == 384 and len(rf.chunks) == res.summary["n_chunks"]
    assert np.allclose(np.linalg.norm(rf.vectors, axis=1), 1, atol=1e-3)


def test_parts_added_when_first_read_answer_as_a_table_built_whole(tiny):
    """A default (fields=context) table gets entities, HEP terms and indexes in place when other retrievers
    first read them, and they rank exactly as on a table built with every part from the start."""
    from hepwb.experiment.stages import chunk_stage
    from hepwb.index import ChunkStore, get_embedder
    from hepwb.index.parts import PARTS, table_parts_present

    root, base = tiny
    lazy, whole = Layout(root / "home-lazy"), Layout(root / "home-whole")
    cfg = ExperimentConfig.from_params(**base, chunk_size=44, retriever="bm25(fields=context)")
    first = run_experiment(cfg, layout=lazy, progress=False)
    db, name = _table(lazy, first)
    assert table_parts_present(lazy.lancedb, name) == frozenset()
    assert not {"search_text", "entities", "vector"} & set(db.open_table(name).schema.names)
    inputs = load_inputs(cfg, whole, progress=False)
    cs = chunk_stage(cfg, inputs.documents, whole, inputs.log, progress=False)
    ChunkStore(whole.lancedb, get_embedder()).table(cs.chunkset_id, cs.chunks, cs.documents)  # every part
    for retriever in ("entity", "bm25_plain", "bm25", "bm25(fields=context)"):
        other = ExperimentConfig.from_params(**base, chunk_size=44, retriever=retriever)
        a = run_experiment(other, layout=lazy, progress=False)
        b = run_experiment(other, layout=whole, progress=False)
        assert a.hits[["qid", "rank", "chunk_id"]].equals(b.hits[["qid", "rank", "chunk_id"]]), retriever
        assert np.allclose(a.hits["score"], b.hits["score"]), retriever
    assert table_parts_present(lazy.lancedb, name) == PARTS - {"vector"}


def test_the_size_explorer_plots_each_point_and_answers_a_click(tiny):
    """The widget's Python side, as the browser test drives it: points, status, a click, and errors."""
    from hepwb.exceptions import ConfigError
    from hepwb.viz import explore

    root, base = tiny
    home = str(root / "home-widget")
    ex = explore(base["corpus"], base["questions"], sizes=[40, 80], retrievers=["bm25"], metric="hit_rate@1",
                 home=home).wait()  # fmt: skip
    assert ex.done and [p["size"] for p in ex.plot.points] == [40, 80] and ex.progress.value == 2
    assert "done: 2 of 2 points" in ex.status.value and ex.plot.series == ["hepilot · bm25"]
    assert list(ex.frame()["chunk_size"]) == [40, 80] and set(ex.frame()["n"]) == {8}
    ex.plot.selected = 1
    assert "bm25, 80 tokens" in ex.details.value and "over 8 questions" in ex.details.value
    assert "hw-miss" in ex.details.value or "No question was missed" in ex.details.value
    again = explore(base["corpus"], base["questions"], sizes=[40, 80], retrievers=["bm25"], home=home).wait()
    assert all(p.reused for p in again.points) and "2 read back" in again.status.value
    with pytest.raises(ConfigError, match="no metric 'found@5'"):  # stopped in the thread: said, then raised
        explore(base["corpus"], base["questions"], sizes=[40], retrievers=["bm25"], metric="found@5",
                home=home).wait()  # fmt: skip
    with pytest.raises(ConfigError, match="sizes is empty"):  # before anything runs
        explore(base["corpus"], base["questions"], sizes=[], home=home)


@pytest.mark.heavy
def test_a_fresh_process_at_a_new_size_imports_neither_nltk_nor_scipy_stats(tiny):
    """The second size of a paper reuses its kept sentence splits; intervals need no scipy.stats."""
    root, base = tiny
    home = root / "home-fresh"
    script = (
        "import sys\n"
        "from hepwb.experiment import ExperimentConfig, run_experiment\n"
        "from hepwb.paths import Layout\n"
        f"cfg = ExperimentConfig.from_params(corpus={base['corpus']!r}, questions={base['questions']!r},"
        " chunk_size=int(sys.argv[1]), tokenizer='words')\n"
        f"run_experiment(cfg, layout=Layout({str(home)!r}), progress=False)\n"
        "print(sorted(m for m in ('nltk', 'scipy.stats') if m in sys.modules))\n"
    )
    first, second = (
        subprocess.run([sys.executable, "-c", script, size], capture_output=True, text=True, check=True)
        for size in ("12", "20")  # 12 words cut every paragraph into sentences; 20 cuts fewer
    )
    assert "'nltk'" in first.stdout  # the first split of each paper (kept beside the documents)
    assert second.stdout.strip() == "[]", second.stderr[-2000:]
    assert list(Layout(home).spans.glob("*.json"))
