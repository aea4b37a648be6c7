"""Vector indexes as a dimension: configuration, real LanceDB ANN tables, recall against exact search."""

from __future__ import annotations

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from hepwb.catalog import Catalog
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig, config_problems
from hepwb.experiment.keys import cell_name
from hepwb.index.ann import AnnTable, VectorIndex, ann_quality, with_vector_index
from hepwb.paths import Layout
from hepwb.report.tables import verdict_html
from hepwb.report.verdict import verdict
from hepwb.runs.record import RunRecord
from hepwb.sweep import SweepSpec, run_sweep
from tests.helpers import tiny_corpus


def clustered(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    """Unit vectors around 20 centres (as sentence embeddings cluster by topic)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    x = centres[rng.integers(0, 20, n)] + 0.6 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    db = lancedb.connect(str(tmp_path_factory.mktemp("ann")))
    vecs = clustered(3000)
    data = pa.table(
        {
            "chunk_id": [f"c{i}" for i in range(len(vecs))],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), vecs.shape[1]),
        }
    )
    return db.create_table("cs__model", data)


def test_options_belong_to_their_index_type_and_are_bounded():
    assert VectorIndex.of("ivf_hnsw_sq", {"ef": 64, "m": 16}).approximate
    assert not VectorIndex.of("exact").approximate
    with pytest.raises(ConfigError, match=r"'hnsw' is not known; choose one of auto, exact, ivf_flat"):
        VectorIndex.of("hnsw")
    with pytest.raises(ConfigError, match=r"ivf_flat has no option 'sub_vectors' .it applies to ivf_pq"):
        VectorIndex.of("ivf_flat", {"sub_vectors": 8})
    with pytest.raises(ConfigError, match=r"exact has no option 'nprobes'.*it takes no options"):
        VectorIndex.of("exact", {"nprobes": 8})
    with pytest.raises(ConfigError, match=r"^vector index 'ivf_pq': nprobes is .* from 1 to 65536, got 0"):
        VectorIndex.of("ivf_pq", {"nprobes": 0})


def test_the_default_leaves_configurations_and_run_names_as_they_were():
    plain = ExperimentConfig.from_params(retriever="dense")
    assert "vector_index" not in plain.to_dict() and plain.index.kind == "auto"
    ivf = ExperimentConfig.from_params(retriever="dense", vector_index={"name": "ivf_pq", "nprobes": 8})
    assert ivf.to_dict()["vector_index_options"] == {"nprobes": 8}
    assert "-dense-ivf_pq-k10-" in cell_name(ivf.to_dict())
    assert "-dense-k10-" in cell_name(plain.to_dict())
    assert "vector_index" in config_problems({"vector_index": {"name": "ivf_sq", "ef": 3}})


def test_a_sweep_file_varies_index_type_and_options():
    spec = SweepSpec.from_dict(
        {
            "grid": {
                "vector_index": ["exact", {"name": "ivf_pq", "partitions": 16, "nprobes": 2}],
                "retriever": ["dense"],
            }
        }
    )
    cells = spec.cells(check_inputs=False)
    assert [(c.vector_index, c.vector_index_options) for c in cells] == [
        ("exact", {}),
        ("ivf_pq", {"partitions": 16, "nprobes": 2}),
    ]
    assert spec.varying(cells) == ["vector_index"]


def test_ann_tables_are_built_once_per_build_options_and_measured_against_exact(table):
    queries = clustered(40, seed=1)
    few = with_vector_index(
        table, VectorIndex.of("ivf_pq", {"partitions": 32, "sub_vectors": 16, "nprobes": 1})
    )
    more = with_vector_index(
        table,
        VectorIndex.of("ivf_pq", {"partitions": 32, "sub_vectors": 16, "nprobes": 32, "refine_factor": 10}),
    )
    assert isinstance(few, AnnTable) and few.ann.name == more.ann.name  # query options share the table
    assert few.ann.list_indices()[0].index_type == "IvfPq"
    q_few, q_more = ann_quality(few, queries), ann_quality(more, queries)
    assert set(q_few) == {"ann_recall@10", "ann_p50_ms", "ann_p95_ms", "exact_p50_ms", "exact_p95_ms"}
    assert q_more["ann_recall@10"] >= 0.9  # every partition probed, re-ranked exactly
    assert q_few["ann_recall@10"] < q_more["ann_recall@10"]  # one of 32 partitions misses neighbours
    exact = with_vector_index(table, VectorIndex.of("exact"))
    assert exact.ann is None and ann_quality(exact, queries) == {}
    assert [c for c, _ in exact.nearest(queries[0], 10)] == exact.exact(queries[0], 10)
    assert with_vector_index(table, VectorIndex.of("auto")) is table


def test_product_quantisation_on_too_few_chunks_is_refused_not_silently_flat(tmp_path):
    db = lancedb.connect(str(tmp_path))
    vecs = clustered(100)
    small = db.create_table(
        "few__model",
        pa.table(
            {
                "chunk_id": [f"c{i}" for i in range(100)],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), 64),
            }
        ),
    )
    with pytest.raises(ConfigError, match=r"indexed 0 of the 100 chunks.*use exact or ivf_flat"):
        with_vector_index(small, VectorIndex.of("ivf_pq"))
    assert with_vector_index(small, VectorIndex.of("ivf_flat", {"partitions": 4})).ann.count_rows() == 100


def test_a_sweep_over_vector_indexes_records_recall_and_latency(tmp_path):
    corpus, questions = tiny_corpus(tmp_path)
    base = {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words", "chunk_size": 32}
    spec = SweepSpec.from_dict(
        {
            **base,
            "retriever": "dense",
            "grid": {"vector_index": ["auto", "exact", {"name": "ivf_flat", "partitions": 2, "nprobes": 2}]},
        }
    )
    res = run_sweep(spec, layout=Layout(tmp_path / "home"), executor="serial", progress=False)
    assert not res.failed
    recs = {c.config.vector_index: RunRecord.load(c.run_dir) for c in res.plan.cells}
    assert "ann_recall@10" not in recs["auto"].costs and "ann_recall@10" not in recs["exact"].costs
    assert recs["ivf_flat"].costs["ann_recall@10"] == 1.0  # every partition probed: exact
    assert {"ann_p50_ms", "exact_p50_ms", "ann_mib"} <= set(recs["ivf_flat"].costs)
    # the same chunks, whatever the index, when the index is searched exhaustively
    assert recs["auto"].summary == recs["exact"].summary == recs["ivf_flat"].summary
    # the report's verdict names each index and shows what the approximate one keeps of exact search
    catalog = Catalog(Layout(tmp_path / "home").catalog)
    wide = catalog.metrics_wide(res.sweep_id)
    assert sorted(wide["vector_index"]) == ["auto", "exact", "ivf_flat(nprobes=2, partitions=2)"]
    v = verdict(wide, catalog.per_question)
    assert any(
        label.endswith("index ivf_flat(nprobes=2, partitions=2)") for label in v.table["configuration"]
    )
    html = verdict_html(v)
    assert "index recall@10" in html and "<td>1.0</td>" in html.replace("<td>1.000</td>", "<td>1.0</td>")
