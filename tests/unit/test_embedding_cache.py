"""The embedding cache answers for the keys asked for, through its BTREE index, never its whole table."""

from __future__ import annotations

import numpy as np

from hepwb.index.cache import EmbeddingCache


def test_lookup_missing_and_add(tmp_path):
    cache = EmbeddingCache(tmp_path, "toy-model")
    assert cache.lookup(["a"]) == {} and cache.missing(["b", "a", "b"]) == ["a", "b"] and len(cache) == 0
    vecs = {f"{i:064x}": np.full(4, i, np.float32) for i in range(6000)}
    cache.add(dict(list(vecs.items())[:5000]))
    cache.add(dict(list(vecs.items())[5000:]))
    got = cache.lookup(["0" * 63 + "7", f"{5999:064x}", "nope"])
    assert sorted(got) == ["0" * 63 + "7", f"{5999:064x}"] and got[f"{5999:064x}"].tolist() == [5999.0] * 4
    assert cache.missing([f"{5999:064x}", "x" * 64]) == ["x" * 64]
    # a text added twice by two processes at once: one answer, the same vector
    cache.add({"0" * 63 + "7": np.full(4, 7, np.float32)})
    assert cache.lookup(["0" * 63 + "7"])["0" * 63 + "7"].tolist() == [7.0] * 4
    tbl = cache._table()
    (index,) = [ix for ix in tbl.list_indices() if ix.columns == ["key"]]
    assert index.index_type == "BTree"
    plan = tbl.search().where(f"key IN ('{5999:064x}')").select(["key"]).explain_plan(True)
    assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan, plan  # answered by the index
